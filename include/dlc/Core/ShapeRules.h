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
#include <string>
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
