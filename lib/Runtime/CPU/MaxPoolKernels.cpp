//===- MaxPoolKernels.cpp - max pooling forward and backward on plain NCHW ----===//
//
// Why not oneDNN here: on plain NCHW tensors oneDNN 2.6's pooling transposes to a
// channels-last layout and back, and its backward needs the forward's workspace, which
// the eager op contract (dx from dy and x) does not carry, so dlc had to rerun the
// forward first. At the LeafNetwork's first block (32x32x127x127, 4x4 windows, stride 2)
// that came to ~9 ms forward and ~31 ms backward on 2 cores, several times what reading
// x and writing dx costs. These kernels walk one plane at a time, output row by output
// row: 16 neighbouring windows are one AVX-512 register, folded tap by tap (compare,
// then a masked move of the value and of its position), the input rows of the next
// output row are prefetched, and the backward scatters into a dx plane that is still in
// cache. The LeafNetwork's three poolings at batch 32, forward + backward, went from
// ~68 ms to ~25 ms per step. Without AVX-512 the forward takes the maxima of whole rows
// of windows tap by tap (loops the compiler vectorizes, built for AVX2 too and chosen
// at run time) and the backward scans the windows one by one.
// On blocked layouts (nChw16c, nChw8c) a window's 16 channels are one register: the
// forward is a max per tap (1.1-1.2x the time of moving its tensors at this machine's
// bandwidth), the backward finds each lane's first maximum, then adds dy tap by tap in
// the lanes that hold it, into a ring of dx rows in cache that leave by streaming
// stores once no window reaches them (~1.6x). With the ReLU's gradient folded in (the
// compiled max_pool2d_backward_relu) a window passes dy only where its maximum is > 0.
//
// Same contract and tie rule as ref::: the first maximum of a window in row-major order
// (a later equal value never displaces it, and a NaN that comes first stays), windows
// that cover no input give 0 and pass no gradient. Gradients are added in float, window
// by window in (oh, ow) order.
//
//===----------------------------------------------------------------------===//
#include "MaxPoolWindows.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace dlc::cpu_kernels::direct {

namespace {

using namespace max_pool_windows;

// Output columns computed together: one AVX-512 register of floats.
constexpr int64_t kBlock = 16;



/// Output columns whose whole window lies inside the input: [begin, end).
struct InteriorColumns {
  int64_t begin, end;
};

InteriorColumns interiorColumns(const Pool2DGeometry &g) {
  // the first ow with ow*s - pad >= 0
  const int64_t begin = std::min(g.OW, (g.padW + g.strideW - 1) / g.strideW);
  if (g.W + g.padW - g.kernelW < 0)
    return {begin, begin};
  const int64_t end = std::min(g.OW, (g.W + g.padW - g.kernelW) / g.strideW + 1);
  return {begin, std::max(begin, end)};
}

#if DLC_X86_KERNELS
/// Which of a block's 16 windows exist (the last block of a row may be partial), and the
/// elements of a tap the windows read: lanes past `count` load nothing, so no load runs
/// past the tensor.
struct BlockLanes {
  __mmask16 windows;       // lanes with a window
  __mmask16 low, high;     // stride 2: elements [0, 16) and [16, 32) of the tap's span
};

inline BlockLanes blockLanes(int64_t count, int64_t stride) {
  auto firstBits = [](int64_t n) {
    return __mmask16(n >= 16 ? 0xffff : (1u << std::max<int64_t>(n, 0)) - 1);
  };
  const int64_t span = (count - 1) * stride + 1; // elements from the first lane's to the last's
  return {firstBits(count), firstBits(span), firstBits(span - 16)};
}

/// One tap of 16 windows `offsets` apart (stride 1, 2, or any: kStride 0).
template <int kStride>
inline __attribute__((target("avx512f"), always_inline)) __m512
loadTaps(const float *tap, __m512i offsets, const BlockLanes &lanes) {
  if constexpr (kStride == 1) {
    return _mm512_maskz_loadu_ps(lanes.windows, tap);
  } else if constexpr (kStride == 2) {
    const __m512i evens =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lanes.low, tap), evens,
                                  _mm512_maskz_loadu_ps(lanes.high, tap + 16));
  } else {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes.windows, offsets, tap, 4);
  }
}

/// Running first maxima of up to 16 neighbouring windows (one register), over all their
/// taps: input rows [rows) x kernelW columns. `origin` is the flat plane index of the
/// first window's top-left tap; the windows are `stride` columns apart.
template <int kStride>
__attribute__((target("avx512f"))) void blockMaximaAvx512(const Pool2DGeometry &g,
                                                          const float *plane, Span rows,
                                                          int32_t origin, int64_t count,
                                                          float *bestOut, int32_t *whereOut) {
  const BlockLanes lanes = blockLanes(count, g.strideW);
  const __m512i offsets = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(int32_t(g.strideW)));
  __m512 best = loadTaps<kStride>(plane + origin, offsets, lanes);
  __m512i where = _mm512_add_epi32(_mm512_set1_epi32(origin), offsets);
  for (int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (int64_t kw = 0; kw < g.kernelW; ++kw) {
      const int32_t tap = origin + int32_t((ih - rows.begin) * g.W + kw);
      const __m512 v = loadTaps<kStride>(plane + tap, offsets, lanes);
      // Ordered compare: a NaN never wins, and one that came first is never displaced.
      const __mmask16 greater = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
      best = _mm512_mask_mov_ps(best, greater, v);
      where = _mm512_mask_mov_epi32(where, greater,
                                    _mm512_add_epi32(_mm512_set1_epi32(tap), offsets));
    }
  _mm512_mask_storeu_ps(bestOut, lanes.windows, best);
  _mm512_mask_storeu_epi32(whereOut, lanes.windows, where);
}
#endif

/// First maximum of the window at (rows, ow), for columns near the border: its flat
/// index in the plane, -1 when the window covers no input.
int32_t borderWindowMax(const Pool2DGeometry &g, const float *plane, Span rows, int64_t ow) {
  const int64_t firstCol = ow * g.strideW - g.padW;
  const int64_t colBegin = std::max<int64_t>(firstCol, 0),
                colEnd = std::min(firstCol + g.kernelW, g.W);
  int32_t best = -1;
  for (int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (int64_t iw = colBegin; iw < colEnd; ++iw)
      if (best < 0 || plane[ih * g.W + iw] > plane[best])
        best = int32_t(ih * g.W + iw);
  return best;
}

/// The maxima (values only: the forward's) of the interior windows of one output row,
/// tap by tap over the whole row of windows: `v > best ? v : best` is one max
/// instruction per lane with the first maximum's rule (a NaN never wins, one that came
/// first stays), in loops the compiler vectorizes.
template <int kStride>
inline __attribute__((always_inline)) void
interiorValuesLoop(const Pool2DGeometry &g, const float *plane, Span rows, int64_t begin,
                   int64_t count, float *best) {
  const int64_t stride = kStride > 0 ? kStride : g.strideW;
  const float *origin = plane + rows.begin * g.W + begin * stride - g.padW;
  for (int64_t j = 0; j < count; ++j)
    best[j] = origin[j * stride];
  for (int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (int64_t kw = ih == rows.begin ? 1 : 0; kw < g.kernelW; ++kw) {
      const float *tap = origin + (ih - rows.begin) * g.W + kw;
      for (int64_t j = 0; j < count; ++j) {
        const float v = tap[j * stride];
        best[j] = v > best[j] ? v : best[j];
      }
    }
}

#if DLC_X86_KERNELS
/// The same loops compiled for AVX2 (8 lanes), chosen at run time as the AVX-512 code is.
template <int kStride>
__attribute__((target("avx2"))) void interiorValuesAvx2(const Pool2DGeometry &g,
                                                         const float *plane, Span rows,
                                                         int64_t begin, int64_t count,
                                                         float *best) {
  interiorValuesLoop<kStride>(g, plane, rows, begin, count, best);
}
#endif

template <int kStride>
void interiorValues(const Pool2DGeometry &g, const float *plane, Span rows, int64_t begin,
                    int64_t count, float *best) {
#if DLC_X86_KERNELS
  if (haveAvx2())
    return interiorValuesAvx2<kStride>(g, plane, rows, begin, count, best);
#endif
  interiorValuesLoop<kStride>(g, plane, rows, begin, count, best);
}

/// The first maximum of every window of output row `oh`: `where[ow]` is its flat index
/// in the plane (-1 for an empty window), `best[ow]` its value where defined. With
/// `valuesOnly` (the forward) an interior window's `where` is only marked defined (0).
void rowMaxima(const Pool2DGeometry &g, const InteriorColumns &interior, const float *plane,
               int64_t oh, float *best, int32_t *where, bool valuesOnly = false) {
  const Span rows = rowSpan(g, oh);
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    if (ow == interior.begin && interior.end > interior.begin)
      ow = interior.end; // the interior is done below, block by block
    if (ow >= g.OW)
      break;
    where[ow] = rows.begin < rows.end ? borderWindowMax(g, plane, rows, ow) : -1;
    if (where[ow] >= 0)
      best[ow] = plane[where[ow]];
  }
  if (rows.begin >= rows.end) {
    std::fill(where + interior.begin, where + interior.end, -1);
    return;
  }
  // The next output row reads strideH new input rows: ask for them now, so that they
  // arrive while this row computes (the hardware prefetchers miss the short row runs).
  for (int64_t ih = rows.end; ih < std::min(rows.end + g.strideH, g.H); ++ih)
    for (int64_t col = 0; col < g.W; col += 16)
      __builtin_prefetch(plane + ih * g.W + col);
  // Blocks of kBlock columns, the last one possibly partial.
  int64_t interiorEnd = interior.begin;
#if DLC_X86_KERNELS
  if (haveAvx512()) {
    interiorEnd = interior.end;
    for (int64_t ow = interior.begin; ow < interior.end; ow += kBlock) {
      const int64_t count = std::min(kBlock, interior.end - ow);
      const int32_t origin = int32_t(rows.begin * g.W + ow * g.strideW - g.padW);
      if (g.strideW == 2)
        blockMaximaAvx512<2>(g, plane, rows, origin, count, best + ow, where + ow);
      else if (g.strideW == 1)
        blockMaximaAvx512<1>(g, plane, rows, origin, count, best + ow, where + ow);
      else
        blockMaximaAvx512<0>(g, plane, rows, origin, count, best + ow, where + ow);
    }
  }
#endif
  if (valuesOnly && interiorEnd < interior.end) {
    const int64_t count = interior.end - interiorEnd;
    if (g.strideW == 2)
      interiorValues<2>(g, plane, rows, interiorEnd, count, best + interiorEnd);
    else if (g.strideW == 1)
      interiorValues<1>(g, plane, rows, interiorEnd, count, best + interiorEnd);
    else
      interiorValues<0>(g, plane, rows, interiorEnd, count, best + interiorEnd);
    std::fill(where + interiorEnd, where + interior.end, 0);
    return;
  }
  for (int64_t ow = interiorEnd; ow < interior.end; ++ow) {
    where[ow] = borderWindowMax(g, plane, rows, ow);
    best[ow] = plane[where[ow]];
  }
}

bool planeFitsInt32(const Pool2DGeometry &g) {
  // Blocked planes index elements as pixel * lanes + lane.
  const int64_t limit = std::numeric_limits<int32_t>::max() / channel_block(g.layout);
  return g.H * g.W <= limit &&
         g.OW <= std::numeric_limits<int32_t>::max() / std::max<int64_t>(g.strideW, 1);
}

/// Runs `perPlane(plane index, best, where)` over every (n, c) plane, in parallel, with
/// per-thread scratch rows of OW entries.
template <typename PerPlane> void forEachPlane(const Pool2DGeometry &g, PerPlane &&perPlane) {
  const int64_t planes = g.N * g.C;
  // A plane of the first LeafNetwork block is ~64 KB: enough work per task.
#pragma omp parallel if (planes > 1 && g.N * g.C * g.H * g.W >= (int64_t(1) << 15))
  {
    std::vector<float> best(size_t(g.OW));
    std::vector<int32_t> where(size_t(g.OW));
#pragma omp for schedule(static)
    for (int64_t nc = 0; nc < planes; ++nc)
      perPlane(nc, best.data(), where.data());
  }
}

//===----------------------------------------------------------------------===//
// Blocked layouts (nChw16c, nChw8c): the channels of a block at one pixel are one
// vector, so a window's first maximum is a running compare over its taps, lane by lane;
// a plane is (n, channel block).
//===----------------------------------------------------------------------===//


/// Per lane, the pixel (ih * W + iw) of the first maximum of the window over
/// `rows` x `cols` (both non-empty) and its value.
template <int64_t Lanes>
void blockedWindowMax(const Pool2DGeometry &g, const float *plane, Span rows, Span cols,
                      float *best, int32_t *where) {
  bool first = true;
  for (int64_t ih = rows.begin; ih < rows.end; ++ih)
    for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
      const int32_t pixel = int32_t(ih * g.W + iw);
      const float *v = plane + pixel * Lanes;
      for (int64_t c = 0; c < Lanes; ++c)
        if (first || v[c] > best[c]) {
          best[c] = v[c];
          where[c] = pixel;
        }
      first = false;
    }
}

/// The forward of one blocked plane, values only: per window and lane, the first tap,
/// then `v > best ? v : best` tap by tap (the first maximum's NaN rule: a NaN never
/// wins, one that came first stays).
template <int64_t Lanes>
inline __attribute__((always_inline)) void blockedValuesLoop(const Pool2DGeometry &g,
                                                             const float *plane, float *out) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      float *best = out + (oh * g.OW + ow) * Lanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        for (int64_t c = 0; c < Lanes; ++c)
          best[c] = 0.0f; // an empty window gives 0
        continue;
      }
      float acc[Lanes];
      const float *firstTap = plane + (rows.begin * g.W + cols.begin) * Lanes;
      for (int64_t c = 0; c < Lanes; ++c)
        acc[c] = firstTap[c];
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
          const float *v = plane + (ih * g.W + iw) * Lanes;
          for (int64_t c = 0; c < Lanes; ++c)
            acc[c] = v[c] > acc[c] ? v[c] : acc[c];
        }
      for (int64_t c = 0; c < Lanes; ++c)
        best[c] = acc[c];
    }
  }
}


#if DLC_X86_KERNELS
/// Whether every window is 2x2 at stride 2 inside the input (no padding): the classic
/// CNN pooling, whose forward then needs no window bounds (rowSpan and columnSpan per
/// output cost more than its four loads: a batch-1 Fashion-MNIST prediction's three
/// poolings took 5.3 us).
bool twoByTwoInside(const Pool2DGeometry &g) {
  return g.kernelH == 2 && g.kernelW == 2 && g.strideH == 2 && g.strideW == 2 && g.padH == 0 &&
         g.padW == 0 && 2 * g.OH <= g.H && 2 * g.OW <= g.W;
}

/// blockedValuesLoop on AVX2 registers (8 lanes each), chosen at run time: GCC leaves
/// the lane loop scalar. max_ps(v, best) is `v > best ? v : best`, NaNs included (the
/// second operand wins an unordered compare).
template <int64_t Lanes>
__attribute__((target("avx2"))) void blockedValuesAvx2(const Pool2DGeometry &g,
                                                       const float *plane, float *out) {
  static_assert(Lanes % 8 == 0, "whole AVX2 registers");
  constexpr int64_t kVectors = Lanes / 8;
  if (twoByTwoInside(g)) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const float *top = plane + 2 * oh * g.W * Lanes, *bottom = top + g.W * Lanes;
      for (int64_t ow = 0; ow < g.OW; ++ow)
        for (int64_t k = 0; k < kVectors; ++k) {
          const int64_t left = 2 * ow * Lanes + 8 * k, right = left + Lanes;
          // The taps in row-major order, each the first operand: the first maximum wins.
          __m256 acc = _mm256_loadu_ps(top + left);
          acc = _mm256_max_ps(_mm256_loadu_ps(top + right), acc);
          acc = _mm256_max_ps(_mm256_loadu_ps(bottom + left), acc);
          acc = _mm256_max_ps(_mm256_loadu_ps(bottom + right), acc);
          _mm256_storeu_ps(out + (oh * g.OW + ow) * Lanes + 8 * k, acc);
        }
    }
    return;
  }
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      float *best = out + (oh * g.OW + ow) * Lanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        for (int64_t k = 0; k < kVectors; ++k)
          _mm256_storeu_ps(best + 8 * k, _mm256_setzero_ps()); // an empty window gives 0
        continue;
      }
      prefetchRowsBelow<Lanes>(g, plane, rows, cols, g.strideW);
      __m256 acc[kVectors];
      const float *firstTap = plane + (rows.begin * g.W + cols.begin) * Lanes;
      for (int64_t k = 0; k < kVectors; ++k)
        acc[k] = _mm256_loadu_ps(firstTap + 8 * k);
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
          const float *v = plane + (ih * g.W + iw) * Lanes;
          for (int64_t k = 0; k < kVectors; ++k)
            acc[k] = _mm256_max_ps(_mm256_loadu_ps(v + 8 * k), acc[k]);
        }
      for (int64_t k = 0; k < kVectors; ++k)
        _mm256_storeu_ps(best + 8 * k, acc[k]);
    }
  }
}

/// The forward of one nChw16c plane, one register per tap: max_ps(v, best) is
/// `v > best ? v : best`, the first maximum's rule, NaNs included (the second operand
/// wins an unordered compare).
__attribute__((target("avx512f"))) void blockedValuesAvx512(const Pool2DGeometry &g,
                                                            const float *plane, float *out) {
  constexpr int64_t kLanes = 16;
  if (twoByTwoInside(g)) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const float *top = plane + 2 * oh * g.W * kLanes, *bottom = top + g.W * kLanes;
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t left = 2 * ow * kLanes, right = left + kLanes;
        const __mmask16 all = 0xffff;
        __m512 acc = _mm512_loadu_ps(top + left);
        acc = _mm512_mask_max_ps(acc, all, _mm512_loadu_ps(top + right), acc);
        acc = _mm512_mask_max_ps(acc, all, _mm512_loadu_ps(bottom + left), acc);
        acc = _mm512_mask_max_ps(acc, all, _mm512_loadu_ps(bottom + right), acc);
        _mm512_storeu_ps(out + (oh * g.OW + ow) * kLanes, acc);
      }
    }
    return;
  }
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      float *best = out + (oh * g.OW + ow) * kLanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end) {
        _mm512_storeu_ps(best, _mm512_setzero_ps()); // an empty window gives 0
        continue;
      }
      __m512 acc = _mm512_loadu_ps(plane + (rows.begin * g.W + cols.begin) * kLanes);
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw)
          // The masked form of max_ps with every lane on: GCC 12 warns about the
          // undefined pass-through operand of the plain intrinsic.
          acc = _mm512_mask_max_ps(acc, __mmask16(0xffff),
                                   _mm512_loadu_ps(plane + (ih * g.W + iw) * kLanes), acc);
      _mm512_storeu_ps(best, acc);
    }
  }
}

/// The backward of one nChw16c plane (blockedWindowMax on one register per tap), into
/// `out`, through a GradRowRing. With `reluGrad` a window's gradient passes only where
/// its maximum is > 0: the ReLU before the pooling, folded in.
__attribute__((target("avx512f"))) void blockedGradAvx512(const Pool2DGeometry &g,
                                                          const float *plane, const float *grad,
                                                          float *out, bool reluGrad) {
  constexpr int64_t kLanes = 16;
  GradRowRing ring(g, out);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    ring.flushUpTo(rows.begin); // later windows start at or below this one's first row
    if (rows.begin >= rows.end)
      continue; // empty windows pass no gradient
    ring.enterUpTo(rows.end);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      if (cols.begin >= cols.end)
        continue;
      int32_t pixel = int32_t(rows.begin * g.W + cols.begin);
      __m512 best = _mm512_loadu_ps(plane + pixel * kLanes);
      __m512i where = _mm512_set1_epi32(pixel);
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = ih == rows.begin ? cols.begin + 1 : cols.begin; iw < cols.end; ++iw) {
          pixel = int32_t(ih * g.W + iw);
          const __m512 v = _mm512_loadu_ps(plane + pixel * kLanes);
          const __mmask16 greater = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
          best = _mm512_mask_mov_ps(best, greater, v);
          where = _mm512_mask_mov_epi32(where, greater, _mm512_set1_epi32(pixel));
        }
      const __mmask16 passes =
          reluGrad ? _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ) : __mmask16(0xffff);
      const __m512 dy = _mm512_maskz_loadu_ps(passes, grad + (oh * g.OW + ow) * kLanes);
      // Each tap adds dy in the lanes whose maximum it holds: 16 adds in cache, cheaper
      // than a gather and a scatter of the 16 lanes.
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
          const __mmask16 here =
              _mm512_cmpeq_epi32_mask(where, _mm512_set1_epi32(int32_t(ih * g.W + iw)));
          float *d = ring.at(ih, iw);
          _mm512_storeu_ps(d, _mm512_mask_add_ps(_mm512_loadu_ps(d), here, _mm512_loadu_ps(d), dy));
        }
    }
  }
}
#endif

/// Forward (grad null: out is y's plane) or backward (out is dx's plane, which it zeroes,
/// grad is dy's plane, and `reluGrad` folds in the ReLU before) of one blocked plane.
template <int64_t Lanes>
void blockedPlane(const Pool2DGeometry &g, const float *plane, const float *grad, float *out,
                  bool reluGrad) {
#if DLC_X86_KERNELS
  if (Lanes == 16 && haveAvx512())
    return grad ? blockedGradAvx512(g, plane, grad, out, reluGrad)
                : blockedValuesAvx512(g, plane, out);
  if (!grad && haveAvx2())
    return blockedValuesAvx2<Lanes>(g, plane, out);
#endif
  if (!grad)
    return blockedValuesLoop<Lanes>(g, plane, out);
  float best[Lanes] = {};
  int32_t where[Lanes] = {};
  RowsZeroedOnDemand<Lanes> zeroed(g, out);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const Span rows = rowSpan(g, oh);
    zeroed.upTo(rows.end);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      const Span cols = columnSpan(g, ow);
      const int64_t o = (oh * g.OW + ow) * Lanes;
      if (rows.begin >= rows.end || cols.begin >= cols.end)
        continue; // an empty window passes no gradient
      blockedWindowMax<Lanes>(g, plane, rows, cols, best, where);
      for (int64_t c = 0; c < Lanes; ++c)
        if (!reluGrad || best[c] > 0.0f)
          out[where[c] * Lanes + c] += grad[o + c];
    }
  }
}


template <int64_t Lanes> void blockedForward(const Pool2DGeometry &g, const float *x, float *y) {
  forEachBlockedPlane<Lanes>(g, [&](int64_t p) {
    blockedPlane<Lanes>(g, x + p * g.H * g.W * Lanes, nullptr, y + p * g.OH * g.OW * Lanes,
                        false);
  });
}

template <int64_t Lanes>
void blockedBackward(const Pool2DGeometry &g, const float *x, const float *dy, float *dx,
                     bool reluGrad) {
  forEachBlockedPlane<Lanes>(g, [&](int64_t p) {
    blockedPlane<Lanes>(g, x + p * g.H * g.W * Lanes, dy + p * g.OH * g.OW * Lanes,
                        dx + p * g.H * g.W * Lanes, reluGrad);
  });
}

} // namespace

bool max_pool2d_supported(const Pool2DGeometry &g) { return planeFitsInt32(g); }

bool use_portable_code(bool portable) {
  const bool before = portableOnly;
  portableOnly = portable;
  return before;
}

void max_pool2d_forward(const Pool2DGeometry &g, const float *x, float *y) {
  if (g.layout == Layout::nChw16c)
    return blockedForward<channel_block(Layout::nChw16c)>(g, x, y);
  if (g.layout == Layout::nChw8c)
    return blockedForward<channel_block(Layout::nChw8c)>(g, x, y);
  const InteriorColumns interior = interiorColumns(g);
  forEachPlane(g, [&](int64_t nc, float *best, int32_t *where) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      rowMaxima(g, interior, plane, oh, best, where, /*valuesOnly=*/true);
      float *out = y + (nc * g.OH + oh) * g.OW;
      for (int64_t ow = 0; ow < g.OW; ++ow)
        out[ow] = where[ow] < 0 ? 0.0f : best[ow];
    }
  });
}

void max_pool_windows::plainIndexedForward(const Pool2DGeometry &g, const float *x, float *y,
                                           uint8_t *indices) {
  const InteriorColumns interior = interiorColumns(g);
  forEachPlane(g, [&](int64_t nc, float *best, int32_t *where) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      rowMaxima(g, interior, plane, oh, best, where);
      const int64_t o = (nc * g.OH + oh) * g.OW;
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        if (where[ow] < 0) {
          y[o + ow] = 0.0f;
          indices[o + ow] = pool_index::kEmpty;
          continue;
        }
        y[o + ow] = best[ow];
        const int32_t ih = where[ow] / int32_t(g.W); // 32-bit: a faster division
        const int64_t kh = ih - (oh * g.strideH - g.padH),
                      kw = where[ow] - ih * g.W - (ow * g.strideW - g.padW);
        indices[o + ow] = uint8_t(kh * g.kernelW + kw) |
                          (best[ow] > 0.0f ? uint8_t(0) : pool_index::kNotPositive);
      }
    }
  });
}

void max_pool2d_backward(const Pool2DGeometry &g, const float *x, const float *dy, float *dx,
                         bool reluGrad) {
  if (g.layout == Layout::nChw16c)
    return blockedBackward<channel_block(Layout::nChw16c)>(g, x, dy, dx, reluGrad);
  if (g.layout == Layout::nChw8c)
    return blockedBackward<channel_block(Layout::nChw8c)>(g, x, dy, dx, reluGrad);
  const InteriorColumns interior = interiorColumns(g);
  forEachPlane(g, [&](int64_t nc, float *best, int32_t *where) {
    const float *plane = x + nc * g.H * g.W;
    float *gradPlane = dx + nc * g.H * g.W;
    std::memset(gradPlane, 0, sizeof(float) * size_t(g.H * g.W));
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      rowMaxima(g, interior, plane, oh, best, where);
      const float *grad = dy + (nc * g.OH + oh) * g.OW;
      for (int64_t ow = 0; ow < g.OW; ++ow)
        if (where[ow] >= 0 && (!reluGrad || best[ow] > 0.0f))
          gradPlane[where[ow]] += grad[ow];
    }
  });
}

} // namespace dlc::cpu_kernels::direct
