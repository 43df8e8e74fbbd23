//===- Reduce.cpp - reductions, argmax, softmax -------------------------------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

#include <limits>
#include <numeric>

namespace dlc {

namespace {

std::vector<TensorMeta> inferReduce(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  if (in[0].dtype == DType::boolean)
    throw DTypeError("reductions of bool tensors are not supported; astype() it first");
  return detail::sameDType(in, detail::checked(shape_rules::reduce(
                                   in[0].shape, attrs.get_ints("axes", {}),
                                   attrs.get_bool("keepdims", false))));
}

std::vector<TensorMeta> inferArgmax(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  Shape shape = detail::checked(shape_rules::reduce(
      in[0].shape, {attrs.get_int("axis", 0)}, attrs.get_bool("keepdims", false)));
  return {{shape, DType::i64}};
}

std::vector<TensorMeta> inferSoftmax(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  int64_t axis = attrs.get_int("axis", -1);
  if (shape_rules::normalizeAxis(axis, int64_t(in[0].shape.size())) < 0)
    throw ShapeError("axis " + std::to_string(axis) + " is out of range for " +
                     shape_rules::str(in[0].shape));
  if (!is_floating(in[0].dtype))
    throw DTypeError(std::string("needs a floating-point tensor, got ") +
                     dtype_name(in[0].dtype));
  return {in[0]};
}

using Kind = op_enums::ReduceKind;

/// The reduced shape with the reduced axes kept as 1, for broadcasting back.
Shape keptShape(const Shape &input, const std::vector<int64_t> &axes) {
  return detail::checked(shape_rules::reduce(input, axes, /*keepdims=*/true));
}

// sum and mean spread the gradient over the reduced elements; max and min send it to
// the elements equal to the result, split evenly among ties.
std::vector<Tensor> vjpReduce(const VjpContext &c) {
  const Tensor &x = c.inputs[0];
  std::vector<int64_t> axes = c.attrs.get_ints("axes", {});
  Shape kept = keptShape(x.shape(), axes);
  Tensor g = np::broadcast_to(c.output_grads[0].reshape(kept), x.shape());
  auto kind = Kind(c.attrs.get_int("kind", int64_t(Kind::sum)));
  if (kind == Kind::sum)
    return {g};
  if (kind == Kind::mean)
    return {g / double(x.size() / std::max<int64_t>(1, c.outputs[0].size()))};
  Tensor winners = (x == c.outputs[0].reshape(kept)).astype(x.dtype());
  Tensor ties = np::sum(winners, axes, /*keepdims=*/true);
  return {g * winners / ties};
}

// dx = y * (g - sum(g * y)) along the axis
std::vector<Tensor> vjpSoftmax(const VjpContext &c) {
  const Tensor &y = c.outputs[0], &g = c.output_grads[0];
  int64_t axis = c.attrs.get_int("axis", -1);
  return {y * (g - np::sum(g * y, {axis}, /*keepdims=*/true))};
}

// dx = g - softmax(x) * sum(g) along the axis
std::vector<Tensor> vjpLogSoftmax(const VjpContext &c) {
  const Tensor &y = c.outputs[0], &g = c.output_grads[0];
  int64_t axis = c.attrs.get_int("axis", -1);
  return {g - np::exp(y) * np::sum(g, {axis}, /*keepdims=*/true)};
}

Tensor reduce(const Tensor &x, std::vector<int64_t> axes, bool keepdims, Kind kind) {
  static const OpDef &op = find_op("reduce");
  if (x.ndim() == 0) // nothing to reduce over
    return x.copyto(x.device());
  if (axes.empty()) {
    axes.resize(size_t(x.ndim()));
    std::iota(axes.begin(), axes.end(), 0);
  }
  return invoke1(op, {x},
                 Attrs{{"kind", int64_t(kind)}, {"axes", axes}, {"keepdims", keepdims}});
}

Tensor softmaxLike(const char *name, const Tensor &x, int64_t axis) {
  return invoke1(find_op(name), {x}, Attrs{{"axis", axis}});
}

} // namespace

void detail::register_reduce_ops() {
  register_op(caller_runnable({"reduce", ops::reduce, inferReduce, vjpReduce}));
  register_op(caller_runnable({"argmax", ops::argmax, inferArgmax})); // no gradient
  register_op(caller_runnable({"softmax", ops::softmax, inferSoftmax, vjpSoftmax}));
  register_op(caller_runnable({"log_softmax", ops::log_softmax, inferSoftmax, vjpLogSoftmax}));
}

Tensor np::sum(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims) {
  return reduce(x, axes, keepdims, Kind::sum);
}
Tensor np::mean(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims) {
  return reduce(x, axes, keepdims, Kind::mean);
}
Tensor np::max(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims) {
  return reduce(x, axes, keepdims, Kind::max);
}
Tensor np::min(const Tensor &x, const std::vector<int64_t> &axes, bool keepdims) {
  return reduce(x, axes, keepdims, Kind::min);
}

Tensor np::argmax(const Tensor &x, int64_t axis, bool keepdims) {
  static const OpDef &op = find_op("argmax");
  return invoke1(op, {x}, Attrs{{"axis", axis}, {"keepdims", keepdims}});
}

Tensor npx::softmax(const Tensor &x, int64_t axis) { return softmaxLike("softmax", x, axis); }

namespace {
/// x / temperature where `mask` holds, the dtype's lowest value elsewhere: softmax gives
/// the masked elements exp(lowest - max) = 0 unless a whole row is masked, which the
/// callers zero. Dialect ops only (where, div, softmax), so it traces and compiles as is.
Tensor maskedLogits(const char *op, const Tensor &x, const Tensor &mask, double temperature) {
  if (mask.dtype() != DType::boolean)
    throw DTypeError(std::string(op) + ": the mask must be boolean (true: keep), got " +
                     dtype_name(mask.dtype()) + "; add an additive mask to the input instead");
  if (!(temperature > 0))
    throw ValueError(std::string(op) + ": temperature must be > 0, got " +
                     std::to_string(temperature));
  double lowest = x.dtype() == DType::f16    ? -65504.0
                  : x.dtype() == DType::bf16 ? -3.3895313892515355e38
                                             : double(std::numeric_limits<float>::lowest());
  Tensor scaled = temperature == 1.0 ? x : x / temperature;
  return np::where(mask, scaled, np::full({}, lowest, x.dtype(), x.device()));
}
} // namespace

Tensor npx::masked_softmax(const Tensor &x, const Tensor &mask, int64_t axis,
                           double temperature) {
  Tensor y = softmax(maskedLogits("masked_softmax", x, mask, temperature), axis);
  return y * mask.astype(x.dtype());
}

Tensor npx::masked_log_softmax(const Tensor &x, const Tensor &mask, int64_t axis,
                               double temperature) {
  Tensor y = log_softmax(maskedLogits("masked_log_softmax", x, mask, temperature), axis);
  return np::where(mask, y,
                   np::full({}, -std::numeric_limits<double>::infinity(), x.dtype(), x.device()));
}
Tensor npx::log_softmax(const Tensor &x, int64_t axis) {
  return softmaxLike("log_softmax", x, axis);
}

} // namespace dlc
