//===- DenseSmall.cpp - dense layers too small for a oneDNN call ---------------===//
//
// A classifier's layers at batch 1 are matrix-vector products: 1152 -> 100 units in a
// Fashion-MNIST network is 115 thousand multiply-adds over 460 KB of weights that stay
// in cache between predictions, and its last layers (100 -> 10, 10 -> 10) a few
// thousand. oneDNN's inner product took about 5-7 and 2 us per call there (2 cores of
// an AVX-512 EPYC), mostly its fixed cost. Here the outputs are dot products of x's rows
// and w's rows (both contiguous) in float, then the bias and the ReLU; groups of units
// go over OpenMP's threads when there are enough multiply-adds to repay starting them.
// With AVX2, four units and two rows at a time: each weight vector is loaded once for
// both rows, and eight independent sums keep the FMA units busy (one dot product alone
// waits on its own adds: 4.4 against 3.2 us for the 1152 -> 100 layer, oneDNN 5-7).
// From three rows on oneDNN's blocked GEMM is as fast or faster (4 x 1152 -> 100: 8.5-9
// against 10.3 us; 4 x 21632 -> 100: 125-149 against 142-145), so dense_is_small keeps
// those there.
//
//===----------------------------------------------------------------------===//
#include "CpuFeatures.h"
#include "ParallelFor.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <algorithm>
#include <cstdint>

namespace dlc::cpu_kernels::direct {

namespace {

/// Multiply-adds from which the units are split over the threads.
constexpr int64_t kParallelMultiplyAdds = int64_t(1) << 15;

inline float withEpilogue(float acc, const float *b, int64_t u, bool relu) {
  acc += b ? b[u] : 0.0f;
  return relu && !(acc > 0.0f) ? 0.0f : acc;
}

void densePortable(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, bool relu) {
  parallel_for_if(M * K * units >= kParallelMultiplyAdds, units, [&](int64_t u) {
    for (int64_t m = 0; m < M; ++m) {
      const float *row = x + m * K, *weights = w + u * K;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t k = 0; k < K; ++k)
        acc += row[k] * weights[k];
      y[m * units + u] = withEpilogue(acc, b, u, relu);
    }
  });
}

#if DLC_X86_KERNELS
__attribute__((target("avx2,fma"))) inline float horizontalSum(__m256 v) {
  __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum4 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  sum4 = _mm_add_ss(sum4, _mm_movehdup_ps(sum4));
  return _mm_cvtss_f32(sum4);
}

/// y[m .. m + Rows)[u .. u + Units): Rows x Units dot products at once, eight k at a time.
template <int Rows, int Units>
__attribute__((target("avx2,fma"))) void blockAvx2(int64_t m, int64_t u, int64_t K,
                                                   int64_t units, const float *x,
                                                   const float *w, const float *b, float *y,
                                                   bool relu) {
  const float *rows = x + m * K, *weights = w + u * K;
  __m256 acc[Rows][Units];
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Units; ++j)
      acc[r][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 wk[Units];
    for (int j = 0; j < Units; ++j)
      wk[j] = _mm256_loadu_ps(weights + j * K + k);
    for (int r = 0; r < Rows; ++r) {
      const __m256 xk = _mm256_loadu_ps(rows + r * K + k);
      for (int j = 0; j < Units; ++j)
        acc[r][j] = _mm256_fmadd_ps(xk, wk[j], acc[r][j]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Units; ++j) {
      float sum = horizontalSum(acc[r][j]);
      for (int64_t t = k; t < K; ++t)
        sum += rows[r * K + t] * weights[j * K + t];
      y[(m + r) * units + u + j] = withEpilogue(sum, b, u + j, relu);
    }
}

void denseAvx2(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
               const float *b, float *y, bool relu) {
  const int64_t groups = (units + 3) / 4;
  parallel_for_if(M * K * units >= kParallelMultiplyAdds, groups, [&](int64_t group) {
    const int64_t u = group * 4;
    for (int64_t m = 0; m < M; m += 2) {
      if (u + 4 <= units && m + 2 <= M)
        blockAvx2<2, 4>(m, u, K, units, x, w, b, y, relu);
      else if (u + 4 <= units)
        blockAvx2<1, 4>(m, u, K, units, x, w, b, y, relu);
      else // the last units, one at a time
        for (int64_t unit = u; unit < units; ++unit)
          for (int64_t row = m; row < std::min<int64_t>(m + 2, M); ++row)
            blockAvx2<1, 1>(row, unit, K, units, x, w, b, y, relu);
    }
  });
}
#endif

} // namespace

bool dense_is_small(int64_t M, int64_t K, int64_t units, DenseEpilogue epilogue) {
  if (epilogue.kind == DenseEpilogue::gelu)
    return false;
  // Tiny layers at any batch (the 100 -> 10 layer at batch 16: 1.6 against 3.2 us), and
  // one or two rows over weights of at most 1 MB (a core's L2 cache on the machines
  // measured; beyond it both stream the weights at the same speed).
  return M * K * units <= (int64_t(1) << 14) || (M <= 2 && K * units <= (int64_t(1) << 18));
}

void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, DenseEpilogue epilogue) {
  const bool relu = epilogue.kind == DenseEpilogue::relu;
#if DLC_X86_KERNELS
  if (cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    return denseAvx2(M, K, units, x, w, b, y, relu);
#endif
  densePortable(M, K, units, x, w, b, y, relu);
}

} // namespace dlc::cpu_kernels::direct
