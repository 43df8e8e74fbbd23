//===- ShapeRules.cpp - result shapes of dlc ops ------------------------------===//
#include "dlc/Core/ShapeRules.h"

#include <algorithm>
#include <sstream>

namespace dlc::shape_rules {

std::string str(const Shape &shape) {
  if (shape.empty())
    return "scalar";
  std::ostringstream os;
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? "x" : "") << shape[i];
  return os.str();
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t byteSize(const Shape &shape, int64_t elementBytes) {
  int64_t n = elementBytes;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

std::string tensorSizeError(const Shape &shape, int64_t elementBytes) {
  for (int64_t d : shape)
    if (d < 0)
      return "shape " + str(shape) + " has a negative dimension";
  if (byteSize(shape, elementBytes) < 0)
    return "shape " + str(shape) + " of " + std::to_string(elementBytes) +
           "-byte elements would hold more than 2^63 bytes";
  return "";
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

namespace {
std::string pair(const std::array<int64_t, 2> &v) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
}

// Checks that a window parameter has positive (or, for padding, non-negative) entries.
std::string checkWindowParam(const char *name, const std::array<int64_t, 2> &v,
                             int64_t minimum) {
  if (v[0] < minimum || v[1] < minimum)
    return std::string(name) + " " + pair(v) + " must be >= " + std::to_string(minimum);
  return {};
}
} // namespace

Inferred broadcast(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Inferred::fail("shapes " + str(a) + " and " + str(b) +
                            " do not broadcast (dimension " + std::to_string(i) +
                            " of the result: " + std::to_string(da) + " vs " +
                            std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return {std::move(out), {}};
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[offset + i])
      return false;
  return true;
}

Inferred matmul(const Shape &a, const Shape &b, bool transposeA, bool transposeB) {
  if (a.size() < 2 || b.size() < 2)
    return Inferred::fail("operands must have rank >= 2, got " + str(a) + " and " +
                          str(b));
  int64_t m = a[a.size() - (transposeA ? 1 : 2)];
  int64_t ka = a[a.size() - (transposeA ? 2 : 1)];
  int64_t kb = b[b.size() - (transposeB ? 1 : 2)];
  int64_t n = b[b.size() - (transposeB ? 2 : 1)];
  if (ka != kb)
    return Inferred::fail("contraction sizes differ: " + str(a) +
                          (transposeA ? " (transposed)" : "") + " has " +
                          std::to_string(ka) + ", " + str(b) +
                          (transposeB ? " (transposed)" : "") + " has " +
                          std::to_string(kb));
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  Inferred batch = broadcast(batchA, batchB);
  if (!batch.ok())
    return Inferred::fail("batch dimensions: " + batch.error);
  batch.shape.push_back(m);
  batch.shape.push_back(n);
  return batch;
}

Inferred dense(const Shape &input, const Shape &weight, const Shape *bias) {
  if (input.empty())
    return Inferred::fail("input must have rank >= 1, got a scalar");
  if (weight.size() != 2)
    return Inferred::fail("weight must be (units, in_units), got " + str(weight));
  if (input.back() != weight[1])
    return Inferred::fail("input " + str(input) + " has " + std::to_string(input.back()) +
                          " features but weight " + str(weight) + " expects " +
                          std::to_string(weight[1]));
  if (bias && (bias->size() != 1 || (*bias)[0] != weight[0]))
    return Inferred::fail("bias must be (" + std::to_string(weight[0]) + "), got " +
                          str(*bias));
  Shape out(input.begin(), input.end() - 1);
  out.push_back(weight[0]);
  return {std::move(out), {}};
}

Inferred conv2d(const Shape &input, const Shape &weight, const Shape *bias,
                const Conv2DParams &p) {
  if (input.size() != 4)
    return Inferred::fail("input must be NCHW (rank 4), got " + str(input));
  if (weight.size() != 4)
    return Inferred::fail("weight must be OIHW (rank 4), got " + str(weight));
  for (auto check : {checkWindowParam("stride", p.stride, 1),
                     checkWindowParam("dilation", p.dilation, 1),
                     checkWindowParam("padding", p.padding, 0)})
    if (!check.empty())
      return Inferred::fail(check);
  if (p.groups < 1)
    return Inferred::fail("groups must be >= 1, got " + std::to_string(p.groups));
  if (weight[0] % p.groups != 0)
    return Inferred::fail("weight " + str(weight) + " has " + std::to_string(weight[0]) +
                          " output channels, not divisible by groups=" +
                          std::to_string(p.groups));
  if (input[1] != weight[1] * p.groups)
    return Inferred::fail("input " + str(input) + " has " + std::to_string(input[1]) +
                          " channels but weight " + str(weight) + " with groups=" +
                          std::to_string(p.groups) + " expects " +
                          std::to_string(weight[1] * p.groups));
  if (bias && (bias->size() != 1 || (*bias)[0] != weight[0]))
    return Inferred::fail("bias must be (" + std::to_string(weight[0]) + "), got " +
                          str(*bias));
  Shape out{input[0], weight[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t extent = input[2 + i] + 2 * p.padding[i];
    int64_t window = p.dilation[i] * (weight[2 + i] - 1) + 1;
    if (window > extent)
      return Inferred::fail("kernel " + std::to_string(weight[2]) + "x" +
                            std::to_string(weight[3]) + " (dilation " + pair(p.dilation) +
                            ") does not fit input " + str(input) + " padded by " +
                            pair(p.padding));
    out[2 + i] = (extent - window) / p.stride[i] + 1;
  }
  return {std::move(out), {}};
}

Inferred pool2d(const Shape &input, const Pool2DParams &p) {
  if (input.size() != 4)
    return Inferred::fail("input must be NCHW (rank 4), got " + str(input));
  for (auto check : {checkWindowParam("kernel", p.kernel, 1),
                     checkWindowParam("stride", p.stride, 1),
                     checkWindowParam("padding", p.padding, 0)})
    if (!check.empty())
      return Inferred::fail(check);
  Shape out{input[0], input[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (p.padding[i] >= p.kernel[i])
      return Inferred::fail("padding " + pair(p.padding) +
                            " must be smaller than the window " + pair(p.kernel));
    int64_t extent = input[2 + i] + 2 * p.padding[i];
    if (p.kernel[i] > extent)
      return Inferred::fail("window " + pair(p.kernel) + " does not fit input " +
                            str(input) + " padded by " + pair(p.padding));
    int64_t span = extent - p.kernel[i];
    out[2 + i] = (p.ceilMode ? (span + p.stride[i] - 1) / p.stride[i]
                             : span / p.stride[i]) + 1;
  }
  return {std::move(out), {}};
}

Inferred batchNormStats(const Shape &input, int64_t axis, const Shape &param,
                        const char *paramName) {
  int64_t a = normalizeAxis(axis, static_cast<int64_t>(input.size()));
  if (input.size() < 2 || a < 0)
    return Inferred::fail("axis " + std::to_string(axis) + " is not a dimension of input " +
                          str(input) + " (rank >= 2 expected)");
  if (param.size() != 1 || param[0] != input[a])
    return Inferred::fail(std::string(paramName) + " must be (" + std::to_string(input[a]) +
                          ") for input " + str(input) + " normalized over axis " +
                          std::to_string(axis) + ", got " + str(param));
  return {param, {}};
}

Inferred attention(const Shape &query, const Shape &key, const Shape &value, const Shape *mask) {
  const size_t rank = query.size();
  if (rank < 2 || key.size() != rank || value.size() != rank)
    return Inferred::fail("query " + str(query) + ", key " + str(key) + " and value " +
                          str(value) + " must have one rank, at least 2 (..., length, features)");
  const Shape batch(query.begin(), query.end() - 2);
  if (!std::equal(batch.begin(), batch.end(), key.begin()) ||
      !std::equal(batch.begin(), batch.end(), value.begin()))
    return Inferred::fail("query " + str(query) + ", key " + str(key) + " and value " +
                          str(value) + " must have the same leading (batch, head) dimensions");
  if (key[rank - 1] != query[rank - 1])
    return Inferred::fail("key " + str(key) + " must have the query's " +
                          std::to_string(query[rank - 1]) + " features (query " + str(query) +
                          ")");
  if (value[rank - 2] != key[rank - 2])
    return Inferred::fail("value " + str(value) + " must have one row per key (key " +
                          str(key) + ")");
  Shape scores = batch;
  scores.push_back(query[rank - 2]);
  scores.push_back(key[rank - 2]);
  if (mask && !broadcastsTo(*mask, scores))
    return Inferred::fail("mask " + str(*mask) + " does not broadcast to the scores " +
                          str(scores));
  Shape out = batch;
  out.push_back(query[rank - 2]);
  out.push_back(value[rank - 1]);
  return {std::move(out), {}};
}

Inferred layerNormStats(const Shape &input, int64_t axis, const Shape &gamma, const Shape &beta) {
  int64_t a = normalizeAxis(axis, int64_t(input.size()));
  if (a < 0)
    return Inferred::fail("axis " + std::to_string(axis) + " is not a dimension of input " +
                          str(input));
  for (auto [param, name] : {std::pair{&gamma, "gamma"}, std::pair{&beta, "beta"}})
    if (param->size() != 1 || (*param)[0] != input[size_t(a)])
      return Inferred::fail(std::string(name) + " must be (" + std::to_string(input[size_t(a)]) +
                            ") for input " + str(input) + " normalized over axis " +
                            std::to_string(axis) + ", got " + str(*param));
  Shape stats = input;
  stats.erase(stats.begin() + a);
  return {std::move(stats), {}};
}

Inferred flatten(const Shape &input) {
  if (input.empty())
    return Inferred::fail("input must have rank >= 1, got a scalar");
  Shape rest(input.begin() + 1, input.end());
  return {{input[0], numElements(rest)}, {}};
}

Inferred transpose(const Shape &input, const std::vector<int64_t> &perm) {
  if (perm.size() != input.size())
    return Inferred::fail("permutation has " + std::to_string(perm.size()) +
                          " entries but input " + str(input) + " has rank " +
                          std::to_string(input.size()));
  std::vector<bool> seen(input.size(), false);
  Shape out(input.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(input.size()) || seen[perm[i]])
      return Inferred::fail("permutation is not a permutation of 0.." +
                            std::to_string(input.size() - 1) + " (entry " +
                            std::to_string(i) + " is " + std::to_string(perm[i]) + ")");
    seen[perm[i]] = true;
    out[i] = input[perm[i]];
  }
  return {std::move(out), {}};
}

Inferred reduce(const Shape &input, const std::vector<int64_t> &axes, bool keepdims) {
  int64_t rank = static_cast<int64_t>(input.size());
  if (axes.empty())
    return Inferred::fail("axes must not be empty");
  std::vector<bool> reduced(input.size(), false);
  for (int64_t axis : axes) {
    int64_t a = normalizeAxis(axis, rank);
    if (a < 0)
      return Inferred::fail("axis " + std::to_string(axis) + " is out of range for input " +
                            str(input));
    if (reduced[a])
      return Inferred::fail("axis " + std::to_string(axis) + " is listed twice");
    reduced[a] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(input[i]);
    else if (keepdims)
      out.push_back(1);
  }
  return {std::move(out), {}};
}

Inferred concat(const std::vector<Shape> &inputs, int64_t axis) {
  if (inputs.empty())
    return Inferred::fail("needs at least one input");
  const Shape &first = inputs.front();
  int64_t a = normalizeAxis(axis, static_cast<int64_t>(first.size()));
  if (a < 0)
    return Inferred::fail("axis " + std::to_string(axis) + " is out of range for input " +
                          str(first));
  Shape out = first;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Shape &s = inputs[i];
    bool compatible = s.size() == first.size();
    for (size_t d = 0; compatible && d < s.size(); ++d)
      compatible = static_cast<int64_t>(d) == a || s[d] == first[d];
    if (!compatible)
      return Inferred::fail("input #" + std::to_string(i) + " " + str(s) +
                            " does not match input #0 " + str(first) +
                            " outside axis " + std::to_string(axis));
    out[a] += s[a];
  }
  return {std::move(out), {}};
}

Inferred softmaxCrossEntropy(const Shape &logits, const Shape &labels) {
  if (logits.size() != 2)
    return Inferred::fail("logits must be (N, classes), got " + str(logits));
  if (labels.size() != 1 || labels[0] != logits[0])
    return Inferred::fail("labels must be (" + std::to_string(logits[0]) +
                          ") for logits " + str(logits) + ", got " + str(labels));
  return {{logits[0]}, {}};
}

Inferred take(const Shape &input, const Shape &indices, int64_t axis) {
  if (input.empty())
    return Inferred::fail("the input must have at least one dimension to take along, got " +
                          str(input));
  int64_t a = normalizeAxis(axis, int64_t(input.size()));
  if (a < 0)
    return Inferred::fail("axis " + std::to_string(axis) + " is out of range for input " +
                          str(input));
  if (input[size_t(a)] == 0 && numElements(indices) > 0)
    return Inferred::fail("axis " + std::to_string(axis) + " of input " + str(input) +
                          " is empty: there is nothing to take");
  Shape out(input.begin(), input.begin() + a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), input.begin() + a + 1, input.end());
  return {std::move(out), {}};
}

Inferred takeBackward(const Shape &grad, const Shape &indices, int64_t axis, int64_t size) {
  // The input's rank is the gradient's less the indices' plus the axis taken along.
  int64_t rank = int64_t(grad.size()) - int64_t(indices.size()) + 1;
  int64_t a = rank >= 1 ? normalizeAxis(axis, rank) : -1;
  if (a < 0 || size < 0)
    return Inferred::fail("grad " + str(grad) + " is not take's result for indices " +
                          str(indices) + " along axis " + std::to_string(axis));
  Shape input(grad.begin(), grad.begin() + a);
  input.push_back(size);
  input.insert(input.end(), grad.begin() + a + int64_t(indices.size()), grad.end());
  Inferred forward = take(input, indices, axis);
  if (!forward.ok() || forward.shape != grad)
    return Inferred::fail("grad " + str(grad) + " is not take's result for indices " +
                          str(indices) + " along axis " + std::to_string(axis));
  return {std::move(input), {}};
}

int64_t sliceLength(int64_t begin, int64_t end, int64_t step) {
  if (step > 0)
    return begin < end ? (end - begin + step - 1) / step : 0;
  return begin > end ? (begin - end - step - 1) / -step : 0;
}

std::pair<int64_t, int64_t> resolveSlice(std::optional<int64_t> begin, std::optional<int64_t> end,
                                         int64_t step, int64_t size) {
  // The lowest and highest positions a bound may take in the step's direction.
  const int64_t low = step > 0 ? 0 : -1, high = step > 0 ? size : size - 1;
  auto resolve = [&](std::optional<int64_t> bound, int64_t missing) {
    if (!bound)
      return missing;
    int64_t at = *bound < 0 ? *bound + size : *bound;
    return std::clamp(at, low, high);
  };
  return {resolve(begin, step > 0 ? low : high), resolve(end, step > 0 ? high : low)};
}

Inferred slice(const Shape &input, const SliceParams &params) {
  const size_t rank = input.size();
  if (params.begin.size() != rank || params.end.size() != rank || params.step.size() != rank)
    return Inferred::fail("begin, end and step need one entry per dimension of input " +
                          str(input) + ", got " + std::to_string(params.begin.size()) + ", " +
                          std::to_string(params.end.size()) + " and " +
                          std::to_string(params.step.size()));
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t begin = params.begin[d], end = params.end[d], step = params.step[d];
    if (step == 0)
      return Inferred::fail("the step of axis " + std::to_string(d) + " is 0");
    const int64_t low = step > 0 ? 0 : -1, high = step > 0 ? input[d] : input[d] - 1;
    if (begin < low || begin > high || end < low || end > high)
      return Inferred::fail("axis " + std::to_string(d) + " of input " + str(input) +
                            ": begin " + std::to_string(begin) + " and end " +
                            std::to_string(end) + " must lie in [" + std::to_string(low) +
                            ", " + std::to_string(high) + "] for step " +
                            std::to_string(step) +
                            " (positions, with negative indices already resolved)");
    out[d] = sliceLength(begin, end, step);
  }
  return {std::move(out), {}};
}

Inferred sliceBackward(const Shape &grad, const Shape &input, const SliceParams &params) {
  Inferred forward = slice(input, params);
  if (!forward.ok())
    return forward;
  if (forward.shape != grad)
    return Inferred::fail("grad " + str(grad) + " must have the slice's shape " +
                          str(forward.shape) + " (of input " + str(input) + ")");
  return {input, {}};
}

} // namespace dlc::shape_rules
