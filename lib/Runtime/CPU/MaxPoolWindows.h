//===- MaxPoolWindows.h - what the max-pooling kernels share ------------------===//
//
// The windows of an output row or column, the run-time choice of the AVX-512 code, and
// the ring of dx rows the blocked backward kernels add into: shared by MaxPoolKernels.cpp
// (dx from x) and MaxPoolIndexedKernels.cpp (dx from the forward's indices).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_MAXPOOLWINDOWS_H
#define DLC_LIB_RUNTIME_CPU_MAXPOOLWINDOWS_H

#include "CpuFeatures.h"
#include "ParallelFor.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dlc::cpu_kernels::direct::max_pool_windows {

/// Whether the AVX-512 (nChw16c) or AVX2 window loops run (CpuFeatures.h).
inline bool haveAvx512() { return cpu_has(CpuFeature::avx512f); }
inline bool haveAvx2() { return cpu_has(CpuFeature::avx2); }

/// A half-open range of input rows or columns, [begin, end).
struct Span {
  int64_t begin, end;
};

/// The input rows of output row `oh`'s windows.
inline Span rowSpan(const Pool2DGeometry &g, int64_t oh) {
  const int64_t first = oh * g.strideH - g.padH;
  return {std::max<int64_t>(first, 0), std::min(first + g.kernelH, g.H)};
}

/// The input columns of output column `ow`'s windows.
inline Span columnSpan(const Pool2DGeometry &g, int64_t ow) {
  const int64_t first = ow * g.strideW - g.padW;
  return {std::max<int64_t>(first, 0), std::min(first + g.kernelW, g.W)};
}

/// Asks the cache for the input the next output row's windows add below these ones
/// (rows rows.end ... rows.end + strideH - 1), `pixels` pixels of Lanes floats from
/// column cols.begin: a blocked forward then streams its input from memory while it
/// works on the rows it has (the LeafNetwork's first two poolings at batch 32, nChw8c on
/// an AVX2 EPYC, alternating with and without, three times each: indexed forward
/// 4.4-4.7 -> 3.5-3.8 ms and 2.1-2.2 -> 1.6 ms, values only 3.7-4.1 -> 3.2-3.3 and
/// 2.0-2.2 -> 1.5-1.6 ms; the third, whose input fits in the cache, is unchanged).
template <int64_t Lanes>
inline void prefetchRowsBelow(const Pool2DGeometry &g, const float *plane, Span rows, Span cols,
                              int64_t pixels) {
#if DLC_X86_KERNELS
  const int64_t bytes = std::min(pixels, g.W - cols.begin) * Lanes * int64_t(sizeof(float));
  for (int64_t r = rows.end; r < std::min(rows.end + g.strideH, g.H); ++r) {
    const char *row = reinterpret_cast<const char *>(plane + (r * g.W + cols.begin) * Lanes);
    for (int64_t b = 0; b < bytes; b += 64)
      _mm_prefetch(row + b, _MM_HINT_T0);
  }
#endif
}

/// Zeroes a dx plane (Lanes channels per pixel) row by row, just before the windows of
/// an output row first add to them: the rows a window scatters into are then in cache,
/// and dx is written once instead of cleared whole (a blocked plane of the LeafNetwork's
/// first block is 1 MiB, more than the cache the scatter works in) and written again.
template <int64_t Lanes> class RowsZeroedOnDemand {
public:
  RowsZeroedOnDemand(const Pool2DGeometry &g, float *plane) : g_(g), plane_(plane) {}
  ~RowsZeroedOnDemand() { upTo(g_.H); } // rows no window reads
  void upTo(int64_t row) {
    if (row <= zeroed_)
      return;
    std::memset(plane_ + zeroed_ * g_.W * Lanes, 0, sizeof(float) * size_t((row - zeroed_) * g_.W * Lanes));
    zeroed_ = row;
  }

private:
  const Pool2DGeometry &g_;
  float *plane_;
  int64_t zeroed_ = 0;
};

#if DLC_X86_KERNELS
/// The rows of a blocked (nChw16c) dx plane that windows still add to, in a ring of
/// cache-resident rows: a row enters zeroed and leaves, once no later window reaches it,
/// with streaming stores, so dx is written once, without first being read into the cache
/// (the read-for-ownership of a plain store) and with no pass to clear it.
class GradRowRing {
public:
  GradRowRing(const Pool2DGeometry &g, float *plane)
      : g_(g), plane_(plane), rows_(g.kernelH + g.strideH),
        rowFloats_(g.W * 16), aligned_(reinterpret_cast<uintptr_t>(plane) % 64 == 0) {
    thread_local std::vector<float> ring;
    ring.resize(size_t(rows_ * rowFloats_));
    ring_ = ring.data();
  }
  ~GradRowRing() { flushUpTo(g_.H); }

  /// The ring's copy of dx at (row, column): rows entered and not yet flushed only.
  float *at(int64_t row, int64_t column) {
    return ring_ + (row % rows_) * rowFloats_ + column * 16;
  }
  /// Makes rows up to `row` (exclusive) present, zeroed.
  __attribute__((target("avx512f"))) void enterUpTo(int64_t row) {
    for (; entered_ < row; ++entered_)
      std::memset(at(entered_, 0), 0, sizeof(float) * size_t(rowFloats_));
  }
  /// Writes rows up to `row` (exclusive) to the plane: no window adds to them any more.
  __attribute__((target("avx512f"))) void flushUpTo(int64_t row) {
    enterUpTo(row); // rows no window covers are zeros
    for (; flushed_ < row; ++flushed_) {
      const float *from = at(flushed_, 0);
      float *to = plane_ + flushed_ * rowFloats_;
      if (!aligned_) {
        std::memcpy(to, from, sizeof(float) * size_t(rowFloats_));
        continue;
      }
      for (int64_t i = 0; i < rowFloats_; i += 16)
        _mm512_stream_ps(to + i, _mm512_loadu_ps(from + i));
    }
    _mm_sfence();
  }

private:
  const Pool2DGeometry &g_;
  float *plane_;
  int64_t rows_, rowFloats_;
  bool aligned_;
  float *ring_;
  int64_t entered_ = 0, flushed_ = 0;
};
#endif

/// Runs `perPlane(plane index)` over the N * C/Lanes planes of a blocked tensor (Lanes 1:
/// the N * C planes of a plain one), in parallel.
template <int64_t Lanes, typename PerPlane>
void forEachBlockedPlane(const Pool2DGeometry &g, PerPlane &&perPlane) {
  const int64_t planes = g.N * (g.C / Lanes);
  // Two threads pay from 8192 inputs (32 KB) on: a batch-1 Fashion-MNIST prediction's
  // 32x28x28 and 64x14x14 poolings (2 and 4 planes) ran faster split on 2 cores.
  parallel_for_if(planes > 1 && g.N * g.C * g.H * g.W >= (int64_t(1) << 13), planes, perPlane);
}

/// The indexed forward on a plain NCHW tensor (MaxPoolKernels.cpp: its first-maximum
/// search over rows of windows).
void plainIndexedForward(const Pool2DGeometry &g, const float *x, float *y, uint8_t *indices);

} // namespace dlc::cpu_kernels::direct::max_pool_windows

#endif // DLC_LIB_RUNTIME_CPU_MAXPOOLWINDOWS_H
