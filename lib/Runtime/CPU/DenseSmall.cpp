//===- DenseSmall.cpp - dense layers too small for a oneDNN call ---------------===//
//
// A classifier's layers at batch 1 are matrix-vector products: 1152 -> 100 units in a
// Fashion-MNIST network is 115 thousand multiply-adds over 460 KB of weights that stay
// in cache between predictions, and its last layers (100 -> 10, 10 -> 10) a few
// thousand. oneDNN's inner product took about 7 and 2 us per call there (2 cores of an
// AVX-512 EPYC), mostly its fixed cost. Here each output is a dot product of x's row
// and w's row (both contiguous) in float, then the bias and the ReLU; the units go over
// OpenMP's threads when there are enough multiply-adds to repay starting them.
//
//===----------------------------------------------------------------------===//
#include "CpuFeatures.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstdint>

namespace dlc::cpu_kernels::direct {

namespace {

/// Multiply-adds from which the units are split over the threads.
constexpr int64_t kParallelMultiplyAdds = int64_t(1) << 15;

float dotPortable(const float *a, const float *b, int64_t K) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < K; ++k)
    acc += a[k] * b[k];
  return acc;
}

#if DLC_X86_KERNELS
__attribute__((target("avx2,fma"))) float dotAvx2(const float *a, const float *b, int64_t K) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), acc1);
  }
  for (; k + 8 <= K; k += 8)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc0);
  const __m256 sum8 = _mm256_add_ps(acc0, acc1);
  __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(sum8), _mm256_extractf128_ps(sum8, 1));
  sum4 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
  sum4 = _mm_add_ss(sum4, _mm_movehdup_ps(sum4));
  float acc = _mm_cvtss_f32(sum4);
  for (; k < K; ++k)
    acc += a[k] * b[k];
  return acc;
}
#endif

template <typename Dot>
void denseRows(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
               const float *b, float *y, bool relu, Dot dot) {
  for (int64_t m = 0; m < M; ++m) {
    const float *row = x + m * K;
#pragma omp parallel for schedule(static) if (M * K * units >= kParallelMultiplyAdds)
    for (int64_t u = 0; u < units; ++u) {
      float acc = dot(row, w + u * K, K);
      if (b)
        acc += b[u];
      y[m * units + u] = relu && !(acc > 0.0f) ? 0.0f : acc;
    }
  }
}

} // namespace

bool dense_is_small(int64_t M, int64_t K, int64_t units, DenseEpilogue epilogue) {
  if (epilogue.kind == DenseEpilogue::gelu)
    return false;
  // Tiny layers at any batch (the 100 -> 10 layer at batch 16), and matrix-vector
  // products up to a batch of 4 over weights of at most 1 MB (a core's L2 cache on the
  // machines measured): beyond those oneDNN's blocked GEMM wins.
  return M * K * units <= (int64_t(1) << 14) || (M <= 4 && K * units <= (int64_t(1) << 18));
}

void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, DenseEpilogue epilogue) {
  const bool relu = epilogue.kind == DenseEpilogue::relu;
#if DLC_X86_KERNELS
  if (cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    return denseRows(M, K, units, x, w, b, y, relu, dotAvx2);
#endif
  denseRows(M, K, units, x, w, b, y, relu, dotPortable);
}

} // namespace dlc::cpu_kernels::direct
