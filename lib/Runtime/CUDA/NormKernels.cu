//===- NormKernels.cu - GPU layer norm and its gradient -----------------------===//
//
// The input is (outer, N, inner) around the normalized axis, as on the CPU. One block
// per row: its threads stride over the N elements and add in float32 through shared
// memory, twice (mean, then the variance of centred values) in the forward and once for
// the two sums of the input gradient. gamma's and beta's gradients add over rows: one
// thread per (row chunk, column) adds its chunk into the workspace, and a second kernel
// adds the chunks in order, so the sums do not depend on scheduling.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

/// The sum of every thread's `value` in the block, returned to all of them.
__device__ float blockSum(float value, float *shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  float total = shared[0];
  __syncthreads(); // shared is reused by the next sum
  return total;
}

/// Row r's first element (its stride is s.inner).
__device__ __forceinline__ int64_t rowBase(const AxisSplit &s, int64_t r) {
  return (r / s.inner) * s.axis * s.inner + r % s.inner;
}

template <typename T>
__global__ void layerNormKernel(const T *x, const float *gamma, const float *beta, float eps,
                                T *y, float *mean, float *var, AxisSplit s) {
  __shared__ float shared[kThreads];
  const int64_t n = s.axis;
  for (int64_t r = blockIdx.x; r < s.outer * s.inner; r += gridDim.x) {
    const int64_t base = rowBase(s, r);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      sum += float(load(x[base + j * s.inner]));
    const float mu = blockSum(sum, shared) / float(n);
    float squares = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float centred = float(load(x[base + j * s.inner])) - mu;
      squares += centred * centred;
    }
    const float v = blockSum(squares, shared) / float(n);
    const float rstd = 1.f / sqrtf(v + eps);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t at = base + j * s.inner;
      y[at] = store<T>((float(load(x[at])) - mu) * rstd * gamma[j] + beta[j]);
    }
    if (threadIdx.x == 0) {
      mean[r] = mu;
      var[r] = v;
    }
  }
}

template <typename T>
__global__ void layerNormInputGradKernel(const T *dy, const T *x, const float *gamma,
                                         const float *mean, const float *var, float eps,
                                         T *dx, AxisSplit s) {
  __shared__ float shared[kThreads];
  const int64_t n = s.axis;
  for (int64_t r = blockIdx.x; r < s.outer * s.inner; r += gridDim.x) {
    const int64_t base = rowBase(s, r);
    const float mu = mean[r], rstd = 1.f / sqrtf(var[r] + eps);
    float sumG = 0.f, sumGX = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t at = base + j * s.inner;
      const float gd = gamma[j] * float(load(dy[at]));
      sumG += gd;
      sumGX += gd * (float(load(x[at])) - mu) * rstd;
    }
    const float meanG = blockSum(sumG, shared) / float(n);
    const float meanGX = blockSum(sumGX, shared) / float(n);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t at = base + j * s.inner;
      const float xhat = (float(load(x[at])) - mu) * rstd;
      dx[at] = store<T>(rstd * (gamma[j] * float(load(dy[at])) - meanG - xhat * meanGX));
    }
  }
}

/// Row chunks of the gamma and beta gradients (as the CPU kernel's).
constexpr int64_t kChunks = 64;

// partial[c][0][j] = sum over chunk c's rows of dy xhat, partial[c][1][j] of dy.
template <typename T>
__global__ void layerNormParamPartials(const T *dy, const T *x, const float *mean,
                                       const float *var, float eps, AxisSplit s,
                                       int64_t chunks, float *partial) {
  const int64_t n = s.axis, rows = s.outer * s.inner;
  DLC_GRID_STRIDE_LOOP(t, chunks * n) {
    const int64_t c = t / n, j = t % n;
    float dgamma = 0.f, dbeta = 0.f;
    for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) {
      const int64_t at = rowBase(s, r) + j * s.inner;
      const float d = float(load(dy[at]));
      dgamma += d * (float(load(x[at])) - mean[r]) / sqrtf(var[r] + eps);
      dbeta += d;
    }
    partial[(c * 2) * n + j] = dgamma;
    partial[(c * 2 + 1) * n + j] = dbeta;
  }
}

__global__ void layerNormParamFinish(const float *partial, int64_t chunks, int64_t n,
                                     float *dgamma, float *dbeta) {
  DLC_GRID_STRIDE_LOOP(j, n) {
    float g = 0.f, b = 0.f;
    for (int64_t c = 0; c < chunks; ++c) {
      g += partial[(c * 2) * n + j];
      b += partial[(c * 2 + 1) * n + j];
    }
    dgamma[j] = g;
    dbeta[j] = b;
  }
}

AxisSplit rowsOf(const Shape &input, int64_t axis) {
  return split_at_axis(input, shape_rules::normalizeAxis(axis, int64_t(input.size())));
}

/// Grid of one block per row, capped (blocks loop over further rows).
unsigned rowBlocks(int64_t rows) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(rows, int64_t(1) << 16)));
}

// (x, gamma, beta) -> (y, mean, var)
void layerNorm(const KernelArgs &args) {
  OpScope scope(ops::layer_norm);
  const TensorRef &x = args.inputs[0];
  AxisSplit s = rowsOf(x.shape, args.attrs->get(op_attrs::layer_norm::axis));
  const float eps = float(args.attrs->get(op_attrs::layer_norm::epsilon));
  if (s.outer * s.inner == 0)
    return;
  dispatch_float_dtype(x, [&](auto tag) {
    using T = decltype(tag);
    layerNormKernel<T><<<rowBlocks(s.outer * s.inner), kThreads, 0,
                         current_context().stream()>>>(
        x.as<const T>(), args.inputs[1].as<const float>(), args.inputs[2].as<const float>(),
        eps, args.outputs[0].as<T>(), args.outputs[1].as<float>(), args.outputs[2].as<float>(),
        s);
    check_launch("layer_norm");
  });
}

// (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta)
void layerNormBackward(const KernelArgs &args) {
  OpScope scope(ops::layer_norm_backward);
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1];
  AxisSplit s = rowsOf(x.shape, args.attrs->get(op_attrs::layer_norm_backward::axis));
  const float eps = float(args.attrs->get(op_attrs::layer_norm_backward::epsilon));
  const float *gamma = args.inputs[2].as<const float>(), *mean = args.inputs[3].as<const float>(),
              *var = args.inputs[4].as<const float>();
  const int64_t rows = s.outer * s.inner, n = s.axis;
  const int64_t chunks = std::min(kChunks, rows);
  DeviceContext &ctx = current_context();
  dispatch_float_dtype(x, [&](auto tag) {
    using T = decltype(tag);
    if (rows > 0) {
      layerNormInputGradKernel<T><<<rowBlocks(rows), kThreads, 0, ctx.stream()>>>(
          dy.as<const T>(), x.as<const T>(), gamma, mean, var, eps, args.outputs[0].as<T>(), s);
      check_launch("layer_norm_backward");
    }
    float *partial = static_cast<float *>(
        ctx.workspace(size_t(std::max<int64_t>(chunks, 1) * 2 * n) * sizeof(float)));
    if (chunks > 0) {
      layerNormParamPartials<T><<<blocks_for(chunks * n), kThreads, 0, ctx.stream()>>>(
          dy.as<const T>(), x.as<const T>(), mean, var, eps, s, chunks, partial);
      check_launch("layer_norm_backward");
    }
    layerNormParamFinish<<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
        partial, chunks, n, args.outputs[1].as<float>(), args.outputs[2].as<float>());
    check_launch("layer_norm_backward");
  });
}

} // namespace

void register_norm_kernels() {
  register_gpu_kernel(ops::layer_norm, layerNorm);
  register_gpu_kernel(ops::layer_norm_backward, layerNormBackward);
}

} // namespace dlc::cuda
