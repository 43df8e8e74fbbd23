//===- LayoutKernels.cpp - transpose, concat and split on the CPU -------------===//
#include "CpuKernels.h"
#include "StridedRows.h"
#include "dlc/Core/OpFacts.h"

#include <cstring>

namespace dlc::cpu_kernels {

namespace {

// y = x with dimensions permuted: y dim i is x dim permutation[i]. Copies elements of
// any dtype by their bytes, row by row of y; rows are memcpy where the permutation keeps
// the last axis (splitting and joining attention heads).
void transposeKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> permutation = args.attrs->get_ints("permutation", {});
  const size_t width = dtype_size(x.dtype);
  kernels::SliceWalk walk{0, transposed_strides(x.shape, permutation)};
  const int64_t inner = y.shape.empty() ? 1 : y.shape.back();
  const int64_t step = y.shape.empty() ? 1 : walk.strides.back();
  const char *px = static_cast<const char *>(x.data);
  char *py = static_cast<char *>(y.data);
  forEachRow(y.shape, walk, width, [&](int64_t row, int64_t at) {
    copyRow(px + at * int64_t(width), step, py + row * int64_t(width), 1, inner, width);
  });
}

// y = the inputs joined along axis; each input is (outer, axis_k, inner).
void concatKernel(const KernelArgs &args) {
  const TensorRef &y = args.outputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                            int64_t(y.shape.size()));
  size_t width = dtype_size(y.dtype);
  AxisSplit out = split_at_axis(y.shape, axis);
  char *py = static_cast<char *>(y.data);
  int64_t start = 0;
  for (const TensorRef &x : args.inputs) {
    AxisSplit in = split_at_axis(x.shape, axis);
    size_t block = size_t(in.axis * in.inner) * width;
    for (int64_t o = 0; o < out.outer; ++o)
      std::memcpy(py + size_t((o * out.axis + start) * out.inner) * width,
                  static_cast<const char *>(x.data) + size_t(o) * block, block);
    start += in.axis;
  }
}

// The outputs are consecutive parts of x along axis, of the sizes their shapes give.
void splitKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                            int64_t(x.shape.size()));
  size_t width = dtype_size(x.dtype);
  AxisSplit in = split_at_axis(x.shape, axis);
  const char *px = static_cast<const char *>(x.data);
  int64_t start = 0;
  for (const TensorRef &y : args.outputs) {
    AxisSplit part = split_at_axis(y.shape, axis);
    size_t block = size_t(part.axis * part.inner) * width;
    for (int64_t o = 0; o < in.outer; ++o)
      std::memcpy(static_cast<char *>(y.data) + size_t(o) * block,
                  px + size_t((o * in.axis + start) * in.inner) * width, block);
    start += part.axis;
  }
}

// y = x repeated along the dimensions where it broadcasts to y's shape.
void broadcastToKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  size_t width = dtype_size(x.dtype);
  const char *px = static_cast<const char *>(x.data);
  char *py = static_cast<char *>(y.data);
  std::array<std::vector<int64_t>, 1> strides{broadcast_strides(x.shape, y.shape)};
  for_each_broadcast<1>(y.shape, strides, [&](int64_t i, const auto &at) {
    std::memcpy(py + i * width, px + at[0] * width, width);
  });
}

} // namespace

void register_layout_kernels() {
  register_host_kernel(ops::broadcast_to, broadcastToKernel);
  register_host_kernel(ops::transpose, transposeKernel);
  register_host_kernel(ops::concat, concatKernel);
  register_host_kernel(ops::split, splitKernel);
  register_slice_kernels();
}

} // namespace dlc::cpu_kernels
