//===- AttentionKernels.cu - GPU fused attention and its gradient (dlc's own) --===//
//
// dlc's kernels for every shape: one block per query row walks the keys in blocks of
// kThreads, a thread per key for the scores (their dot products over the features) and a
// thread per output feature for the online-softmax update, so no more than a block of
// scores exists at a time. The backward recomputes the weights from the log-sum-exp: one
// block per key row for the key and value gradients, one per query row for the query's,
// each adding in a fixed order (no atomics). AttentionGeometry.h decides masks, causality
// and dropout, as on the CPU.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "../KernelMath/AttentionGeometry.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

using attention::Geometry;

/// Output features a thread keeps (Dv <= kThreads * kFeaturesPerThread).
constexpr int kFeaturesPerThread = 4;

__device__ float blockMax(float value, float *shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  float result = shared[0];
  __syncthreads();
  return result;
}

/// Score (b, i, j), or -INFINITY where query i may not attend key j.
template <typename T>
__device__ float scoreOf(const Geometry &g, const T *q, const T *k, const void *mask,
                         int64_t b, int64_t i, int64_t j) {
  if (g.hidden(i, j))
    return -INFINITY;
  float s = 0.f;
  for (int64_t c = 0; c < g.d; ++c)
    s += float(load(q[(b * g.lq + i) * g.d + c])) * float(load(k[(b * g.lk + j) * g.d + c]));
  s *= g.scale;
  if (g.hasMask) {
    int64_t at = g.maskBase(b) + i * g.maskQueryStride + j * g.maskKeyStride;
    if (g.booleanMask)
      return static_cast<const bool *>(mask)[at] ? s : -INFINITY;
    s += float(load(static_cast<const T *>(mask)[at]));
  }
  return s;
}

template <typename T>
__global__ void attentionForward(Geometry g, const T *q, const T *k, const T *v,
                                 const void *mask, T *out, float *lse) {
  __shared__ float scores[kThreads];
  __shared__ float shared[kThreads];
  for (int64_t row = blockIdx.x; row < g.batch * g.lq; row += gridDim.x) {
    const int64_t b = row / g.lq, i = row % g.lq;
    float acc[kFeaturesPerThread] = {0.f, 0.f, 0.f, 0.f};
    float maximum = -INFINITY, total = 0.f;
    for (int64_t j0 = 0; j0 < g.lk; j0 += blockDim.x) {
      const int64_t j = j0 + threadIdx.x;
      float s = j < g.lk ? scoreOf(g, q, k, mask, b, i, j) : -INFINITY;
      scores[threadIdx.x] = s;
      const float newMax = fmaxf(maximum, blockMax(s, shared)); // syncs: scores are written
      if (newMax == -INFINITY)
        continue;
      const float rescale = expf(maximum - newMax);
      total *= rescale;
      for (int f = 0; f < kFeaturesPerThread; ++f)
        acc[f] *= rescale;
      const int64_t cols = j0 + blockDim.x <= g.lk ? int64_t(blockDim.x) : g.lk - j0;
      for (int64_t c = 0; c < cols; ++c) {
        const float p = expf(scores[c] - newMax);
        total += p;
        const float weight = p * g.dropFactor(b, i, j0 + c);
        if (weight == 0.f)
          continue;
        for (int f = 0; f < kFeaturesPerThread; ++f) {
          const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
          if (e < g.dv)
            acc[f] += weight * float(load(v[(b * g.lk + j0 + c) * g.dv + e]));
        }
      }
      maximum = newMax;
      __syncthreads(); // scores are rewritten by the next key block
    }
    for (int f = 0; f < kFeaturesPerThread; ++f) {
      const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
      if (e < g.dv)
        out[row * g.dv + e] = store<T>(total > 0.f ? acc[f] / total : 0.f);
    }
    if (threadIdx.x == 0)
      lse[row] = total > 0.f ? maximum + logf(total) : -INFINITY;
  }
}

__global__ void writeSeed(int64_t *target, int64_t seed) { *target = seed; }

// rowDot[r] = dO_r · O_r
template <typename T>
__global__ void attentionRowDot(const T *dout, const T *out, int64_t rows, int64_t dv,
                                float *rowDot) {
  DLC_GRID_STRIDE_LOOP(r, rows) {
    float sum = 0.f;
    for (int64_t e = 0; e < dv; ++e)
      sum += float(load(dout[r * dv + e])) * float(load(out[r * dv + e]));
    rowDot[r] = sum;
  }
}

/// Score (b, i, j)'s weight after dropout and the gradient of the score.
template <typename T>
__device__ void contributionOf(const Geometry &g, const T *q, const T *k, const T *v,
                               const void *mask, const T *dout, const float *lse,
                               const float *rowDot, int64_t b, int64_t i, int64_t j,
                               float *weight, float *dscore) {
  const float l = lse[b * g.lq + i];
  const float s = scoreOf(g, q, k, mask, b, i, j);
  if (s == -INFINITY || l == -INFINITY) {
    *weight = 0.f;
    *dscore = 0.f;
    return;
  }
  const float p = expf(s - l), drop = g.dropFactor(b, i, j);
  float dp = 0.f;
  if (drop != 0.f) {
    for (int64_t e = 0; e < g.dv; ++e)
      dp += float(load(dout[(b * g.lq + i) * g.dv + e])) * float(load(v[(b * g.lk + j) * g.dv + e]));
    dp *= drop;
  }
  *weight = p * drop;
  *dscore = p * (dp - rowDot[b * g.lq + i]);
}

// One block per key row: dK_j = Σ_i dS_ij Q_i scale, dV_j = Σ_i W_ij dO_i.
template <typename T>
__global__ void attentionKeyGrads(Geometry g, const int64_t *seed, const T *q, const T *k,
                                  const T *v, const void *mask, const T *dout, const float *lse,
                                  const float *rowDot, T *dk, T *dv) {
  g.seed = uint64_t(*seed); // the forward's, in device memory
  __shared__ float weights[kThreads];
  __shared__ float dscores[kThreads];
  for (int64_t row = blockIdx.x; row < g.batch * g.lk; row += gridDim.x) {
    const int64_t b = row / g.lk, j = row % g.lk;
    float gk[kFeaturesPerThread] = {0.f, 0.f, 0.f, 0.f};
    float gv[kFeaturesPerThread] = {0.f, 0.f, 0.f, 0.f};
    for (int64_t i0 = 0; i0 < g.lq; i0 += blockDim.x) {
      const int64_t i = i0 + threadIdx.x;
      float w = 0.f, ds = 0.f;
      if (i < g.lq)
        contributionOf(g, q, k, v, mask, dout, lse, rowDot, b, i, j, &w, &ds);
      weights[threadIdx.x] = w;
      dscores[threadIdx.x] = ds;
      __syncthreads();
      const int64_t count = i0 + blockDim.x <= g.lq ? int64_t(blockDim.x) : g.lq - i0;
      for (int64_t c = 0; c < count; ++c)
        for (int f = 0; f < kFeaturesPerThread; ++f) {
          const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
          if (e < g.d)
            gk[f] += dscores[c] * g.scale * float(load(q[(b * g.lq + i0 + c) * g.d + e]));
          if (e < g.dv)
            gv[f] += weights[c] * float(load(dout[(b * g.lq + i0 + c) * g.dv + e]));
        }
      __syncthreads();
    }
    for (int f = 0; f < kFeaturesPerThread; ++f) {
      const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
      if (e < g.d)
        dk[row * g.d + e] = store<T>(gk[f]);
      if (e < g.dv)
        dv[row * g.dv + e] = store<T>(gv[f]);
    }
  }
}

// One block per query row: dQ_i = Σ_j dS_ij K_j scale.
template <typename T>
__global__ void attentionQueryGrads(Geometry g, const int64_t *seed, const T *q, const T *k,
                                    const T *v, const void *mask, const T *dout,
                                    const float *lse, const float *rowDot, T *dq) {
  g.seed = uint64_t(*seed); // the forward's, in device memory
  __shared__ float dscores[kThreads];
  for (int64_t row = blockIdx.x; row < g.batch * g.lq; row += gridDim.x) {
    const int64_t b = row / g.lq, i = row % g.lq;
    float gq[kFeaturesPerThread] = {0.f, 0.f, 0.f, 0.f};
    for (int64_t j0 = 0; j0 < g.lk; j0 += blockDim.x) {
      const int64_t j = j0 + threadIdx.x;
      float w = 0.f, ds = 0.f;
      if (j < g.lk)
        contributionOf(g, q, k, v, mask, dout, lse, rowDot, b, i, j, &w, &ds);
      dscores[threadIdx.x] = ds;
      __syncthreads();
      const int64_t count = j0 + blockDim.x <= g.lk ? int64_t(blockDim.x) : g.lk - j0;
      for (int64_t c = 0; c < count; ++c)
        for (int f = 0; f < kFeaturesPerThread; ++f) {
          const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
          if (e < g.d)
            gq[f] += dscores[c] * g.scale * float(load(k[(b * g.lk + j0 + c) * g.d + e]));
        }
      __syncthreads();
    }
    for (int f = 0; f < kFeaturesPerThread; ++f) {
      const int64_t e = threadIdx.x + int64_t(f) * blockDim.x;
      if (e < g.d)
        dq[row * g.d + e] = store<T>(gq[f]);
    }
  }
}

unsigned rowBlocks(int64_t rows) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(rows, int64_t(1) << 16)));
}

Geometry geometryOf(const KernelArgs &args, const TensorRef *mask, const TensorRef &q,
                    const TensorRef &k, const TensorRef &v, bool withSeed) {
  const Attrs &a = *args.attrs;
  Geometry g = attention::geometry(q.shape, k.shape, v.shape, mask ? &mask->shape : nullptr,
                                   mask && mask->dtype == DType::boolean,
                                   a.get_float("scale", 1.0), a.get_bool("causal", false),
                                   a.get(op_attrs::attention::dropout),
                                   withSeed ? a.get(op_attrs::attention::seed) : 0);
  if (g.d > int64_t(kThreads) * kFeaturesPerThread || g.dv > int64_t(kThreads) * kFeaturesPerThread)
    throw ShapeError(std::string(current_op()) + ": the GPU kernel takes at most " +
                     std::to_string(kThreads * kFeaturesPerThread) +
                     " features per head, got " + std::to_string(std::max(g.d, g.dv)));
  return g;
}

// (q, k, v[, mask]) -> (output, logsumexp, used_seed)
void attentionKernel(const KernelArgs &args) {
  OpScope scope(ops::attention);
  const TensorRef &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2];
  const TensorRef *mask = args.inputs.size() > 3 ? &args.inputs[3] : nullptr;
  Geometry g = geometryOf(args, mask, q, k, v, /*withSeed=*/true);
  DeviceContext &ctx = current_context();
  writeSeed<<<1, 1, 0, ctx.stream()>>>(args.outputs[2].as<int64_t>(), int64_t(g.seed));
  check_launch("attention");
  if (g.batch * g.lq == 0)
    return;
  dispatch_float_dtype(q, [&](auto tag) {
    using T = decltype(tag);
    attentionForward<T><<<rowBlocks(g.batch * g.lq), kThreads, 0, ctx.stream()>>>(
        g, q.as<const T>(), k.as<const T>(), v.as<const T>(), mask ? mask->data : nullptr,
        args.outputs[0].as<T>(), args.outputs[1].as<float>());
    check_launch("attention");
  });
}

// (dO, q, k, v, output, logsumexp, used_seed[, mask]) -> (dq, dk, dv)
void attentionBackwardKernel(const KernelArgs &args) {
  OpScope scope(ops::attention_backward);
  const TensorRef &q = args.inputs[1], &k = args.inputs[2], &v = args.inputs[3];
  const TensorRef *mask = args.inputs.size() > 7 ? &args.inputs[7] : nullptr;
  Geometry g = geometryOf(args, mask, q, k, v, /*withSeed=*/false);
  DeviceContext &ctx = current_context();
  const int64_t *seed = args.inputs[6].as<const int64_t>();
  dispatch_float_dtype(q, [&](auto tag) {
    using T = decltype(tag);
    const T *dout = args.inputs[0].as<const T>();
    const float *lse = args.inputs[5].as<const float>();
    float *rowDot = static_cast<float *>(
        ctx.workspace(size_t(std::max<int64_t>(g.batch * g.lq, 1)) * sizeof(float)));
    if (g.batch * g.lq > 0) {
      attentionRowDot<T><<<blocks_for(g.batch * g.lq), kThreads, 0, ctx.stream()>>>(
          dout, args.inputs[4].as<const T>(), g.batch * g.lq, g.dv, rowDot);
      check_launch("attention_backward");
      attentionQueryGrads<T><<<rowBlocks(g.batch * g.lq), kThreads, 0, ctx.stream()>>>(
          g, seed, q.as<const T>(), k.as<const T>(), v.as<const T>(), mask ? mask->data : nullptr,
          dout, lse, rowDot, args.outputs[0].as<T>());
      check_launch("attention_backward");
    }
    if (g.batch * g.lk > 0) {
      attentionKeyGrads<T><<<rowBlocks(g.batch * g.lk), kThreads, 0, ctx.stream()>>>(
          g, seed, q.as<const T>(), k.as<const T>(), v.as<const T>(), mask ? mask->data : nullptr,
          dout, lse, rowDot, args.outputs[1].as<T>(), args.outputs[2].as<T>());
      check_launch("attention_backward");
    }
  });
}

} // namespace

void register_attention_kernels() {
  register_gpu_kernel(ops::attention, attentionKernel);
  register_gpu_kernel(ops::attention_backward, attentionBackwardKernel);
}

} // namespace dlc::cuda
