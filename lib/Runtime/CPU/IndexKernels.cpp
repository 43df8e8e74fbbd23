//===- IndexKernels.cpp - take (embedding lookup) and its gradient on the CPU ---===//
//
// take copies whole slices, so its kernels move bytes and serve every dtype. Its
// gradient (float32) adds each slice of the output gradient back where it was taken: the fast
// kernel splits the work by columns, so every element still gets its additions in the
// indices' order, the reference's, and the two agree bit for bit whatever the thread
// count.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "../KernelMath/TakeIndex.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>
#include <cstring>

namespace dlc::cpu_kernels {

namespace {

/// take's input as (outer, size, inner) around its axis, and the number of indices.
struct TakeGeometry {
  AxisSplit input;
  int64_t count = 0;
};

TakeGeometry takeGeometry(const Shape &input, const TensorRef &indices, const Attrs &attrs) {
  int64_t axis = shape_rules::normalizeAxis(attrs.get_int("axis", 0), int64_t(input.size()));
  return {split_at_axis(input, axis), indices.numel()};
}

/// The slice each index names, or an IndexError naming the first that names none.
std::vector<int64_t> slicesOf(const TensorRef &indices, int64_t size, const Shape &input,
                              const char *op) {
  std::vector<int64_t> slices(size_t(indices.numel()));
  for (size_t i = 0; i < slices.size(); ++i) {
    int64_t index = indices.dtype == DType::i64 ? indices.as<const int64_t>()[i]
                                                : int64_t(indices.as<const int32_t>()[i]);
    slices[i] = take_index::slice(index, size);
    if (slices[i] < 0)
      throw IndexError(std::string(op) + ": index " + std::to_string(index) + " (element " +
                       std::to_string(i) + " of the indices) is outside [" +
                       std::to_string(-size) + ", " + std::to_string(size) +
                       ") for input " + shape_rules::str(input));
  }
  return slices;
}

void requireIntegerIndices(const TensorRef &indices, const char *op) {
  if (indices.dtype != DType::i32 && indices.dtype != DType::i64)
    throw DTypeError(std::string(op) + ": indices must be int32 or int64, got " +
                     dtype_name(indices.dtype));
}

// output (outer, count, inner) from input (outer, size, inner): whole rows copied,
// split over the threads.
void takeFast(const KernelArgs &k) {
  const TensorRef &x = k.inputs[0], &indices = k.inputs[1], &y = k.outputs[0];
  requireIntegerIndices(indices, "take");
  TakeGeometry g = takeGeometry(x.shape, indices, *k.attrs);
  std::vector<int64_t> slices = slicesOf(indices, g.input.axis, x.shape, "take");
  const size_t row = size_t(g.input.inner) * dtype_size(x.dtype);
  const char *px = static_cast<const char *>(x.data);
  char *py = static_cast<char *>(y.data);
  parallel_for(g.input.outer * g.count, y.numel(), [&](int64_t r) {
    int64_t o = r / g.count, j = r % g.count;
    std::memcpy(py + size_t(r) * row, px + size_t(o * g.input.axis + slices[size_t(j)]) * row,
                row);
  });
}

// The same, element by element.
void takeReference(const KernelArgs &k) {
  const TensorRef &x = k.inputs[0], &indices = k.inputs[1], &y = k.outputs[0];
  requireIntegerIndices(indices, "take");
  TakeGeometry g = takeGeometry(x.shape, indices, *k.attrs);
  std::vector<int64_t> slices = slicesOf(indices, g.input.axis, x.shape, "take");
  const size_t width = dtype_size(x.dtype);
  const char *px = static_cast<const char *>(x.data);
  char *py = static_cast<char *>(y.data);
  for (int64_t o = 0; o < g.input.outer; ++o)
    for (int64_t j = 0; j < g.count; ++j)
      for (int64_t c = 0; c < g.input.inner; ++c)
        std::memcpy(py + size_t((o * g.count + j) * g.input.inner + c) * width,
                    px + size_t((o * g.input.axis + slices[size_t(j)]) * g.input.inner + c) *
                             width,
                    width);
}

/// take_backward's float32 arguments: the output gradient (outer, count, inner), the
/// slices, and the input gradient (outer, size, inner) it fills.
struct ScatterAdd {
  TakeGeometry g;
  std::vector<int64_t> slices;
  const float *dy;
  float *dx;
};

ScatterAdd scatterAdd(const KernelArgs &k) {
  const TensorRef &dy = k.inputs[0], &indices = k.inputs[1], &dx = k.outputs[0];
  requireIntegerIndices(indices, "take_backward");
  if (dy.dtype != DType::f32 || dx.dtype != DType::f32)
    throw DTypeError(std::string("take_backward: the gradients must be float32 (the eager op "
                                 "adds 16-bit ones in float32), got ") +
                     dtype_name(dy.dtype));
  TakeGeometry g = takeGeometry(dx.shape, indices, *k.attrs);
  return {g, slicesOf(indices, g.input.axis, dx.shape, "take_backward"),
          dy.as<const float>(), dx.as<float>()};
}

// Columns of 64 floats per task: each task adds its columns of every taken slice, in the
// indices' order.
void takeBackwardFast(const KernelArgs &k) {
  ScatterAdd s = scatterAdd(k);
  const AxisSplit &in = s.g.input;
  std::fill(s.dx, s.dx + in.outer * in.axis * in.inner, 0.f);
  constexpr int64_t kColumns = 64;
  const int64_t chunks = (in.inner + kColumns - 1) / kColumns;
  parallel_for(in.outer * chunks, in.outer * s.g.count * in.inner, [&](int64_t task) {
    int64_t o = task / chunks, first = (task % chunks) * kColumns;
    int64_t last = std::min(in.inner, first + kColumns);
    for (int64_t j = 0; j < s.g.count; ++j) {
      const float *from = s.dy + (o * s.g.count + j) * in.inner;
      float *to = s.dx + (o * in.axis + s.slices[size_t(j)]) * in.inner;
      for (int64_t c = first; c < last; ++c)
        to[c] += from[c];
    }
  });
}

void takeBackwardReference(const KernelArgs &k) {
  ScatterAdd s = scatterAdd(k);
  const AxisSplit &in = s.g.input;
  for (int64_t i = 0; i < in.outer * in.axis * in.inner; ++i)
    s.dx[i] = 0.f;
  for (int64_t o = 0; o < in.outer; ++o)
    for (int64_t j = 0; j < s.g.count; ++j)
      for (int64_t c = 0; c < in.inner; ++c)
        s.dx[(o * in.axis + s.slices[size_t(j)]) * in.inner + c] +=
            s.dy[(o * s.g.count + j) * in.inner + c];
}

} // namespace

void register_index_kernels() {
  register_kernel(ops::take, DeviceKind::cpu, {takeFast, takeReference});
  register_kernel(ops::take_backward, DeviceKind::cpu, {takeBackwardFast, takeBackwardReference});
}

} // namespace dlc::cpu_kernels
