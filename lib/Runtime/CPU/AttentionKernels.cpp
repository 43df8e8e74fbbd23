//===- AttentionKernels.cpp - fused attention and its gradient on the CPU -----===//
//
// The fast forward gives each task a block of queries of one batch index and walks the
// keys in blocks: the block's scores, then an online softmax (a running maximum and sum
// per query, the partial output rescaled when the maximum grows), so no more than a
// block of scores exists at a time. It keeps each query's log-sum-exp, from which the
// backward recomputes any weight exp(score - lse): one pass over key blocks for the key
// and value gradients, one over query blocks for the query's, so no two tasks add into
// one row. The reference materializes every score of a batch index in double.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "../KernelMath/AttentionGeometry.h"
#include "dlc/Core/OpFacts.h"

#include <dnnl.h>

#include <cmath>
#include <limits>
#include <type_traits>

namespace dlc::cpu_kernels {

namespace {

using attention::Geometry;

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
constexpr int64_t kQueryBlock = 32, kKeyBlock = 64;

/// The attention's operands: rows of q (lq x d), k (lk x d), v (lk x dv) per batch index.
template <typename T> struct Operands {
  const T *q, *k, *v;
  const void *mask; // bool, or T for an additive mask; null: none
};

Geometry geometryOf(const KernelArgs &k, const TensorRef *mask, const TensorRef &q,
                    const TensorRef &key, const TensorRef &v, bool withSeed) {
  const Attrs &a = *k.attrs;
  return attention::geometry(q.shape, key.shape, v.shape, mask ? &mask->shape : nullptr,
                             mask && mask->dtype == DType::boolean, a.get_float("scale", 1.0),
                             a.get_bool("causal", false),
                             a.get(op_attrs::attention::dropout),
                             withSeed ? a.get(op_attrs::attention::seed) : 0);
}

/// dot(a[0..n), b[0..n)) in float.
template <typename T> float dot(const T *a, const T *b, int64_t n) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c)
    sum += load(a[c]) * load(b[c]);
  return sum;
}

/// Score (b, i, j): scaled q_i · k_j, masked; -inf where the query may not attend.
template <typename T>
float score(const Geometry &g, const Operands<T> &in, int64_t b, int64_t i, int64_t j,
            int64_t maskBase) {
  if (g.hidden(i, j))
    return kMinusInfinity;
  float s = g.scale * dot(in.q + (b * g.lq + i) * g.d, in.k + (b * g.lk + j) * g.d, g.d);
  if (g.hasMask) {
    int64_t at = maskBase + i * g.maskQueryStride + j * g.maskKeyStride;
    if (g.booleanMask)
      return static_cast<const bool *>(in.mask)[at] ? s : kMinusInfinity;
    s += load(static_cast<const T *>(in.mask)[at]);
  }
  return s;
}

/// C (m x n, row stride ldc) = alpha op(A) op(B) (+ C when accumulate), row-major, op
/// transposing A or B as asked: oneDNN's sgemm, on the calling thread inside a task.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
          const float *a, int64_t lda, const float *b, int64_t ldb, bool accumulate, float *c,
          int64_t ldc) {
  if (m == 0 || n == 0 || k == 0)
    return;
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a,
                                    lda, b, ldb, accumulate ? 1.f : 0.f, c, ldc);
  if (status != dnnl_success)
    throw Error("attention: oneDNN sgemm failed with status " + std::to_string(int(status)));
}

// float32: the block's scores and its weighted values are two matrix products (oneDNN's
// sgemm), the masking and the online softmax between them a pass over the block.
void forwardFastFloat(const Geometry &g, const Operands<float> &in, float *out, float *lse) {
  const int64_t blocks = (g.lq + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.batch * blocks, g.batch * g.lq * g.lk * (g.d + g.dv), [&](int64_t task) {
    const int64_t b = task / blocks, i0 = (task % blocks) * kQueryBlock;
    const int64_t rows = std::min(kQueryBlock, g.lq - i0);
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> acc(static_cast<size_t>(rows * g.dv), 0.f);
    std::vector<float> maxima(static_cast<size_t>(rows), kMinusInfinity);
    std::vector<float> sums(static_cast<size_t>(rows), 0.f);
    std::vector<float> scores(static_cast<size_t>(kQueryBlock * kKeyBlock));
    const float *q = in.q + (b * g.lq + i0) * g.d;
    const int64_t keys = g.causal ? std::min(g.lk, i0 + rows) : g.lk;
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, keys - j0);
      gemm(false, true, rows, cols, g.d, g.scale, q, g.d, in.k + (b * g.lk + j0) * g.d, g.d,
           false, scores.data(), kKeyBlock);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float *s = scores.data() + r * kKeyBlock;
        float blockMax = kMinusInfinity;
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t j = j0 + c;
          if (g.hidden(i, j)) {
            s[c] = kMinusInfinity;
          } else if (g.hasMask) {
            const int64_t at = maskBase + i * g.maskQueryStride + j * g.maskKeyStride;
            if (g.booleanMask)
              s[c] = static_cast<const bool *>(in.mask)[at] ? s[c] : kMinusInfinity;
            else
              s[c] += static_cast<const float *>(in.mask)[at];
          }
          blockMax = std::max(blockMax, s[c]);
        }
        const float newMax = std::max(maxima[size_t(r)], blockMax);
        if (newMax == kMinusInfinity) { // nothing this query may attend yet
          std::fill(s, s + cols, 0.f);
          continue;
        }
        const float rescale = std::exp(maxima[size_t(r)] - newMax);
        sums[size_t(r)] *= rescale;
        float *row = acc.data() + r * g.dv;
#pragma omp simd
        for (int64_t e = 0; e < g.dv; ++e)
          row[e] *= rescale;
        float total = 0.f;
        for (int64_t c = 0; c < cols; ++c) {
          const float p = std::exp(s[c] - newMax);
          total += p;
          s[c] = p * g.dropFactor(b, i, j0 + c);
        }
        sums[size_t(r)] += total;
        maxima[size_t(r)] = newMax;
      }
      gemm(false, false, rows, g.dv, cols, 1.f, scores.data(), kKeyBlock,
           in.v + (b * g.lk + j0) * g.dv, g.dv, true, acc.data(), g.dv);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float total = sums[size_t(r)];
      float *o = out + (b * g.lq + i0 + r) * g.dv;
      for (int64_t e = 0; e < g.dv; ++e)
        o[e] = total > 0 ? acc[size_t(r * g.dv + e)] / total : 0.f;
      lse[b * g.lq + i0 + r] = total > 0 ? maxima[size_t(r)] + std::log(total) : kMinusInfinity;
    }
  });
}

template <typename T>
void forwardFast(const Geometry &g, const Operands<T> &in, T *out, float *lse) {
  if constexpr (std::is_same_v<T, float>) {
    if (g.d > 0 && g.dv > 0)
      return forwardFastFloat(g, in, out, lse);
  }
  const int64_t blocks = (g.lq + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.batch * blocks, g.batch * g.lq * g.lk * (g.d + g.dv), [&](int64_t task) {
    const int64_t b = task / blocks, i0 = (task % blocks) * kQueryBlock;
    const int64_t rows = std::min(kQueryBlock, g.lq - i0);
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> acc(size_t(rows * g.dv), 0.f), maxima(size_t(rows), kMinusInfinity),
        sums(size_t(rows), 0.f), scores(static_cast<size_t>(kKeyBlock));
    // Keys past the last query of the block are out of every query's reach (causal).
    const int64_t keys = g.causal ? std::min(g.lk, i0 + rows) : g.lk;
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, keys - j0);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float blockMax = kMinusInfinity;
        for (int64_t c = 0; c < cols; ++c) {
          scores[size_t(c)] = score(g, in, b, i, j0 + c, maskBase);
          blockMax = std::max(blockMax, scores[size_t(c)]);
        }
        const float newMax = std::max(maxima[size_t(r)], blockMax);
        if (newMax == kMinusInfinity)
          continue; // nothing this query may attend yet
        const float rescale = std::exp(maxima[size_t(r)] - newMax);
        float *row = acc.data() + r * g.dv;
        sums[size_t(r)] *= rescale;
#pragma omp simd
        for (int64_t c = 0; c < g.dv; ++c)
          row[c] *= rescale;
        for (int64_t c = 0; c < cols; ++c) {
          const float p = std::exp(scores[size_t(c)] - newMax);
          sums[size_t(r)] += p;
          const float weight = p * g.dropFactor(b, i, j0 + c);
          if (weight == 0.f)
            continue;
          const T *v = in.v + (b * g.lk + j0 + c) * g.dv;
#pragma omp simd
          for (int64_t e = 0; e < g.dv; ++e)
            row[e] += weight * load(v[e]);
        }
        maxima[size_t(r)] = newMax;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const float total = sums[size_t(r)];
      T *o = out + (b * g.lq + i) * g.dv;
      for (int64_t e = 0; e < g.dv; ++e)
        o[e] = store<T>(total > 0 ? acc[size_t(r * g.dv + e)] / total : 0.f);
      lse[b * g.lq + i] = total > 0 ? maxima[size_t(r)] + std::log(total) : kMinusInfinity;
    }
  });
}

template <typename T>
void forwardReference(const Geometry &g, const Operands<T> &in, T *out, float *lse) {
  std::vector<double> s(size_t(g.lk));
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    for (int64_t i = 0; i < g.lq; ++i) {
      double peak = -INFINITY;
      for (int64_t j = 0; j < g.lk; ++j) {
        double dotted = 0;
        for (int64_t c = 0; c < g.d; ++c)
          dotted += double(load(in.q[(b * g.lq + i) * g.d + c])) *
                    double(load(in.k[(b * g.lk + j) * g.d + c]));
        s[size_t(j)] = double(g.scale) * dotted;
        int64_t at = maskBase + i * g.maskQueryStride + j * g.maskKeyStride;
        if (g.hidden(i, j) || (g.hasMask && g.booleanMask && !static_cast<const bool *>(in.mask)[at]))
          s[size_t(j)] = -INFINITY;
        else if (g.hasMask && !g.booleanMask)
          s[size_t(j)] += double(load(static_cast<const T *>(in.mask)[at]));
        peak = std::max(peak, s[size_t(j)]);
      }
      double total = 0;
      for (int64_t j = 0; j < g.lk; ++j)
        total += peak == -INFINITY ? 0.0 : std::exp(s[size_t(j)] - peak);
      for (int64_t e = 0; e < g.dv; ++e) {
        double o = 0;
        for (int64_t j = 0; j < g.lk && total > 0; ++j)
          o += std::exp(s[size_t(j)] - peak) / total * double(g.dropFactor(b, i, j)) *
               double(load(in.v[(b * g.lk + j) * g.dv + e]));
        out[(b * g.lq + i) * g.dv + e] = store<T>(float(o));
      }
      lse[b * g.lq + i] = total > 0 ? float(peak + std::log(total)) : kMinusInfinity;
    }
  }
}

/// The backward's extra operands: the output gradient and output, the log-sum-exp, and
/// the per-query sum dO · O (the same for every key of a query).
template <typename T> struct Backward {
  const T *dout, *out;
  const float *lse;
  std::vector<float> rowDot;
};

template <typename T>
Backward<T> backwardOf(const Geometry &g, const T *dout, const T *out, const float *lse) {
  Backward<T> bw{dout, out, lse, std::vector<float>(size_t(g.batch * g.lq))};
  for (int64_t r = 0; r < g.batch * g.lq; ++r)
    bw.rowDot[size_t(r)] = dot(dout + r * g.dv, out + r * g.dv, g.dv);
  return bw;
}

/// What score (b, i, j) contributes to the gradients: the weight after dropout (for dV)
/// and dS, the gradient of the score.
struct Contribution {
  float weight, dscore;
};

template <typename T>
Contribution contribution(const Geometry &g, const Operands<T> &in, const Backward<T> &bw,
                          int64_t b, int64_t i, int64_t j, int64_t maskBase) {
  const float lse = bw.lse[b * g.lq + i];
  const float s = score(g, in, b, i, j, maskBase);
  if (s == kMinusInfinity || lse == kMinusInfinity)
    return {0.f, 0.f};
  const float p = std::exp(s - lse), drop = g.dropFactor(b, i, j);
  const float dp = drop == 0.f ? 0.f
                               : drop * dot(bw.dout + (b * g.lq + i) * g.dv,
                                            in.v + (b * g.lk + j) * g.dv, g.dv);
  return {p * drop, p * (dp - bw.rowDot[size_t(b * g.lq + i)])};
}

/// One (query block, key block) tile of the backward in float32: the weights P (after
/// the masks, from the log-sum-exp), and dS = P ∘ (dP ∘ drop - D), dP = dO Vᵀ. `weights`
/// gets P ∘ drop (what dV needs), `dscores` dS; both rows x cols with row stride kKeyBlock.
void backwardTile(const Geometry &g, const Operands<float> &in, const Backward<float> &bw,
                  int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                  int64_t maskBase, float *weights, float *dscores) {
  gemm(false, true, rows, cols, g.d, g.scale, in.q + (b * g.lq + i0) * g.d, g.d,
       in.k + (b * g.lk + j0) * g.d, g.d, false, weights, kKeyBlock);
  gemm(false, true, rows, cols, g.dv, 1.f, bw.dout + (b * g.lq + i0) * g.dv, g.dv,
       in.v + (b * g.lk + j0) * g.dv, g.dv, false, dscores, kKeyBlock);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    const float lse = bw.lse[b * g.lq + i], rowDot = bw.rowDot[size_t(b * g.lq + i)];
    float *p = weights + r * kKeyBlock, *ds = dscores + r * kKeyBlock;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t j = j0 + c;
      float s = p[c];
      bool hidden = g.hidden(i, j) || lse == kMinusInfinity;
      if (!hidden && g.hasMask) {
        const int64_t at = maskBase + i * g.maskQueryStride + j * g.maskKeyStride;
        if (g.booleanMask)
          hidden = !static_cast<const bool *>(in.mask)[at];
        else
          s += static_cast<const float *>(in.mask)[at];
      }
      const float weight = hidden ? 0.f : std::exp(s - lse), drop = g.dropFactor(b, i, j);
      ds[c] = weight * (ds[c] * drop - rowDot);
      p[c] = weight * drop;
    }
  }
}

// float32 with matrix products: each task owns a block of keys (dK, dV) in one pass and a
// block of queries (dQ) in the other, recomputing the tiles it needs.
void backwardFastFloat(const Geometry &g, const Operands<float> &in, const Backward<float> &bw,
                       float *dq, float *dk, float *dv) {
  const int64_t work = g.batch * g.lq * g.lk * (g.d + g.dv);
  const int64_t keyBlocks = (g.lk + kKeyBlock - 1) / kKeyBlock;
  parallel_for(g.batch * keyBlocks, work, [&](int64_t task) {
    const int64_t b = task / keyBlocks, j0 = (task % keyBlocks) * kKeyBlock;
    const int64_t cols = std::min(kKeyBlock, g.lk - j0);
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> weights(static_cast<size_t>(kQueryBlock * kKeyBlock)),
        dscores(static_cast<size_t>(kQueryBlock * kKeyBlock));
    float *gk = dk + (b * g.lk + j0) * g.d, *gv = dv + (b * g.lk + j0) * g.dv;
    std::fill(gk, gk + cols * g.d, 0.f);
    std::fill(gv, gv + cols * g.dv, 0.f);
    // Causal: queries before the block's first key attend none of its keys.
    for (int64_t i0 = g.causal ? (j0 / kQueryBlock) * kQueryBlock : 0; i0 < g.lq;
         i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, g.lq - i0);
      backwardTile(g, in, bw, b, i0, rows, j0, cols, maskBase, weights.data(), dscores.data());
      gemm(true, false, cols, g.dv, rows, 1.f, weights.data(), kKeyBlock,
           bw.dout + (b * g.lq + i0) * g.dv, g.dv, true, gv, g.dv);
      gemm(true, false, cols, g.d, rows, g.scale, dscores.data(), kKeyBlock,
           in.q + (b * g.lq + i0) * g.d, g.d, true, gk, g.d);
    }
  });
  const int64_t queryBlocks = (g.lq + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.batch * queryBlocks, work, [&](int64_t task) {
    const int64_t b = task / queryBlocks, i0 = (task % queryBlocks) * kQueryBlock;
    const int64_t rows = std::min(kQueryBlock, g.lq - i0);
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> weights(static_cast<size_t>(kQueryBlock * kKeyBlock)),
        dscores(static_cast<size_t>(kQueryBlock * kKeyBlock));
    float *gq = dq + (b * g.lq + i0) * g.d;
    std::fill(gq, gq + rows * g.d, 0.f);
    const int64_t keys = g.causal ? std::min(g.lk, i0 + rows) : g.lk;
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, keys - j0);
      backwardTile(g, in, bw, b, i0, rows, j0, cols, maskBase, weights.data(), dscores.data());
      gemm(false, false, rows, g.d, cols, g.scale, dscores.data(), kKeyBlock,
           in.k + (b * g.lk + j0) * g.d, g.d, true, gq, g.d);
    }
  });
}

template <typename T>
void backwardFast(const Geometry &g, const Operands<T> &in, const Backward<T> &bw, T *dq,
                  T *dk, T *dv) {
  if constexpr (std::is_same_v<T, float>) {
    if (g.d > 0 && g.dv > 0)
      return backwardFastFloat(g, in, bw, dq, dk, dv);
  }
  const int64_t work = g.batch * g.lq * g.lk * (g.d + g.dv);
  // dK and dV: each task owns a block of keys.
  const int64_t keyBlocks = (g.lk + kKeyBlock - 1) / kKeyBlock;
  parallel_for(g.batch * keyBlocks, work, [&](int64_t task) {
    const int64_t b = task / keyBlocks, j0 = (task % keyBlocks) * kKeyBlock;
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> gk(size_t(g.d)), gv(size_t(g.dv));
    for (int64_t j = j0; j < std::min(g.lk, j0 + kKeyBlock); ++j) {
      std::fill(gk.begin(), gk.end(), 0.f);
      std::fill(gv.begin(), gv.end(), 0.f);
      for (int64_t i = g.causal ? j : 0; i < g.lq; ++i) {
        Contribution c = contribution(g, in, bw, b, i, j, maskBase);
        const T *o = bw.dout + (b * g.lq + i) * g.dv, *q = in.q + (b * g.lq + i) * g.d;
        if (c.weight != 0.f) {
#pragma omp simd
          for (int64_t e = 0; e < g.dv; ++e)
            gv[size_t(e)] += c.weight * load(o[e]);
        }
        if (c.dscore != 0.f) {
          const float scaled = c.dscore * g.scale;
#pragma omp simd
          for (int64_t e = 0; e < g.d; ++e)
            gk[size_t(e)] += scaled * load(q[e]);
        }
      }
      for (int64_t e = 0; e < g.d; ++e)
        dk[(b * g.lk + j) * g.d + e] = store<T>(gk[size_t(e)]);
      for (int64_t e = 0; e < g.dv; ++e)
        dv[(b * g.lk + j) * g.dv + e] = store<T>(gv[size_t(e)]);
    }
  });
  // dQ: each task owns a block of queries.
  const int64_t queryBlocks = (g.lq + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.batch * queryBlocks, work, [&](int64_t task) {
    const int64_t b = task / queryBlocks, i0 = (task % queryBlocks) * kQueryBlock;
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    std::vector<float> gq(size_t(g.d));
    for (int64_t i = i0; i < std::min(g.lq, i0 + kQueryBlock); ++i) {
      std::fill(gq.begin(), gq.end(), 0.f);
      for (int64_t j = 0; j < (g.causal ? std::min(g.lk, i + 1) : g.lk); ++j) {
        Contribution c = contribution(g, in, bw, b, i, j, maskBase);
        if (c.dscore == 0.f)
          continue;
        const float scaled = c.dscore * g.scale;
        const T *k = in.k + (b * g.lk + j) * g.d;
#pragma omp simd
        for (int64_t e = 0; e < g.d; ++e)
          gq[size_t(e)] += scaled * load(k[e]);
      }
      for (int64_t e = 0; e < g.d; ++e)
        dq[(b * g.lq + i) * g.d + e] = store<T>(gq[size_t(e)]);
    }
  });
}

// The gradients from whole matrices, in double: P = softmax(S), dV = Pdᵀ dO,
// dPd = dO Vᵀ, dS = P ∘ (dP - rowsum(P ∘ dP)), dQ = dS K scale, dK = dSᵀ Q scale.
template <typename T>
void backwardReference(const Geometry &g, const Operands<T> &in, const Backward<T> &bw, T *dq,
                       T *dk, T *dv) {
  const int64_t lq = g.lq, lk = g.lk;
  std::vector<double> p(size_t(lq * lk)), ds(size_t(lq * lk));
  for (int64_t b = 0; b < g.batch; ++b) {
    const int64_t maskBase = g.hasMask ? g.maskBase(b) : 0;
    for (int64_t i = 0; i < lq; ++i) {
      double rowSum = 0;
      std::vector<double> dp(static_cast<size_t>(lk));
      for (int64_t j = 0; j < lk; ++j) {
        double dotted = 0;
        for (int64_t c = 0; c < g.d; ++c)
          dotted += double(load(in.q[(b * lq + i) * g.d + c])) *
                    double(load(in.k[(b * lk + j) * g.d + c]));
        double s = double(g.scale) * dotted;
        int64_t at = maskBase + i * g.maskQueryStride + j * g.maskKeyStride;
        bool hidden = g.hidden(i, j) ||
                      (g.hasMask && g.booleanMask && !static_cast<const bool *>(in.mask)[at]);
        if (g.hasMask && !g.booleanMask)
          s += double(load(static_cast<const T *>(in.mask)[at]));
        double lse = bw.lse[b * lq + i];
        p[size_t(i * lk + j)] = hidden || std::isinf(lse) ? 0.0 : std::exp(s - lse);
        double dO_V = 0;
        for (int64_t e = 0; e < g.dv; ++e)
          dO_V += double(load(bw.dout[(b * lq + i) * g.dv + e])) *
                  double(load(in.v[(b * lk + j) * g.dv + e]));
        dp[size_t(j)] = dO_V * double(g.dropFactor(b, i, j));
        rowSum += p[size_t(i * lk + j)] * dp[size_t(j)];
      }
      for (int64_t j = 0; j < lk; ++j)
        ds[size_t(i * lk + j)] = p[size_t(i * lk + j)] * (dp[size_t(j)] - rowSum);
    }
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t e = 0; e < g.d; ++e) {
        double sum = 0;
        for (int64_t j = 0; j < lk; ++j)
          sum += ds[size_t(i * lk + j)] * double(load(in.k[(b * lk + j) * g.d + e]));
        dq[(b * lq + i) * g.d + e] = store<T>(float(sum * g.scale));
      }
    for (int64_t j = 0; j < lk; ++j) {
      for (int64_t e = 0; e < g.d; ++e) {
        double sum = 0;
        for (int64_t i = 0; i < lq; ++i)
          sum += ds[size_t(i * lk + j)] * double(load(in.q[(b * lq + i) * g.d + e]));
        dk[(b * lk + j) * g.d + e] = store<T>(float(sum * g.scale));
      }
      for (int64_t e = 0; e < g.dv; ++e) {
        double sum = 0;
        for (int64_t i = 0; i < lq; ++i)
          sum += p[size_t(i * lk + j)] * double(g.dropFactor(b, i, j)) *
                 double(load(bw.dout[(b * lq + i) * g.dv + e]));
        dv[(b * lk + j) * g.dv + e] = store<T>(float(sum));
      }
    }
  }
}

// (q, k, v[, mask]) -> (output, logsumexp, used_seed)
template <bool Fast> void attentionKernel(const KernelArgs &k) {
  const TensorRef &q = k.inputs[0], &key = k.inputs[1], &v = k.inputs[2];
  const TensorRef *mask = k.inputs.size() > 3 ? &k.inputs[3] : nullptr;
  Geometry g = geometryOf(k, mask, q, key, v, /*withSeed=*/true);
  *k.outputs[2].as<int64_t>() = int64_t(g.seed);
  dispatch_float_dtype(q.dtype, "attention", [&](auto zero) {
    using T = decltype(zero);
    Operands<T> in{q.as<const T>(), key.as<const T>(), v.as<const T>(),
                   mask ? mask->data : nullptr};
    (Fast ? forwardFast<T> : forwardReference<T>)(g, in, k.outputs[0].as<T>(),
                                                  k.outputs[1].as<float>());
  });
}

// (dO, q, k, v, output, logsumexp, used_seed[, mask]) -> (dq, dk, dv)
template <bool Fast> void attentionBackwardKernel(const KernelArgs &k) {
  const TensorRef &q = k.inputs[1], &key = k.inputs[2], &v = k.inputs[3];
  const TensorRef *mask = k.inputs.size() > 7 ? &k.inputs[7] : nullptr;
  Geometry g = geometryOf(k, mask, q, key, v, /*withSeed=*/false);
  g.seed = uint64_t(*k.inputs[6].as<const int64_t>());
  dispatch_float_dtype(q.dtype, "attention_backward", [&](auto zero) {
    using T = decltype(zero);
    Operands<T> in{q.as<const T>(), key.as<const T>(), v.as<const T>(),
                   mask ? mask->data : nullptr};
    Backward<T> bw = backwardOf(g, k.inputs[0].as<const T>(), k.inputs[4].as<const T>(),
                                k.inputs[5].as<const float>());
    (Fast ? backwardFast<T> : backwardReference<T>)(g, in, bw, k.outputs[0].as<T>(),
                                                    k.outputs[1].as<T>(), k.outputs[2].as<T>());
  });
}

} // namespace

void register_attention_kernels() {
  register_kernel(ops::attention, DeviceKind::cpu,
                  {attentionKernel<true>, attentionKernel<false>});
  register_kernel(ops::attention_backward, DeviceKind::cpu,
                  {attentionBackwardKernel<true>, attentionBackwardKernel<false>});
}

} // namespace dlc::cpu_kernels
