//===- AttentionGeometry.h - what dlc.attention's kernels read, on every device ===//
//
// The sizes of one attention (batch = the product of the leading dimensions, Lq, Lk, D,
// Dv), where its mask is for a score (b, i, j), whether a key is out of a query's reach
// (causal), and which weights its dropout drops (DropoutMask.h's hash of the seed and
// the score's index (b * Lq + i) * Lk + j). The CPU kernels and the GPU threads decide
// all of it with these functions, so they mask and drop the same scores.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_KERNELMATH_ATTENTIONGEOMETRY_H
#define DLC_LIB_RUNTIME_KERNELMATH_ATTENTIONGEOMETRY_H

#include "DropoutMask.h"
#include "dlc/Core/HostDevice.h"
#include "dlc/Core/Error.h"
#include "dlc/Core/KernelGeometry.h"
#include "dlc/Core/ShapeRules.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace dlc::attention {

constexpr int kMaxBatchRank = 6;

struct Geometry {
  int64_t batch = 1, lq = 0, lk = 0, d = 0, dv = 0;
  float scale = 1.f;
  bool causal = false;
  // The mask, when there is one: its element for score (b, i, j) is at
  // maskBase(b) + i * maskQueryStride + j * maskKeyStride.
  bool hasMask = false, booleanMask = false;
  int batchRank = 0;
  int64_t batchShape[kMaxBatchRank] = {}, maskBatchStride[kMaxBatchRank] = {};
  int64_t maskQueryStride = 0, maskKeyStride = 0;
  // Dropout: kept weights are scaled by keepScale.
  bool dropout = false;
  uint64_t seed = 0, threshold = 0;
  float keepScale = 1.f;

  DLC_HOST_DEVICE int64_t maskBase(int64_t b) const {
    int64_t offset = 0;
    for (int d = batchRank - 1; d >= 0; --d) {
      offset += (b % batchShape[d]) * maskBatchStride[d];
      b /= batchShape[d];
    }
    return offset;
  }
  /// Whether key j is beyond query i's reach for the causal mask.
  DLC_HOST_DEVICE bool hidden(int64_t i, int64_t j) const { return causal && j > i; }
  /// The factor a weight (b, i, j) gets from dropout: 0 or keepScale.
  DLC_HOST_DEVICE float dropFactor(int64_t b, int64_t i, int64_t j) const {
    if (!dropout)
      return 1.f;
    uint64_t index = uint64_t((b * lq + i) * lk + j);
    return dropout_mask::keep(seed, index, threshold) ? keepScale : 0.f;
  }
};

/// The geometry of an attention of query (..., Lq, D), key (..., Lk, D), value
/// (..., Lk, Dv) and an optional mask of `maskShape` (boolean or additive), with its
/// attributes. Throws ShapeError for more leading dimensions than kMaxBatchRank.
inline Geometry geometry(const shape_rules::Shape &query, const shape_rules::Shape &key,
                         const shape_rules::Shape &value, const shape_rules::Shape *maskShape,
                         bool booleanMask, double scale, bool causal, double dropout,
                         int64_t seed) {
  Geometry g;
  const size_t rank = query.size();
  g.lq = query[rank - 2];
  g.d = query[rank - 1];
  g.lk = key[rank - 2];
  g.dv = value[rank - 1];
  g.batchRank = int(rank - 2);
  if (g.batchRank > kMaxBatchRank)
    throw ShapeError("attention: at most " + std::to_string(kMaxBatchRank) +
                     " leading dimensions, got " + shape_rules::str(query));
  for (int d = 0; d < g.batchRank; ++d) {
    g.batchShape[d] = query[size_t(d)];
    g.batch *= query[size_t(d)];
  }
  g.scale = float(scale);
  g.causal = causal;
  if (maskShape) {
    shape_rules::Shape scores(query.begin(), query.end() - 1);
    scores.push_back(g.lk);
    std::vector<int64_t> strides = kernels::broadcast_strides(*maskShape, scores);
    g.hasMask = true;
    g.booleanMask = booleanMask;
    for (int d = 0; d < g.batchRank; ++d)
      g.maskBatchStride[d] = strides[size_t(d)];
    g.maskQueryStride = strides[rank - 2];
    g.maskKeyStride = strides[rank - 1];
  }
  if (dropout > 0) {
    g.dropout = true;
    g.seed = uint64_t(seed);
    g.threshold = dropout_mask::threshold(1.0 - dropout);
    g.keepScale = float(1.0 / (1.0 - dropout));
  }
  return g;
}

} // namespace dlc::attention

#endif // DLC_LIB_RUNTIME_KERNELMATH_ATTENTIONGEOMETRY_H
