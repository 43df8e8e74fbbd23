//===- WinogradAvx2.cpp - dlc's own F(2x2, 3x3) convolution for AVX2 CPUs -----===//
//
// Winograd's minimal filtering: a 2x2 output tile is A^T [(G g G^T) . (B^T d B)] A for
// the 4x4 input tile d around it and the 3x3 window g, 16 products where the direct sum
// takes 36. Over a whole convolution the element-wise products of each of the 16
// transformed positions are one (tiles x C) by (C x O) matrix product, so the kernel is
// three passes: the input transform into V (16 x tiles x C), the products M = V U by
// oneDNN's batched matmul (U, 16 x C x O, the weights' transform, kept in the step's
// memo), and the output transform with bias and ReLU into y. The transforms work on
// nChw8c, one 8-channel register per pixel, and are adds and subtractions only.
//
// Measured with the same transforms and products in a stand-alone program against
// oneDNN 2.6's direct jit:avx2 kernel (prepared weights, 2-core AVX2 EPYC, ResNet-50's
// 3x3 layers at batch 8): 128 channels on 28x28 1.14-1.17x faster,
// 256 on 14x14 1.49-1.66x, 512 on 7x7 1.47-1.52x, 64 on 56x56 0.78-0.83x (so `applies`
// wants 128 channels). It rounds differently from the direct sum (the tests allow 1e-4
// of the tensor's scale, as for oneDNN's Winograd).
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/CPU/WinogradAvx2.h"

#include "CpuFeatures.h"
#include "OneDNNPrimitiveCache.h"
#include "PreparedWeights.h"

#include "dlc/Runtime/Engine/Kernel.h"

#include <vector>


namespace dlc::cpu_kernels::winograd_avx2 {

namespace {

constexpr int64_t kLanes = 8;       // nChw8c
constexpr int64_t kPositions = 16;  // a 4x4 transformed tile
constexpr int64_t kMinChannels = 128;

/// The 2x2 output tiles: TH x TW per image, T in all.
struct Tiles {
  int64_t TH, TW, T;
};

Tiles tilesOf(const Conv2DGeometry &g) {
  const int64_t TH = (g.OH + 1) / 2, TW = (g.OW + 1) / 2;
  return {TH, TW, g.N * TH * TW};
}

#if DLC_X86_KERNELS
/// B^T d B for one image's 8-channel block `cb` (its nChw8c plane), every tile, into V.
/// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; tiles start at (2 th - 1, 2 tw - 1)
/// (padding 1), pixels outside the image are 0.
__attribute__((target("avx2,fma"))) void transformInputPlane(const Conv2DGeometry &g,
                                                            const Tiles &t, const float *plane,
                                                            int64_t n, int64_t cb, float *V) {
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      __m256 d[4][4];
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t ih = 2 * th - 1 + i, iw = 2 * tw - 1 + j;
          d[i][j] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W
                        ? _mm256_loadu_ps(plane + (ih * g.W + iw) * kLanes)
                        : _mm256_setzero_ps();
        }
      __m256 r[4][4]; // B^T d
      for (int64_t j = 0; j < 4; ++j) {
        r[0][j] = _mm256_sub_ps(d[0][j], d[2][j]);
        r[1][j] = _mm256_add_ps(d[1][j], d[2][j]);
        r[2][j] = _mm256_sub_ps(d[2][j], d[1][j]);
        r[3][j] = _mm256_sub_ps(d[1][j], d[3][j]);
      }
      const int64_t tile = (n * t.TH + th) * t.TW + tw;
      for (int64_t i = 0; i < 4; ++i) {
        const __m256 v[4] = {_mm256_sub_ps(r[i][0], r[i][2]), _mm256_add_ps(r[i][1], r[i][2]),
                             _mm256_sub_ps(r[i][2], r[i][1]), _mm256_sub_ps(r[i][1], r[i][3])};
        for (int64_t j = 0; j < 4; ++j)
          _mm256_storeu_ps(V + ((i * 4 + j) * t.T + tile) * g.C + cb * kLanes, v[j]);
      }
    }
}

/// A^T m A (+ bias, then the ReLU) for one image's 8-channel output block `ob`, every
/// tile, into its nChw8c plane of y. A^T = [1 1 1 0; 0 1 -1 -1].
__attribute__((target("avx2,fma"))) void transformOutputPlane(const Conv2DGeometry &g,
                                                             const Tiles &t, const float *M,
                                                             const float *bias, bool relu,
                                                             int64_t n, int64_t ob,
                                                             float *plane) {
  const __m256 b = _mm256_loadu_ps(bias + ob * kLanes), zero = _mm256_setzero_ps();
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      const int64_t tile = (n * t.TH + th) * t.TW + tw;
      __m256 m[4][4];
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          m[i][j] = _mm256_loadu_ps(M + ((i * 4 + j) * t.T + tile) * g.O + ob * kLanes);
      __m256 r[2][4]; // A^T m
      for (int64_t j = 0; j < 4; ++j) {
        r[0][j] = _mm256_add_ps(_mm256_add_ps(m[0][j], m[1][j]), m[2][j]);
        r[1][j] = _mm256_sub_ps(_mm256_sub_ps(m[1][j], m[2][j]), m[3][j]);
      }
      for (int64_t i = 0; i < 2; ++i) {
        const int64_t oh = 2 * th + i;
        if (oh >= g.OH)
          break;
        __m256 out[2] = {_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(r[i][0], r[i][1]), r[i][2]), b),
                         _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(r[i][1], r[i][2]), r[i][3]), b)};
        for (int64_t j = 0; j < 2 && 2 * tw + j < g.OW; ++j)
          _mm256_storeu_ps(plane + (oh * g.OW + 2 * tw + j) * kLanes,
                           relu ? _mm256_max_ps(out[j], zero) : out[j]);
      }
    }
}
#endif

/// U (16 x C x O) = G g G^T per (output, input) channel pair, G = [1 0 0; 1/2 1/2 1/2;
/// 1/2 -1/2 1/2; 0 0 1]. Input channels outside, output channels inside: U's rows are
/// written in order (with the output channels outside, each of the 16 stores went to
/// another cache line, and a training step, which transforms its changing weights on
/// every call, lost more than the products saved).
void transformWeights(const Conv2DGeometry &g, const float *w, float *U) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t o = 0; o < g.O; ++o) {
      const float *k = w + (o * g.C + c) * 9;
      float r[4][3]; // G g
      for (int64_t j = 0; j < 3; ++j) {
        r[0][j] = k[j];
        r[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
        r[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
        r[3][j] = k[6 + j];
      }
      for (int64_t i = 0; i < 4; ++i) {
        const float u[4] = {r[i][0], 0.5f * (r[i][0] + r[i][1] + r[i][2]),
                            0.5f * (r[i][0] - r[i][1] + r[i][2]), r[i][2]};
        for (int64_t j = 0; j < 4; ++j)
          U[((i * 4 + j) * g.C + c) * g.O + o] = u[j];
      }
    }
}

bool haveAvx2Fma() { return cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma); }

} // namespace

bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue) {
  return haveAvx2Fma() && g.KH == 3 && g.KW == 3 && g.strideH == 1 && g.strideW == 1 &&
         g.padH == 1 && g.padW == 1 && g.dilationH == 1 && g.dilationW == 1 && g.groups == 1 &&
         g.OH == g.H && g.OW == g.W && g.inputLayout == Layout::nChw8c &&
         g.outputLayout == Layout::nChw8c && g.C % kLanes == 0 && g.O % kLanes == 0 &&
         g.C >= kMinChannels && g.O >= kMinChannels && !epilogue.silu && epilogue.cap == 0;
}

void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo) {
#if DLC_X86_KERNELS
  const Tiles t = tilesOf(g);
  const float *U = preparedWeights(memo, w, size_t(kPositions * g.C * g.O),
                                   [&](float *out) { transformWeights(g, w, out); });
  thread_local std::vector<float> V, M, zeros;
  V.resize(size_t(kPositions * t.T * g.C));
  M.resize(size_t(kPositions * t.T * g.O));
  if (!b) {
    zeros.assign(size_t(g.O), 0.0f);
    b = zeros.data();
  }
  float *v = V.data(), *m = M.data();
  const int64_t inBlocks = g.C / kLanes, outBlocks = g.O / kLanes;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t cb = 0; cb < inBlocks; ++cb)
      transformInputPlane(g, t, x + (n * inBlocks + cb) * g.H * g.W * kLanes, n, cb, v);
  using namespace onednn::detail;
  using tag = dnnl::memory::format_tag;
  CachedKernel &products = cachedKernel(
      geometryKey("winograd_f2x3_products", {t.T, g.C, g.O}), [&](CachedKernel &k) {
        dnnl::memory lhs = k.bindUserBuffer(f32Desc({kPositions, t.T, g.C}, tag::abc)),
                     rhs = k.bindUserBuffer(f32Desc({kPositions, g.C, g.O}, tag::abc)),
                     out = k.bindUserBuffer(f32Desc({kPositions, t.T, g.O}, tag::abc));
        dnnl::matmul::desc desc(lhs.get_desc(), rhs.get_desc(), out.get_desc());
        k.addStep(dnnl::matmul({desc, threadEngine()}),
                  {{DNNL_ARG_SRC, lhs}, {DNNL_ARG_WEIGHTS, rhs}, {DNNL_ARG_DST, out}});
      });
  products.run({v, U, m});
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ob = 0; ob < outBlocks; ++ob)
      transformOutputPlane(g, t, m, b, epilogue.relu, n, ob,
                           y + (n * outBlocks + ob) * g.OH * g.OW * kLanes);
#else
  (void)g, (void)x, (void)w, (void)b, (void)y, (void)epilogue, (void)memo;
  throw Error("conv2d: dlc's Winograd kernel needs an x86-64 CPU with AVX2");
#endif
}

} // namespace dlc::cpu_kernels::winograd_avx2
