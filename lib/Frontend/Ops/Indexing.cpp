//===- Indexing.cpp - take (embedding lookup), slice and their gradients -----===//
#include "../OpDefinitions.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/NumPy.h"

namespace dlc {

namespace {

void requireIndices(const TensorMeta &indices, const char *op) {
  if (indices.dtype != DType::i32 && indices.dtype != DType::i64)
    throw DTypeError(std::string(op) + ": indices must be int32 or int64, got " +
                     dtype_name(indices.dtype));
}

std::vector<TensorMeta> inferTake(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  requireIndices(in[1], "take");
  return detail::sameDType(
      in, detail::checked(shape_rules::take(in[0].shape, in[1].shape, attrs.get_int("axis", 0))));
}

std::vector<TensorMeta> inferTakeBackward(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  if (in[0].dtype != DType::f32)
    throw DTypeError(std::string("take_backward: the gradient must be float32, got ") +
                     dtype_name(in[0].dtype));
  requireIndices(in[1], "take_backward");
  return {{detail::checked(shape_rules::takeBackward(in[0].shape, in[1].shape,
                                                     attrs.get_int("axis", 0),
                                                     attrs.get_int("size", -1))),
           DType::f32}};
}

// The input's gradient: each slice of the output's added where it was taken, in
// float32 (a 16-bit input's is rounded once at the end); the indices get none.
std::vector<Tensor> vjpTake(const VjpContext &c) {
  const Tensor &input = c.inputs[0];
  if (!c.wants_grad(0) || !is_floating(input.dtype()))
    return {Tensor(), Tensor()};
  int64_t axis = shape_rules::normalizeAxis(c.attrs.get_int("axis", 0), input.ndim());
  Tensor grad = c.output_grads[0];
  const bool narrow = grad.dtype() != DType::f32;
  if (narrow)
    grad = grad.astype(DType::f32);
  Tensor dx = npx::take_backward(grad, c.inputs[1], axis, input.shape()[size_t(axis)]);
  return {narrow ? dx.astype(input.dtype()) : dx, Tensor()};
}

shape_rules::SliceParams sliceParams(const Attrs &attrs) {
  return {attrs.get_ints("begin", {}), attrs.get_ints("end", {}), attrs.get_ints("step", {})};
}

std::vector<TensorMeta> inferSlice(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  return detail::sameDType(
      in, detail::checked(shape_rules::slice(in[0].shape, sliceParams(attrs))));
}

std::vector<TensorMeta> inferSliceBackward(const std::vector<TensorMeta> &in,
                                           const Attrs &attrs) {
  return detail::sameDType(
      in, detail::checked(shape_rules::sliceBackward(in[0].shape, attrs.get_ints("shape", {}),
                                                     sliceParams(attrs))));
}

/// The slice op with resolved positions.
Tensor sliceAt(const Tensor &x, const shape_rules::SliceParams &p) {
  static const OpDef &op = find_op("slice");
  return invoke1(op, {x}, Attrs{{"begin", p.begin}, {"end", p.end}, {"step", p.step}});
}

// The slice's gradient goes back where the slice was taken; slice_backward's (it is
// linear) is the same slice of its output gradient.
std::vector<Tensor> vjpSlice(const VjpContext &c) {
  shape_rules::SliceParams p = sliceParams(c.attrs);
  return {npx::slice_backward(c.output_grads[0], c.inputs[0].shape(), p.begin, p.end, p.step)};
}

std::vector<Tensor> vjpSliceBackward(const VjpContext &c) {
  return {sliceAt(c.output_grads[0], sliceParams(c.attrs))};
}

} // namespace

void detail::register_index_ops() {
  register_op(caller_runnable({"take", ops::take, inferTake, vjpTake}));
  register_op(caller_runnable(
      {"take_backward", ops::take_backward, inferTakeBackward, vjp_not_implemented}));
  register_op(caller_runnable({"slice", ops::slice, inferSlice, vjpSlice}));
  register_op(caller_runnable(
      {"slice_backward", ops::slice_backward, inferSliceBackward, vjpSliceBackward}));
}

Tensor np::take(const Tensor &a, const Tensor &indices, int64_t axis) {
  static const OpDef &op = find_op("take");
  return invoke1(op, {a, indices}, Attrs{{"axis", axis}});
}

Tensor np::take(const Tensor &a, const Tensor &indices) {
  return take(a.reshape({a.size()}), indices, 0);
}

Tensor npx::embedding(const Tensor &data, const Tensor &weight) {
  if (weight.ndim() != 2)
    throw ShapeError("embedding: the weight must be (input_dim, output_dim), got " +
                     shape_rules::str(weight.shape()));
  Tensor ids = is_floating(data.dtype()) ? data.astype(DType::i64) : data;
  return np::take(weight, ids, 0);
}

Tensor npx::take_backward(const Tensor &grad, const Tensor &indices, int64_t axis,
                          int64_t size) {
  static const OpDef &op = find_op("take_backward");
  return invoke1(op, {grad, indices}, Attrs{{"axis", axis}, {"size", size}});
}

Tensor npx::slice(const Tensor &x, const std::vector<SliceRange> &ranges) {
  const Shape &shape = x.shape();
  if (ranges.size() > shape.size())
    throw ShapeError("slice: " + std::to_string(ranges.size()) + " ranges for input " +
                     shape_rules::str(shape) + " of rank " + std::to_string(shape.size()));
  shape_rules::SliceParams p;
  for (size_t d = 0; d < shape.size(); ++d) {
    SliceRange r = d < ranges.size() ? ranges[d] : SliceRange{};
    if (r.step == 0)
      throw ValueError("slice: the step of axis " + std::to_string(d) + " of input " +
                       shape_rules::str(shape) + " is 0");
    auto [begin, end] = shape_rules::resolveSlice(r.begin, r.end, r.step, shape[d]);
    p.begin.push_back(begin);
    p.end.push_back(end);
    p.step.push_back(r.step);
  }
  return sliceAt(x, p);
}

Tensor npx::slice_axis(const Tensor &x, int64_t axis, int64_t begin, std::optional<int64_t> end) {
  int64_t a = shape_rules::normalizeAxis(axis, x.ndim());
  if (a < 0)
    throw ShapeError("slice_axis: axis " + std::to_string(axis) + " is out of range for input " +
                     shape_rules::str(x.shape()));
  std::vector<SliceRange> ranges(size_t(a) + 1);
  ranges[size_t(a)] = {begin, end, 1};
  return slice(x, ranges);
}

Tensor npx::slice_backward(const Tensor &grad, const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &begin, const std::vector<int64_t> &end,
                           const std::vector<int64_t> &step) {
  static const OpDef &op = find_op("slice_backward");
  return invoke1(op, {grad},
                 Attrs{{"begin", begin}, {"end", end}, {"step", step}, {"shape", shape}});
}

} // namespace dlc
