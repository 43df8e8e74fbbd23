//===- Autograd.h - recording ops and computing gradients (MXNet's autograd) -===//
//
// Inside a Record scope, every op whose inputs need gradients is recorded with its VJP
// rule from the op registry (the same rules a hybridized training step is built from).
// backward() walks the recording from the heads back to the tensors that called
// attach_grad(), writing or adding their gradients, then frees the recording.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_AUTOGRAD_H
#define DLC_FRONTEND_AUTOGRAD_H

#include "dlc/Frontend/Tensor.h"

#include <vector>

namespace dlc::autograd {

/// Records ops of this thread while it lives; `train_mode` also sets is_training()
/// (Dropout drops, BatchNorm uses batch statistics), as `autograd.record()` does.
class Record {
public:
  explicit Record(bool train_mode = true);
  ~Record();
  Record(const Record &) = delete;
  Record &operator=(const Record &) = delete;

private:
  bool wasRecording_, wasTraining_;
};

/// Stops recording while it lives (`autograd.pause()`); is_training() becomes
/// `train_mode`.
class Pause {
public:
  explicit Pause(bool train_mode = false);
  ~Pause();
  Pause(const Pause &) = delete;
  Pause &operator=(const Pause &) = delete;

private:
  bool wasRecording_, wasTraining_;
};

/// Sets is_training() without changing recording (`autograd.train_mode()` /
/// `autograd.predict_mode()`).
class TrainMode {
public:
  explicit TrainMode(bool training = true);
  ~TrainMode();
  TrainMode(const TrainMode &) = delete;
  TrainMode &operator=(const TrainMode &) = delete;

private:
  bool wasTraining_;
};

bool is_recording();
bool is_training();

/// Back-propagates from `heads` (each seeded with the matching `head_grads` entry, or
/// with ones when it is missing or undefined) to every tensor that called attach_grad().
/// The recording is freed unless `retain_graph`.
void backward(const std::vector<Tensor> &heads, const std::vector<Tensor> &head_grads = {},
              bool retain_graph = false);

} // namespace dlc::autograd

#endif // DLC_FRONTEND_AUTOGRAD_H
