//===- PooledFilterGradient.cpp - a first layer's weight gradient from pooled outputs ===//
//
// The sum of PooledFilterGradient.h, 16 output channels at a time (one nChw16c vector of
// dy and of codes per pooled output). The 16 lanes' maxima sit at different taps of the
// window, so each lane needs x at its own place: for each input channel and window row
// kh, the x under the window's rows (up to 4) and columns (up to 8) is loaded into two
// registers as a 32-entry table, row r at entries 8r .. 8r + 7, and one two-register
// permute per kw picks every lane's value, at 8 i + j + kw for the lane's tap (i, j).
// One masked multiply-add per (c, kh, kw) then adds dy times that value where the code
// passes (a positive maximum under `relu`; any maximum otherwise; never an empty
// window). The x of a pooled row's windows is a few rows of one plane, in the core's
// cache, and neither the activation's gradient nor its memory traffic exists.
//
// The (image, pooled row) pairs are cut into bands of 8, which the threads split; each
// band is summed for every block of 16 output channels and group of input channels into
// partial sums of its own, added in a fixed order at the end, so results do not depend
// on timing.
//
// LeafNetwork's first block (3 -> 32 channels, 2x2 window, 4x4 pooling windows of stride
// 2 over 127x127, ReLU), one AVX-512 EPYC with 2 threads: see docs/design/runtime.md.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/CPU/PooledFilterGradient.h"

#include "CpuFeatures.h"
#include "ParallelFor.h"
#include "PooledFilterGradientBlocked.h"

#include "dlc/Core/Error.h"

#include <algorithm>
#include <string>
#include <vector>


namespace dlc::cpu_kernels::pooled_filter_gradient {

namespace {

constexpr int64_t kLanes = 16;     // output channels per vector (nChw16c)
constexpr int64_t kTableRows = 4;  // window rows one table holds
constexpr int64_t kTableWidth = 8; // columns per table row
constexpr int64_t kBandRows = 8;   // pooled rows a task sums

/// The sizes the kernel loops over, and the table index of each tap.
struct Problem {
  Conv2DGeometry conv;
  Pool2DGeometry pool;
  int64_t outputBlocks;   // O / 16
  int64_t columns;        // input columns a window's taps and the conv's window span
  int32_t tableIndex[32]; // tap (i, j) of the pooling window -> 8 i + j
};


/// Input channels summed in one pass: as many as keep C x KH x KW accumulators within
/// 12 of the 32 vector registers.
template <int KH, int KW> constexpr int64_t channelGroup() { return std::max(1, 12 / (KH * KW)); }

#if DLC_X86_KERNELS

/// The input columns [colBase, colBase + 8) of a table row that exist and are needed,
/// as a lane mask.
__attribute__((always_inline)) inline __mmask16 columnMask(const Problem &p, int64_t colBase) {
  const int64_t lo = std::max<int64_t>(0, -colBase),
                hi = std::min<int64_t>(p.columns, p.conv.W - colBase);
  if (hi <= lo)
    return 0;
  return __mmask16(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/// One task's sums: output channel block `ob`, input channels [c0, c0 + group), pooled
/// rows [rowBegin, rowEnd) of the (image, pooled row) pairs. `sums` gets
/// group x KH x KW vectors of dw, then db's vector.
template <int KH, int KW>
__attribute__((target("avx512f"))) void
sumTask(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
        int64_t ob, int64_t c0, int64_t rowBegin, int64_t rowEnd, float *sums) {
  constexpr int64_t CG = channelGroup<KH, KW>();
  const Conv2DGeometry &cv = p.conv;
  const Pool2DGeometry &pl = p.pool;
  const int64_t group = std::min(CG, cv.C - c0);
  __m512 acc[CG][KH][KW];
  for (int64_t c = 0; c < CG; ++c)
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw)
        acc[c][kh][kw] = _mm512_setzero_ps();
  __m512 accBias = _mm512_setzero_ps();
  const __m512i lutLo = _mm512_loadu_si512(p.tableIndex),
                lutHi = _mm512_loadu_si512(p.tableIndex + 16);
  const __m512i notPositive = _mm512_set1_epi32(pool_index::kNotPositive),
                empty = _mm512_set1_epi32(pool_index::kEmpty);
  const int64_t planeSize = cv.H * cv.W;
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const int64_t n = row / pl.OH, ph = row % pl.OH;
    const int64_t at = ((n * p.outputBlocks + ob) * pl.OH + ph) * pl.OW * kLanes;
    const uint8_t *codeRow = codes + at;
    const float *dyRow = dy + at;
    const float *image = x + n * cv.C * planeSize;
    // Which of the 4 table rows exist for each kh (input row ph * s - pads + kh + i).
    const int64_t rowBase = ph * pl.strideH - pl.padH - cv.padH;
    unsigned rowsThere[KH];
    for (int kh = 0; kh < KH; ++kh) {
      rowsThere[kh] = 0;
      for (int64_t i = 0; i < std::min(pl.kernelH, kTableRows); ++i) {
        const int64_t r = rowBase + kh + i;
        if (r >= 0 && r < cv.H)
          rowsThere[kh] |= 1u << i;
      }
    }
    for (int64_t pw = 0; pw < pl.OW; ++pw) {
      // (The zero-masked form: GCC 12's unmasked one warns of its undefined source.)
      const __m512i code = _mm512_maskz_cvtepu8_epi32(
          __mmask16(0xffff),
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(codeRow + pw * kLanes)));
      const __mmask16 pass =
          relu ? _mm512_testn_epi32_mask(code, notPositive) : _mm512_cmpneq_epi32_mask(code, empty);
      if (!pass)
        continue;
      const __m512 g = _mm512_loadu_ps(dyRow + pw * kLanes);
      accBias = _mm512_mask_add_ps(accBias, pass, accBias, g);
      // Taps are below 32 (applies()); a lane that does not pass picks anything.
      const __m512i base = _mm512_permutex2var_epi32(lutLo, code, lutHi);
      const int64_t colBase = pw * pl.strideW - pl.padW - cv.padW;
      const __mmask16 low = columnMask(p, colBase), high = __mmask16(low << 8);
      for (int64_t c = 0; c < CG; ++c) {
        if (c >= group)
          break;
        const float *plane = image + (c0 + c) * planeSize + colBase;
        for (int kh = 0; kh < KH; ++kh) {
          __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
          const float *r0 = plane + (rowBase + kh) * cv.W;
          // Row i of the table at entries 8i .. 8i + 7: rows 0 and 1 in `lo`, 2 and 3 in
          // `hi`; an odd row loads into the upper 8 lanes from 8 floats before it.
          if (rowsThere[kh] & 1u)
            lo = _mm512_mask_loadu_ps(lo, low, r0);
          if (rowsThere[kh] & 2u)
            lo = _mm512_mask_loadu_ps(lo, high, r0 + cv.W - kTableWidth);
          if (rowsThere[kh] & 4u)
            hi = _mm512_mask_loadu_ps(hi, low, r0 + 2 * cv.W);
          if (rowsThere[kh] & 8u)
            hi = _mm512_mask_loadu_ps(hi, high, r0 + 3 * cv.W - kTableWidth);
          for (int kw = 0; kw < KW; ++kw) {
            const __m512i index = _mm512_add_epi32(base, _mm512_set1_epi32(kw));
            const __m512 v = _mm512_permutex2var_ps(lo, index, hi);
            acc[c][kh][kw] = _mm512_mask3_fmadd_ps(g, v, acc[c][kh][kw], pass);
          }
        }
      }
    }
  }
  for (int64_t c = 0; c < CG; ++c)
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw)
        _mm512_storeu_ps(sums + ((c * KH + kh) * KW + kw) * kLanes, acc[c][kh][kw]);
  _mm512_storeu_ps(sums + CG * KH * KW * kLanes, accBias);
}

template <int KH, int KW>
void run(const Problem &p, const uint8_t *codes, const float *dy, const float *x, bool relu,
         float *dw, float *db) {
  constexpr int64_t CG = channelGroup<KH, KW>();
  const Conv2DGeometry &cv = p.conv;
  const int64_t groups = (cv.C + CG - 1) / CG, rows = cv.N * p.pool.OH;
  // Bands of kBandRows pooled rows (or one per thread, if fewer), each summed for every
  // block and group before the next: the band's x, a few tens of KB, comes from memory
  // once and stays in the core's cache for the other blocks.
  const int64_t parts = std::max<int64_t>(
      1, std::min(rows, std::max(team_size(), (rows + kBandRows - 1) / kBandRows)));
  const int64_t perTask = CG * KH * KW * kLanes + kLanes;
  const int64_t tasks = parts * p.outputBlocks * groups;
  std::vector<float> sums(size_t(tasks * perTask));
  // Band-major: a static split gives each thread consecutive bands, each for every
  // block and group.
  parallel_for_if(tasks > 1, tasks, [&](int64_t task) {
    const int64_t part = task / (p.outputBlocks * groups), rest = task % (p.outputBlocks * groups);
    const int64_t ob = rest / groups, group = rest % groups;
    sumTask<KH, KW>(p, codes, dy, x, relu, ob, group * CG, rows * part / parts,
                    rows * (part + 1) / parts, sums.data() + task * perTask);
  });
  const int64_t window = cv.C * KH * KW;
  for (int64_t ob = 0; ob < p.outputBlocks; ++ob)
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t c0 = group * CG, count = std::min(CG, cv.C - c0);
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        float *out = dw + (ob * kLanes + lane) * window;
        for (int64_t e = 0; e < count * KH * KW; ++e) {
          float total = 0.0f;
          for (int64_t part = 0; part < parts; ++part)
            total += sums[size_t(((part * p.outputBlocks + ob) * groups + group) * perTask +
                                 e * kLanes + lane)];
          out[c0 * KH * KW + e] = total;
        }
        if (db && group == 0) {
          float total = 0.0f;
          for (int64_t part = 0; part < parts; ++part)
            total += sums[size_t(((part * p.outputBlocks + ob) * groups) * perTask +
                                 CG * KH * KW * kLanes + lane)];
          db[ob * kLanes + lane] = total;
        }
      }
    }
}

#endif // DLC_X86_KERNELS

bool windowHandled(const Conv2DGeometry &conv) {
  return (conv.KH == 2 && conv.KW == 2) || (conv.KH == 3 && conv.KW == 3);
}

/// The table kernel above: x plain (a network's input), AVX-512.
bool tableApplies(const Conv2DGeometry &conv, const Pool2DGeometry &pool) {
  return DLC_X86_KERNELS && cpu_has(CpuFeature::avx512f) && windowHandled(conv) &&
         conv.strideH == 1 && conv.strideW == 1 && conv.dilationH == 1 && conv.dilationW == 1 &&
         conv.groups == 1 && conv.inputLayout == Layout::plain &&
         conv.outputLayout == Layout::nChw16c && pool.layout == Layout::nChw16c &&
         conv.O % kLanes == 0 && pool.N == conv.N && pool.C == conv.O && pool.H == conv.OH &&
         pool.W == conv.OW && pool.kernelH >= 1 && pool.kernelH <= kTableRows &&
         pool.kernelW >= 1 && pool.kernelW + conv.KW - 1 <= kTableWidth;
}

} // namespace

bool applies(const Conv2DGeometry &conv, const Pool2DGeometry &pool) {
  return tableApplies(conv, pool) || blocked::applies(conv, pool);
}

void backward(const Conv2DGeometry &conv, const Pool2DGeometry &pool, const uint8_t *codes,
              const float *dy, const float *x, bool relu, float *dw, float *db) {
  if (blocked::applies(conv, pool))
    return blocked::backward(conv, pool, codes, dy, x, relu, dw, db);
  if (!tableApplies(conv, pool))
    throw Error("conv2d_backward_filter through max_pool2d's codes: the kernel does not "
                "apply to a " +
                std::to_string(conv.KH) + "x" + std::to_string(conv.KW) + " window of " +
                std::to_string(conv.C) + " -> " + std::to_string(conv.O) + " channels pooled by " +
                std::to_string(pool.kernelH) + "x" + std::to_string(pool.kernelW) +
                " windows on this CPU (expected what "
                "pooled_filter_gradient::applies accepts)");
#if DLC_X86_KERNELS
  Problem p{conv, pool, conv.O / kLanes, pool.kernelW + conv.KW - 1, {}};
  for (int64_t tap = 0; tap < 32; ++tap)
    p.tableIndex[tap] = int32_t(tap / pool.kernelW * kTableWidth + tap % pool.kernelW);
  if (conv.N == 0 || pool.OH == 0 || pool.OW == 0) {
    std::fill_n(dw, conv.O * conv.C * conv.KH * conv.KW, 0.0f);
    if (db)
      std::fill_n(db, conv.O, 0.0f);
    return;
  }
  if (conv.KH == 2)
    run<2, 2>(p, codes, dy, x, relu, dw, db);
  else
    run<3, 3>(p, codes, dy, x, relu, dw, db);
#else
  (void)codes, (void)dy, (void)x, (void)relu, (void)dw, (void)db;
#endif
}

} // namespace dlc::cpu_kernels::pooled_filter_gradient
