//===- Trainer.h - optimizers over per-device parameters (gluon.Trainer) ------===//
#ifndef DLC_GLUON_TRAINER_H
#define DLC_GLUON_TRAINER_H

#include "dlc/Gluon/Parameter.h"

#include <map>
#include <string>
#include <vector>

namespace dlc::gluon {

/// Applies an optimizer to parameters that may have a copy on several devices. step()
/// sums each parameter's gradients over its devices and scales them by 1/batch_size.
/// On host devices (or a mix) it updates the first device's copy once and copies the
/// result to every other device: MXNet's KVStore 'device' semantics. When every copy is
/// on a GPU, the sum is one NCCL all-reduce (npx::all_reduce) and each GPU applies the
/// same update to its own copy, keeping its own optimizer state.
///
/// Optimizers and their options (defaults in brackets):
///   "sgd":  learning_rate [0.01], momentum [0], wd [0], clip_gradient [off]
///   "nag":  as sgd, momentum [0.9] (Nesterov)
///   "adam": learning_rate [0.001], beta1 [0.9], beta2 [0.999], epsilon [1e-8], wd [0],
///           clip_gradient [off]
/// Every optimizer also takes check_numerics [0]: when 1, step() first checks that no
/// gradient holds a NaN or an infinity, and throws naming the parameter if one does.
class Trainer {
public:
  Trainer(const ParameterDict &params, const std::string &optimizer,
          const std::map<std::string, double> &options = {});

  /// One update with gradients of a batch of `batch_size` samples. A parameter whose
  /// gradient no backward() has written since the last step (on any of its devices) is
  /// an error naming it, as in MXNet: applying the old gradient again is almost always
  /// a bug. With `ignore_stale_grad`, such parameters are left as they are instead.
  void step(int64_t batch_size, bool ignore_stale_grad = false);
  double learning_rate() const { return learningRate_; }
  void set_learning_rate(double rate) { learningRate_ = rate; }
  const std::string &optimizer() const { return optimizer_; }

  /// The optimizer's rule for one weight: its gradient (summed over devices), multiplied
  /// by `rescale` first (1/batch size), its state (created on first use: momentum, or
  /// Adam's two moments) and the rate as a 0-d tensor. Returns the new weight; `state`
  /// holds the new state. Used by step() and, traced, by the compiled training step.
  /// Eagerly the rescaling joins the fused update op when there is one (no extra pass).
  Tensor update(const Tensor &weight, Tensor grad, std::vector<Tensor> &state,
                const Tensor &rate, double rescale = 1.0) const;
  /// The rate of update number `step` (1, 2, ...): the learning rate, with Adam's bias
  /// correction folded in.
  double effective_learning_rate(int64_t step) const;
  /// The number of state tensors the optimizer keeps per weight.
  size_t state_size() const;
  int64_t steps() const { return steps_; }

  /// Writes the optimizer's state (momentum, Adam's moments, the count of updates) to
  /// `path` (trainer.save_states): with the parameters, what a resumed run needs to go on
  /// as if never stopped. The file is TrainStep's too. `metadata`: entries of the
  /// caller's own for the file's header (safetensors::Reader reads them back).
  void save_states(const std::string &path,
                   const std::map<std::string, std::string> &metadata = {}) const;
  /// Reads states save_states wrote (trainer.load_states), for this trainer's optimizer
  /// and parameters: checked whole before anything changes. Parameters the file does not
  /// name keep their state.
  void load_states(const std::string &path);
private:
  double option(const std::string &name, double fallback) const;

  ParameterDict params_;
  std::string optimizer_;
  std::map<std::string, double> options_;
  double learningRate_;
  int64_t steps_ = 0;
  std::map<const Parameter *, std::vector<Tensor>> state_; // per-parameter optimizer state
  /// Parameters on several GPUs: the optimizer state of each GPU's copy.
  std::map<const Parameter *, std::map<Device, std::vector<Tensor>>> replicaState_;
  /// The per-GPU states of `parameter` for `devices`: a device without one starts from
  /// another copy's (or from the single state of the host path, which then ends), and
  /// devices the parameter left are dropped.
  std::map<Device, std::vector<Tensor>> &replicaStates(const Parameter &parameter,
                                                       const std::vector<Device> &devices);
  static std::vector<Tensor> moveState(const std::vector<Tensor> &state, Device device);
};

namespace utils {

/// Cuts `data` along `batch_axis` into one slice per device and moves each slice there
/// (gluon.utils.split_and_load). With one device the data moves whole. With even_split,
/// a batch that does not divide evenly throws ValueError; without it the
/// slices differ by at most one sample. Fewer samples than devices throws.
std::vector<Tensor> split_and_load(const Tensor &data, const std::vector<Device> &devices,
                                   int64_t batch_axis = 0, bool even_split = true);

} // namespace utils

} // namespace dlc::gluon

#endif // DLC_GLUON_TRAINER_H
