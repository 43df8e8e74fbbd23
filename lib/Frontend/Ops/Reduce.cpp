//===- Reduce.cpp - reductions, argmax, softmax -------------------------------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NumPy.h"

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

// The dialect's ReduceKind numbers.
enum Kind : int64_t { sum = 0, mean = 1, max = 2, min = 3 };

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
  register_op({"reduce", "dlc.reduce", inferReduce});
  register_op({"argmax", "dlc.argmax", inferArgmax});
  register_op({"softmax", "dlc.softmax", inferSoftmax});
  register_op({"log_softmax", "dlc.log_softmax", inferSoftmax});
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
Tensor npx::log_softmax(const Tensor &x, int64_t axis) {
  return softmaxLike("log_softmax", x, axis);
}

} // namespace dlc
