//===- GpuKernelMathTest.cpp - the GPU kernels' index math, run on the CPU ---===//
//
// The per-element functions the pooling kernels run (PoolWindows.h) and the walk the
// reduction blocks take (ReducePlan.h) compile for the host too. Here they run over every
// element on the CPU: pooling against the reference kernels (bit for bit, as the GPU
// must be), and the reduction walk for exact coverage (each element of each output's
// reduction visited once, by the block of that output). The GPU tests check the same
// kernels on a GPU; these run everywhere, CI included.
//
//===----------------------------------------------------------------------===//
#include "PoolWindows.h"
#include "ReducePlan.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dlc::cuda;
using dlc::cpu_kernels::Pool2DGeometry;
namespace ref = dlc::cpu_kernels::ref;

namespace {

std::vector<float> randomValues(size_t n, uint32_t seed, bool smallIntegers) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::uniform_int_distribution<int> integer(0, 3); // many equal maxima per window
  std::vector<float> values(n);
  for (float &v : values)
    v = smallIntegers ? float(integer(generator)) : uniform(generator);
  return values;
}

/// Output size along one axis: floor, or ceil (MXNet's 'full') without dropping a last
/// window that starts past the input, so that ceil cases include empty windows.
int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil) {
  int64_t span = in + 2 * pad - kernel;
  return (ceil ? (span + stride - 1) / stride : span / stride) + 1;
}

struct PoolCase {
  int64_t N, C, H, W, kernel, stride, pad;
  bool ceil;
};

std::string describe(const PoolCase &c) {
  return std::to_string(c.H) + "x" + std::to_string(c.W) + " k" + std::to_string(c.kernel) +
         " s" + std::to_string(c.stride) + " p" + std::to_string(c.pad) +
         (c.ceil ? " ceil" : " floor");
}

Pool2DGeometry geometry(const PoolCase &c) {
  Pool2DGeometry g{c.N,
                   c.C,
                   c.H,
                   c.W,
                   pooledSize(c.H, c.kernel, c.stride, c.pad, c.ceil),
                   pooledSize(c.W, c.kernel, c.stride, c.pad, c.ceil),
                   c.kernel,
                   c.kernel};
  g.strideH = g.strideW = c.stride;
  g.padH = g.padW = c.pad;
  return g;
}

const std::vector<PoolCase> kPoolCases = {
    {2, 3, 13, 11, 4, 2, 0, false}, // the LeafNetwork's 4x4 windows, stride 2 (overlapping)
    {2, 3, 13, 11, 4, 2, 1, true},  // padded, ceil mode
    {1, 2, 8, 7, 2, 2, 0, false},   // tiling windows
    {1, 2, 9, 10, 3, 2, 1, true},
    {1, 2, 7, 7, 2, 3, 0, true},    // stride > kernel: gaps, and an empty last window
    {1, 1, 5, 6, 5, 1, 2, false},   // windows larger than half the input
};

void expectSameBits(const std::vector<float> &got, const std::vector<float> &want,
                    const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << ": element " << i << " is " << got[i] << ", the reference " << want[i];
}

/// Calls f(plane pointer offset of x, of y, flat output index, oh, ow) for every window,
/// as the forward kernels' threads see them.
template <typename F> void forEachWindow(const Pool2DGeometry &g, F &&f) {
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int oh = 0; oh < int(g.OH); ++oh)
      for (int ow = 0; ow < int(g.OW); ++ow)
        f(nc * g.H * g.W, nc * g.OH * g.OW, nc * g.OH * g.OW + oh * g.OW + ow, oh, ow);
}

/// Calls f(plane offset of y, flat input index, ih, iw) for every input element, as the
/// gradient kernels' threads see them.
template <typename F> void forEachInput(const Pool2DGeometry &g, F &&f) {
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int ih = 0; ih < int(g.H); ++ih)
      for (int iw = 0; iw < int(g.W); ++iw)
        f(nc * g.OH * g.OW, nc * g.H * g.W + ih * g.W + iw, ih, iw);
}

} // namespace

TEST(GpuPoolMath, MaxPoolingMatchesTheReferenceBitForBit) {
  uint32_t seed = 1;
  for (const PoolCase &c : kPoolCases)
    for (bool ties : {false, true}) {
      Pool2DGeometry g = geometry(c);
      std::string what = "max pool " + describe(c) + (ties ? " with ties" : "");
      size_t inputs = size_t(g.N * g.C * g.H * g.W), outputs = size_t(g.N * g.C * g.OH * g.OW);
      std::vector<float> x = randomValues(inputs, seed++, ties);
      std::vector<float> dy = randomValues(outputs, seed++, false);

      pool::Plane plane = pool::plane_of(g);
      std::vector<float> y(outputs), yRef(outputs);
      std::vector<int32_t> argmax(outputs);
      forEachWindow(g, [&](int64_t xPlane, int64_t, int64_t t, int oh, int ow) {
        y[size_t(t)] = pool::max_output(plane, x.data() + xPlane, oh, ow);
        argmax[size_t(t)] = pool::first_max(plane, x.data() + xPlane, oh, ow);
      });
      ref::max_pool2d_forward(g, x.data(), yRef.data());
      expectSameBits(y, yRef, what + " forward");

      std::vector<float> dx(inputs), dxRef(inputs);
      forEachInput(g, [&](int64_t yPlane, int64_t t, int ih, int iw) {
        dx[size_t(t)] =
            pool::max_gradient(plane, argmax.data() + yPlane, dy.data() + yPlane, ih, iw);
      });
      ref::max_pool2d_backward(g, x.data(), dy.data(), dxRef.data());
      expectSameBits(dx, dxRef, what + " backward");
    }
}

TEST(GpuPoolMath, AveragePoolingMatchesTheReferenceBitForBit) {
  uint32_t seed = 100;
  for (const PoolCase &c : kPoolCases)
    for (bool includePad : {true, false}) {
      Pool2DGeometry g = geometry(c);
      std::string what = "avg pool " + describe(c) + (includePad ? " incl. pad" : " excl. pad");
      size_t inputs = size_t(g.N * g.C * g.H * g.W), outputs = size_t(g.N * g.C * g.OH * g.OW);
      std::vector<float> x = randomValues(inputs, seed++, false);
      std::vector<float> dy = randomValues(outputs, seed++, false);

      pool::Plane plane = pool::plane_of(g);
      std::vector<float> y(outputs), yRef(outputs);
      forEachWindow(g, [&](int64_t xPlane, int64_t, int64_t t, int oh, int ow) {
        y[size_t(t)] = pool::avg_output(plane, includePad, x.data() + xPlane, oh, ow);
      });
      ref::avg_pool2d_forward(g, includePad, x.data(), yRef.data());
      expectSameBits(y, yRef, what + " forward");

      std::vector<float> dx(inputs), dxRef(inputs);
      forEachInput(g, [&](int64_t yPlane, int64_t t, int ih, int iw) {
        dx[size_t(t)] = pool::avg_gradient(plane, includePad, dy.data() + yPlane, ih, iw);
      });
      ref::avg_pool2d_backward(g, includePad, dy.data(), dxRef.data());
      expectSameBits(dx, dxRef, what + " backward");
    }
}

namespace {

/// The output a flat element of contiguous `shape` reduces into, by its coordinates.
int64_t outputOf(int64_t flat, const std::vector<int64_t> &shape,
                 const std::vector<bool> &reduced) {
  int64_t output = 0, scale = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    int64_t coordinate = flat % shape[size_t(d)];
    flat /= shape[size_t(d)];
    if (!reduced[size_t(d)]) {
      output += coordinate * scale;
      scale *= shape[size_t(d)];
    }
  }
  return output;
}

/// Runs every (output, part) block's threads of `plan` on the CPU and expects each
/// element visited once, by the block of its own output.
void expectExactCoverage(const std::vector<int64_t> &shape, const std::vector<bool> &reduced,
                         int64_t parts, int64_t threads) {
  ReducePlan plan = make_reduce_plan(shape, reduced);
  std::string what = "shape (";
  for (size_t d = 0; d < shape.size(); ++d)
    what += std::to_string(shape[d]) + (reduced[d] ? "r" : "") + (d + 1 < shape.size() ? "," : "");
  what += "), " + std::to_string(parts) + " parts, " + std::to_string(threads) + " threads";
  int64_t total = 1;
  for (int64_t extent : shape)
    total *= extent;
  ASSERT_EQ(plan.outputs * plan.length, total) << what;
  std::vector<int> visits(size_t(total), 0);
  for (int64_t o = 0; o < plan.outputs; ++o)
    for (int64_t p = 0; p < parts; ++p)
      for (int64_t t = 0; t < threads; ++t)
        visit_part(plan, o, p, parts, t, threads, [&](int64_t offset) {
          ASSERT_GE(offset, 0) << what;
          ASSERT_LT(offset, total) << what;
          ASSERT_EQ(outputOf(offset, shape, reduced), o) << what << ": offset " << offset;
          ++visits[size_t(offset)];
        });
  for (int64_t i = 0; i < total; ++i)
    ASSERT_EQ(visits[size_t(i)], 1) << what << ": element " << i;
}

} // namespace

TEST(GpuReduceMath, BlocksVisitEveryElementOnce) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>> cases = {
      {{3, 5, 7, 11}, {true, false, true, true}},  // a bias gradient: N, H, W of NCHW
      {{3, 5, 7, 11}, {false, true, false, true}}, // alternating kept and reduced dims
      {{3, 5, 7, 11}, {true, true, true, true}},   // everything
      {{3, 5, 7, 11}, {false, false, false, true}},
      {{3, 5, 7, 11}, {true, false, false, false}},
      {{2, 9000}, {false, true}},                  // a long contiguous row
      {{9000, 3}, {true, false}},                  // a long strided column
      {{4, 3, 2500}, {true, false, true}},         // batch statistics: (N, C, S)
  };
  for (const auto &[shape, reduced] : cases) {
    ReducePlan plan = make_reduce_plan(shape, reduced);
    for (int64_t parts : {int64_t(1), int64_t(3), int64_t(7), parts_for(plan, 132)})
      for (int64_t threads : {int64_t(1), int64_t(7), int64_t(256)})
        expectExactCoverage(shape, reduced, parts, threads);
  }
}

TEST(GpuReduceMath, PlansMergeNeighbouringDimsAndSplitLongReductions) {
  // (32, 32, 127, 127) over N, H, W: the innermost reduced row is H*W long.
  ReducePlan bias = make_reduce_plan({32, 32, 127, 127}, {true, false, true, true});
  EXPECT_EQ(bias.outputs, 32);
  EXPECT_EQ(bias.length, 32 * 127 * 127);
  ASSERT_EQ(bias.reducedRank, 2);
  EXPECT_EQ(bias.reducedShape[1], 127 * 127);
  EXPECT_EQ(bias.reducedStride[1], 1);
  EXPECT_EQ(bias.reducedStride[0], 32 * 127 * 127);
  // 32 outputs on 132 multiprocessors: 17 parts each, so that blocks fill the GPU.
  EXPECT_EQ(parts_for(bias, 132), 17);
  // Many outputs or short reductions: one part.
  EXPECT_EQ(parts_for(make_reduce_plan({100000, 100}, {false, true}), 132), 1);
  EXPECT_EQ(parts_for(make_reduce_plan({4, 5000}, {false, true}), 132), 1);
  EXPECT_EQ(parts_for(make_reduce_plan({1, 1 << 30}, {false, true}), 132), 528);
}
