//===- ShapeRules.h - result shapes of dlc ops, shared by compiler and runtime ===//
//
// One rule per op family, with no MLIR or LLVM dependency: the dialect's type inference
// and the eager runtime's shape checks both call these, so a shape is computed, and an
// error worded, the same way whether an op runs eagerly or compiled.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_SHAPERULES_H
#define DLC_CORE_SHAPERULES_H

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlc::shape_rules {

using Shape = std::vector<int64_t>;

/// A result shape, or the reason there is none (`error` non-empty). Errors name the
/// shapes involved and what was expected, without the op name, which callers add.
struct Inferred {
  Shape shape;
  std::string error;
  bool ok() const { return error.empty(); }
  static Inferred fail(std::string why) { return {{}, std::move(why)}; }
};

/// "4x3x128x128"; "scalar" for rank 0.
std::string str(const Shape &shape);

/// Numpy broadcasting of two shapes (trailing dimensions aligned, 1 stretches).
Inferred broadcast(const Shape &a, const Shape &b);
/// Whether `from` broadcasts to exactly `to`.
bool broadcastsTo(const Shape &from, const Shape &to);

/// Batched matmul, rank >= 2, batch dimensions broadcast.
Inferred matmul(const Shape &a, const Shape &b, bool transposeA, bool transposeB);

/// Dense (fully connected): input (..., in), weight (units, in), bias (units) or null.
Inferred dense(const Shape &input, const Shape &weight, const Shape *bias);

struct Conv2DParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};
/// 2-D convolution: input (N, C, H, W), weight (O, C/groups, KH, KW), bias (O) or null.
Inferred conv2d(const Shape &input, const Shape &weight, const Shape *bias,
                const Conv2DParams &params);

struct Pool2DParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  bool ceilMode = false;
};
/// 2-D pooling of (N, C, H, W).
Inferred pool2d(const Shape &input, const Pool2DParams &params);

/// Batch norm parameter vectors must have input[axis] elements; returns that vector's
/// shape. `axis` may be negative.
Inferred batchNormStats(const Shape &input, int64_t axis, const Shape &param,
                        const char *paramName);

/// Scaled dot-product attention: query (..., Lq, D), key (..., Lk, D) and value
/// (..., Lk, Dv) with the same leading (batch and head) dimensions; a mask, when given
/// (`mask` non-null), broadcasts to the scores (..., Lq, Lk). Returns the output's shape,
/// (..., Lq, Dv); the log-sum-exp of each query's scores has the query's shape less D.
Inferred attention(const Shape &query, const Shape &key, const Shape &value, const Shape *mask);

/// Layer norm over `axis` (may be negative) of `input` (rank >= 1): gamma and beta must
/// be vectors of input[axis] values. Returns the shape of the statistics (mean and
/// variance of each normalized row): the input's without the axis.
Inferred layerNormStats(const Shape &input, int64_t axis, const Shape &gamma, const Shape &beta);

/// (N, d1, d2, ...) -> (N, d1*d2*...); rank >= 1.
Inferred flatten(const Shape &input);
/// Result dim i is input dim permutation[i].
Inferred transpose(const Shape &input, const std::vector<int64_t> &permutation);
/// Reduction over distinct, non-empty axes (negative counts from the end).
Inferred reduce(const Shape &input, const std::vector<int64_t> &axes, bool keepdims);
/// Concatenation along `axis` (may be negative).
Inferred concat(const std::vector<Shape> &inputs, int64_t axis);
/// Softmax cross entropy: logits (N, C), labels (N) -> (N).
Inferred softmaxCrossEntropy(const Shape &logits, const Shape &labels);
/// take: the slices of `input` along `axis` that `indices` name, the indices' shape in
/// place of that axis: input[:axis] + indices + input[axis+1:].
Inferred take(const Shape &input, const Shape &indices, int64_t axis);
/// take's gradient: the input's shape, whose size along `axis` is `size`, from the
/// output gradient `grad` (which must have take's result shape).
Inferred takeBackward(const Shape &grad, const Shape &indices, int64_t axis, int64_t size);

/// A strided slice of every axis: along axis d, the elements begin[d], begin[d] +
/// step[d], ... that come before end[d] (after it when the step is negative). begin and
/// end are positions, resolved as Python's slice.indices resolves them (negative indices
/// counted from the end and clamped by the frontend, see resolveSlice): for a positive
/// step both lie in [0, size], for a negative one in [-1, size - 1], where end = -1 runs
/// through element 0. A step is never 0.
struct SliceParams {
  std::vector<int64_t> begin, end, step;
};
/// The number of elements begin, begin + step, ... before end.
int64_t sliceLength(int64_t begin, int64_t end, int64_t step);
/// Python's `slice(begin, end, step).indices(size)`: a missing begin or end is the start
/// or the end of the axis in the step's direction, a negative one counts from the end,
/// and either is clamped to the axis. `step` must not be 0.
std::pair<int64_t, int64_t> resolveSlice(std::optional<int64_t> begin, std::optional<int64_t> end,
                                         int64_t step, int64_t size);
/// The slice's shape: input's rank, sliceLength along each axis.
Inferred slice(const Shape &input, const SliceParams &params);
/// The slice's gradient: `input` (the sliced tensor's shape), from a gradient `grad` that
/// must have the slice's shape.
Inferred sliceBackward(const Shape &grad, const Shape &input, const SliceParams &params);

/// Element count; 1 for rank 0. Callers hold shapes of tensors that exist, which
/// tensorSizeError has vetted.
int64_t numElements(const Shape &shape);
/// Bytes of a tensor of `shape` with `elementBytes`-byte elements, or -1 when a dimension
/// is negative or the element or byte count does not fit in int64_t.
int64_t byteSize(const Shape &shape, int64_t elementBytes);
/// Empty when a tensor of `shape` with `elementBytes`-byte elements can exist, else why
/// not (a negative dimension; more than 2^63 bytes, which would wrap around to a small
/// size in every count made of it). Without the op name, which callers add.
std::string tensorSizeError(const Shape &shape, int64_t elementBytes);
/// `axis` in [-rank, rank) mapped to [0, rank), or -1 when out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank);

} // namespace dlc::shape_rules

#endif // DLC_CORE_SHAPERULES_H
