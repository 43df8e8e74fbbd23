//===- WinogradAvx2.cpp - dlc's own 3x3 Winograd convolution for AVX2 CPUs ----===//
//
// Winograd's minimal filtering F(m x m, 3x3): an m x m output tile is
// A^T [(G g G^T) . (B^T d B)] A for the a x a input tile d around it (a = m + 2) and the
// 3x3 window g, a^2 products where the direct sum takes 9 m^2. Over a whole convolution
// the element-wise products of each of the a^2 transformed positions are one
// (tiles x C) by (C x O) matrix product, so the kernel is three passes: the input
// transform into V (a^2 x tiles x C), the products M = V U by oneDNN's batched matmul
// (U, a^2 x C x O, the weights' transform, kept in the step's memo), and the output
// transform with bias and ReLU into y. The transforms work on nChw8c, one 8-channel
// register per pixel; their constant matrices are unrolled into adds, subtractions and
// multiply-adds.
//
// The data gradient of this convolution (stride 1, padding 1, same size) is the same
// convolution of dy with each window turned half a turn and the channel axes swapped, so
// it runs the same passes. The weight gradient sums, per position, the transformed input
// tiles times the transformed output-gradient tiles, A dy A^T: a^2 products of
// (O x tiles) by (tiles x C), then dw = G^T dU G.
//
// The tiles are 4x4 (a = 6, points 0, 1, -1, 2, -2, infinity): 2.25 products per output
// and 2.25 times the activation through the transforms each way. The first version,
// F(2x2, 3x3) (points 0, 1, -1, infinity: additions only), took 4 and moved 4 times;
// against oneDNN 2.6's direct jit:avx2 kernel (dlc-bench-conv3x3, batch 32, 2-core AVX2
// EPYC, one run after the other) F(4x4, 3x3) ran ResNet-50's 128-channel 28x28 layer
// 1.79x faster forward (F(2x2, 3x3): 1.35x), 1.67x the data gradient (1.41x) and 2.27x
// the weight gradient (2.15x), the 256- and 512-channel ones as F(2x2, 3x3) did
// (1.2-2.1x; their 14x14 and 7x7 maps leave a quarter of the last tiles empty), and won
// on the 64-channel 56x56 one in every direction (1.26-1.98x at batches 8 and 32), where
// F(2x2, 3x3)'s forward lost (0.78-0.83x). It multiplies by up to 8 in its transforms
// and rounds more than the direct sum (the tests allow 1e-4 of the tensor's scale, as
// for oneDNN's Winograd, which is F(4x4, 3x3) too). The weights' transform is 36 x C x O
// floats, four times the weights (37.7 MB for 512 x 512 channels), kept in the step's
// memo where the weights do not change.
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

constexpr int64_t kLanes = 8; // nChw8c
/// The output tile's side: F(4x4, 3x3) (see above).
constexpr int64_t kTile = 4;
/// Channels (in and out) from which every direction pays (dlc-bench-conv3x3: 64 on
/// ResNet-50's 56x56 layers, 1.26-1.98x faster than oneDNN's direct kernel at batches 8
/// and 32; with F(2x2, 3x3) the forward and data gradient lost there).
constexpr int64_t kMinChannels = 64;

/// F(M x M, 3x3)'s matrices: B^T (a x a), G (a x 3), A^T (M x a), a = M + 2; points 0,
/// 1, -1, 2, -2 and infinity for M = 4.
template <int64_t M> struct Points;
template <> struct Points<4> {
  static constexpr int64_t a = 6;
  static constexpr float BT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0},
                                     {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},
                                     {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr float G[6][3] = {{1.f / 4, 0, 0},
                                    {-1.f / 6, -1.f / 6, -1.f / 6},
                                    {-1.f / 6, 1.f / 6, -1.f / 6},
                                    {1.f / 24, 1.f / 12, 1.f / 6},
                                    {1.f / 24, -1.f / 12, 1.f / 6},
                                    {0, 0, 1}};
  static constexpr float AT[4][6] = {
      {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

/// The M x M output tiles: TH x TW per image, T in all.
struct Tiles {
  int64_t TH, TW, T;
};

template <int64_t M> Tiles tilesOf(const Conv2DGeometry &g) {
  const int64_t TH = (g.OH + M - 1) / M, TW = (g.OW + M - 1) / M;
  return {TH, TW, g.N * TH * TW};
}

#if DLC_X86_KERNELS
/// out[r] = sum over k of c(r, k) in[k], c(r, k) = C[r][k] (or C[k][r] if `Transposed`),
/// for the constant matrix C: after unrolling, the zeros vanish and the ones are adds.
template <bool Transposed, int64_t R, int64_t K, int64_t Rows, int64_t Cols>
__attribute__((target("avx2,fma"), always_inline)) inline void
mix(const float (&C)[Rows][Cols], const __m256 (&in)[K], __m256 (&out)[R]) {
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
    __m256 acc = _mm256_setzero_ps();
    bool first = true;
#pragma GCC unroll 8
    for (int64_t k = 0; k < K; ++k) {
      const float c = Transposed ? C[k][r] : C[r][k];
      if (c == 0.f)
        continue;
      const __m256 term = c == 1.f    ? in[k]
                          : c == -1.f ? _mm256_sub_ps(_mm256_setzero_ps(), in[k])
                                      : _mm256_mul_ps(_mm256_set1_ps(c), in[k]);
      if (first)
        acc = term;
      else if (c == 1.f)
        acc = _mm256_add_ps(acc, in[k]);
      else if (c == -1.f)
        acc = _mm256_sub_ps(acc, in[k]);
      else
        acc = _mm256_fmadd_ps(_mm256_set1_ps(c), in[k], acc);
      first = false;
    }
    out[r] = acc;
  }
}

/// out = C in (C^T in if `Transposed`) for a K x Cols array of vectors, column by column.
template <bool Transposed, int64_t R, int64_t K, int64_t Cols, int64_t Rows, int64_t CC>
__attribute__((target("avx2,fma"), always_inline)) inline void
mixColumns(const float (&C)[Rows][CC], const __m256 (&in)[K][Cols], __m256 (&out)[R][Cols]) {
#pragma GCC unroll 8
  for (int64_t j = 0; j < Cols; ++j) {
    __m256 column[K], mixed[R];
    for (int64_t i = 0; i < K; ++i)
      column[i] = in[i][j];
    mix<Transposed>(C, column, mixed);
    for (int64_t i = 0; i < R; ++i)
      out[i][j] = mixed[i];
  }
}

/// Mixes each row of r by C (C^T if `Transposed`) into an a x a transformed tile and
/// stores its a^2 values at `tile` of their position planes (a^2 x tiles x
/// channels), at channel `offset`.
template <bool Transposed, int64_t A, int64_t K, int64_t Rows, int64_t Cols>
__attribute__((target("avx2,fma"), always_inline)) inline void
storeMixedRows(const float (&C)[Rows][Cols], const __m256 (&r)[A][K], const Tiles &t, int64_t tile,
               int64_t channels, int64_t offset, float *planes) {
  for (int64_t i = 0; i < A; ++i) {
    __m256 v[A];
    mix<Transposed>(C, r[i], v);
    for (int64_t j = 0; j < A; ++j)
      _mm256_storeu_ps(planes + ((i * A + j) * t.T + tile) * channels + offset, v[j]);
  }
}

/// B^T d B for one image's 8-channel block `cb` (its nChw8c plane), every tile, into V
/// (a^2 x tiles x C). Tiles start at (M th - 1, M tw - 1) (padding 1); pixels outside the
/// image are 0.
template <int64_t M>
__attribute__((target("avx2,fma"))) void transformInputPlane(const Conv2DGeometry &g,
                                                             const Tiles &t, const float *plane,
                                                             int64_t n, int64_t cb, float *V) {
  using P = Points<M>;
  constexpr int64_t a = P::a;
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      __m256 d[a][a];
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < a; ++j) {
          const int64_t ih = M * th - 1 + i, iw = M * tw - 1 + j;
          d[i][j] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W
                        ? _mm256_loadu_ps(plane + (ih * g.W + iw) * kLanes)
                        : _mm256_setzero_ps();
        }
      __m256 r[a][a]; // B^T d
      mixColumns<false>(P::BT, d, r);
      storeMixedRows<false>(P::BT, r, t, (n * t.TH + th) * t.TW + tw, g.C, cb * kLanes, V);
    }
}

/// A^T m A (+ bias, then the ReLU) for one image's 8-channel output block `ob`, every
/// tile, into its nChw8c plane of y.
template <int64_t M>
__attribute__((target("avx2,fma"))) void
transformOutputPlane(const Conv2DGeometry &g, const Tiles &t, const float *Mt, const float *bias,
                     bool relu, int64_t n, int64_t ob, float *plane) {
  using P = Points<M>;
  constexpr int64_t a = P::a;
  const __m256 b = _mm256_loadu_ps(bias + ob * kLanes), zero = _mm256_setzero_ps();
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      const int64_t tile = (n * t.TH + th) * t.TW + tw;
      __m256 m[a][a], r[M][a]; // A^T m
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < a; ++j)
          m[i][j] = _mm256_loadu_ps(Mt + ((i * a + j) * t.T + tile) * g.O + ob * kLanes);
      mixColumns<false>(P::AT, m, r);
      for (int64_t i = 0; i < M; ++i) {
        const int64_t oh = M * th + i;
        if (oh >= g.OH)
          break;
        __m256 out[M];
        mix<false>(P::AT, r[i], out);
        for (int64_t j = 0; j < M && M * tw + j < g.OW; ++j) {
          const __m256 value = _mm256_add_ps(out[j], b);
          _mm256_storeu_ps(plane + (oh * g.OW + M * tw + j) * kLanes,
                           relu ? _mm256_max_ps(value, zero) : value);
        }
      }
    }
}

/// A e A^T for one image's 8-channel block `ob` of dy, every M x M tile e (zeros past
/// the output's edge), into E (a^2 x tiles x O); the block's sum over its plane into
/// `sum` (8 floats).
template <int64_t M>
__attribute__((target("avx2,fma"))) void
transformGradientPlane(const Conv2DGeometry &g, const Tiles &t, const float *plane, int64_t n,
                       int64_t ob, float *E, float *sum) {
  using P = Points<M>;
  constexpr int64_t a = P::a;
  __m256 total = _mm256_setzero_ps();
  for (int64_t th = 0; th < t.TH; ++th)
    for (int64_t tw = 0; tw < t.TW; ++tw) {
      __m256 e[M][M];
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < M; ++j) {
          const int64_t oh = M * th + i, ow = M * tw + j;
          e[i][j] = oh < g.OH && ow < g.OW ? _mm256_loadu_ps(plane + (oh * g.OW + ow) * kLanes)
                                           : _mm256_setzero_ps();
          total = _mm256_add_ps(total, e[i][j]);
        }
      __m256 r[a][M]; // A e
      mixColumns<true>(P::AT, e, r);
      storeMixedRows<true>(P::AT, r, t, (n * t.TH + th) * t.TW + tw, g.O, ob * kLanes, E);
    }
  _mm256_storeu_ps(sum, total);
}
#endif

/// U (a^2 x C x O) = G k G^T for every pair of `g`'s input channel c and output channel
/// o, k the window w[o][c] (forward) or, for the data gradient (g's channels are w's
/// swapped), w[c][o] turned half a turn. Input channels outside, output channels inside:
/// U's rows are written in order (with the output channels outside, each store went to
/// another cache line, and a training step, which transforms its changing weights on
/// every call, lost more than the products saved).
template <int64_t M>
void transformWeights(const Conv2DGeometry &g, const float *w, bool turned, float *U) {
  using P = Points<M>;
  constexpr int64_t a = P::a;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t o = 0; o < g.O; ++o) {
      float k[9];
      if (turned)
        for (int64_t i = 0; i < 9; ++i)
          k[i] = w[(c * g.O + o) * 9 + 8 - i];
      else
        std::copy_n(w + (o * g.C + c) * 9, 9, k);
      float r[a][3]; // G k
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < 3; ++j)
          r[i][j] = P::G[i][0] * k[j] + P::G[i][1] * k[3 + j] + P::G[i][2] * k[6 + j];
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < a; ++j)
          U[((i * a + j) * g.C + c) * g.O + o] =
              r[i][0] * P::G[j][0] + r[i][1] * P::G[j][1] + r[i][2] * P::G[j][2];
    }
}

/// dw[o][c] = G^T dU G for every channel pair, dU the a x a sums at (o, c) of D
/// (a^2 x O x C): both read and written in order.
template <int64_t M>
void transformWeightGradient(const Conv2DGeometry &g, const float *D, float *dw) {
  using P = Points<M>;
  constexpr int64_t a = P::a;
  const int64_t plane = g.O * g.C;
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t c = 0; c < g.C; ++c) {
      const float *m = D + o * g.C + c;
      float s[3][a]; // G^T dU
      for (int64_t x = 0; x < 3; ++x)
        for (int64_t j = 0; j < a; ++j) {
          float sum = 0;
          for (int64_t i = 0; i < a; ++i)
            sum += P::G[i][x] * m[(i * a + j) * plane];
          s[x][j] = sum;
        }
      float *window = dw + (o * g.C + c) * 9;
      for (int64_t x = 0; x < 3; ++x)
        for (int64_t y = 0; y < 3; ++y) {
          float sum = 0;
          for (int64_t j = 0; j < a; ++j)
            sum += s[x][j] * P::G[j][y];
          window[x * 3 + y] = sum;
        }
    }
}

bool haveAvx2Fma() { return cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma); }

/// The data gradient's convolution: dy in, dx out, the channel axes swapped.
Conv2DGeometry dataGradientGeometry(const Conv2DGeometry &g) {
  Conv2DGeometry p = g;
  std::swap(p.C, p.O);
  std::swap(p.H, p.OH);
  std::swap(p.W, p.OW);
  std::swap(p.inputLayout, p.outputLayout);
  return p;
}

/// The shape every direction needs.
bool fitsShape(const Conv2DGeometry &g) {
  return haveAvx2Fma() && g.KH == 3 && g.KW == 3 && g.strideH == 1 && g.strideW == 1 &&
         g.padH == 1 && g.padW == 1 && g.dilationH == 1 && g.dilationW == 1 && g.groups == 1 &&
         g.OH == g.H && g.OW == g.W && g.inputLayout == Layout::nChw8c &&
         g.outputLayout == Layout::nChw8c && g.C % kLanes == 0 && g.O % kLanes == 0 &&
         g.C >= kMinChannels && g.O >= kMinChannels;
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

/// Runs a^2 products of `lhs` (a^2 x rows x inner, or through its strides as
/// (a^2, rows, inner) with `lhsTag`) by `rhs` (a^2 x inner x cols) into `out`.
void products(const char *name, int64_t positions, int64_t rows, int64_t inner, int64_t cols,
              dnnl::memory::format_tag lhsTag, const float *lhs, const float *rhs, float *out) {
  using namespace onednn::detail;
  using tag = dnnl::memory::format_tag;
  CachedKernel &kernel = cachedKernel(
      geometryKey(name, {positions, rows, inner, cols, int64_t(lhsTag)}), [&](CachedKernel &k) {
        dnnl::memory a = k.bindUserBuffer(f32Desc({positions, rows, inner}, lhsTag)),
                     b = k.bindUserBuffer(f32Desc({positions, inner, cols}, tag::abc)),
                     c = k.bindUserBuffer(f32Desc({positions, rows, cols}, tag::abc));
        dnnl::matmul::desc desc(a.get_desc(), b.get_desc(), c.get_desc());
        k.addStep(dnnl::matmul({desc, threadEngine()}),
                  {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
      });
  kernel.run({const_cast<float *>(lhs), const_cast<float *>(rhs), out});
}

/// The calling thread's scratch with room for `g`'s transformed input (V, a^2 x tiles x
/// C) and output or output gradient (M, a^2 x tiles x O).
template <int64_t M> Scratch &tileScratch(const Conv2DGeometry &g, const Tiles &t) {
  constexpr int64_t positions = Points<M>::a * Points<M>::a;
  Scratch &s = scratch();
  s.V.resize(size_t(positions * t.T * g.C));
  s.M.resize(size_t(positions * t.T * g.O));
  return s;
}

/// B^T d B of every tile of x into V, the image planes split over the threads.
template <int64_t M>
void transformInput(const Conv2DGeometry &g, const Tiles &t, const float *x, float *V) {
  const int64_t inBlocks = g.C / kLanes;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t cb = 0; cb < inBlocks; ++cb)
      transformInputPlane<M>(g, t, x + (n * inBlocks + cb) * g.H * g.W * kLanes, n, cb, V);
}

/// y = the convolution of x by the transformed weights U (a^2 x C x O), + b (or
/// nothing), then the ReLU if `relu`: the input transform, the products, the output
/// transform.
template <int64_t M>
void convolve(const Conv2DGeometry &g, const float *x, const float *U, const float *b, bool relu,
              float *y) {
  constexpr int64_t positions = Points<M>::a * Points<M>::a;
  const Tiles t = tilesOf<M>(g);
  Scratch &s = tileScratch<M>(g, t);
  if (!b) {
    s.zeros.assign(size_t(g.O), 0.0f);
    b = s.zeros.data();
  }
  float *v = s.V.data(), *m = s.M.data();
  const int64_t outBlocks = g.O / kLanes;
  transformInput<M>(g, t, x, v);
  products("winograd_3x3_products", positions, t.T, g.C, g.O, dnnl::memory::format_tag::abc, v, U,
           m);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ob = 0; ob < outBlocks; ++ob)
      transformOutputPlane<M>(g, t, m, b, relu, n, ob,
                              y + (n * outBlocks + ob) * g.OH * g.OW * kLanes);
}

template <int64_t M>
void forwardWith(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
                 bool relu, const WeightsMemo &memo) {
  constexpr int64_t positions = Points<M>::a * Points<M>::a;
  const float *U = preparedWeights(memo, w, size_t(positions * g.C * g.O),
                                   [&](float *out) { transformWeights<M>(g, w, false, out); });
  convolve<M>(g, x, U, b, relu, y);
}

template <int64_t M>
void backwardDataWith(const Conv2DGeometry &g, const float *dy, const float *w, float *dx) {
  constexpr int64_t positions = Points<M>::a * Points<M>::a;
  const Conv2DGeometry p = dataGradientGeometry(g);
  const float *U = preparedWeights(WeightsMemo(), w, size_t(positions * p.C * p.O),
                                   [&](float *out) { transformWeights<M>(p, w, true, out); });
  convolve<M>(p, dy, U, nullptr, false, dx);
}

template <int64_t M>
void backwardFilterWith(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                        float *db) {
  constexpr int64_t positions = Points<M>::a * Points<M>::a;
  const Tiles t = tilesOf<M>(g);
  Scratch &s = tileScratch<M>(g, t);
  s.D.resize(size_t(positions * g.C * g.O));
  s.sums.resize(size_t(g.N * g.O));
  float *v = s.V.data(), *e = s.M.data(), *d = s.D.data(), *sum = s.sums.data();
  const int64_t outBlocks = g.O / kLanes;
  transformInput<M>(g, t, x, v);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ob = 0; ob < outBlocks; ++ob)
      transformGradientPlane<M>(g, t, dy + (n * outBlocks + ob) * g.OH * g.OW * kLanes, n, ob, e,
                                sum + n * g.O + ob * kLanes);
  // D (a^2 x O x C) = E^T V per position, E read as (a^2, O, T) through its strides:
  // dw's order, so that the last transform reads and writes in order.
  products("winograd_3x3_weight_gradient", positions, g.O, t.T, g.C, dnnl::memory::format_tag::acb,
           e, v, d);
  transformWeightGradient<M>(g, d, dw);
  if (db)
    for (int64_t o = 0; o < g.O; ++o) {
      float total = 0;
      for (int64_t n = 0; n < g.N; ++n)
        total += sum[n * g.O + o];
      db[o] = total;
    }
}
#else
[[noreturn]] void needsAvx2() {
  throw dlc::Error("conv2d: dlc's Winograd kernel needs an x86-64 CPU with AVX2");
}
#endif

} // namespace

bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue) {
  return fitsShape(g) && !epilogue.silu && epilogue.cap == 0;
}

void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo) {
#if DLC_X86_KERNELS
  forwardWith<kTile>(g, x, w, b, y, epilogue.relu, memo);
#else
  (void)g, (void)x, (void)w, (void)b, (void)y, (void)epilogue, (void)memo;
  needsAvx2();
#endif
}

bool appliesToBackwardData(const Conv2DGeometry &g) { return applies(g, ConvEpilogue()); }

void backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx) {
#if DLC_X86_KERNELS
  backwardDataWith<kTile>(g, dy, w, dx);
#else
  (void)g, (void)dy, (void)w, (void)dx;
  needsAvx2();
#endif
}

bool appliesToBackwardFilter(const Conv2DGeometry &g) { return fitsShape(g); }

void backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                     float *db) {
#if DLC_X86_KERNELS
  backwardFilterWith<kTile>(g, dy, x, dw, db);
#else
  (void)g, (void)dy, (void)x, (void)dw, (void)db;
  needsAvx2();
#endif
}

} // namespace dlc::cpu_kernels::winograd_avx2
