//===- SliceKernels.cpp - strided slices and their gradient on the CPU --------===//
//
// A slice copies elements of any dtype by their width; its gradient writes the output
// gradient back where the slice read and zeros elsewhere. Both walk the output row by
// row (its last dimension), rows split over the threads; a row whose elements are
// adjacent in the input (step 1 along the last axis) is one memcpy.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "StridedRows.h"
#include "dlc/Core/OpFacts.h"

#include <cstring>

namespace dlc::cpu_kernels {

namespace {

using kernels::SliceWalk;

/// The slice's walk from a kernel's attributes, for an input of `input`.
SliceWalk walkOf(const Shape &input, const Attrs &attrs) {
  return kernels::slice_walk(input, attrs.get_ints("begin", {}), attrs.get_ints("step", {}));
}

// y = x[begin:end:step, ...]: each output row read from its place in x.
void sliceKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  const size_t width = dtype_size(x.dtype);
  SliceWalk walk = walkOf(x.shape, *args.attrs);
  const int64_t inner = y.shape.empty() ? 1 : y.shape.back();
  const int64_t step = y.shape.empty() ? 1 : walk.strides.back();
  const char *px = static_cast<const char *>(x.data);
  char *py = static_cast<char *>(y.data);
  forEachRow(y.shape, walk, width, [&](int64_t row, int64_t at) {
    copyRow(px + at * int64_t(width), step, py + row * int64_t(width), 1, inner, width);
  });
}

// dx = zeros of the input's shape, with dy where the slice read.
void sliceBackwardKernel(const KernelArgs &args) {
  const TensorRef &dy = args.inputs[0], &dx = args.outputs[0];
  const size_t width = dtype_size(dy.dtype);
  std::memset(dx.data, 0, size_t(dx.numel()) * width);
  SliceWalk walk = walkOf(dx.shape, *args.attrs);
  const int64_t inner = dy.shape.empty() ? 1 : dy.shape.back();
  const int64_t step = dy.shape.empty() ? 1 : walk.strides.back();
  const char *pdy = static_cast<const char *>(dy.data);
  char *pdx = static_cast<char *>(dx.data);
  forEachRow(dy.shape, walk, width, [&](int64_t row, int64_t at) {
    copyRow(pdy + row * int64_t(width), 1, pdx + at * int64_t(width), step, inner, width);
  });
}

} // namespace

void register_slice_kernels() {
  register_host_kernel(ops::slice, sliceKernel);
  register_host_kernel(ops::slice_backward, sliceBackwardKernel);
}

} // namespace dlc::cpu_kernels
