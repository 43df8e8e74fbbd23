//===- Loss.h - losses (gluon.loss) and metrics (gluon.metric) ----------------===//
#ifndef DLC_GLUON_LOSS_H
#define DLC_GLUON_LOSS_H

#include "dlc/Frontend/Tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace dlc::gluon {

namespace loss {

/// Per-sample softmax cross entropy. With sparse labels, `label` holds class indices
/// (any dtype; converted to int64); otherwise a distribution over classes. With
/// `from_logits`, `pred` already holds log-probabilities.
class SoftmaxCrossEntropyLoss {
public:
  explicit SoftmaxCrossEntropyLoss(int64_t axis = -1, bool sparse_label = true,
                                   bool from_logits = false);
  /// (N, C) predictions and (N) labels -> (N) losses.
  Tensor operator()(const Tensor &pred, const Tensor &label) const;

private:
  int64_t axis_;
  bool sparse_label_, from_logits_;
};

/// Per-sample 0.5 * mean((pred - label)^2) over the non-batch axes.
class L2Loss {
public:
  Tensor operator()(const Tensor &pred, const Tensor &label) const;
};

} // namespace loss

namespace metric {

/// Fraction of samples whose predicted class (argmax over axis 1) equals the label.
class Accuracy {
public:
  /// One batch, or one per-device slice of it.
  void update(const Tensor &label, const Tensor &pred);
  /// Per-device slices, as the seed passes them.
  void update(const std::vector<Tensor> &labels, const std::vector<Tensor> &preds);
  /// ("accuracy", correct / seen); NaN before any update.
  std::pair<std::string, double> get() const;
  void reset();
  int64_t num_inst() const { return seen_; }
  int64_t num_correct() const { return correct_; }

private:
  int64_t correct_ = 0, seen_ = 0;
};

} // namespace metric

} // namespace dlc::gluon

#endif // DLC_GLUON_LOSS_H
