//===- SliceKernels.cpp - strided slices and their gradient on the CPU --------===//
//
// A slice copies elements of any dtype by their width; its gradient writes the output
// gradient back where the slice read and zeros elsewhere. Both walk the output row by
// row (its last dimension), rows split over the threads; a row whose elements are
// adjacent in the input (step 1 along the last axis) is one memcpy.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

#include <cstring>

namespace dlc::cpu_kernels {

namespace {

using kernels::SliceWalk;

/// The slice's walk from a kernel's attributes, for an input of `input`.
SliceWalk walkOf(const Shape &input, const Attrs &attrs) {
  return kernels::slice_walk(input, attrs.get_ints("begin", {}), attrs.get_ints("step", {}));
}

/// Calls move(row, at) for every row of a sliced tensor of shape `out`: `row` the
/// index of the row's first element, `at` the input element it pairs with.
template <typename Move>
void forEachRow(const Shape &out, const SliceWalk &walk, size_t width, Move &&move) {
  int64_t total = shape_rules::numElements(out);
  if (total == 0)
    return;
  if (out.empty()) {
    move(int64_t(0), walk.base);
    return;
  }
  const int64_t inner = out.back(), rows = total / inner;
  parallel_for(rows, total * int64_t(width) / 4, [&](int64_t r) {
    int64_t at = walk.base;
    for (int64_t d = int64_t(out.size()) - 2, rest = r; d >= 0; --d) {
      at += (rest % out[size_t(d)]) * walk.strides[size_t(d)];
      rest /= out[size_t(d)];
    }
    move(r * inner, at);
  });
}

/// Copies `count` elements of type Word between strided places.
template <typename Word>
void copyStrided(const void *from, int64_t fromStride, void *to, int64_t toStride, int64_t count) {
  const Word *source = static_cast<const Word *>(from);
  Word *target = static_cast<Word *>(to);
  for (int64_t j = 0; j < count; ++j)
    target[j * toStride] = source[j * fromStride];
}

void copyRow(const char *from, int64_t fromStride, char *to, int64_t toStride, int64_t count,
             size_t width) {
  if (fromStride == 1 && toStride == 1) {
    std::memcpy(to, from, size_t(count) * width);
    return;
  }
  switch (width) {
  case 1:
    return copyStrided<uint8_t>(from, fromStride, to, toStride, count);
  case 2:
    return copyStrided<uint16_t>(from, fromStride, to, toStride, count);
  case 4:
    return copyStrided<uint32_t>(from, fromStride, to, toStride, count);
  default:
    return copyStrided<uint64_t>(from, fromStride, to, toStride, count);
  }
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
