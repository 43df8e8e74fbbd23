//===- IndexKernels.cu - GPU take (embedding lookup) and its gradient ---------===//
//
// take: one thread per output element, moving elements of any dtype by their width.
// take_backward: one thread per column (outer, inner) that adds the column of each taken
// slice in the indices' order, as the CPU kernels do: no atomics, so the sums are the
// CPU's bit for bit. An index outside [-size, size) sets a flag, reported when the task
// has finished (TakeIndex.h decides, on both devices).
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"
#include "../KernelMath/TakeIndex.h"

namespace dlc::cuda {

namespace {

/// (outer, size, inner) around the axis of take's input, and the number of indices.
struct TakeShape {
  int64_t outer, size, inner, count;
};

TakeShape takeShape(const Shape &input, const TensorRef &indices, const Attrs &attrs) {
  int64_t axis = shape_rules::normalizeAxis(attrs.get_int("axis", 0), int64_t(input.size()));
  kernels::AxisSplit split = kernels::split_at_axis(input, axis);
  return {split.outer, split.axis, split.inner, indices.numel()};
}

template <typename Index>
__device__ __forceinline__ int64_t sliceOf(const Index *indices, int64_t j, int64_t size,
                                           int *bad) {
  int64_t slice = take_index::slice(int64_t(indices[j]), size);
  if (slice < 0)
    atomicExch(bad, int(j) + 1); // element + 1 (0 means no error)
  return slice;
}

template <typename Word, typename Index>
__global__ void takeKernel(const Word *x, const Index *indices, Word *y, TakeShape s,
                           int *bad) {
  DLC_GRID_STRIDE_LOOP(i, s.outer * s.count * s.inner) {
    int64_t c = i % s.inner, j = (i / s.inner) % s.count, o = i / (s.inner * s.count);
    int64_t slice = sliceOf(indices, j, s.size, bad);
    if (slice >= 0)
      y[i] = x[(o * s.size + slice) * s.inner + c];
  }
}

template <typename Index>
__global__ void takeBackwardKernel(const float *dy, const Index *indices, float *dx,
                                   TakeShape s, int *bad) {
  DLC_GRID_STRIDE_LOOP(column, s.outer * s.inner) {
    int64_t o = column / s.inner, c = column % s.inner;
    for (int64_t r = 0; r < s.size; ++r)
      dx[(o * s.size + r) * s.inner + c] = 0.f;
    for (int64_t j = 0; j < s.count; ++j) {
      int64_t slice = sliceOf(indices, j, s.size, bad);
      if (slice >= 0)
        dx[(o * s.size + slice) * s.inner + c] += dy[(o * s.count + j) * s.inner + c];
    }
  }
}

/// A flag the kernels set to element + 1 of an index that names no slice; checked on
/// the host once the task has finished, in the CPU kernels' words.
int *indexCheck(const char *op, int64_t size, const Shape &input) {
  auto flag = std::make_shared<ErrorFlag>();
  std::string name = op, shape = shape_rules::str(input);
  current_context().after_completion([flag, name, size, shape] {
    if (int element = flag->take())
      throw IndexError(name + ": an index (element " + std::to_string(element - 1) +
                       " of the indices) is outside [" + std::to_string(-size) + ", " +
                       std::to_string(size) + ") for input " + shape);
  });
  return flag->device_pointer();
}

template <typename Word, typename Index>
void launchTake(const TensorRef &x, const Index *indices, const TensorRef &y, TakeShape s,
                int *bad) {
  int64_t n = y.numel();
  takeKernel<Word, Index><<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
      x.as<const Word>(), indices, y.as<Word>(), s, bad);
}

// output (outer, count, inner) from input (outer, size, inner) and the indices
void take(const KernelArgs &k) {
  OpScope scope(ops::take);
  const TensorRef &x = k.inputs[0], &y = k.outputs[0];
  TakeShape s = takeShape(x.shape, k.inputs[1], *k.attrs);
  if (y.numel() == 0)
    return;
  int *bad = indexCheck("take", s.size, x.shape);
  with_integer_data(k.inputs[1], "take", "indices", [&](auto indices) {
    using Index = std::remove_const_t<std::remove_pointer_t<decltype(indices)>>;
    switch (dtype_size(x.dtype)) {
    case 1:
      launchTake<uint8_t, Index>(x, indices, y, s, bad);
      break;
    case 2:
      launchTake<uint16_t, Index>(x, indices, y, s, bad);
      break;
    case 4:
      launchTake<uint32_t, Index>(x, indices, y, s, bad);
      break;
    default:
      launchTake<uint64_t, Index>(x, indices, y, s, bad);
      break;
    }
  });
  check_launch("takeKernel");
}

// input gradient (outer, size, inner) from the output gradient (outer, count, inner)
void takeBackward(const KernelArgs &k) {
  OpScope scope(ops::take_backward);
  const TensorRef &dy = k.inputs[0], &dx = k.outputs[0];
  if (dy.dtype != DType::f32 || dx.dtype != DType::f32)
    throw DTypeError(std::string("take_backward: the gradients must be float32 (the eager op "
                                 "adds 16-bit ones in float32), got ") +
                     dtype_name(dy.dtype));
  TakeShape s = takeShape(dx.shape, k.inputs[1], *k.attrs);
  int64_t columns = s.outer * s.inner;
  if (dx.numel() == 0)
    return;
  int *bad = indexCheck("take_backward", s.size, dx.shape);
  with_integer_data(k.inputs[1], "take_backward", "indices", [&](auto indices) {
    using Index = std::remove_const_t<std::remove_pointer_t<decltype(indices)>>;
    takeBackwardKernel<Index><<<blocks_for(columns), kThreads, 0, current_context().stream()>>>(
        dy.as<const float>(), indices, dx.as<float>(), s, bad);
  });
  check_launch("takeBackwardKernel");
}

} // namespace

void register_index_kernels() {
  register_gpu_kernel(ops::take, take);
  register_gpu_kernel(ops::take_backward, takeBackward);
}

} // namespace dlc::cuda
