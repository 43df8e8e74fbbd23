//===- ReduceKernels.cu - GPU reductions, argmax and softmax -----------------===//
//
// Reductions accumulate in double, as the CPU kernels do, so that both agree to float
// rounding. A long reduction gets one block per output element (a tree in shared
// memory); a short one one thread per output element.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"

#include <cmath>

namespace dlc::cuda {

namespace {

/// An input walked as (kept dims) x (reduced dims): the output element and the position
/// inside the reduction each map to an input offset through their own strides.
struct ReducePlan {
  int keptRank = 0, reducedRank = 0;
  int64_t keptShape[kMaxRank] = {}, keptStride[kMaxRank] = {};
  int64_t reducedShape[kMaxRank] = {}, reducedStride[kMaxRank] = {};
  int64_t outputs = 1, length = 1; // output elements, elements per reduction
};

__device__ __forceinline__ int64_t offsetOf(int64_t index, int rank, const int64_t *shape,
                                            const int64_t *stride) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (index % shape[d]) * stride[d];
    index /= shape[d];
  }
  return offset;
}

__device__ __forceinline__ double combine(int kind, double a, double b) {
  return kind == 2 ? fmax(a, b) : kind == 3 ? fmin(a, b) : a + b;
}

__device__ __forceinline__ double initial(int kind) {
  return kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0.0;
}

template <typename T>
__device__ __forceinline__ void storeResult(T *y, int64_t o, int kind, double acc,
                                            int64_t length) {
  double v = kind == 1 ? acc / double(length) : acc;
  y[o] = store<T>(static_cast<compute_t<T>>(v));
}

// One block per output element (grid-stride over outputs).
template <typename T>
__global__ void reduceByBlock(const T *x, T *y, ReducePlan plan, int kind) {
  __shared__ double partial[kThreads];
  for (int64_t o = blockIdx.x; o < plan.outputs; o += gridDim.x) {
    int64_t base = offsetOf(o, plan.keptRank, plan.keptShape, plan.keptStride);
    double acc = initial(kind);
    for (int64_t r = threadIdx.x; r < plan.length; r += blockDim.x)
      acc = combine(kind, acc,
                    double(load(x[base + offsetOf(r, plan.reducedRank, plan.reducedShape,
                                                  plan.reducedStride)])));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        partial[threadIdx.x] = combine(kind, partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      storeResult(y, o, kind, partial[0], plan.length);
    __syncthreads(); // partial is reused by the next output
  }
}

// One thread per output element.
template <typename T>
__global__ void reduceByThread(const T *x, T *y, ReducePlan plan, int kind) {
  DLC_GRID_STRIDE_LOOP(o, plan.outputs) {
    int64_t base = offsetOf(o, plan.keptRank, plan.keptShape, plan.keptStride);
    double acc = initial(kind);
    for (int64_t r = 0; r < plan.length; ++r)
      acc = combine(kind, acc,
                    double(load(x[base + offsetOf(r, plan.reducedRank, plan.reducedShape,
                                                  plan.reducedStride)])));
    storeResult(y, o, kind, acc, plan.length);
  }
}

// y = reduce_{axes} x with kind sum (0), mean (1), max (2), min (3).
void reduce(const KernelArgs &args) {
  OpScope scope("dlc.reduce");
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int kind = int(args.attrs->get_int("kind", 0));
  int64_t rank = int64_t(x.shape.size());
  if (rank > kMaxRank)
    throw ShapeError("reduce: the GPU kernels take tensors of rank up to " +
                     std::to_string(kMaxRank) + ", got " + shape_rules::str(x.shape));
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t axis : args.attrs->get_ints("axes", {}))
    reduced[size_t(shape_rules::normalizeAxis(axis, rank))] = true;
  ReducePlan plan;
  int64_t stride = 1;
  std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[size_t(d)] = stride;
    stride *= x.shape[size_t(d)];
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[size_t(d)]) {
      plan.reducedShape[plan.reducedRank] = x.shape[size_t(d)];
      plan.reducedStride[plan.reducedRank++] = strides[size_t(d)];
      plan.length *= x.shape[size_t(d)];
    } else {
      plan.keptShape[plan.keptRank] = x.shape[size_t(d)];
      plan.keptStride[plan.keptRank++] = strides[size_t(d)];
      plan.outputs *= x.shape[size_t(d)];
    }
  }
  if (plan.outputs == 0)
    return;
  if (plan.length == 0 && kind >= 2)
    throw ShapeError("max/min of an empty tensor has no value");
  DeviceContext &ctx = current_context();
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (plan.length > 64) {
      unsigned grid = unsigned(std::min<int64_t>(plan.outputs, 65535));
      reduceByBlock<T><<<grid, kThreads, 0, ctx.stream()>>>(x.as<const T>(), y.as<T>(), plan, kind);
    } else {
      reduceByThread<T><<<blocks_for(plan.outputs), kThreads, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), plan, kind);
    }
    check_launch("reduce");
  });
}

template <typename T>
__global__ void argmaxKernel(const T *x, int64_t *y, AxisSplit s) {
  DLC_GRID_STRIDE_LOOP(t, s.outer * s.inner) {
    int64_t o = t / s.inner, i = t % s.inner;
    const T *row = x + o * s.axis * s.inner + i;
    int64_t best = 0;
    auto bestValue = load(row[0]);
    for (int64_t a = 1; a < s.axis; ++a) {
      auto v = load(row[a * s.inner]);
      if (v > bestValue) {
        bestValue = v;
        best = a;
      }
    }
    y[t] = best;
  }
}

// y (outer, inner) int64 = index of the first maximum of x along axis.
void argmax(const KernelArgs &args) {
  OpScope scope("dlc.argmax");
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  AxisSplit s = split_at_axis(x.shape, shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                                             int64_t(x.shape.size())));
  if (s.axis == 0)
    throw ShapeError("argmax over an empty axis has no value");
  if (s.outer * s.inner == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    argmaxKernel<T><<<blocks_for(s.outer * s.inner), kThreads, 0, ctx.stream()>>>(
        x.as<const T>(), y.as<int64_t>(), s);
    check_launch("argmaxKernel");
  });
}

template <bool Log, typename T>
__global__ void softmaxKernel(const T *x, T *y, AxisSplit s) {
  DLC_GRID_STRIDE_LOOP(t, s.outer * s.inner) {
    int64_t o = t / s.inner, i = t % s.inner;
    int64_t base = o * s.axis * s.inner + i;
    double peak = -INFINITY;
    for (int64_t a = 0; a < s.axis; ++a)
      peak = fmax(peak, double(load(x[base + a * s.inner])));
    double total = 0;
    for (int64_t a = 0; a < s.axis; ++a)
      total += exp(double(load(x[base + a * s.inner])) - peak);
    double logTotal = log(total);
    for (int64_t a = 0; a < s.axis; ++a) {
      double shifted = double(load(x[base + a * s.inner])) - peak;
      double v = Log ? shifted - logTotal : exp(shifted) / total;
      y[base + a * s.inner] = store<T>(static_cast<compute_t<T>>(v));
    }
  }
}

// y = softmax(x) or log_softmax(x) along axis.
template <bool Log> void softmax(const KernelArgs &args) {
  OpScope scope(Log ? "dlc.log_softmax" : "dlc.softmax");
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  AxisSplit s = split_at_axis(x.shape, shape_rules::normalizeAxis(args.attrs->get_int("axis", -1),
                                                             int64_t(x.shape.size())));
  if (s.outer * s.inner == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!is_float_v<T>) {
      throw DTypeError(std::string("softmax needs a floating-point tensor, got ") +
                       dtype_name(x.dtype));
    } else {
      softmaxKernel<Log, T><<<blocks_for(s.outer * s.inner), kThreads, 0, ctx.stream()>>>(
          x.as<const T>(), y.as<T>(), s);
      check_launch("softmaxKernel");
    }
  });
}

} // namespace

void register_reduce_kernels() {
  register_gpu_kernel("dlc.reduce", reduce);
  register_gpu_kernel("dlc.argmax", argmax);
  register_gpu_kernel("dlc.softmax", softmax<false>);
  register_gpu_kernel("dlc.log_softmax", softmax<true>);
}

} // namespace dlc::cuda
