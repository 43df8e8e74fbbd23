//===- ReduceKernels.cu - GPU reductions, batch statistics, argmax, softmax --===//
//
// Reductions accumulate in double, as the CPU kernels do, so that both agree to float
// rounding. A short reduction gets one thread per output element. A long one is split
// into parts, one block per (output, part), so that a few outputs still fill the GPU
// (the bias gradient of a convolution reduces 66 MB into 32 numbers): each block sums its
// part into a partial in the workspace, and a second kernel adds the parts in a fixed
// order, so results do not depend on scheduling. Blocks walk the innermost reduced
// dimension as rows and compute an offset once per row, not per element.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "CudnnSupport.h"
#include "ReducePlan.h"
#include "dlc/Core/OpFacts.h"

#include <atomic>
#include <cmath>

namespace dlc::cuda {

namespace {

// The dialect's reduction kinds, as the kernels compare them.
constexpr int kSum = int(op_enums::ReduceKind::sum), kMean = int(op_enums::ReduceKind::mean),
              kMax = int(op_enums::ReduceKind::max), kMin = int(op_enums::ReduceKind::min);

__device__ __forceinline__ double combine(int kind, double a, double b) {
  return kind == kMax ? fmax(a, b) : kind == kMin ? fmin(a, b) : a + b;
}

__device__ __forceinline__ double initial(int kind) {
  return kind == kMax ? -INFINITY : kind == kMin ? INFINITY : 0.0;
}

template <typename T>
__device__ __forceinline__ void storeResult(T *y, int64_t o, int kind, double acc,
                                            int64_t length) {
  double v = kind == kMean ? acc / double(length) : acc;
  y[o] = store<T>(static_cast<compute_t<T>>(v));
}

// Block b = (output o, part p) reduces elements [length*p/parts, length*(p+1)/parts) of
// output o. Centered: sums (v - center[o])^2 instead (a variance's second pass). With
// one part the result goes straight to y; else to partial[b].
template <typename T, bool Centered>
__global__ void reduceParts(const T *x, ReducePlan plan, int kind, int64_t parts,
                            const double *center, double *partial, T *y) {
  __shared__ double shared[kThreads];
  for (int64_t b = blockIdx.x; b < plan.outputs * parts; b += gridDim.x) {
    int64_t o = b / parts;
    double c = Centered ? center[o] : 0.0;
    double acc = initial(kind);
    visit_part(plan, o, b % parts, parts, threadIdx.x, blockDim.x, [&](int64_t offset) {
      double v = double(load(x[offset]));
      acc = Centered ? acc + (v - c) * (v - c) : combine(kind, acc, v);
    });
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        shared[threadIdx.x] = combine(kind, shared[threadIdx.x], shared[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (parts == 1 && y)
        storeResult(y, o, kind, shared[0], plan.length);
      else
        partial[b] = shared[0];
    }
    __syncthreads(); // shared is reused by the next block index
  }
}

// y[o] = the parts of output o combined in order.
template <typename T>
__global__ void reduceFinish(const double *partial, int64_t parts, ReducePlan plan, int kind,
                             T *y) {
  DLC_GRID_STRIDE_LOOP(o, plan.outputs) {
    double acc = initial(kind);
    for (int64_t p = 0; p < parts; ++p)
      acc = combine(kind, acc, partial[o * parts + p]);
    storeResult(y, o, kind, acc, plan.length);
  }
}

static_assert(kMaxReduceRank >= kMaxRank, "a reduce plan must hold every rank reduce takes");

/// parts_for on the current GPU.
int64_t partsFor(const ReducePlan &plan) {
  static std::atomic<int> cached[64] = {}; // multiprocessors of GPUs 0..63
  int ordinal = current_context().ordinal();
  int count = ordinal < 64 ? cached[ordinal].load() : 0;
  if (count == 0) {
    check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, ordinal),
          "cudaDeviceGetAttribute(multiProcessorCount)");
    if (ordinal < 64)
      cached[ordinal] = count;
  }
  return parts_for(plan, count);
}

/// Grid for a loop over `blocks` block indices.
unsigned gridFor(int64_t blocks) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(1) << 20)));
}

// One thread per output element.
template <typename T>
__global__ void reduceByThread(const T *x, T *y, ReducePlan plan, int kind) {
  DLC_GRID_STRIDE_LOOP(o, plan.outputs) {
    int64_t base = offset_of(o, plan.keptRank, plan.keptShape, plan.keptStride);
    double acc = initial(kind);
    for (int64_t r = 0; r < plan.length; ++r)
      acc = combine(kind, acc,
                    double(load(x[base + offset_of(r, plan.reducedRank, plan.reducedShape,
                                                  plan.reducedStride)])));
    storeResult(y, o, kind, acc, plan.length);
  }
}

// y = reduce_{axes} x with the dialect's ReduceKind.
void reduce(const KernelArgs &args) {
  OpScope scope(ops::reduce);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int kind = int(args.attrs->get_int("kind", kSum));
  int64_t rank = int64_t(x.shape.size());
  if (rank > kMaxRank)
    throw ShapeError("reduce: the GPU kernels take tensors of rank up to " +
                     std::to_string(kMaxRank) + ", got " + shape_rules::str(x.shape));
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t axis : args.attrs->get_ints("axes", {}))
    reduced[size_t(shape_rules::normalizeAxis(axis, rank))] = true;
  ReducePlan plan = make_reduce_plan(x.shape, reduced);
  if (plan.outputs == 0)
    return;
  if (plan.length == 0 && (kind == kMax || kind == kMin))
    throw ShapeError("max/min of an empty tensor has no value");
  DeviceContext &ctx = current_context();
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (plan.length > 64) {
      int64_t parts = partsFor(plan);
      double *partial = parts == 1 ? nullptr
                                   : static_cast<double *>(ctx.workspace(
                                         size_t(plan.outputs * parts) * sizeof(double)));
      reduceParts<T, false><<<gridFor(plan.outputs * parts), kThreads, 0, ctx.stream()>>>(
          x.as<const T>(), plan, kind, parts, nullptr, partial, y.as<T>());
      if (parts > 1) {
        check_launch("reduceParts");
        reduceFinish<T><<<blocks_for(plan.outputs), kThreads, 0, ctx.stream()>>>(
            partial, parts, plan, kind, y.as<T>());
      }
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
  OpScope scope(ops::argmax);
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
  OpScope scope(Log ? ops::log_softmax : ops::softmax);
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

// mean[c] = sum / count, kept in double for the second pass.
__global__ void channelMean(const double *partial, int64_t parts, int64_t C, int64_t count,
                            double *center, float *mean) {
  DLC_GRID_STRIDE_LOOP(c, C) {
    double sum = 0;
    for (int64_t p = 0; p < parts; ++p)
      sum += partial[c * parts + p];
    center[c] = sum / double(count);
    mean[c] = float(center[c]);
  }
}

__global__ void channelVariance(const double *partial, int64_t parts, int64_t C, int64_t count,
                                float *var) {
  DLC_GRID_STRIDE_LOOP(c, C) {
    double sum = 0;
    for (int64_t p = 0; p < parts; ++p)
      sum += partial[c * parts + p];
    var[c] = float(sum / double(count));
  }
}

} // namespace

// Two passes in double, as the CPU reference: the mean, then the mean squared deviation.
void launch_channel_statistics(const TensorRef &x, int64_t N, int64_t C, int64_t S, float *mean,
                               float *var) {
  if (C == 0 || N * S == 0) // no statistics to take (the caller returns earlier)
    return;
  ReducePlan plan; // (N, C, S): keep C, reduce N and S (S is the contiguous row)
  plan.keptRank = 1;
  plan.keptShape[0] = C;
  plan.keptStride[0] = S;
  plan.reducedRank = S == 1 ? 1 : 2;
  plan.reducedShape[0] = N;
  plan.reducedStride[0] = C * S;
  plan.reducedShape[1] = S;
  plan.reducedStride[1] = 1;
  plan.outputs = C;
  plan.length = N * S;
  DeviceContext &ctx = current_context();
  int64_t parts = partsFor(plan);
  auto *center = static_cast<double *>(ctx.workspace(size_t(C * (parts + 1)) * sizeof(double)));
  double *partial = center + C;
  unsigned grid = gridFor(C * parts);
  dispatch_float_dtype(x, [&](auto tag) {
    using T = decltype(tag);
    reduceParts<T, false><<<grid, kThreads, 0, ctx.stream()>>>(x.as<const T>(), plan, 0, parts,
                                                               nullptr, partial, nullptr);
    check_launch("reduceParts");
    channelMean<<<blocks_for(C), kThreads, 0, ctx.stream()>>>(partial, parts, C, plan.length,
                                                              center, mean);
    check_launch("channelMean");
    reduceParts<T, true><<<grid, kThreads, 0, ctx.stream()>>>(x.as<const T>(), plan, 0, parts,
                                                              center, partial, nullptr);
    check_launch("reduceParts");
  });
  channelVariance<<<blocks_for(C), kThreads, 0, ctx.stream()>>>(partial, parts, C, plan.length,
                                                                var);
  check_launch("channelVariance");
}

void register_reduce_kernels() {
  register_gpu_kernel(ops::reduce, reduce);
  register_gpu_kernel(ops::argmax, argmax);
  register_gpu_kernel(ops::softmax, softmax<false>);
  register_gpu_kernel(ops::log_softmax, softmax<true>);
}

} // namespace dlc::cuda
