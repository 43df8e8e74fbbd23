//===- BatchNormInference.cpp - batch norm with running statistics, one pass ---===//
//
// Inference batch norm is an affine map per channel, y = x * scale[c] + shift[c], so
// it costs what moving x and y costs. oneDNN 2.6's primitive took 2-3 us per call on
// the small tensors of a batch-1 prediction (a Fashion-MNIST network's 32x14x14 and
// 64x7x7, 2 cores of an AVX-512 EPYC) where moving them takes well under one; this
// kernel folds the statistics into scale and shift once per call (in float) and streams
// rows, on the calling thread for small tensors and over OpenMP's threads for large
// ones (at 6-26 million values as fast as oneDNN's or faster).
//
// Rows are contiguous runs of one channel (plain: (n, c), S values) or of one channel
// block (nChw16c / nChw8c: (n, c / B), S pixels of B channels).
//
//===----------------------------------------------------------------------===//
#include "CpuFeatures.h"
#include "ParallelFor.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace dlc::cpu_kernels::direct {

namespace {

/// Below this many elements the OpenMP team's start and join cost more than the pass.
constexpr int64_t kParallelElements = int64_t(1) << 16;

/// One row of a blocked tensor: S pixels of Block channels. Built for AVX2 with FMA too
/// (chosen at run time): with SSE2's four lanes a pixel's 16 channels take four
/// multiplies and four adds.
template <int64_t Block>
__attribute__((always_inline)) inline void blockedRowBody(const float *in, float *out,
                                                          const float *sc, const float *sh,
                                                          int64_t S) {
  for (int64_t s = 0; s < S; ++s)
#pragma omp simd
    for (int64_t l = 0; l < Block; ++l)
      out[s * Block + l] = in[s * Block + l] * sc[l] + sh[l];
}

template <int64_t Block>
void blockedRowPortable(const float *in, float *out, const float *sc, const float *sh,
                        int64_t S) {
  blockedRowBody<Block>(in, out, sc, sh, S);
}

#if DLC_X86_KERNELS
template <int64_t Block>
__attribute__((target("avx2,fma"))) void blockedRowAvx2(const float *in, float *out,
                                                        const float *sc, const float *sh,
                                                        int64_t S) {
  blockedRowBody<Block>(in, out, sc, sh, S); // inlined: compiled for AVX2 here
}
#endif

template <int64_t Block>
void blockedRows(const BatchNormGeometry &g, const float *scale, const float *shift,
                 const float *x, float *y) {
  auto row = blockedRowPortable<Block>;
#if DLC_X86_KERNELS
  if (cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    row = blockedRowAvx2<Block>;
#endif
  const int64_t blocks = g.C / Block, rows = g.N * blocks, rowSize = g.S * Block;
  parallel_for_if(g.N * g.C * g.S >= kParallelElements, rows, [&](int64_t r) {
    row(x + r * rowSize, y + r * rowSize, scale + (r % blocks) * Block,
        shift + (r % blocks) * Block, g.S);
  });
}

void plainRows(const BatchNormGeometry &g, const float *scale, const float *shift,
               const float *x, float *y) {
  const int64_t rows = g.N * g.C;
  parallel_for_if(g.N * g.C * g.S >= kParallelElements, rows, [&](int64_t row) {
    const float sc = scale[row % g.C], sh = shift[row % g.C];
    const float *in = x + row * g.S;
    float *out = y + row * g.S;
#pragma omp simd
    for (int64_t s = 0; s < g.S; ++s)
      out[s] = in[s] * sc + sh;
  });
}

} // namespace

void batch_norm_forward_inference(const BatchNormGeometry &g, const float *x,
                                  const float *gamma, const float *beta,
                                  const float *runningMean, const float *runningVar,
                                  double epsilon, float *y) {
  // In float, a loop the compiler vectorizes: per-channel square roots and divisions
  // in double cost more than the pass itself on a batch-1 tensor. A few hundred
  // channels fit on the stack.
  constexpr int64_t kStackChannels = 1024;
  float stackScale[kStackChannels], stackShift[kStackChannels];
  std::vector<float> heapScale, heapShift;
  float *scale = stackScale, *shift = stackShift;
  if (g.C > kStackChannels) {
    heapScale.resize(size_t(g.C));
    heapShift.resize(size_t(g.C));
    scale = heapScale.data();
    shift = heapShift.data();
  }
  const float eps = float(epsilon);
#pragma omp simd
  for (int64_t c = 0; c < g.C; ++c) {
    scale[c] = gamma[c] / std::sqrt(runningVar[c] + eps);
    shift[c] = beta[c] - runningMean[c] * scale[c];
  }
  switch (g.layout) {
  case Layout::nChw16c:
    return blockedRows<channel_block(Layout::nChw16c)>(g, scale, shift, x, y);
  case Layout::nChw8c:
    return blockedRows<channel_block(Layout::nChw8c)>(g, scale, shift, x, y);
  default:
    return plainRows(g, scale, shift, x, y);
  }
}

} // namespace dlc::cpu_kernels::direct
