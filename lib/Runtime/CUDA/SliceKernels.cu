//===- SliceKernels.cu - GPU strided slices and their gradient ----------------===//
//
// One thread per element of the slice, moving elements of any dtype by their width
// through an Indexer whose strides are the slice's steps (SliceWalk, as on the CPU).
// The gradient zeroes the input's shape (a kernel of its own, in stream order) and
// writes each element back where it was read: a slice never reads an element twice, so
// no thread adds.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

template <typename Word>
__global__ void sliceKernel(const Word *x, Word *y, int64_t n, Indexer ix, int64_t base) {
  DLC_GRID_STRIDE_LOOP(i, n) {
    int64_t at[1];
    broadcast_offsets<1>(ix, i, at);
    y[i] = x[base + at[0]];
  }
}

template <typename Word> __global__ void zeroKernel(Word *x, int64_t n) {
  DLC_GRID_STRIDE_LOOP(i, n) { x[i] = Word(0); }
}

template <typename Word>
__global__ void sliceBackwardKernel(const Word *dy, Word *dx, int64_t n, Indexer ix, int64_t base) {
  DLC_GRID_STRIDE_LOOP(i, n) {
    int64_t at[1];
    broadcast_offsets<1>(ix, i, at);
    dx[base + at[0]] = dy[i];
  }
}

/// Launches Kernel<Word> with the Word as wide as an element of `dtype`.
template <template <typename> class Launch>
void byWidth(DType dtype, const void *from, void *to, int64_t n, const Indexer &ix, int64_t base) {
  switch (dtype_size(dtype)) {
  case 1:
    Launch<uint8_t>::run(from, to, n, ix, base);
    break;
  case 2:
    Launch<uint16_t>::run(from, to, n, ix, base);
    break;
  case 4:
    Launch<uint32_t>::run(from, to, n, ix, base);
    break;
  default:
    Launch<uint64_t>::run(from, to, n, ix, base);
    break;
  }
}

template <typename Word> struct LaunchSlice {
  static void run(const void *x, void *y, int64_t n, const Indexer &ix, int64_t base) {
    sliceKernel<Word><<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
        static_cast<const Word *>(x), static_cast<Word *>(y), n, ix, base);
  }
};

template <typename Word> struct LaunchSliceBackward {
  static void run(const void *dy, void *dx, int64_t n, const Indexer &ix, int64_t base) {
    sliceBackwardKernel<Word><<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
        static_cast<const Word *>(dy), static_cast<Word *>(dx), n, ix, base);
  }
};

kernels::SliceWalk walkOf(const Shape &input, const Attrs &attrs) {
  return kernels::slice_walk(input, attrs.get_ints("begin", {}), attrs.get_ints("step", {}));
}

// y = x[begin:end:step, ...].
void slice(const KernelArgs &args) {
  OpScope scope(ops::slice);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  kernels::SliceWalk walk = walkOf(x.shape, *args.attrs);
  byWidth<LaunchSlice>(y.dtype, x.data, y.data, n,
                       make_indexer(ops::slice, y.shape, {walk.strides}), walk.base);
  check_launch("slice");
}

// dx = zeros of the input's shape, with dy where the slice read.
void sliceBackward(const KernelArgs &args) {
  OpScope scope(ops::slice_backward);
  const TensorRef &dy = args.inputs[0], &dx = args.outputs[0];
  const int64_t all = dx.numel();
  if (all > 0) {
    cudaStream_t stream = current_context().stream();
    switch (dtype_size(dx.dtype)) {
    case 1:
      zeroKernel<uint8_t><<<blocks_for(all), kThreads, 0, stream>>>(dx.as<uint8_t>(), all);
      break;
    case 2:
      zeroKernel<uint16_t><<<blocks_for(all), kThreads, 0, stream>>>(dx.as<uint16_t>(), all);
      break;
    case 4:
      zeroKernel<uint32_t><<<blocks_for(all), kThreads, 0, stream>>>(dx.as<uint32_t>(), all);
      break;
    default:
      zeroKernel<uint64_t><<<blocks_for(all), kThreads, 0, stream>>>(dx.as<uint64_t>(), all);
      break;
    }
    check_launch("slice_backward");
  }
  int64_t n = dy.numel();
  if (n == 0)
    return;
  kernels::SliceWalk walk = walkOf(dx.shape, *args.attrs);
  byWidth<LaunchSliceBackward>(dy.dtype, dy.data, dx.data, n,
                               make_indexer(ops::slice_backward, dy.shape, {walk.strides}),
                               walk.base);
  check_launch("slice_backward");
}

} // namespace

void register_slice_kernels() {
  register_gpu_kernel(ops::slice, slice);
  register_gpu_kernel(ops::slice_backward, sliceBackward);
}

} // namespace dlc::cuda
