//===- OpsTensor.cpp - ONNX's shape, indexing and constant ops with dlc's -------===//
//
// Shapes, axes and bounds come from known inputs (OpContext::ints): exporters compute
// them with Shape, Gather and Concat, which run on the host while the block is traced.
//
//===----------------------------------------------------------------------===//
#include "Ops.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace dlc::onnx::detail {
namespace {

using Tensors = std::vector<Tensor>;

Shape reshapeTarget(const OpContext &c, const Shape &from, std::vector<int64_t> target) {
  bool allowZero = c.attr_int("allowzero", 0) != 0;
  int64_t known = 1, unknown = -1;
  for (size_t a = 0; a < target.size(); ++a) {
    if (target[a] == 0 && !allowZero) {
      if (a >= from.size())
        c.fail("shape " + shape_rules::str(target) + " copies dimension " + std::to_string(a) +
               " of a rank-" + std::to_string(from.size()) + " input");
      target[a] = from[a];
    }

    if (target[a] == -1) {
      if (unknown >= 0)
        c.fail("shape " + shape_rules::str(target) + " has two -1 dimensions");
      unknown = int64_t(a);
    } else if (target[a] < 0) {
      c.fail("shape " + shape_rules::str(target) + " has a negative dimension");
    } else {
      if (target[a] > 0 && known > std::numeric_limits<int64_t>::max() / target[a])
        c.fail("shape " + shape_rules::str(target) + " overflows");
      known *= target[a];
    }
  }
  int64_t total = shape_rules::numElements(from);
  if (unknown >= 0) {
    if (known == 0 || total % known != 0)
      c.fail("cannot reshape " + shape_rules::str(from) + " to " + shape_rules::str(target));
    target[size_t(unknown)] = total / known;
  } else if (known != total) {
    c.fail("cannot reshape " + shape_rules::str(from) + " (" + std::to_string(total) +
           " elements) to " + shape_rules::str(target));
  }
  return target;
}

Tensor reshape(const Tensor &x, const Shape &shape) {
  return x.shape() == shape ? x : np::reshape(x, shape);
}

std::vector<int64_t> axesOf(const OpContext &c, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t &a : axes)
    a = c.axis(a, rank);
  return axes;
}

Tensor squeeze(const OpContext &c) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = c.has(1) ? c.ints(1) : c.attr_ints("axes");
  axes = axesOf(c, axes, x.ndim());
  Shape out;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    bool listed = std::find(axes.begin(), axes.end(), a) != axes.end();
    int64_t d = x.shape()[size_t(a)];
    if (listed && d != 1)
      c.fail("axis " + std::to_string(a) + " of " + shape_rules::str(x.shape()) +
             " is not of size 1");
    if (listed || (axes.empty() && d == 1))
      continue;
    out.push_back(d);
  }
  return reshape(x, out);
}

Tensor unsqueeze(const OpContext &c) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = c.has(1) ? c.ints(1) : c.attr_ints("axes");
  int64_t rank = x.ndim() + int64_t(axes.size());
  axes = axesOf(c, axes, rank);
  std::sort(axes.begin(), axes.end());
  Shape out;
  size_t next = 0;
  for (int64_t a = 0; a < rank; ++a) {
    if (std::binary_search(axes.begin(), axes.end(), a))
      out.push_back(1);
    else
      out.push_back(x.shape()[next++]);
  }
  return reshape(x, out);
}

Tensor flatten(const OpContext &c) {
  Tensor x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  axis = axis < 0 ? axis + x.ndim() : axis;
  if (axis < 0 || axis > x.ndim())
    c.fail("axis " + std::to_string(c.attr_int("axis", 1)) + " for rank " +
           std::to_string(x.ndim()));
  int64_t rows = 1, cols = 1;
  for (int64_t a = 0; a < x.ndim(); ++a)
    (a < axis ? rows : cols) *= x.shape()[size_t(a)];
  return reshape(x, {rows, cols});
}

Tensors split(const OpContext &c) {
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.ndim());
  size_t parts = c.node().outputs.size();
  if (c.has(1))
    return np::split_sizes(x, c.ints(1), axis);
  if (c.has_attr("split")) // before opset 13
    return np::split_sizes(x, c.attr_ints("split"), axis);
  int64_t size = x.shape()[size_t(axis)];
  if (c.has_attr("num_outputs"))
    parts = size_t(c.attr_int("num_outputs", 1));
  if (parts == 0)
    c.fail("no outputs");
  // Equal parts, the last one smaller where the size does not divide (opset 18).
  int64_t each = (size + int64_t(parts) - 1) / int64_t(parts);
  std::vector<int64_t> sizes(parts, each);
  sizes.back() = size - each * int64_t(parts - 1);
  if (sizes.back() < 0)
    c.fail("cannot split " + std::to_string(size) + " into " + std::to_string(parts) + " parts");
  return np::split_sizes(x, sizes, axis);
}

Tensor slice(const OpContext &c) {
  Tensor x = c.in(0);
  std::vector<int64_t> starts = c.ints(1), ends = c.ints(2);
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (c.has(3))
    axes = c.ints(3);
  std::vector<int64_t> steps(starts.size(), 1);
  if (c.has(4))
    steps = c.ints(4);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    c.fail("starts, ends, axes and steps of different lengths");
  std::vector<npx::SliceRange> ranges(size_t(x.ndim()));
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = c.axis(axes[i], x.ndim());
    if (steps[i] == 0)
      c.fail("a step of 0");
    ranges[size_t(a)] = {starts[i], ends[i], steps[i]};
  }
  return npx::slice(x, ranges);
}

Tensor gather(const OpContext &c) {
  Tensor data = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), data.ndim());
  return np::take(data, c.in(1), axis);
}

/// Indices made non-negative (ONNX allows counting from the end), as int64.
Tensor wrapIndices(const Tensor &indices, int64_t size) {
  Tensor i = indices.dtype() == DType::i64 ? indices : indices.astype(DType::i64);
  Tensor zero = np::full({}, 0, DType::i64, i.device());
  Tensor n = np::full({}, double(size), DType::i64, i.device());
  return np::where(np::less(i, zero), np::add(i, n), i);
}

/// GatherElements: out[i, j, k] = data[i, indices[i, j, k], k] (axis 1): one take from the
/// flattened data at linear positions built from the indices and each axis' position.
Tensor gatherElements(const OpContext &c) {
  Tensor data = c.in(0), indices = c.in(1);
  if (data.ndim() != indices.ndim())
    c.fail("data " + shape_rules::str(data.shape()) + " and indices " +
           shape_rules::str(indices.shape()) + " of different ranks");
  int64_t axis = c.axis(c.attr_int("axis", 0), data.ndim());
  const Shape &out = indices.shape();
  Tensor linear;
  int64_t stride = 1;
  for (int64_t a = data.ndim() - 1; a >= 0; --a) {
    Tensor position;
    if (a == axis) {
      position = wrapIndices(indices, data.shape()[size_t(a)]);
    } else {
      Shape along(size_t(data.ndim()), 1);
      along[size_t(a)] = out[size_t(a)];
      position = np::reshape(np::arange(0, double(out[size_t(a)]), 1, DType::i64, data.device()),
                             along);
    }
    Tensor term = stride == 1 ? position
                              : np::multiply(position, np::full({}, double(stride), DType::i64,
                                                                data.device()));
    linear = linear.defined() ? np::add(linear, term) : term;
    stride *= data.shape()[size_t(a)];
  }
  linear = np::broadcast_to(linear, out);
  return np::take(np::reshape(data, {-1}), linear, 0);
}

/// GatherND (batch_dims 0): the last axis of `indices` (length k) addresses the first k
/// axes of data; one take along the merged first k axes.
Tensor gatherND(const OpContext &c) {
  Tensor data = c.in(0), indices = c.in(1);
  if (c.attr_int("batch_dims", 0) != 0)
    c.fail("batch_dims " + std::to_string(c.attr_int("batch_dims", 0)) + " (dlc: 0)");
  int64_t k = indices.ndim() < 1 ? 0 : indices.shape().back();
  if (k < 1 || k > data.ndim())
    c.fail("indices " + shape_rules::str(indices.shape()) + " for data " +
           shape_rules::str(data.shape()));
  Shape rest(data.shape().begin() + k, data.shape().end());
  Shape merged{-1};
  merged.insert(merged.end(), rest.begin(), rest.end());
  Tensor linear;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    std::vector<npx::SliceRange> pick(size_t(indices.ndim()));
    pick.back() = {j, j + 1, 1};
    Shape lead(indices.shape().begin(), indices.shape().end() - 1);
    Tensor position = wrapIndices(np::reshape(npx::slice(indices, pick), lead),
                                  data.shape()[size_t(j)]);
    Tensor term = stride == 1 ? position
                              : np::multiply(position, np::full({}, double(stride), DType::i64,
                                                                data.device()));
    linear = linear.defined() ? np::add(linear, term) : term;
    stride *= data.shape()[size_t(j)];
  }
  return np::take(np::reshape(data, merged), linear, 0);
}

Tensor expand(const OpContext &c) {
  Tensor x = c.in(0);
  Shape shape = c.creatable(c.broadcast(x.shape(), c.ints(1)));
  return shape == x.shape() ? x : np::broadcast_to(x, shape);
}

Tensor shapeOf(const OpContext &c) {
  const Shape &shape = c.shape(0);
  int64_t rank = int64_t(shape.size());
  auto clamp = [rank](int64_t v) {
    v = v < 0 ? v + rank : v;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clamp(c.attr_int("start", 0)), end = clamp(c.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t a = start; a < end; ++a)
    dims.push_back(shape[size_t(a)]);
  return np::array(dims, Shape{int64_t(dims.size())}, npx::cpu(0));
}

Tensor constantOfShape(const OpContext &c) {
  std::vector<int64_t> shape = c.ints(0);
  double value = 0;
  DType dtype = DType::f32;
  if (const Attribute *a = c.attr("value")) {
    if (a->kind != Attribute::Kind::tensor || a->tensor.size() != 1)
      c.fail("attribute 'value' must be a one-element tensor");
    value = a->tensor.to_vector<double>()[0];
    dtype = a->tensor.dtype();
  }
  return np::full(c.creatable(shape), value, dtype, c.device());
}

Tensor range(const OpContext &c) {
  double start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
  if (delta == 0)
    c.fail("a delta of 0");
  double steps = std::ceil((limit - start) / delta);
  if (!(steps < double(int64_t(1) << 31)))
    c.fail("a range of " + std::to_string(steps) + " elements");
  int64_t count = std::max<int64_t>(int64_t(steps), 0);
  return np::arange(start, start + double(count) * delta, delta, c.dtype(0), c.device());
}

Tensor constant(const OpContext &c) {
  if (const Attribute *a = c.attr("value")) {
    if (a->kind != Attribute::Kind::tensor)
      c.fail("attribute 'value' is not a tensor");
    return a->tensor;
  }
  Device host = npx::cpu(0);
  if (c.has_attr("value_float"))
    return np::full({}, c.attr_float("value_float", 0), DType::f32, host);
  if (c.has_attr("value_int"))
    return np::full({}, double(c.attr_int("value_int", 0)), DType::i64, host);
  if (c.has_attr("value_floats")) {
    std::vector<double> v = c.attr_floats("value_floats");
    return np::array(v, Shape{int64_t(v.size())}, DType::f32, host);
  }
  if (c.has_attr("value_ints")) {
    std::vector<int64_t> v = c.attr_ints("value_ints");
    return np::array(v, Shape{int64_t(v.size())}, host);
  }
  c.fail("no value (sparse and string constants are not imported)");
}

Tensor pad(const OpContext &c) {
  Tensor x = c.in(0);
  std::string mode = c.attr_string("mode", "constant");
  std::vector<int64_t> pads = c.ints(1);
  std::vector<int64_t> axes(size_t(x.ndim()));
  std::iota(axes.begin(), axes.end(), 0);
  if (c.has(3))
    axes = axesOf(c, c.ints(3), x.ndim());
  if (pads.size() != 2 * axes.size())
    c.fail("pads of " + std::to_string(pads.size()) + " values for " +
           std::to_string(axes.size()) + " axes");
  std::vector<int64_t> widths(size_t(2 * x.ndim()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (pads[i] < 0 || pads[i + axes.size()] < 0)
      c.fail("negative pads (cropping)");
    if (pads[i] > (int64_t(1) << 31) || pads[i + axes.size()] > (int64_t(1) << 31))
      c.fail("pads above 2^31");
    widths[size_t(2 * axes[i])] = pads[i];
    widths[size_t(2 * axes[i] + 1)] = pads[i + axes.size()];
  }
  Shape padded = x.shape();
  for (int64_t a = 0; a < x.ndim(); ++a)
    padded[size_t(a)] += widths[size_t(2 * a)] + widths[size_t(2 * a + 1)];
  c.creatable(padded);
  double value = c.has(2) ? c.scalar(2) : 0.0;
  npx::PadMode how = npx::PadMode::constant;
  if (mode == "reflect")
    how = npx::PadMode::reflect;
  else if (mode == "edge")
    how = npx::PadMode::edge;
  else if (mode != "constant")
    c.fail("mode='" + mode + "' (expected constant, reflect or edge)");
  return npx::pad(x, how, widths, value);
}

Tensor tile(const OpContext &c) {
  Tensor x = c.in(0);
  std::vector<int64_t> repeats = c.ints(1);
  if (int64_t(repeats.size()) != x.ndim())
    c.fail("repeats " + shape_rules::str(repeats) + " for rank " + std::to_string(x.ndim()));
  // Each axis d of size n becomes (repeats[d], n), broadcast, then merged.
  Shape spread, wide, out;
  for (size_t a = 0; a < repeats.size(); ++a) {
    spread.insert(spread.end(), {1, x.shape()[a]});
    wide.insert(wide.end(), {repeats[a], x.shape()[a]});
  }
  c.creatable(wide); // before any product of its numbers
  for (size_t a = 0; a < repeats.size(); ++a)
    out.push_back(repeats[a] * x.shape()[a]);
  return reshape(np::broadcast_to(reshape(x, spread), wide), out);
}

Tensor argExtreme(const OpContext &c, bool max) {
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.ndim());
  bool keep = c.attr_int("keepdims", 1) != 0;
  Tensor scores = max ? x : np::negative(x);
  if (c.attr_int("select_last_index", 0) == 0)
    return np::argmax(scores, axis, keep);
  // The last extreme is the first one of the reversed axis, counted from the end.
  std::vector<npx::SliceRange> reversed(size_t(axis + 1));
  reversed[size_t(axis)] = {std::nullopt, std::nullopt, -1};
  Tensor first = np::argmax(npx::slice(scores, reversed), axis, keep);
  Tensor last = np::full({}, double(x.shape()[size_t(axis)] - 1), DType::i64, x.device());
  return np::subtract(last, first);
}

Tensor depthToSpace(const OpContext &c, bool toSpace) {
  Tensor x = c.in(0);
  if (x.ndim() != 4)
    c.fail("input of shape " + shape_rules::str(x.shape()) + ", expected (N, C, H, W)");
  int64_t b = c.attr_int("blocksize", 0);
  if (b < 1 || b > (int64_t(1) << 16))
    c.fail("blocksize " + std::to_string(b));
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  if (!toSpace) {
    if (h % b || w % b)
      c.fail("spatial size " + shape_rules::str(x.shape()) + " not divisible by " + std::to_string(b));
    Tensor y = np::reshape(x, {n, ch, h / b, b, w / b, b});
    y = np::transpose(y, {0, 3, 5, 1, 2, 4});
    return np::reshape(y, {n, ch * b * b, h / b, w / b});
  }
  if (ch % (b * b))
    c.fail(std::to_string(ch) + " channels not divisible by blocksize² " + std::to_string(b * b));
  bool crd = c.attr_string("mode", "DCR") == "CRD";
  Tensor y = crd ? np::reshape(x, {n, ch / (b * b), b, b, h, w})
                 : np::reshape(x, {n, b, b, ch / (b * b), h, w});
  y = crd ? np::transpose(y, {0, 1, 4, 2, 5, 3}) : np::transpose(y, {0, 3, 4, 1, 5, 2});
  return np::reshape(y, {n, ch / (b * b), h * b, w * b});
}

} // namespace

void add_tensor_ops(std::vector<OpSpec> &specs) {
  specs.push_back({"Reshape", 11,
                   [](OpContext &c) {
                     return Tensors{reshape(c.in(0), reshapeTarget(c, c.shape(0), c.ints(1)))};
                   },
                   {1},
                   {"allowzero"}});
  specs.push_back({"Flatten", 11, [](OpContext &c) { return Tensors{flatten(c)}; }, {}, {"axis"}});
  specs.push_back({"Squeeze", 11, [](OpContext &c) { return Tensors{squeeze(c)}; }, {1}, {"axes"}});
  specs.push_back({"Unsqueeze", 11, [](OpContext &c) { return Tensors{unsqueeze(c)}; }, {1},
                   {"axes"}});
  specs.push_back({"Transpose", 11,
                   [](OpContext &c) {
                     std::vector<int64_t> perm = c.attr_ints("perm");
                     return Tensors{np::transpose(c.in(0), axesOf(c, perm, c.in(0).ndim()))};
                   },
                   {},
                   {"perm"}});
  specs.push_back({"Concat", 11,
                   [](OpContext &c) {
                     Tensors parts;
                     for (size_t i = 0; i < c.size(); ++i)
                       if (c.has(i) && shape_rules::numElements(c.shape(i)) > 0)
                         parts.push_back(c.in(i));
                     if (parts.empty())
                       return Tensors{c.in(0)};
                     int64_t axis = c.axis(c.attr_int("axis", 0), parts[0].ndim());
                     return Tensors{parts.size() == 1 ? parts[0] : np::concatenate(parts, axis)};
                   },
                   {},
                   {"axis"}});
  specs.push_back({"Split", 11, split, {1}, {"axis", "num_outputs", "split"}});
  specs.push_back({"Slice", 11, [](OpContext &c) { return Tensors{slice(c)}; }, {1, 2, 3, 4}});
  specs.push_back({"Gather", 11, [](OpContext &c) { return Tensors{gather(c)}; }, {}, {"axis"}});
  specs.push_back({"GatherElements", 11, [](OpContext &c) { return Tensors{gatherElements(c)}; },
                   {}, {"axis"}});
  specs.push_back({"GatherND", 12, [](OpContext &c) { return Tensors{gatherND(c)}; }, {},
                   {"batch_dims"}, OpKind::pure, {}, "batch_dims 0"});
  specs.push_back({"Expand", 11, [](OpContext &c) { return Tensors{expand(c)}; }, {1}});
  specs.push_back({"Tile", 11, [](OpContext &c) { return Tensors{tile(c)}; }, {1}});
  specs.push_back({"Shape", 11, [](OpContext &c) { return Tensors{shapeOf(c)}; }, {},
                   {"start", "end"}, OpKind::shape_only});
  specs.push_back({"Size", 11,
                   [](OpContext &c) {
                     return Tensors{np::full({}, double(shape_rules::numElements(c.shape(0))),
                                             DType::i64, npx::cpu(0))};
                   },
                   {}, {}, OpKind::shape_only});
  specs.push_back({"ConstantOfShape", 11, [](OpContext &c) { return Tensors{constantOfShape(c)}; },
                   {0}, {"value"}});
  specs.push_back({"Range", 11, [](OpContext &c) { return Tensors{range(c)}; }, {0, 1, 2}});
  specs.push_back({"Constant", 11, [](OpContext &c) { return Tensors{constant(c)}; }, {},
                   {"value", "value_float", "value_floats", "value_int", "value_ints"},
                   OpKind::pure, {}, "no sparse or string values"});
  specs.push_back({"Pad", 11, [](OpContext &c) { return Tensors{pad(c)}; }, {1, 2, 3}, {"mode"},
                   OpKind::pure, {}, "constant, reflect, edge; no negative pads"});
  specs.push_back({"ArgMax", 11, [](OpContext &c) { return Tensors{argExtreme(c, true)}; }, {},
                   {"axis", "keepdims", "select_last_index"}});
  specs.push_back({"ArgMin", 11, [](OpContext &c) { return Tensors{argExtreme(c, false)}; }, {},
                   {"axis", "keepdims", "select_last_index"}});
  specs.push_back({"DepthToSpace", 11, [](OpContext &c) { return Tensors{depthToSpace(c, true)}; },
                   {}, {"blocksize", "mode"}});
  specs.push_back({"SpaceToDepth", 11,
                   [](OpContext &c) { return Tensors{depthToSpace(c, false)}; }, {},
                   {"blocksize"}});
}

} // namespace dlc::onnx::detail
