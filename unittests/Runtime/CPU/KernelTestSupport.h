//===- KernelTestSupport.h - random tensors, closeness checks and geometries for kernel tests ===//
#ifndef DLC_UNITTESTS_RUNTIME_CPU_KERNELTESTSUPPORT_H
#define DLC_UNITTESTS_RUNTIME_CPU_KERNELTESTSUPPORT_H

#include "dlc/Runtime/CPU/NNKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <vector>

namespace dlc::cpu_kernels::test {

/// An (N, C, H, W) tensor moved from layout `from` to layout `to` by the runtime's
/// reorder (itself tested against the index arithmetic in BlockedLayoutTest.cpp).
inline std::vector<float> inLayout(const std::vector<float> &t, int64_t N, int64_t C, int64_t H,
                                   int64_t W, Layout from, Layout to) {
  if (from == to)
    return t;
  std::vector<float> out(t.size(), -9.0f);
  onednn::reorder_layout(N, C, H, W, from, to, t.data(), out.data());
  return out;
}

/// n floats uniform in [lo, hi) from a seeded generator, so every run sees the same data.
/// Random rather than constant data: a kernel that confuses two axes or drops a term
/// still matches on constant inputs.
inline std::vector<float> randomTensor(int64_t n, uint32_t seed, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  std::vector<float> values(n);
  for (float &v : values)
    v = uniform(generator);
  return values;
}

/// Passes when max|got - want| <= tolerance * max(1, max|want|): relative to the
/// tensor's scale, absolute near zero, so entries that cancel to ~0 don't demand
/// impossible relative accuracy.
inline ::testing::AssertionResult allClose(const std::vector<float> &got,
                                           const std::vector<float> &want, double tolerance) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << got.size() << " vs " << want.size();
  double maxDiff = 0.0, maxWant = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(double(got[i]) - double(want[i]));
    // A NaN must fail, and NaN compares false, so test for it explicitly.
    if (std::isnan(diff))
      return ::testing::AssertionFailure() << "NaN at " << i;
    if (diff > maxDiff) {
      maxDiff = diff;
      worst = i;
    }
    maxWant = std::max(maxWant, std::fabs(double(want[i])));
  }
  const double bound = tolerance * std::max(1.0, maxWant);
  if (maxDiff <= bound)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "max |got - want| = " << maxDiff << " > " << bound << " at element " << worst
         << " (got " << got[worst] << ", want " << want[worst] << ", max |want| " << maxWant
         << ")";
}

/// A convolution geometry with OH/OW by the dialect's rule.
inline Conv2DGeometry convGeometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                                   int64_t KH, int64_t KW, int64_t stride = 1,
                                   int64_t pad = 0, int64_t dilation = 1, int64_t groups = 1) {
  Conv2DGeometry g;
  g.N = N, g.C = C, g.H = H, g.W = W, g.O = O, g.KH = KH, g.KW = KW;
  g.strideH = g.strideW = stride;
  g.padH = g.padW = pad;
  g.dilationH = g.dilationW = dilation;
  g.groups = groups;
  g.OH = (H + 2 * pad - dilation * (KH - 1) - 1) / stride + 1;
  g.OW = (W + 2 * pad - dilation * (KW - 1) - 1) / stride + 1;
  return g;
}

/// A pooling geometry with OH/OW by the dialect's rule (floor, or ceil_mode).
inline Pool2DGeometry poolGeometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kernel,
                                   int64_t stride, int64_t pad, bool ceilMode) {
  Pool2DGeometry g;
  g.N = N, g.C = C, g.H = H, g.W = W;
  g.kernelH = g.kernelW = kernel;
  g.strideH = g.strideW = stride;
  g.padH = g.padW = pad;
  auto outSize = [&](int64_t in) {
    const int64_t span = in + 2 * pad - kernel;
    return (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  };
  g.OH = outSize(H);
  g.OW = outSize(W);
  return g;
}

inline int64_t inputSize(const Conv2DGeometry &g) { return g.N * g.C * g.H * g.W; }
inline int64_t weightSize(const Conv2DGeometry &g) {
  return g.O * (g.C / g.groups) * g.KH * g.KW;
}
inline int64_t outputSize(const Conv2DGeometry &g) { return g.N * g.O * g.OH * g.OW; }
inline int64_t inputSize(const Pool2DGeometry &g) { return g.N * g.C * g.H * g.W; }
inline int64_t outputSize(const Pool2DGeometry &g) { return g.N * g.C * g.OH * g.OW; }

} // namespace dlc::cpu_kernels::test

#endif // DLC_UNITTESTS_RUNTIME_CPU_KERNELTESTSUPPORT_H
