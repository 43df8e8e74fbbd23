//===- PooledFilterGradientTest.cpp - a first block's weight gradient from its pooling ===//
//
// pooled_filter_gradient::backward against the reference pooling gradient followed by
// the reference filter gradient, on random inputs and random pooling codes: 2x2 and
// 3x3 windows, with and without the convolution's and the pooling's padding, overlapping
// and ceil-mode windows (some of them empty), one to three blocks of 16 output channels,
// one or two groups of input channels, with and without the ReLU and the bias, on
// OpenMP teams of 1 to 3 threads. dw and db are also checked against central
// differences of the block's loss computed in double. The kernel table's region routes
// a first block's gradient here (ConvPoolEpilogueTest.cpp checks its result).
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/CPU/PooledFilterGradient.h"

#include <omp.h>
#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

using dlc::Layout;

struct Case {
  std::string name;
  Conv2DGeometry conv;
  int64_t poolKernel, poolStride, poolPad;
  bool ceilMode, relu, bias;
  Layout input = Layout::plain, activation = Layout::nChw16c; ///< x's; dy's and the codes'
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

Pool2DGeometry poolOf(const Case &c) {
  Pool2DGeometry p = poolGeometry(c.conv.N, c.conv.O, c.conv.OH, c.conv.OW, c.poolKernel,
                                  c.poolStride, c.poolPad, c.ceilMode);
  p.layout = c.activation;
  return p;
}

Conv2DGeometry convOf(const Case &c) {
  Conv2DGeometry g = c.conv;
  g.inputLayout = c.input;
  g.outputLayout = c.activation;
  return g;
}

std::vector<Case> cases() {
  return {
      // The LeafNetwork's first block, smaller: 3 -> 32 channels, 4x4 windows of stride 2.
      {"LeafNetworkBlock", convGeometry(3, 3, 37, 41, 32, 2, 2), 4, 2, 0, false, true, true},
      {"LeafNetworkBlockNoRelu", convGeometry(2, 3, 21, 21, 32, 2, 2), 4, 2, 0, false, false, true},
      // Two groups of input channels (3 + 2), three blocks of output channels, no bias.
      {"FiveChannelsNoBias", convGeometry(2, 5, 19, 23, 48, 2, 2), 2, 2, 0, false, true, false},
      // Padding on both sides, and ceil-mode windows past the edge (17x15 activations:
      // the last row and column of windows cover padding only).
      {"PaddedCeil", convGeometry(2, 3, 16, 14, 16, 2, 2, 1, 1), 2, 2, 1, true, true, true},
      // 3x3 windows: one input channel per group.
      {"ThreeByThree", convGeometry(2, 4, 18, 18, 32, 3, 3, 1, 1), 2, 2, 0, false, true, true},
      {"ThreeByThreeOverlap", convGeometry(1, 2, 15, 17, 16, 3, 3), 3, 2, 1, false, false, true},
      // Blocks inside a network: x an activation in a blocked layout.
      {"Blocked16", convGeometry(3, 32, 20, 22, 32, 2, 2), 4, 2, 0, false, true, true,
       Layout::nChw16c, Layout::nChw16c},
      {"Blocked8To16ThreeByThree", convGeometry(2, 16, 13, 12, 32, 3, 3, 1, 1), 2, 2, 0, false,
       false, true, Layout::nChw8c, Layout::nChw16c},
      // Three and five input channel blocks (groups of 4 + 1 with AVX-512), padding, ceil.
      {"Blocked16To8Padded", convGeometry(2, 48, 12, 10, 24, 2, 2, 1, 1), 2, 2, 1, true, true,
       false, Layout::nChw16c, Layout::nChw8c},
      {"Blocked16FiveBlocks", convGeometry(2, 80, 9, 10, 16, 2, 2), 3, 2, 0, false, true, true,
       Layout::nChw16c, Layout::nChw16c},
  };
}

class PooledFilterGradientVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(PooledFilterGradientVsReference, EqualsThePoolingGradientThenTheFilterGradient) {
  const Case &c = GetParam();
  const Conv2DGeometry g = convOf(c);
  const Pool2DGeometry pool = poolOf(c);
  if (!pooled_filter_gradient::applies(g, pool))
    GTEST_SKIP() << "this CPU has no AVX-512, which the kernel for a plain x is written for "
                    "(the region then leaves the gradient to the pooling's and oneDNN's kernels)";
  const int64_t N = g.N, O = g.O;
  const std::vector<float> x = randomTensor(inputSize(g), 31),
                           activation = randomTensor(outputSize(g), 32),
                           dy = randomTensor(outputSize(pool), 33);
  // Codes of a forward over a random activation (about half its maxima > 0).
  Pool2DGeometry plainPool = pool;
  plainPool.layout = Layout::plain;
  std::vector<float> pooled(size_t(outputSize(pool)));
  std::vector<uint8_t> codes(pooled.size()), blockedCodes(pooled.size());
  ref::max_pool2d_indexed_forward(plainPool, activation.data(), pooled.data(), codes.data());
  const std::vector<float> blockedActivation =
      inLayout(activation, N, O, g.OH, g.OW, Layout::plain, c.activation);
  direct::max_pool2d_indexed_forward(pool, blockedActivation.data(), pooled.data(),
                                     blockedCodes.data());
  int64_t empty = 0;
  for (uint8_t code : codes)
    empty += code == pool_index::kEmpty;
  EXPECT_EQ(empty > 0, c.ceilMode) << "the ceil-mode cases have empty windows, only they";

  std::vector<float> gradient(size_t(outputSize(g))), wantW(size_t(weightSize(g))),
      wantB(static_cast<size_t>(O));
  ref::max_pool2d_indexed_backward(plainPool, codes.data(), dy.data(), gradient.data(), c.relu);
  Conv2DGeometry plain = g;
  plain.inputLayout = plain.outputLayout = Layout::plain;
  ref::conv2d_backward_filter(plain, gradient.data(), x.data(), wantW.data(),
                              c.bias ? wantB.data() : nullptr);

  const std::vector<float> blockedDy =
                               inLayout(dy, N, O, pool.OH, pool.OW, Layout::plain, c.activation),
                           blockedX = inLayout(x, N, g.C, g.H, g.W, Layout::plain, c.input);
  const int defaultTeam = omp_get_max_threads();
  for (bool portable : {false, true}) {
    const bool before = direct::use_portable_code(portable);
    const bool runs = pooled_filter_gradient::applies(g, pool);
    direct::use_portable_code(before);
    // The plain-x kernel is AVX-512 code only; the blocked one has portable code too.
    EXPECT_EQ(runs, !portable || c.input != Layout::plain);
    if (!runs)
      continue;
    for (int team : {1, 2, 3}) {
      SCOPED_TRACE(std::string(portable ? "portable" : "this CPU's code") + ", " +
                   std::to_string(team) + " threads");
      omp_set_num_threads(team);
      direct::use_portable_code(portable);
      std::vector<float> gotW(wantW.size(), -7.f), gotB(wantB.size(), -7.f);
      pooled_filter_gradient::backward(g, pool, blockedCodes.data(), blockedDy.data(),
                                       blockedX.data(), c.relu, gotW.data(),
                                       c.bias ? gotB.data() : nullptr);
      direct::use_portable_code(before);
      omp_set_num_threads(defaultTeam);
      // The same products summed in another order.
      EXPECT_TRUE(allClose(gotW, wantW, 1e-5));
      if (c.bias) {
        EXPECT_TRUE(allClose(gotB, wantB, 1e-5));
      } else {
        EXPECT_EQ(gotB, std::vector<float>(wantB.size(), -7.f)) << "db written without a bias";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PooledFilterGradientVsReference, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

/// sum(weights * max_pool2d(relu(conv2d(x, w) + b))), in double, all layouts plain.
double blockLoss(const Case &c, const std::vector<float> &x, const std::vector<double> &w,
                 const std::vector<double> &b, const std::vector<float> &weights) {
  const Conv2DGeometry &g = c.conv;
  const Pool2DGeometry pool = poolOf(c);
  std::vector<double> a(size_t(outputSize(g)));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double sum = b[size_t(o)];
          for (int64_t ch = 0; ch < g.C; ++ch)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t ih = oh - g.padH + kh, iw = ow - g.padW + kw;
                if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
                  sum += w[size_t(((o * g.C + ch) * g.KH + kh) * g.KW + kw)] *
                         x[size_t(((n * g.C + ch) * g.H + ih) * g.W + iw)];
              }
          a[size_t(((n * g.O + o) * g.OH + oh) * g.OW + ow)] = c.relu ? std::max(sum, 0.0) : sum;
        }
  double loss = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t ph = 0; ph < pool.OH; ++ph)
        for (int64_t pw = 0; pw < pool.OW; ++pw) {
          double best = -1e300;
          for (int64_t i = 0; i < pool.kernelH; ++i)
            for (int64_t j = 0; j < pool.kernelW; ++j) {
              const int64_t oh = ph * pool.strideH - pool.padH + i,
                            ow = pw * pool.strideW - pool.padW + j;
              if (oh >= 0 && oh < g.OH && ow >= 0 && ow < g.OW)
                best = std::max(best, a[size_t(((n * g.O + o) * g.OH + oh) * g.OW + ow)]);
            }
          if (best > -1e300)
            loss += weights[size_t(((n * g.O + o) * pool.OH + ph) * pool.OW + pw)] * best;
        }
  return loss;
}

// The loss is piecewise linear in w and b: central differences step across no kink for
// almost every entry, and then equal the gradient up to rounding.
TEST(PooledFilterGradient, MatchesFiniteDifferences) {
  for (const Case &c : {cases()[0], cases()[4], cases()[6]}) {
    SCOPED_TRACE(c.name);
    Case small = c;
    small.conv = convGeometry(2, c.conv.C, 12, 11, 16, c.conv.KH, c.conv.KW, 1, c.conv.padH);
    const Conv2DGeometry g = convOf(small);
    const Pool2DGeometry pool = poolOf(small);
    if (!pooled_filter_gradient::applies(g, pool))
      GTEST_SKIP() << "this CPU has no AVX-512, which the kernel is written for";
    const std::vector<float> x = randomTensor(inputSize(g), 41),
                             wf = randomTensor(weightSize(g), 42, -0.5f, 0.5f),
                             bf = randomTensor(g.O, 43, -0.1f, 0.1f),
                             weights = randomTensor(outputSize(pool), 44);
    std::vector<double> w(wf.begin(), wf.end()), b(bf.begin(), bf.end());

    // The forward in float through the kernels, for the codes the gradient reads.
    std::vector<float> activation(size_t(outputSize(g))), pooled(size_t(outputSize(pool)));
    std::vector<uint8_t> codes(pooled.size());
    Conv2DGeometry plain = g;
    plain.inputLayout = plain.outputLayout = Layout::plain;
    ref::conv2d_forward(plain, x.data(), wf.data(), bf.data(), activation.data());
    if (small.relu)
      for (float &v : activation)
        v = std::max(v, 0.0f);
    const std::vector<float> blocked =
        inLayout(activation, g.N, g.O, g.OH, g.OW, Layout::plain, small.activation);
    direct::max_pool2d_indexed_forward(pool, blocked.data(), pooled.data(), codes.data());
    const std::vector<float> dy =
        inLayout(weights, g.N, g.O, pool.OH, pool.OW, Layout::plain, small.activation);
    const std::vector<float> xIn = inLayout(x, g.N, g.C, g.H, g.W, Layout::plain, small.input);
    std::vector<float> dw(wf.size()), db(bf.size());
    pooled_filter_gradient::backward(g, pool, codes.data(), dy.data(), xIn.data(), small.relu,
                                     dw.data(), db.data());

    const double step = 1e-4;
    auto difference = [&](std::vector<double> &param, size_t i) {
      const double kept = param[i];
      param[i] = kept + step;
      const double up = blockLoss(small, x, w, b, weights);
      param[i] = kept - step;
      const double down = blockLoss(small, x, w, b, weights);
      param[i] = kept;
      return (up - down) / (2 * step);
    };
    int64_t off = 0, total = 0;
    auto compare = [&](std::vector<double> &param, const std::vector<float> &got) {
      for (size_t i = 0; i < param.size(); ++i, ++total)
        if (std::fabs(difference(param, i) - got[i]) >
            1e-3 * std::max(1.0, std::fabs(double(got[i]))))
          ++off;
    };
    compare(w, dw);
    compare(b, db);
    // A step across a kink (an argmax or a ReLU changing) is rare; more than 2 % is not.
    EXPECT_LE(off * 50, total) << off << " of " << total << " entries differ";
  }
}

TEST(PooledFilterGradient, AppliesOnlyWhereItsTablesHold) {
  const Case leaf = cases()[0];
  const Conv2DGeometry g = convOf(leaf);
  const Pool2DGeometry pool = poolOf(leaf);
  const bool before = direct::use_portable_code(true);
  EXPECT_FALSE(pooled_filter_gradient::applies(g, pool)) << "no AVX-512: the portable path";
  direct::use_portable_code(before);
  if (!pooled_filter_gradient::applies(g, pool))
    GTEST_SKIP() << "this CPU has no AVX-512, which the kernel is written for";
  auto refuses = [&](const char *why, Conv2DGeometry c, Pool2DGeometry p) {
    EXPECT_FALSE(pooled_filter_gradient::applies(c, p)) << why;
  };
  Conv2DGeometry c = g;
  c.strideH = 2;
  refuses("a strided convolution", c, pool);
  c = g, c.KH = c.KW = 4;
  refuses("a 4x4 window", c, pool);
  c = g, c.outputLayout = Layout::nChw8c;
  refuses("an nChw8c activation", c, pool);
  c = g, c.inputLayout = Layout::nChw16c;
  refuses("a blocked input of 3 channels", c, pool);
  // Over a blocked x: not a pooling that keeps more than half its input's positions.
  c = g, c.C = 16, c.inputLayout = Layout::nChw16c;
  EXPECT_TRUE(pooled_filter_gradient::applies(c, pool)) << "a blocked x of 16 channels";
  Pool2DGeometry p = pool;
  p.strideH = p.strideW = 1, p.OH = pool.H - 3, p.OW = pool.W - 3;
  refuses("4x4 windows of stride 1: almost every position pooled", c, p);
  p = pool;
  p.kernelH = 5;
  refuses("pooling windows of 5 rows", g, p);
  p = pool, p.kernelW = 8;
  refuses("8 columns of taps under a 2x2 window: 9 input columns", g, p);
  p = pool, p.C = 48;
  refuses("a pooling of another tensor", g, p);

  std::vector<float> dw(size_t(weightSize(g))), dy(size_t(outputSize(pool))),
      x(size_t(inputSize(g)));
  std::vector<uint8_t> codes(dy.size());
  c = g, c.dilationH = 2;
  try {
    pooled_filter_gradient::backward(c, pool, codes.data(), dy.data(), x.data(), true, dw.data(),
                                     nullptr);
    FAIL() << "a dilated convolution ran";
  } catch (const dlc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("does not apply to a 2x2 window of 3 -> 32 channels"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
