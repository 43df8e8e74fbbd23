//===- Indexing.cpp - take (embedding lookup) and its gradient ---------------===//
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

} // namespace

void detail::register_index_ops() {
  register_op(caller_runnable({"take", ops::take, inferTake, vjpTake}));
  register_op(caller_runnable(
      {"take_backward", ops::take_backward, inferTakeBackward, vjp_not_implemented}));
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

} // namespace dlc
