//===- Loss.cpp - softmax cross entropy, L2, accuracy --------------------------===//
#include "dlc/Gluon/Loss.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <limits>
#include <numeric>

namespace dlc::gluon {

namespace loss {

SoftmaxCrossEntropyLoss::SoftmaxCrossEntropyLoss(int64_t axis, bool sparse_label,
                                                 bool from_logits)
    : axis_(axis), sparse_label_(sparse_label), from_logits_(from_logits) {}

Tensor SoftmaxCrossEntropyLoss::operator()(const Tensor &pred, const Tensor &label) const {
  if (pred.ndim() < 2 || shape_rules::normalizeAxis(axis_, pred.ndim()) != pred.ndim() - 1)
    throw ShapeError("SoftmaxCrossEntropyLoss: expects (batch, ..., classes) predictions with "
                     "the class axis last, got " + shape_rules::str(pred.shape()) + " and axis " +
                     std::to_string(axis_));
  int64_t classes = pred.shape().back();
  if (pred.ndim() > 2) {
    // (batch, d..., classes): one loss per position, averaged over d... per sample, as
    // MXNet's (a language model's (batch, length, vocab) logits).
    Shape positions(pred.shape().begin(), pred.shape().end() - 1);
    if (sparse_label_ ? label.shape() != positions : label.shape() != pred.shape())
      throw ShapeError("SoftmaxCrossEntropyLoss: labels " + shape_rules::str(label.shape()) +
                       " for predictions " + shape_rules::str(pred.shape()) + " must be " +
                       shape_rules::str(sparse_label_ ? positions : pred.shape()));
    Tensor flat = (*this)(pred.reshape({-1, classes}),
                          sparse_label_ ? label.reshape({-1}) : label.reshape({-1, classes}));
    return np::mean(flat.reshape({pred.shape()[0], -1}), {1});
  }
  if (sparse_label_) {
    if (label.size() != pred.shape()[0])
      throw ShapeError("SoftmaxCrossEntropyLoss: " + std::to_string(label.size()) +
                       " labels for " + std::to_string(pred.shape()[0]) + " predictions " +
                       shape_rules::str(pred.shape()));
    Tensor indices = label.reshape({-1});
    if (indices.dtype() != DType::i64 && indices.dtype() != DType::i32)
      indices = indices.astype(DType::i64);
    if (!from_logits_)
      return npx::softmax_cross_entropy(pred, indices);
    // -log p[label]: pick through a one-hot mask.
    Tensor onehot = (indices.reshape({-1, 1}).astype(DType::i64) ==
                     np::arange(0, double(classes), 1, DType::i64, pred.device()))
                        .astype(pred.dtype());
    return -np::sum(pred * onehot, {1});
  }
  if (label.shape() != pred.shape())
    throw ShapeError("SoftmaxCrossEntropyLoss: dense labels " + shape_rules::str(label.shape()) +
                     " must have the predictions' shape " + shape_rules::str(pred.shape()));
  Tensor logp = from_logits_ ? pred : npx::log_softmax(pred, 1);
  return -np::sum(logp * label, {1});
}

Tensor L2Loss::operator()(const Tensor &pred, const Tensor &label) const {
  Tensor target = label.shape() == pred.shape() ? label : label.reshape(pred.shape());
  Tensor difference = pred - target;
  Tensor squared = difference * difference * 0.5;
  if (pred.ndim() <= 1)
    return squared;
  std::vector<int64_t> axes(size_t(pred.ndim() - 1));
  std::iota(axes.begin(), axes.end(), 1);
  return np::mean(squared, axes);
}

} // namespace loss

namespace metric {

void Accuracy::update(const Tensor &label, const Tensor &pred) {
  autograd::Pause pause;
  Tensor predicted = pred.ndim() > label.ndim() ? np::argmax(pred, 1) : pred;
  std::vector<int64_t> p = predicted.to_vector<int64_t>(), l = label.to_vector<int64_t>();
  if (p.size() != l.size())
    throw ShapeError("Accuracy.update: " + std::to_string(l.size()) + " labels for " +
                     std::to_string(p.size()) + " predictions (" +
                     shape_rules::str(pred.shape()) + ")");
  for (size_t i = 0; i < p.size(); ++i)
    correct_ += p[i] == l[i];
  seen_ += int64_t(p.size());
}

void Accuracy::update(const std::vector<Tensor> &labels, const std::vector<Tensor> &preds) {
  if (labels.size() != preds.size())
    throw ValueError("Accuracy.update: " + std::to_string(labels.size()) + " label tensors for " +
                     std::to_string(preds.size()) + " prediction tensors");
  for (size_t i = 0; i < labels.size(); ++i)
    update(labels[i], preds[i]);
}

std::pair<std::string, double> Accuracy::get() const {
  return {"accuracy", seen_ ? double(correct_) / double(seen_)
                            : std::numeric_limits<double>::quiet_NaN()};
}

void Accuracy::reset() { correct_ = seen_ = 0; }

} // namespace metric

} // namespace dlc::gluon
