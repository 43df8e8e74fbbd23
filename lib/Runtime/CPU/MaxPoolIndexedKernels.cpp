//===- MaxPoolIndexedKernels.cpp - max pooling that keeps where each maximum was ===//
//
// The compiled training step's max pooling (dlc-keep-pool-indices): the forward writes,
// besides y, one byte per output naming the tap that held the window's first maximum
// (pool_index in NNKernels.h), and the backward routes dy through those bytes instead of
// finding every maximum again in x. The backward then reads dy and a quarter of its
// size in codes rather than all of x, and x need not outlive the forward. The codes
// also say whether the maximum was > 0, so the gradient of a ReLU before the pooling
// folds in without x.
//
// Same rules as MaxPoolKernels.cpp and ref::: the first maximum in row-major order (a
// NaN that comes first stays, a later one is passed over), empty windows give 0 and no
// gradient, gradients are added in float window by window in (oh, ow) order, so dx
// equals the unindexed backward's bit for bit. The blocked layouts' forward takes each
// window's maximum first and then the first tap equal to it, several windows at once: on
// nChw16c with AVX-512 a window's 16 channels are one register, with AVX2 two (nChw16c)
// or one (nChw8c). The backward is one scalar add per output, at the tap its code names,
// on every layout.
//
//===----------------------------------------------------------------------===//
#include "MaxPoolWindows.h"

namespace dlc::cpu_kernels::direct {

namespace {

using namespace max_pool_windows;

/// The tap number of input (ih, iw) in output (oh, ow)'s window.
inline int64_t tapOf(const Pool2DGeometry &g, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
  return (ih - (oh * g.strideH - g.padH)) * g.kernelW + (iw - (ow * g.strideW - g.padW));
}

/// The code of a window whose first maximum `best` is at tap `tap`.
inline uint8_t codeOf(int64_t tap, float best) {
  return uint8_t(tap) | (best > 0.0f ? uint8_t(0) : pool_index::kNotPositive);
}

/// The forward of one plane with Lanes channels per pixel, lane by lane.
template <int64_t Lanes>
void forwardPlaneLoop(const Pool2DGeometry &g, const float *plane, float *out, uint8_t *codes) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      const int64_t o = (oh * g.OW + ow) * Lanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        for (int64_t c = 0; c < Lanes; ++c) {
          out[o + c] = 0.0f;
          codes[o + c] = pool_index::kEmpty;
        }
        continue;
      }
      float best[Lanes];
      int64_t where[Lanes];
      const float *first = plane + (rows.begin * g.W + cols.begin) * Lanes;
      for (int64_t c = 0; c < Lanes; ++c) {
        best[c] = first[c];
        where[c] = tapOf(g, oh, ow, rows.begin, cols.begin);
      }
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
          const float *v = plane + (ih * g.W + iw) * Lanes;
          const int64_t tap = tapOf(g, oh, ow, ih, iw);
          for (int64_t c = 0; c < Lanes; ++c)
            if (v[c] > best[c]) {
              best[c] = v[c];
              where[c] = tap;
            }
        }
      for (int64_t c = 0; c < Lanes; ++c) {
        out[o + c] = best[c];
        codes[o + c] = codeOf(where[c], best[c]);
      }
    }
  }
}

/// The backward of one plane with Lanes channels per pixel: each window's dy, in the
/// lanes whose code passes it, added at the tap the code names, into rows zeroed just
/// before. One scalar add per lane: faster here than the AVX-512 alternatives measured
/// (comparing each tap with the 16 lanes' codes, 5.9 ms for the LeafNetwork's first
/// pooling at batch 32 against 4.1), and no data-dependent branch but on empty windows:
/// a lane whose maximum was not > 0 adds 0 under the ReLU's gradient.
template <int64_t Lanes>
void backwardPlane(const Pool2DGeometry &g, const uint8_t *codes, const float *grad,
                   float *out, bool reluGrad) {
  // Each tap's pixel offset from its window's top-left corner (no division per window).
  int64_t offsets[kMaxIndexedPoolTaps];
  for (int64_t t = 0; t < g.kernelH * g.kernelW; ++t)
    offsets[t] = (t / g.kernelW) * g.W + t % g.kernelW;
  const uint8_t dropped = reluGrad ? pool_index::kNotPositive : 0;
  RowsZeroedOnDemand<Lanes> zeroed(g, out);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    zeroed.upTo(rowSpan(g, oh).end);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const int64_t o = (oh * g.OW + ow) * Lanes;
      // The corner may lie in the padding; the tap a code names never does.
      const int64_t corner = (oh * g.strideH - g.padH) * g.W + ow * g.strideW - g.padW;
      for (int64_t c = 0; c < Lanes; ++c) {
        const uint8_t code = codes[o + c];
        if (code == pool_index::kEmpty)
          continue; // covers no input: no tap to add at
        const float dy = (code & dropped) ? 0.0f : grad[o + c];
        out[(corner + offsets[code & pool_index::kTapMask]) * Lanes + c] += dy;
      }
    }
  }
}

#if DLC_X86_KERNELS
/// Stores sixteen maxima and their codes: the tap numbers in `where`, with the flag set
/// where the maximum is not > 0 (NaN included), narrowed to bytes.
__attribute__((target("avx512f"), always_inline)) inline void
storeAvx512(__m512 best, __m512i where, float *out, uint8_t *codes) {
  const __mmask16 positive = _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ);
  where = _mm512_mask_or_epi32(where, __mmask16(~positive), where,
                               _mm512_set1_epi32(pool_index::kNotPositive));
  _mm512_storeu_ps(out, best);
  // The storing form of the narrowing: the plain one has an undefined pass-through
  // operand GCC 12 warns about.
  _mm512_mask_cvtepi32_storeu_epi8(codes, __mmask16(0xffff), where);
}

/// wholeWindowsAvx2 (below) on nChw16c with AVX-512: a window's 16 channels are one
/// register, and the tap number goes in by a masked move. The same two sweeps, Windows
/// windows at once: the one-sweep form (compare, then two masked moves per tap, one
/// window at a time) ran the LeafNetwork's poolings at batch 32 at 1.3-2.0x the time to
/// move their bytes on an AVX-512 EPYC.
template <int64_t Windows>
__attribute__((target("avx512f"), always_inline)) inline void
wholeWindowsAvx512(const float *corner, int64_t step, int64_t taps, const int64_t *offsets,
                   float *out, uint8_t *codes) {
  __m512 best[Windows];
  __m512i where[Windows];
  for (int64_t w = 0; w < Windows; ++w) {
    best[w] = _mm512_loadu_ps(corner + w * step);
    where[w] = _mm512_setzero_si512();
  }
  for (int64_t t = 1; t < taps; ++t)
    for (int64_t w = 0; w < Windows; ++w)
      // max(v, best) is `v > best ? v : best`; the masked form, as the plain one's
      // undefined pass-through operand makes GCC 12 warn.
      best[w] = _mm512_mask_max_ps(best[w], __mmask16(0xffff),
                                   _mm512_loadu_ps(corner + w * step + offsets[t]), best[w]);
  for (int64_t t = taps - 1; t >= 0; --t) {
    const __m512i number = _mm512_set1_epi32(int32_t(t));
    for (int64_t w = 0; w < Windows; ++w) {
      const __mmask16 equal =
          _mm512_cmp_ps_mask(_mm512_loadu_ps(corner + w * step + offsets[t]), best[w], _CMP_EQ_OQ);
      where[w] = _mm512_mask_mov_epi32(where[w], equal, number);
    }
  }
  for (int64_t w = 0; w < Windows; ++w)
    storeAvx512(best[w], where[w], out + w * 16, codes + w * 16);
}

/// forwardPlaneLoop on nChw16c with AVX-512: whole windows kWide at a time
/// (wholeWindowsAvx512), clipped ones one by one, folding taps with a compare and two
/// masked moves (value and tap number).
__attribute__((target("avx512f"))) void forwardPlaneAvx512(const Pool2DGeometry &g,
                                                                    const float *plane,
                                                                    float *out, uint8_t *codes) {
  constexpr int64_t kLanes = 16, kWide = 4;
  const int64_t taps = g.kernelH * g.kernelW;
  int64_t offsets[kMaxIndexedPoolTaps];
  for (int64_t t = 0; t < taps; ++t)
    offsets[t] = ((t / g.kernelW) * g.W + t % g.kernelW) * kLanes;
  const auto whole = [&](Span rows, Span cols) {
    return rows.end - rows.begin == g.kernelH && cols.end - cols.begin == g.kernelW;
  };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      const int64_t o = (oh * g.OW + ow) * kLanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        _mm512_storeu_ps(out + o, _mm512_setzero_ps());
        _mm_storeu_si128(reinterpret_cast<__m128i *>(codes + o),
                         _mm_set1_epi8(char(pool_index::kEmpty)));
        continue;
      }
      const float *corner = plane + (rows.begin * g.W + cols.begin) * kLanes;
      prefetchRowsBelow<kLanes>(g, plane, rows, cols, kWide * g.strideW);
      if (whole(rows, cols)) {
        if (ow + kWide - 1 < g.OW && whole(rows, columnSpan(g, ow + kWide - 1))) {
          wholeWindowsAvx512<kWide>(corner, g.strideW * kLanes, taps, offsets, out + o,
                                    codes + o);
          ow += kWide - 1;
        } else {
          wholeWindowsAvx512<1>(corner, 0, taps, offsets, out + o, codes + o);
        }
        continue;
      }
      __m512 best = _mm512_loadu_ps(corner);
      __m512i where = _mm512_set1_epi32(int32_t(tapOf(g, oh, ow, rows.begin, cols.begin)));
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = ih == rows.begin ? cols.begin + 1 : cols.begin; iw < cols.end; ++iw) {
          const __m512 v = _mm512_loadu_ps(plane + (ih * g.W + iw) * kLanes);
          // Ordered compare: a NaN never wins, and one that came first is never displaced.
          const __mmask16 greater = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
          best = _mm512_mask_mov_ps(best, greater, v);
          where = _mm512_mask_mov_epi32(where, greater,
                                        _mm512_set1_epi32(int32_t(tapOf(g, oh, ow, ih, iw))));
        }
      storeAvx512(best, where, out + o, codes + o);
    }
  }
}

/// Stores eight maxima and their codes: the tap numbers in `where`, with the flag set
/// where the maximum is not > 0 (NaN included), narrowed to bytes (each < 256).
__attribute__((target("avx2"), always_inline)) inline void storeAvx2(__m256 best, __m256i where,
                                                                     float *out, uint8_t *codes) {
  _mm256_storeu_ps(out, best);
  const __m256i flagged =
      _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_NGT_UQ)),
                       _mm256_set1_epi32(pool_index::kNotPositive));
  const __m256i code = _mm256_or_si256(where, flagged);
  const __m128i halves =
      _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i *>(codes), _mm_packus_epi16(halves, halves));
}

/// The forward of Windows whole windows of a row side by side (`step` floats apart), on
/// AVX2 registers, in two sweeps over their taps (in cache after the first): the maximum
/// as the values-only forward finds it (max_ps(v, best) is `v > best ? v : best`, NaNs
/// included), then the first tap equal to it, found from the last tap back so that the
/// earliest match is written last. The first maximum is the first tap equal to the
/// maximum: a tap before it equal to it would have been kept instead. A NaN maximum was
/// the first tap (nothing replaces a NaN and no NaN replaces anything), which equals
/// nothing, so the code stays 0, the first tap's. Several windows at once interleave
/// their dependency chains. Measured on the LeafNetwork's poolings at batch 4 (nChw8c,
/// AVX2 EPYC), as multiples of the time to move their bytes: one sweep carrying value
/// and tap through a compare and two blends 2.5-3.1x, two sweeps 1.7x, two sweeps over
/// two windows at once 1.35x, over four 0.9-1.0x.
template <int64_t Lanes, int64_t Windows>
__attribute__((target("avx2"), always_inline)) inline void
wholeWindowsAvx2(const float *corner, int64_t step, int64_t taps, const int64_t *offsets,
                 const int32_t (*tapNumbers)[8], float *out, uint8_t *codes) {
  constexpr int64_t kVectors = Lanes / 8;
  __m256 best[Windows][kVectors];
  __m256i where[Windows][kVectors];
  for (int64_t w = 0; w < Windows; ++w)
    for (int64_t k = 0; k < kVectors; ++k) {
      best[w][k] = _mm256_loadu_ps(corner + w * step + 8 * k);
      where[w][k] = _mm256_setzero_si256();
    }
  for (int64_t t = 1; t < taps; ++t)
    for (int64_t w = 0; w < Windows; ++w)
      for (int64_t k = 0; k < kVectors; ++k)
        best[w][k] =
            _mm256_max_ps(_mm256_loadu_ps(corner + w * step + offsets[t] + 8 * k), best[w][k]);
  for (int64_t t = taps - 1; t >= 0; --t) {
    const __m256 number = _mm256_load_ps(reinterpret_cast<const float *>(tapNumbers[t]));
    for (int64_t w = 0; w < Windows; ++w)
      for (int64_t k = 0; k < kVectors; ++k) {
        const __m256 equal = _mm256_cmp_ps(
            _mm256_loadu_ps(corner + w * step + offsets[t] + 8 * k), best[w][k], _CMP_EQ_OQ);
        where[w][k] = _mm256_castps_si256(
            _mm256_blendv_ps(_mm256_castsi256_ps(where[w][k]), number, equal));
      }
  }
  for (int64_t w = 0; w < Windows; ++w)
    for (int64_t k = 0; k < kVectors; ++k)
      storeAvx2(best[w][k], where[w][k], out + w * Lanes + 8 * k, codes + w * Lanes + 8 * k);
}

/// forwardPlaneLoop on AVX2 registers (8 lanes each) for the blocked layouts: whole
/// windows four (nChw8c) or two (nChw16c) at a time (wholeWindowsAvx2), the rest one by
/// one, clipped ones by the same two sweeps with their taps' numbers computed.
template <int64_t Lanes>
__attribute__((target("avx2"))) void forwardPlaneAvx2(const Pool2DGeometry &g,
                                                      const float *plane, float *out,
                                                      uint8_t *codes) {
  static_assert(Lanes % 8 == 0, "whole AVX2 registers");
  constexpr int64_t kVectors = Lanes / 8;
  // Whole windows side by side: four registers of maxima and four of taps (eight with 16
  // lanes) leave room for the loads without spilling.
  constexpr int64_t kWide = kVectors >= 4 ? 1 : 4 / kVectors;
  // Per tap of a window, its number in every lane and its offset from the window's first
  // pixel: whole windows (nearly all of them) then need no index arithmetic.
  const int64_t taps = g.kernelH * g.kernelW;
  alignas(32) int32_t tapNumbers[kMaxIndexedPoolTaps][8];
  int64_t offsets[kMaxIndexedPoolTaps];
  for (int64_t t = 0; t < taps; ++t) {
    std::fill(tapNumbers[t], tapNumbers[t] + 8, int32_t(t));
    offsets[t] = ((t / g.kernelW) * g.W + t % g.kernelW) * Lanes;
  }
  const auto whole = [&](Span rows, Span cols) {
    return rows.end - rows.begin == g.kernelH && cols.end - cols.begin == g.kernelW;
  };
  // A lambda would not inherit the function's AVX2 target: pointers only.
  const auto tapAt = [&](int64_t ih, int64_t iw) { return plane + (ih * g.W + iw) * Lanes; };
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      const int64_t o = (oh * g.OW + ow) * Lanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        for (int64_t c = 0; c < Lanes; ++c) {
          out[o + c] = 0.0f;
          codes[o + c] = pool_index::kEmpty;
        }
        continue;
      }
      const float *corner = tapAt(rows.begin, cols.begin);
      prefetchRowsBelow<Lanes>(g, plane, rows, cols, kWide * g.strideW);
      if (whole(rows, cols)) {
        if (ow + kWide - 1 < g.OW && whole(rows, columnSpan(g, ow + kWide - 1))) {
          wholeWindowsAvx2<Lanes, kWide>(corner, g.strideW * Lanes, taps, offsets, tapNumbers,
                                         out + o, codes + o);
          ow += kWide - 1;
        } else {
          wholeWindowsAvx2<Lanes, 1>(corner, 0, taps, offsets, tapNumbers, out + o, codes + o);
        }
        continue;
      }
      __m256 best[kVectors];
      __m256i where[kVectors];
      for (int64_t k = 0; k < kVectors; ++k) {
        best[k] = _mm256_loadu_ps(corner + 8 * k);
        where[k] = _mm256_set1_epi32(int32_t(tapOf(g, oh, ow, rows.begin, cols.begin)));
      }
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = ih == rows.begin ? cols.begin + 1 : cols.begin; iw < cols.end; ++iw)
          for (int64_t k = 0; k < kVectors; ++k)
            best[k] = _mm256_max_ps(_mm256_loadu_ps(tapAt(ih, iw) + 8 * k), best[k]);
      for (int64_t ih = rows.end - 1; ih >= rows.begin; --ih)
        for (int64_t iw = cols.end - 1; iw >= cols.begin; --iw) {
          const __m256 number = _mm256_load_ps(
              reinterpret_cast<const float *>(tapNumbers[tapOf(g, oh, ow, ih, iw)]));
          for (int64_t k = 0; k < kVectors; ++k) {
            const __m256 equal =
                _mm256_cmp_ps(_mm256_loadu_ps(tapAt(ih, iw) + 8 * k), best[k], _CMP_EQ_OQ);
            where[k] = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(where[k]), number, equal));
          }
        }
      for (int64_t k = 0; k < kVectors; ++k)
        storeAvx2(best[k], where[k], out + o + 8 * k, codes + o + 8 * k);
    }
  }
}
#endif

template <int64_t Lanes>
void forwardPlane(const Pool2DGeometry &g, const float *plane, float *out, uint8_t *codes) {
#if DLC_X86_KERNELS
  if (Lanes == 16 && haveAvx512())
    return forwardPlaneAvx512(g, plane, out, codes);
  if constexpr (Lanes % 8 == 0)
    if (haveAvx2())
      return forwardPlaneAvx2<Lanes>(g, plane, out, codes);
#endif
  forwardPlaneLoop<Lanes>(g, plane, out, codes);
}


template <int64_t Lanes>
void blockedForward(const Pool2DGeometry &g, const float *x, float *y, uint8_t *codes) {
  forEachBlockedPlane<Lanes>(g, [&](int64_t p) {
    const int64_t o = p * g.OH * g.OW * Lanes;
    forwardPlane<Lanes>(g, x + p * g.H * g.W * Lanes, y + o, codes + o);
  });
}

template <int64_t Lanes>
void blockedBackward(const Pool2DGeometry &g, const uint8_t *codes, const float *dy, float *dx,
                     bool reluGrad) {
  forEachBlockedPlane<Lanes>(g, [&](int64_t p) {
    const int64_t o = p * g.OH * g.OW * Lanes;
    backwardPlane<Lanes>(g, codes + o, dy + o, dx + p * g.H * g.W * Lanes, reluGrad);
  });
}

} // namespace

void max_pool2d_indexed_forward(const Pool2DGeometry &g, const float *x, float *y,
                                uint8_t *indices) {
  if (g.layout == Layout::nChw16c)
    return blockedForward<channel_block(Layout::nChw16c)>(g, x, y, indices);
  if (g.layout == Layout::nChw8c)
    return blockedForward<channel_block(Layout::nChw8c)>(g, x, y, indices);
  plainIndexedForward(g, x, y, indices);
}

void max_pool2d_indexed_backward(const Pool2DGeometry &g, const uint8_t *indices,
                                 const float *dy, float *dx, bool reluGrad) {
  if (g.layout == Layout::nChw16c)
    return blockedBackward<channel_block(Layout::nChw16c)>(g, indices, dy, dx, reluGrad);
  if (g.layout == Layout::nChw8c)
    return blockedBackward<channel_block(Layout::nChw8c)>(g, indices, dy, dx, reluGrad);
  blockedBackward<1>(g, indices, dy, dx, reluGrad);
}

} // namespace dlc::cpu_kernels::direct
