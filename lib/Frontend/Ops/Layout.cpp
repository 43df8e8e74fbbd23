//===- Layout.cpp - reshape, transpose, concatenate, split, flatten ----------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

#include <numeric>

namespace dlc {

namespace {

std::vector<TensorMeta> inferTranspose(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  return detail::sameDType(
      in, detail::checked(shape_rules::transpose(in[0].shape, attrs.get_ints("permutation", {}))));
}

std::vector<TensorMeta> inferConcat(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  detail::require_same_dtype(in);
  std::vector<Shape> shapes;
  for (const TensorMeta &meta : in)
    shapes.push_back(meta.shape);
  return detail::sameDType(
      in, detail::checked(shape_rules::concat(shapes, attrs.get_int("axis", 0))));
}

std::vector<TensorMeta> inferSplit(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  const Shape &shape = in[0].shape;
  int64_t axis = attrs.get_int("axis", 0);
  int64_t a = shape_rules::normalizeAxis(axis, int64_t(shape.size()));
  if (a < 0)
    throw ShapeError("axis " + std::to_string(axis) + " is out of range for " +
                     shape_rules::str(shape));
  std::vector<int64_t> sizes = attrs.get_ints("sizes", {});
  int64_t total = 0;
  std::vector<TensorMeta> parts;
  for (int64_t size : sizes) {
    if (size < 0)
      throw ShapeError("part sizes must be >= 0");
    total += size;
    Shape part = shape;
    part[size_t(a)] = size;
    parts.push_back({part, in[0].dtype});
  }
  if (sizes.empty() || total != shape[size_t(a)])
    throw ShapeError("parts of sizes " + shape_rules::str(sizes) + " do not add up to " +
                     std::to_string(shape[size_t(a)]) + ", the size of axis " +
                     std::to_string(axis) + " of " + shape_rules::str(shape));
  return parts;
}

// The inverse permutation undoes a transpose.
std::vector<Tensor> vjpTranspose(const VjpContext &c) {
  std::vector<int64_t> permutation = c.attrs.get_ints("permutation", {});
  std::vector<int64_t> inverse(permutation.size());
  for (size_t i = 0; i < permutation.size(); ++i)
    inverse[size_t(permutation[i])] = int64_t(i);
  return {np::transpose(c.output_grads[0], inverse)};
}

// Each input gets its part of the gradient.
std::vector<Tensor> vjpConcat(const VjpContext &c) {
  int64_t axis = c.attrs.get_int("axis", 0);
  int64_t a = shape_rules::normalizeAxis(axis, c.output_grads[0].ndim());
  std::vector<int64_t> sizes;
  for (const Tensor &input : c.inputs)
    sizes.push_back(input.shape()[size_t(a)]);
  return np::split_sizes(c.output_grads[0], sizes, axis);
}

// The parts' gradients join again; parts that got none contribute zeros.
std::vector<Tensor> vjpSplit(const VjpContext &c) {
  std::vector<Tensor> parts;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const Tensor &g = k < c.output_grads.size() ? c.output_grads[k] : Tensor();
    parts.push_back(g.defined() ? g
                                : np::zeros(c.outputs[k].shape(), c.outputs[k].dtype(),
                                            c.outputs[k].device()));
  }
  return {np::concatenate(parts, c.attrs.get_int("axis", 0))};
}

} // namespace

void detail::register_layout_ops() {
  register_op(caller_runnable({"transpose", ops::transpose, inferTranspose, vjpTranspose}));
  register_op(caller_runnable({"concatenate", ops::concat, inferConcat, vjpConcat}));
  register_op(caller_runnable({"split", ops::split, inferSplit, vjpSplit}));
}

Tensor np::reshape(const Tensor &x, const Shape &shape) { return x.reshape(shape); }

Tensor np::transpose(const Tensor &x, const std::vector<int64_t> &axes) {
  static const OpDef &op = find_op("transpose");
  std::vector<int64_t> permutation = axes;
  if (permutation.empty()) {
    permutation.resize(size_t(x.ndim()));
    std::iota(permutation.rbegin(), permutation.rend(), 0);
  }
  return invoke1(op, {x}, Attrs{{"permutation", permutation}});
}

Tensor np::concatenate(const std::vector<Tensor> &tensors, int64_t axis) {
  static const OpDef &op = find_op("concatenate");
  if (tensors.empty())
    throw ShapeError("concatenate: needs at least one tensor");
  return invoke1(op, tensors, Attrs{{"axis", axis}});
}

std::vector<Tensor> np::split_sizes(const Tensor &x, const std::vector<int64_t> &sizes,
                                    int64_t axis) {
  static const OpDef &op = find_op("split");
  return invoke(op, {x}, Attrs{{"axis", axis}, {"sizes", sizes}});
}

std::vector<Tensor> np::split(const Tensor &x, int64_t sections, int64_t axis) {
  int64_t a = shape_rules::normalizeAxis(axis, x.ndim());
  if (a < 0)
    throw ShapeError("split: axis " + std::to_string(axis) + " is out of range for " +
                     shape_rules::str(x.shape()));
  int64_t extent = x.shape()[size_t(a)];
  if (sections <= 0 || extent % sections != 0)
    throw ShapeError("split: axis " + std::to_string(axis) + " of " +
                     shape_rules::str(x.shape()) + " (size " + std::to_string(extent) +
                     ") does not split into " + std::to_string(sections) + " equal parts");
  return split_sizes(x, std::vector<int64_t>(size_t(sections), extent / sections), axis);
}

Tensor npx::batch_flatten(const Tensor &x) {
  return x.reshape(detail::checked(shape_rules::flatten(x.shape())));
}

} // namespace dlc
