//===- Optimizer.cpp - fused optimizer updates (eager only) -------------------===//
//
// MXNet's optimizers call one op per parameter and step (adam_update, sgd_mom_update);
// written with separate element-wise ops the same update is a dozen calls, each a pass
// over the parameter and, on a GPU, a kernel launch. These ops have no dialect op: a
// traced step keeps the separate ops, which dlc-fuse fuses into one loop.
//
//===----------------------------------------------------------------------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Core/OpFacts.h"

namespace dlc {

namespace {

/// Every input float32, the first `sameShape` of one shape, the last a 0-d rate; the
/// outputs are `outputs` tensors of that shape.
std::vector<TensorMeta> inferUpdate(const std::vector<TensorMeta> &in, size_t sameShape,
                                    size_t outputs) {
  detail::require_float32(in);
  for (size_t i = 1; i < sameShape; ++i)
    if (in[i].shape != in[0].shape)
      throw ShapeError("the weight " + shape_rules::str(in[0].shape) + ", its gradient and "
                       "its optimizer state must have one shape, input #" +
                       std::to_string(i) + " is " + shape_rules::str(in[i].shape));
  if (!in.back().shape.empty())
    throw ShapeError("the rate must be a 0-d tensor, got " + shape_rules::str(in.back().shape));
  return std::vector<TensorMeta>(outputs, in[0]);
}

std::vector<TensorMeta> inferAdam(const std::vector<TensorMeta> &in, const Attrs &) {
  return inferUpdate(in, 4, 3);
}

std::vector<TensorMeta> inferMomentum(const std::vector<TensorMeta> &in, const Attrs &) {
  return inferUpdate(in, 3, 2);
}

std::vector<TensorMeta> inferSgd(const std::vector<TensorMeta> &in, const Attrs &) {
  return inferUpdate(in, 2, 1);
}

} // namespace

void detail::register_optimizer_ops() {
  // No VJP: an update's outputs carry no gradient. Element-wise, so a tiny one (a bias)
  // may run on the caller.
  register_op(caller_runnable({"adam_update", ops::adam_update, inferAdam}));
  register_op(caller_runnable({"sgd_momentum_update", ops::sgd_momentum_update, inferMomentum}));
  register_op(caller_runnable({"sgd_update", ops::sgd_update, inferSgd}));
}

namespace {

Attrs adamAttrs(double beta1, double beta2, double epsilon, double rescale_grad) {
  return Attrs{{"beta1", beta1}, {"beta2", beta2}, {"epsilon", epsilon},
               {"rescale_grad", rescale_grad}};
}

Attrs momentumAttrs(double mu, bool nesterov, double rescale_grad) {
  return Attrs{{"momentum", mu}, {"nesterov", nesterov}, {"rescale_grad", rescale_grad}};
}

} // namespace

npx::AdamUpdate npx::adam_update(const Tensor &weight, const Tensor &grad, const Tensor &mean,
                                 const Tensor &var, const Tensor &rate, double beta1,
                                 double beta2, double epsilon, double rescale_grad) {
  static const OpDef &op = find_op("adam_update");
  std::vector<Tensor> out = invoke(op, {weight, grad, mean, var, rate},
                                   adamAttrs(beta1, beta2, epsilon, rescale_grad));
  return {out[0], out[1], out[2]};
}

npx::MomentumUpdate npx::sgd_momentum_update(const Tensor &weight, const Tensor &grad,
                                             const Tensor &momentum, const Tensor &rate,
                                             double mu, bool nesterov, double rescale_grad) {
  static const OpDef &op = find_op("sgd_momentum_update");
  std::vector<Tensor> out =
      invoke(op, {weight, grad, momentum, rate}, momentumAttrs(mu, nesterov, rescale_grad));
  return {out[0], out[1]};
}

Tensor npx::sgd_update(const Tensor &weight, const Tensor &grad, const Tensor &rate,
                       double rescale_grad) {
  static const OpDef &op = find_op("sgd_update");
  return invoke(op, {weight, grad, rate}, Attrs{{"rescale_grad", rescale_grad}})[0];
}

void npx::adam_update_in_place(const Tensor &weight, const Tensor &grad, const Tensor &mean,
                               const Tensor &var, const Tensor &rate, double beta1,
                               double beta2, double epsilon, double rescale_grad) {
  static const OpDef &op = find_op("adam_update");
  invoke_into(op, {weight, grad, mean, var, rate}, adamAttrs(beta1, beta2, epsilon, rescale_grad),
              {weight, mean, var});
}

void npx::sgd_momentum_update_in_place(const Tensor &weight, const Tensor &grad,
                                       const Tensor &momentum, const Tensor &rate, double mu,
                                       bool nesterov, double rescale_grad) {
  static const OpDef &op = find_op("sgd_momentum_update");
  invoke_into(op, {weight, grad, momentum, rate}, momentumAttrs(mu, nesterov, rescale_grad),
              {weight, momentum});
}

void npx::sgd_update_in_place(const Tensor &weight, const Tensor &grad, const Tensor &rate,
                              double rescale_grad) {
  static const OpDef &op = find_op("sgd_update");
  invoke_into(op, {weight, grad, rate}, Attrs{{"rescale_grad", rescale_grad}}, {weight});
}

} // namespace dlc
