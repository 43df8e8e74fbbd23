//===- PooledFilterGradientBlocked.cpp - the pooled weight gradient over blocked x ===//
//
// Inside a network a convolution block's x is an activation in a blocked layout, so a
// pixel's channel block is one vector, and the weight gradient of PooledFilterGradient.h
//   dw[o, c, kh, kw] = sum over passing pooled outputs of dy[o] * x[c, at o's maximum]
// goes one output channel at a time: for each pooled output that passes its code, dy
// broadcast times the x vectors under the window at that channel's maximum, added into
// KH x KW x (a few channel blocks) vector sums held in registers. With 4x4 pooling
// windows of stride 2 that is about a quarter of the direct weight gradient's
// multiply-adds, each vector loaded once and used once.
//
// The (image, pooled row) pairs go in bands of kBandRows; a thread takes consecutive
// bands and, per band, every output channel: the band's dy, codes and x stay in the
// core's cache while its 16 (or 8) output channels of a block read them in turn. Each
// thread sums into its own copy of dw, in vectors; the copies are added in a fixed order
// and transposed into (O, C, KH, KW) at the end.
//
// The vector code is written once with the compiler's vector types and compiled for
// AVX-512 (nChw16c x), AVX2 with FMA (nChw8c x) and any CPU (either).
//
//===----------------------------------------------------------------------===//
#include "PooledFilterGradientBlocked.h"

#include "CpuFeatures.h"
#include "ParallelFor.h"

#include <algorithm>
#include <array>
#include <vector>


namespace dlc::cpu_kernels::pooled_filter_gradient::blocked {

namespace {

constexpr int64_t kBandRows = 1; // pooled rows per band

struct Problem {
  Conv2DGeometry conv;
  Pool2DGeometry pool;
  int64_t xLanes, dyLanes;   // channel blocks of x and of dy and codes
  int64_t xBlocks, dyBlocks; // C / xLanes, O / dyLanes
  std::array<int16_t, kMaxIndexedPoolTaps> tapRow, tapColumn;
  std::array<int64_t, kMaxIndexedPoolTaps> tapOffset; // (row * W + column) * xLanes
};

template <int64_t Lanes> struct VectorOf {
  typedef float type __attribute__((vector_size(Lanes * sizeof(float))));
  /// The same vector at any float's address, aliasing floats: one unaligned move.
  typedef float unaligned
      __attribute__((vector_size(Lanes * sizeof(float)), aligned(sizeof(float)), may_alias));
};

/// One band of pooled rows [rowBegin, rowEnd), input channel blocks [cb0, cb0 + Blocks),
/// every output channel: the vector sums added into `sums` (O x C x KH x KW floats,
/// output channel by output channel, each as (channel block, kh, kw) vectors) and dy's
/// sums into biasSums (when cb0 is 0). Padded: the convolution pads x, so a window
/// may reach past its edge.
template <int64_t Lanes, int KH, int KW, int Blocks, bool Padded>
__attribute__((always_inline)) inline void
band(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
     int64_t cb0, int64_t rowBegin, int64_t rowEnd, float *sums, float *biasSums) {
  using V = typename VectorOf<Lanes>::type;
  using U = typename VectorOf<Lanes>::unaligned;
  const Conv2DGeometry &cv = p.conv;
  const Pool2DGeometry &pl = p.pool;
  const int64_t plane = cv.H * cv.W * Lanes, rowStride = cv.W * Lanes,
                columnStep = pl.strideW * Lanes, dyLanes = p.dyLanes;
  // A code passes unless its window is empty or, under the ReLU, its maximum is not > 0.
  const uint8_t failing = relu ? pool_index::kNotPositive : uint8_t(0);
  for (int64_t ob = 0; ob < p.dyBlocks; ++ob)
    for (int64_t lane = 0; lane < dyLanes; ++lane) {
      const int64_t o = ob * dyLanes + lane;
      V acc[Blocks][KH][KW] = {};
      float bias = 0.0f;
      for (int64_t row = rowBegin; row < rowEnd; ++row) {
        const int64_t n = row / pl.OH, ph = row % pl.OH;
        const int64_t at = ((n * p.dyBlocks + ob) * pl.OH + ph) * pl.OW * dyLanes + lane;
        const uint8_t *codeRow = codes + at;
        const float *dyRow = dy + at;
        const int64_t ih0 = ph * pl.strideH - pl.padH - cv.padH, iw0 = -pl.padW - cv.padW;
        // x at the window's corner of pooled output (ph, 0); tap offsets add to it.
        const float *rowCorner = x + (n * p.xBlocks + cb0) * plane + ih0 * rowStride + iw0 * Lanes;
        for (int64_t pw = 0; pw < pl.OW; ++pw) {
          const uint8_t code = codeRow[pw * dyLanes];
          if (code == pool_index::kEmpty || (code & failing))
            continue;
          const float g = dyRow[pw * dyLanes];
          bias += g;
          const int64_t tap = code & pool_index::kTapMask;
          const float *corner = rowCorner + pw * columnStep + p.tapOffset[size_t(tap)];
          const V gv = V{} + g;
          if (Padded) {
            const int64_t ih = ih0 + p.tapRow[size_t(tap)],
                          iw = iw0 + pw * pl.strideW + p.tapColumn[size_t(tap)];
            if (ih < 0 || iw < 0 || ih + KH > cv.H || iw + KW > cv.W) {
              // A window over the convolution's padding: its zeros add nothing.
              for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw)
                  if (ih + kh >= 0 && ih + kh < cv.H && iw + kw >= 0 && iw + kw < cv.W)
                    for (int b = 0; b < Blocks; ++b)
                      acc[b][kh][kw] += gv * *reinterpret_cast<const U *>(
                                                 corner + b * plane + kh * rowStride + kw * Lanes);
              continue;
            }
          }
          for (int b = 0; b < Blocks; ++b)
            for (int kh = 0; kh < KH; ++kh) {
              const float *r = corner + b * plane + kh * rowStride;
              for (int kw = 0; kw < KW; ++kw)
                acc[b][kh][kw] += gv * *reinterpret_cast<const U *>(r + kw * Lanes);
            }
        }
      }
      float *out = sums + (o * p.xBlocks + cb0) * KH * KW * Lanes;
      for (int b = 0; b < Blocks; ++b)
        for (int kh = 0; kh < KH; ++kh)
          for (int kw = 0; kw < KW; ++kw)
            *reinterpret_cast<U *>(out + ((b * KH + kh) * KW + kw) * Lanes) += acc[b][kh][kw];
      if (cb0 == 0)
        biasSums[o] += bias;
    }
}

/// Bands [bandBegin, bandEnd), every group of at most MaxBlocks input channel blocks.
template <int64_t Lanes, int KH, int KW, int MaxBlocks, bool Padded>
__attribute__((always_inline)) inline void
bandsOf(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
        int64_t bandBegin, int64_t bandEnd, float *sums, float *biasSums) {
  const int64_t rows = p.conv.N * p.pool.OH;
  for (int64_t b = bandBegin; b < bandEnd; ++b) {
    const int64_t rowBegin = b * kBandRows, rowEnd = std::min(rows, rowBegin + kBandRows);
    for (int64_t cb0 = 0; cb0 < p.xBlocks; cb0 += MaxBlocks) {
      const int64_t count = std::min<int64_t>(MaxBlocks, p.xBlocks - cb0);
      if (count >= 4 && MaxBlocks >= 4)
        band<Lanes, KH, KW, (MaxBlocks >= 4 ? 4 : 1), Padded>(p, codes, dy, x, relu, cb0, rowBegin,
                                                              rowEnd, sums, biasSums);
      else if (count == 3 && MaxBlocks >= 3)
        band<Lanes, KH, KW, (MaxBlocks >= 3 ? 3 : 1), Padded>(p, codes, dy, x, relu, cb0, rowBegin,
                                                              rowEnd, sums, biasSums);
      else if (count == 2 && MaxBlocks >= 2)
        band<Lanes, KH, KW, (MaxBlocks >= 2 ? 2 : 1), Padded>(p, codes, dy, x, relu, cb0, rowBegin,
                                                              rowEnd, sums, biasSums);
      else
        band<Lanes, KH, KW, 1, Padded>(p, codes, dy, x, relu, cb0, rowBegin, rowEnd, sums,
                                       biasSums);
    }
  }
}

template <int64_t Lanes, int KH, int KW, int MaxBlocks>
__attribute__((always_inline)) inline void
bands(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
      int64_t bandBegin, int64_t bandEnd, float *sums, float *biasSums) {
  if (p.conv.padH != 0 || p.conv.padW != 0)
    bandsOf<Lanes, KH, KW, MaxBlocks, true>(p, codes, dy, x, relu, bandBegin, bandEnd, sums,
                                            biasSums);
  else
    bandsOf<Lanes, KH, KW, MaxBlocks, false>(p, codes, dy, x, relu, bandBegin, bandEnd, sums,
                                             biasSums);
}

using BandsFunction = void (*)(const Problem &, const uint8_t *, const float *, const float *, bool,
                               int64_t, int64_t, float *, float *);

/// Channel blocks summed at once: KH x KW x blocks vector sums within half the registers.
template <int KH, int KW> constexpr int wideBlocks() { return std::max(1, 16 / (KH * KW)); }
template <int KH, int KW> constexpr int narrowBlocks() { return std::max(1, 8 / (KH * KW)); }

#if DLC_X86_KERNELS
template <int KH, int KW>
__attribute__((target("avx512f"))) void
bandsAvx512(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
            int64_t b0, int64_t b1, float *sums, float *biasSums) {
  bands<16, KH, KW, wideBlocks<KH, KW>()>(p, codes, dy, x, relu, b0, b1, sums, biasSums);
}
template <int KH, int KW>
__attribute__((target("avx2,fma"))) void
bandsAvx2(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
          int64_t b0, int64_t b1, float *sums, float *biasSums) {
  bands<8, KH, KW, narrowBlocks<KH, KW>()>(p, codes, dy, x, relu, b0, b1, sums, biasSums);
}
#endif

template <int64_t Lanes, int KH, int KW>
void bandsPortable(const Problem &p, const uint8_t *codes, const float *dy, const float *x,
                   bool relu, int64_t b0, int64_t b1, float *sums, float *biasSums) {
  bands<Lanes, KH, KW, narrowBlocks<KH, KW>()>(p, codes, dy, x, relu, b0, b1, sums, biasSums);
}

template <int KH, int KW> BandsFunction bandsFor(int64_t xLanes) {
#if DLC_X86_KERNELS
  if (xLanes == 16 && cpu_has(CpuFeature::avx512f))
    return bandsAvx512<KH, KW>;
  if (xLanes == 8 && cpu_has(CpuFeature::avx2) && cpu_has(CpuFeature::fma))
    return bandsAvx2<KH, KW>;
#endif
  return xLanes == 16 ? bandsPortable<16, KH, KW> : bandsPortable<8, KH, KW>;
}


} // namespace

bool applies(const Conv2DGeometry &conv, const Pool2DGeometry &pool) {
  const bool window = (conv.KH == 2 && conv.KW == 2) || (conv.KH == 3 && conv.KW == 3);
  return window && conv.inputLayout != Layout::plain && pool.layout != Layout::plain &&
         conv.outputLayout == pool.layout && conv.strideH == 1 && conv.strideW == 1 &&
         conv.dilationH == 1 && conv.dilationW == 1 && conv.groups == 1 &&
         conv.C % channel_block(conv.inputLayout) == 0 &&
         conv.O % channel_block(pool.layout) == 0 && pool.N == conv.N && pool.C == conv.O &&
         pool.H == conv.OH && pool.W == conv.OW &&
         pool.kernelH * pool.kernelW <= kMaxIndexedPoolTaps &&
         2 * pool.OH * pool.OW <= conv.OH * conv.OW;
}

void backward(const Conv2DGeometry &conv, const Pool2DGeometry &pool, const uint8_t *codes,
              const float *dy, const float *x, bool relu, float *dw, float *db) {
  Problem p{conv,
            pool,
            channel_block(conv.inputLayout),
            channel_block(pool.layout),
            conv.C / channel_block(conv.inputLayout),
            conv.O / channel_block(pool.layout),
            {},
            {},
            {}};
  for (int64_t tap = 0; tap < kMaxIndexedPoolTaps; ++tap) {
    p.tapRow[size_t(tap)] = int16_t(tap / pool.kernelW);
    p.tapColumn[size_t(tap)] = int16_t(tap % pool.kernelW);
    p.tapOffset[size_t(tap)] = (tap / pool.kernelW * conv.W + tap % pool.kernelW) * p.xLanes;
  }
  const BandsFunction run = conv.KH == 2 ? bandsFor<2, 2>(p.xLanes) : bandsFor<3, 3>(p.xLanes);
  const int64_t window = conv.C * conv.KH * conv.KW, weights = conv.O * window;
  const int64_t bandCount = (conv.N * pool.OH + kBandRows - 1) / kBandRows;
  const int64_t parts = std::max<int64_t>(1, std::min(team_size(), bandCount));
  // Each part's dw (vectors of x's channel block) and db, zeroed, then its bands.
  std::vector<float> sums(size_t(parts * (weights + conv.O)), 0.0f);
  parallel_for_if(parts > 1, parts, [&](int64_t part) {
    float *mine = sums.data() + part * (weights + conv.O);
    run(p, codes, dy, x, relu, bandCount * part / parts, bandCount * (part + 1) / parts, mine,
        mine + weights);
  });
  // (O, C/L, KH, KW, L) -> (O, C, KH, KW), the parts in order.
  const int64_t taps = conv.KH * conv.KW;
  for (int64_t o = 0; o < conv.O; ++o)
    for (int64_t c = 0; c < conv.C; ++c)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t from = o * window + ((c / p.xLanes) * taps + t) * p.xLanes + c % p.xLanes;
        float total = 0.0f;
        for (int64_t part = 0; part < parts; ++part)
          total += sums[size_t(part * (weights + conv.O) + from)];
        dw[o * window + c * taps + t] = total;
      }
  if (db)
    for (int64_t o = 0; o < conv.O; ++o) {
      float total = 0.0f;
      for (int64_t part = 0; part < parts; ++part)
        total += sums[size_t(part * (weights + conv.O) + weights + o)];
      db[o] = total;
    }
}

} // namespace dlc::cpu_kernels::pooled_filter_gradient::blocked
