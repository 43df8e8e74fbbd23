//===- Normalization.cpp - layer norm as one op; instance and group norm as chains ===//
//
// Layer norm, the transformers' normalization, is dlc.layer_norm: one pass per row for
// its statistics and output, one for the gradient (dlc.layer_norm_backward). Instance and
// group norm are a mean and a variance over some axes, a normalization and a per-channel
// (or per-group) affine map: existing ops (reductions, element-wise arithmetic, rsqrt)
// whose VJP rules give the gradient, and which dlc-fuse fuses into generated kernels
// when hybridized. 16-bit inputs compute their statistics in float32, as batch norm does.
//
//===----------------------------------------------------------------------===//
#include "../OpDefinitions.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <numeric>

namespace dlc {

namespace {

/// (x - mean) / sqrt(var + eps) over `axes` (kept), in float32 for 16-bit x.
Tensor standardize(const Tensor &x, const std::vector<int64_t> &axes, double eps) {
  bool narrow = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  Tensor wide = narrow ? x.astype(DType::f32) : x;
  Tensor mean = np::mean(wide, axes, /*keepdims=*/true);
  Tensor centered = wide - mean;
  Tensor var = np::mean(centered * centered, axes, /*keepdims=*/true);
  Tensor y = centered * np::rsqrt(var + eps);
  return narrow ? y.astype(x.dtype()) : y;
}

/// `v` (one value per index of `axis` of a rank-`rank` tensor) shaped to broadcast there.
Tensor alongAxis(const Tensor &v, int64_t axis, int64_t rank) {
  Shape shape(size_t(rank), 1);
  shape[size_t(axis)] = v.size();
  return v.reshape(shape);
}

int64_t normalizedAxis(const char *op, int64_t axis, const Tensor &x) {
  int64_t rank = x.ndim();
  if (axis < -rank || axis >= rank)
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for an input of shape " + shape_rules::str(x.shape()));
  return axis < 0 ? axis + rank : axis;
}

void requireVector(const char *op, const char *name, const Tensor &v, int64_t size,
                   const Tensor &x, const std::string &of) {
  if (v.defined() && (v.ndim() != 1 || v.size() != size))
    throw ShapeError(std::string(op) + ": " + name + " " + shape_rules::str(v.shape()) +
                     " must hold " + std::to_string(size) + " values, one per " + of +
                     " of the input " + shape_rules::str(x.shape()));
}

Tensor affine(Tensor y, const Tensor &gamma, const Tensor &beta, int64_t axis, int64_t rank) {
  if (gamma.defined())
    y = y * alongAxis(gamma.astype(y.dtype()), axis, rank);
  if (beta.defined())
    y = y + alongAxis(beta.astype(y.dtype()), axis, rank);
  return y;
}

// (x, gamma, beta) -> (y, mean, var): x float32, float16 or bfloat16, the rest float32.
std::vector<TensorMeta> inferLayerNorm(const std::vector<TensorMeta> &in, const Attrs &a) {
  DType data = detail::require_one_float_dtype({in[0]});
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != DType::f32)
      throw DTypeError(std::string("needs float32 gamma and beta (also for ") +
                       dtype_name(data) + " data), got " + dtype_name(in[i].dtype) +
                       " for operand #" + std::to_string(i));
  Shape stats = detail::checked(
      shape_rules::layerNormStats(in[0].shape, a.get(op_attrs::layer_norm::axis), in[1].shape,
                                  in[2].shape));
  return {in[0], {stats, DType::f32}, {stats, DType::f32}};
}

// (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta)
std::vector<TensorMeta> inferLayerNormBackward(const std::vector<TensorMeta> &in,
                                               const Attrs &a) {
  DType data = detail::require_one_float_dtype({in[0], in[1]});
  for (size_t i = 2; i < in.size(); ++i)
    if (in[i].dtype != DType::f32)
      throw DTypeError(std::string("needs float32 gamma and statistics (also for ") +
                       dtype_name(data) + " data), got " + dtype_name(in[i].dtype) +
                       " for operand #" + std::to_string(i));
  if (in[0].shape != in[1].shape)
    throw ShapeError("the output gradient " + shape_rules::str(in[0].shape) +
                     " must have the input's shape " + shape_rules::str(in[1].shape));
  Shape stats = detail::checked(shape_rules::layerNormStats(
      in[1].shape, a.get(op_attrs::layer_norm_backward::axis), in[2].shape, in[2].shape));
  for (size_t i : {size_t(3), size_t(4)})
    if (in[i].shape != stats)
      throw ShapeError(std::string(i == 3 ? "mean " : "var ") + shape_rules::str(in[i].shape) +
                       " must be " + shape_rules::str(stats) +
                       ", the statistics of input " + shape_rules::str(in[1].shape));
  return {in[1], in[2], in[2]};
}

std::vector<Tensor> vjpLayerNorm(const VjpContext &c) {
  for (size_t k = 1; k < c.output_grads.size(); ++k)
    if (c.output_grads[k].defined())
      throw UnsupportedError("backward: gradients through the statistics that layer_norm "
                             "returns are not supported");
  if (!c.output_grads[0].defined())
    return {Tensor(), Tensor(), Tensor()};
  npx::LayerNormGrads grads = npx::layer_norm_backward(
      c.output_grads[0], c.inputs[0], c.inputs[1], c.outputs[1], c.outputs[2],
      c.attrs.get(op_attrs::layer_norm::axis), c.attrs.get(op_attrs::layer_norm::epsilon));
  return {grads.input, grads.gamma, grads.beta};
}

} // namespace

void detail::register_norm_ops() {
  register_op(caller_runnable({"layer_norm", ops::layer_norm, inferLayerNorm, vjpLayerNorm}));
  register_op(caller_runnable({"layer_norm_backward", ops::layer_norm_backward,
                               inferLayerNormBackward, vjp_not_implemented}));
}

npx::LayerNormResult npx::layer_norm_with_stats(const Tensor &x, const Tensor &gamma,
                                                const Tensor &beta, int64_t axis, double eps) {
  static const OpDef &op = find_op("layer_norm");
  std::vector<Tensor> out =
      invoke(op, {x, gamma, beta}, Attrs{{"axis", axis}, {"epsilon", eps}});
  return {out[0], out[1], out[2]};
}

npx::LayerNormGrads npx::layer_norm_backward(const Tensor &dy, const Tensor &x,
                                             const Tensor &gamma, const Tensor &mean,
                                             const Tensor &var, int64_t axis, double eps) {
  static const OpDef &op = find_op("layer_norm_backward");
  std::vector<Tensor> out =
      invoke(op, {dy, x, gamma, mean, var}, Attrs{{"axis", axis}, {"epsilon", eps}});
  return {out[0], out[1], out[2]};
}

Tensor npx::layer_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta, int64_t axis,
                       double eps) {
  int64_t a = normalizedAxis("layer_norm", axis, x);
  const int64_t size = x.shape()[size_t(a)];
  requireVector("layer_norm", "gamma", gamma, size, x, "index of axis " + std::to_string(a));
  requireVector("layer_norm", "beta", beta, size, x, "index of axis " + std::to_string(a));
  // The op takes float32 vectors: a missing one is its identity, a 16-bit one (a network
  // cast() to float16) is widened, and its gradient narrowed back by astype's VJP.
  auto vector = [&](const Tensor &v, double identity) {
    if (!v.defined())
      return np::full({size}, identity, DType::f32, x.device());
    return v.dtype() == DType::f32 ? v : v.astype(DType::f32);
  };
  return layer_norm_with_stats(x, vector(gamma, 1.0), vector(beta, 0.0), a, eps).output;
}

Tensor npx::instance_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta, double eps) {
  if (x.ndim() < 3)
    throw ShapeError("instance_norm: expects (N, C, spatial...) input, got " +
                     shape_rules::str(x.shape()));
  requireVector("instance_norm", "gamma", gamma, x.shape()[1], x, "channel");
  requireVector("instance_norm", "beta", beta, x.shape()[1], x, "channel");
  std::vector<int64_t> spatial(size_t(x.ndim() - 2));
  std::iota(spatial.begin(), spatial.end(), 2);
  return affine(standardize(x, spatial, eps), gamma, beta, 1, x.ndim());
}

Tensor npx::group_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                       int64_t num_groups, double eps) {
  if (x.ndim() < 2 || num_groups < 1 || x.shape()[1] % num_groups != 0)
    throw ShapeError("group_norm: the " + std::string(x.ndim() < 2 ? "input " : "channels of ") +
                     shape_rules::str(x.shape()) + " must split into " +
                     std::to_string(num_groups) + " groups (axis 1)");
  requireVector("group_norm", "gamma", gamma, num_groups, x, "group");
  requireVector("group_norm", "beta", beta, num_groups, x, "group");
  // (N, G, C/G * spatial): each group's statistics over its last axis.
  Shape grouped{x.shape()[0], num_groups, -1};
  Tensor y = standardize(x.reshape(grouped), {2}, eps);
  return affine(y, gamma, beta, 1, 3).reshape(x.shape());
}

} // namespace dlc
