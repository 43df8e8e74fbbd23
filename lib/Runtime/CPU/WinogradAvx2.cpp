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
// The data gradient of this convolution (stride 1, padding 1, same size) is the same
// convolution of dy with each window turned half a turn and the channel axes swapped, so
// it runs the same passes. The weight gradient sums, per position, the transformed input
// tiles times the transformed output-gradient tiles, A dy A^T: 16 products of (O x tiles)
// by (tiles x C), then dw = G^T dU G.
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

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <algorithm>
#include <vector>

namespace dlc::cpu_kernels::winograd_avx2 {

namespace {

constexpr int64_t kLanes = 8;      // nChw8c
constexpr int64_t kPositions = 16; // a 4x4 transformed tile
/// Channels (in and out) from which the forward and the data gradient pay: with 64 on
/// 56x56 the transforms, four times the activations each way, cost more than the
/// products save. The weight gradient wins from 64 on ResNet-50's 56x56 layers
/// (dlc-bench-conv3x3, batches 16 and 32: 1.22-1.52x faster than oneDNN's direct kernel).
constexpr int64_t kMinChannels = 128;
constexpr int64_t kMinFilterChannels = 64;

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
                                                              int64_t n, int64_t ob, float *plane) {
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

/// A e A^T for one image's 8-channel block `ob` of dy, every 2x2 tile e (zeros past the
/// output's edge), into E (16 x tiles x O); the block's sum over its plane into `sum`
/// (8 floats). A^T = [1 1 1 0; 0 1 -1 -1].
__attribute__((target("avx2,fma"))) void transformGradientPlane(const Conv2DGeometry &g,
                                                                const Tiles &t, const float *plane,
                                                                int64_t n, int64_t ob, float *E,
                                                                float *sum) {
  __m256 total = _mm256_setzero_ps();
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      __m256 e[2][2];
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 2; ++b) {
          const int64_t oh = 2 * th + a, ow = 2 * tw + b;
          e[a][b] = oh < g.OH && ow < g.OW ? _mm256_loadu_ps(plane + (oh * g.OW + ow) * kLanes)
                                           : _mm256_setzero_ps();
          total = _mm256_add_ps(total, e[a][b]);
        }
      __m256 r[4][2]; // A e
      for (int64_t b = 0; b < 2; ++b) {
        r[0][b] = e[0][b];
        r[1][b] = _mm256_add_ps(e[0][b], e[1][b]);
        r[2][b] = _mm256_sub_ps(e[0][b], e[1][b]);
        r[3][b] = _mm256_sub_ps(_mm256_setzero_ps(), e[1][b]);
      }
      const int64_t tile = (n * t.TH + th) * t.TW + tw;
      for (int64_t i = 0; i < 4; ++i) {
        const __m256 m[4] = {r[i][0], _mm256_add_ps(r[i][0], r[i][1]),
                             _mm256_sub_ps(r[i][0], r[i][1]),
                             _mm256_sub_ps(_mm256_setzero_ps(), r[i][1])};
        for (int64_t j = 0; j < 4; ++j)
          _mm256_storeu_ps(E + ((i * 4 + j) * t.T + tile) * g.O + ob * kLanes, m[j]);
      }
    }
  _mm256_storeu_ps(sum, total);
}
#endif

/// U (16 x C x O) = G k G^T for every pair of `g`'s input channel c and output channel
/// o, k the window w[o][c] (forward) or, for the data gradient (g's channels are w's
/// swapped), w[c][o] turned half a turn; G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
/// Input channels outside, output channels inside: U's rows are written in order (with
/// the output channels outside, each of the 16 stores went to another cache line, and a
/// training step, which transforms its changing weights on every call, lost more than
/// the products saved).
void transformWeights(const Conv2DGeometry &g, const float *w, bool turned, float *U) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t o = 0; o < g.O; ++o) {
      float k[9];
      if (turned)
        for (int64_t i = 0; i < 9; ++i)
          k[i] = w[(c * g.O + o) * 9 + 8 - i];
      else
        std::copy_n(w + (o * g.C + c) * 9, 9, k);
      float r[4][3]; // G k
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

/// dw[o][c] = G^T dU G for every channel pair, dU the 4x4 sums at (o, c) of D
/// (16 x O x C): both read and written in order.
void transformWeightGradient(const Conv2DGeometry &g, const float *D, float *dw) {
  const int64_t plane = g.O * g.C;
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c = 0; c < g.C; ++c) {
      const float *m = D + o * g.C + c;
      float s[3][4]; // G^T dU
      for (int64_t j = 0; j < 4; ++j) {
        const float m0 = m[j * plane], m1 = m[(4 + j) * plane], m2 = m[(8 + j) * plane],
                    m3 = m[(12 + j) * plane];
        s[0][j] = m0 + 0.5f * (m1 + m2);
        s[1][j] = 0.5f * (m1 - m2);
        s[2][j] = 0.5f * (m1 + m2) + m3;
      }
      float *window = dw + (o * g.C + c) * 9;
      for (int64_t a = 0; a < 3; ++a) {
        window[a * 3 + 0] = s[a][0] + 0.5f * (s[a][1] + s[a][2]);
        window[a * 3 + 1] = 0.5f * (s[a][1] - s[a][2]);
        window[a * 3 + 2] = 0.5f * (s[a][1] + s[a][2]) + s[a][3];
      }
    }
}

/// The data gradient's convolution: dy in, dx out, the channel axes swapped.
Conv2DGeometry dataGradientGeometry(const Conv2DGeometry &g) {
  Conv2DGeometry p = g;
  std::swap(p.C, p.O);
  std::swap(p.H, p.OH);
  std::swap(p.W, p.OW);
  std::swap(p.inputLayout, p.outputLayout);
  return p;
}

#if DLC_X86_KERNELS
/// The calling thread's transformed tiles, shared by the three directions (a training
/// step's largest layer sizes them, and the next layer reuses them).
struct Scratch {
  std::vector<float> V, M, D, zeros, sums;
};
Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

/// y = the convolution of x by the transformed weights U (16 x C x O), + b (or nothing),
/// then the ReLU if `relu`: the input transform, the 16 products, the output transform.
void convolve(const Conv2DGeometry &g, const float *x, const float *U, const float *b, bool relu,
              float *y) {
  const Tiles t = tilesOf(g);
  Scratch &s = scratch();
  s.V.resize(size_t(kPositions * t.T * g.C));
  s.M.resize(size_t(kPositions * t.T * g.O));
  if (!b) {
    s.zeros.assign(size_t(g.O), 0.0f);
    b = s.zeros.data();
  }
  float *v = s.V.data(), *m = s.M.data();
  const int64_t inBlocks = g.C / kLanes, outBlocks = g.O / kLanes;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t cb = 0; cb < inBlocks; ++cb)
      transformInputPlane(g, t, x + (n * inBlocks + cb) * g.H * g.W * kLanes, n, cb, v);
  using namespace onednn::detail;
  using tag = dnnl::memory::format_tag;
  CachedKernel &products =
      cachedKernel(geometryKey("winograd_f2x3_products", {t.T, g.C, g.O}), [&](CachedKernel &k) {
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
      transformOutputPlane(g, t, m, b, relu, n, ob,
                           y + (n * outBlocks + ob) * g.OH * g.OW * kLanes);
}
#endif

/// The shape every direction needs, with at least `minChannels` on both sides.
bool fitsShape(const Conv2DGeometry &g, int64_t minChannels) {
  return haveAvx2Fma() && g.KH == 3 && g.KW == 3 && g.strideH == 1 && g.strideW == 1 &&
         g.padH == 1 && g.padW == 1 && g.dilationH == 1 && g.dilationW == 1 && g.groups == 1 &&
         g.OH == g.H && g.OW == g.W && g.inputLayout == Layout::nChw8c &&
         g.outputLayout == Layout::nChw8c && g.C % kLanes == 0 && g.O % kLanes == 0 &&
         g.C >= minChannels && g.O >= minChannels;
}

#if !DLC_X86_KERNELS
[[noreturn]] void needsAvx2() {
  throw dlc::Error("conv2d: dlc's Winograd kernel needs an x86-64 CPU with AVX2");
}
#endif

} // namespace

bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue) {
  return fitsShape(g, kMinChannels) && !epilogue.silu && epilogue.cap == 0;
}

void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo) {
#if DLC_X86_KERNELS
  const float *U = preparedWeights(memo, w, size_t(kPositions * g.C * g.O),
                                   [&](float *out) { transformWeights(g, w, false, out); });
  convolve(g, x, U, b, epilogue.relu, y);
#else
  (void)g, (void)x, (void)w, (void)b, (void)y, (void)epilogue, (void)memo;
  needsAvx2();
#endif
}

bool appliesToBackwardData(const Conv2DGeometry &g) { return applies(g, ConvEpilogue()); }

void backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx) {
#if DLC_X86_KERNELS
  const Conv2DGeometry p = dataGradientGeometry(g);
  const float *U = preparedWeights(WeightsMemo(), w, size_t(kPositions * p.C * p.O),
                                   [&](float *out) { transformWeights(p, w, true, out); });
  convolve(p, dy, U, nullptr, false, dx);
#else
  (void)g, (void)dy, (void)w, (void)dx;
  needsAvx2();
#endif
}

bool appliesToBackwardFilter(const Conv2DGeometry &g) { return fitsShape(g, kMinFilterChannels); }

void backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                     float *db) {
#if DLC_X86_KERNELS
  const Tiles t = tilesOf(g);
  Scratch &s = scratch();
  s.V.resize(size_t(kPositions * t.T * g.C));
  s.M.resize(size_t(kPositions * t.T * g.O));
  s.D.resize(size_t(kPositions * g.C * g.O));
  s.sums.resize(size_t(g.N * g.O));
  float *v = s.V.data(), *e = s.M.data(), *d = s.D.data(), *sum = s.sums.data();
  const int64_t inBlocks = g.C / kLanes, outBlocks = g.O / kLanes;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t cb = 0; cb < inBlocks; ++cb)
      transformInputPlane(g, t, x + (n * inBlocks + cb) * g.H * g.W * kLanes, n, cb, v);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ob = 0; ob < outBlocks; ++ob)
      transformGradientPlane(g, t, dy + (n * outBlocks + ob) * g.OH * g.OW * kLanes, n, ob, e,
                             sum + n * g.O + ob * kLanes);
  // D (16 x O x C) = E^T V per position, E read as (16, O, T) through its strides: dw's
  // order, so that the last transform reads and writes in order.
  using namespace onednn::detail;
  using tag = dnnl::memory::format_tag;
  CachedKernel &products = cachedKernel(
      geometryKey("winograd_f2x3_weight_gradient", {t.T, g.C, g.O}), [&](CachedKernel &k) {
        dnnl::memory lhs = k.bindUserBuffer(f32Desc({kPositions, g.O, t.T}, tag::acb)),
                     rhs = k.bindUserBuffer(f32Desc({kPositions, t.T, g.C}, tag::abc)),
                     out = k.bindUserBuffer(f32Desc({kPositions, g.O, g.C}, tag::abc));
        dnnl::matmul::desc desc(lhs.get_desc(), rhs.get_desc(), out.get_desc());
        k.addStep(dnnl::matmul({desc, threadEngine()}),
                  {{DNNL_ARG_SRC, lhs}, {DNNL_ARG_WEIGHTS, rhs}, {DNNL_ARG_DST, out}});
      });
  products.run({e, v, d});
  transformWeightGradient(g, d, dw);
  if (db)
    for (int64_t o = 0; o < g.O; ++o) {
      float total = 0;
      for (int64_t n = 0; n < g.N; ++n)
        total += sum[n * g.O + o];
      db[o] = total;
    }
#else
  (void)g, (void)dy, (void)x, (void)dw, (void)db;
  needsAvx2();
#endif
}

} // namespace dlc::cpu_kernels::winograd_avx2
