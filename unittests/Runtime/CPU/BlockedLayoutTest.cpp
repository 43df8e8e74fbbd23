//===- BlockedLayoutTest.cpp - the kernels that read and write blocked tensors ===//
//
// Each kernel runs on blocked tensors, nChw16c and nChw8c (converted with
// onednn::reorder_layout), and its results, converted back, must match the reference on
// the plain ones. Both layouts run on every CPU: oneDNN runs the width its ISA lacks
// through its reference loops, which are slow but must be right.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

constexpr double kTolerance = 1e-5;

using dlc::Layout;

const Layout kBlockedLayouts[] = {Layout::nChw16c, Layout::nChw8c};

/// An (N, C, H, W) tensor from layout `from` to layout `to`.
std::vector<float> reordered(const std::vector<float> &t, int64_t N, int64_t C, int64_t H,
                             int64_t W, Layout from, Layout to) {
  std::vector<float> out(t.size(), -9.0f);
  onednn::reorder_layout(N, C, H, W, from, to, t.data(), out.data());
  return out;
}

TEST(BlockedLayout, ReorderMovesEachElementWhereTheLayoutSays) {
  const int64_t N = 2, C = 32, H = 3, W = 5;
  std::vector<float> plain = randomTensor(N * C * H * W, 1);
  for (Layout layout : kBlockedLayouts) {
    const int64_t B = dlc::channel_block(layout);
    std::vector<float> blocked = reordered(plain, N, C, H, W, Layout::plain, layout);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            ASSERT_EQ(blocked[size_t((((n * C / B + c / B) * H + h) * W + w) * B + c % B)],
                      plain[size_t(((n * C + c) * H + h) * W + w)])
                << dlc::layout_name(layout);
    EXPECT_EQ(reordered(blocked, N, C, H, W, layout, Layout::plain), plain);
  }
  // Between the two blocked layouts directly.
  EXPECT_EQ(reordered(reordered(plain, N, C, H, W, Layout::plain, Layout::nChw16c), N, C, H, W,
                      Layout::nChw16c, Layout::nChw8c),
            reordered(plain, N, C, H, W, Layout::plain, Layout::nChw8c));
}

TEST(BlockedLayout, SmallReorderMatchesOneDNN) {
  const Layout all[] = {Layout::plain, Layout::nChw16c, Layout::nChw8c};
  struct Sizes {
    int64_t N, C, H, W;
  };
  for (Sizes d : {Sizes{1, 128, 3, 3}, Sizes{3, 16, 5, 7}, Sizes{2, 48, 1, 1}}) {
    std::vector<float> plain = randomTensor(d.N * d.C * d.H * d.W, 40);
    for (Layout from : all) {
      std::vector<float> source = reordered(plain, d.N, d.C, d.H, d.W, Layout::plain, from);
      for (Layout to : all) {
        if (from == to)
          continue;
        std::vector<float> got(source.size(), -9.0f);
        direct::reorder_layout(d.N, d.C, d.H, d.W, from, to, source.data(), got.data());
        EXPECT_EQ(got, reordered(source, d.N, d.C, d.H, d.W, from, to))
            << d.N << "x" << d.C << "x" << d.H << "x" << d.W << " from "
            << dlc::layout_name(from) << " to " << dlc::layout_name(to);
      }
    }
  }
}

/// A named geometry, for parameterized tests.
template <typename Geometry> struct NamedCase {
  const char *name;
  Geometry g;
};

template <typename Geometry>
std::string caseName(const ::testing::TestParamInfo<NamedCase<Geometry>> &info) {
  return info.param.name;
}

// The LeafNetwork's second and third convolutions (blocked in and out) and its first
// (plain 3-channel input, blocked output), small.
using ConvCase = NamedCase<Conv2DGeometry>;

class BlockedConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(BlockedConv, ForwardAndBackwardMatchTheReference) {
  for (Layout layout : kBlockedLayouts) {
    SCOPED_TRACE(dlc::layout_name(layout));
    Conv2DGeometry g = GetParam().g;
    g.inputLayout = g.C % dlc::channel_block(layout) == 0 ? layout : Layout::plain;
    g.outputLayout = layout;
    auto x = randomTensor(inputSize(g), 2), w = randomTensor(weightSize(g), 3),
         b = randomTensor(g.O, 4), dy = randomTensor(outputSize(g), 5);
    auto toInput = [&](const std::vector<float> &t, bool toBlocked) {
      return toBlocked ? reordered(t, g.N, g.C, g.H, g.W, Layout::plain, g.inputLayout)
                       : reordered(t, g.N, g.C, g.H, g.W, g.inputLayout, Layout::plain);
    };
    auto toOutput = [&](const std::vector<float> &t, bool toBlocked) {
      return toBlocked ? reordered(t, g.N, g.O, g.OH, g.OW, Layout::plain, layout)
                       : reordered(t, g.N, g.O, g.OH, g.OW, layout, Layout::plain);
    };

    for (bool relu : {false, true}) {
      std::vector<float> want(outputSize(g)), got(outputSize(g), -7.0f);
      ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), relu);
      onednn::conv2d_forward(g, toInput(x, true).data(), w.data(), b.data(), got.data(), relu);
      EXPECT_TRUE(allClose(toOutput(got, false), want, kTolerance)) << "forward, relu " << relu;
    }
    {
      std::vector<float> want(outputSize(g)), got(outputSize(g), -7.0f);
      ConvEpilogue relu6 = ConvEpilogue::capped(6);
      ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), relu6);
      onednn::conv2d_forward(g, toInput(x, true).data(), w.data(), b.data(), got.data(), relu6);
      EXPECT_TRUE(allClose(toOutput(got, false), want, kTolerance)) << "forward, relu6";
      ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), ConvEpilogue::swish());
      onednn::conv2d_forward(g, toInput(x, true).data(), w.data(), b.data(), got.data(),
                             ConvEpilogue::swish());
      EXPECT_TRUE(allClose(toOutput(got, false), want, kTolerance)) << "forward, silu";
    }

    std::vector<float> wantDx(inputSize(g)), gotDx(inputSize(g), -7.0f);
    ref::conv2d_backward_data(g, dy.data(), w.data(), wantDx.data());
    onednn::conv2d_backward_data(g, toOutput(dy, true).data(), w.data(), gotDx.data());
    EXPECT_TRUE(allClose(toInput(gotDx, false), wantDx, kTolerance)) << "backward data";

    std::vector<float> wantDw(weightSize(g)), gotDw(weightSize(g), -7.0f), wantDb(g.O),
        gotDb(g.O, -7.0f);
    ref::conv2d_backward_filter(g, dy.data(), x.data(), wantDw.data(), wantDb.data());
    onednn::conv2d_backward_filter(g, toOutput(dy, true).data(), toInput(x, true).data(),
                                   gotDw.data(), gotDb.data());
    EXPECT_TRUE(allClose(gotDw, wantDw, kTolerance)) << "backward filter";
    EXPECT_TRUE(allClose(gotDb, wantDb, kTolerance)) << "backward bias";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedConv,
    ::testing::Values(ConvCase{"PlainInput3To32", convGeometry(2, 3, 17, 15, 32, 2, 2)},
                      ConvCase{"Blocked32To64", convGeometry(2, 32, 11, 9, 64, 2, 2)},
                      ConvCase{"Blocked16To32Stride2Pad1",
                               convGeometry(3, 16, 10, 7, 32, 3, 3, 2, 1)},
                      // A 3x3 window with padding 1 over a 1x1 image (ResNets' last
                      // stage on 32x32 inputs): oneDNN's blocked weight-gradient kernels
                      // refuse it, so it runs on the layouts oneDNN picks.
                      ConvCase{"Blocked16To32On1x1Image",
                               convGeometry(2, 16, 1, 1, 32, 3, 3, 1, 1)}),
    caseName<Conv2DGeometry>);

using PoolCase = NamedCase<Pool2DGeometry>;

/// `n` floats, 64-byte aligned as the allocator gives them, each `fill`: rows leave the
/// AVX-512 pooling kernels by streaming stores there, by copies otherwise.
using AlignedFloats = std::unique_ptr<float, decltype(&std::free)>;
AlignedFloats alignedFloats(size_t n, float fill) {
  AlignedFloats out(static_cast<float *>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)),
                    &std::free);
  std::fill(out.get(), out.get() + n, fill);
  return out;
}

/// Blocked (N, C, OH, OW) bytes from plain ones: the indices travel in the output's layout.
std::vector<uint8_t> blockedBytes(const std::vector<uint8_t> &plain, const Pool2DGeometry &g,
                                  Layout layout) {
  const int64_t B = dlc::channel_block(layout), P = g.OH * g.OW;
  std::vector<uint8_t> out(plain.size());
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t p = 0; p < P; ++p)
        out[size_t(((n * (g.C / B) + c / B) * P + p) * B + c % B)] =
            plain[size_t((n * g.C + c) * P + p)];
  return out;
}

class BlockedMaxPool : public ::testing::TestWithParam<PoolCase> {};

// Both pairs, every path: the forward, and the backward from x, with and without the
// ReLU's gradient (into aligned memory as the allocator gives it too); the indexed
// forward's output and indices (the reference's, reordered), and from the indices the
// same dx as the reference's from x.
TEST_P(BlockedMaxPool, ForwardAndBackwardMatchTheReferenceOnBothPaths) {
  Pool2DGeometry g = GetParam().g;
  auto x = randomTensor(inputSize(g), 6), dy = randomTensor(outputSize(g), 7);
  // Ties, as a ReLU leaves them, in one plane of every channel block.
  std::fill(x.begin(), x.begin() + g.H * g.W, 0.0f);
  std::vector<float> wantY(outputSize(g)), wantDx(inputSize(g)), wantReluDx(inputSize(g));
  std::vector<uint8_t> plainCodes(outputSize(g));
  ref::max_pool2d_forward(g, x.data(), wantY.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantDx.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantReluDx.data(), /*reluGrad=*/true);
  std::vector<float> indexedY(outputSize(g));
  ref::max_pool2d_indexed_forward(g, x.data(), indexedY.data(), plainCodes.data());
  ASSERT_EQ(indexedY, wantY);

  for (Layout layout : kBlockedLayouts) {
    g.layout = layout;
    auto blockedX = reordered(x, g.N, g.C, g.H, g.W, Layout::plain, layout);
    auto blockedDy = reordered(dy, g.N, g.C, g.OH, g.OW, Layout::plain, layout);
    auto plainOutput = [&](const std::vector<float> &t) {
      return reordered(t, g.N, g.C, g.OH, g.OW, layout, Layout::plain);
    };
    auto plainInput = [&](const float *t) {
      return reordered(std::vector<float>(t, t + inputSize(g)), g.N, g.C, g.H, g.W, layout,
                       Layout::plain);
    };
    for (bool portable : {false, true}) {
      SCOPED_TRACE(std::string(dlc::layout_name(layout)) + (portable ? ", portable" : ""));
      const bool before = direct::use_portable_code(portable);
      std::vector<float> y(outputSize(g), -7.0f), dx(inputSize(g), -7.0f),
          reluDx(inputSize(g), -7.0f), indexedDx(inputSize(g), -7.0f);
      AlignedFloats alignedDx = alignedFloats(inputSize(g), -7.0f),
                    indexedReluDx = alignedFloats(inputSize(g), -7.0f);
      std::vector<uint8_t> codes(outputSize(g), 0x55);
      direct::max_pool2d_forward(g, blockedX.data(), y.data());
      direct::max_pool2d_backward(g, blockedX.data(), blockedDy.data(), dx.data());
      direct::max_pool2d_backward(g, blockedX.data(), blockedDy.data(), reluDx.data(),
                                  /*reluGrad=*/true);
      direct::max_pool2d_backward(g, blockedX.data(), blockedDy.data(), alignedDx.get());
      direct::max_pool2d_indexed_forward(g, blockedX.data(), indexedY.data(), codes.data());
      direct::max_pool2d_indexed_backward(g, codes.data(), blockedDy.data(), indexedDx.data());
      direct::max_pool2d_indexed_backward(g, codes.data(), blockedDy.data(), indexedReluDx.get(),
                                          /*reluGrad=*/true);
      direct::use_portable_code(before);
      EXPECT_TRUE(allClose(plainOutput(y), wantY, kTolerance)) << "forward";
      EXPECT_TRUE(allClose(plainInput(dx.data()), wantDx, kTolerance)) << "backward";
      EXPECT_TRUE(allClose(plainInput(reluDx.data()), wantReluDx, kTolerance))
          << "backward with the ReLU's gradient";
      EXPECT_TRUE(allClose(std::vector<float>(alignedDx.get(), alignedDx.get() + inputSize(g)),
                           dx, 0.0f))
          << "backward into aligned memory";
      EXPECT_EQ(plainOutput(indexedY), wantY) << "indexed forward";
      EXPECT_EQ(codes, blockedBytes(plainCodes, g, layout)) << "indices";
      EXPECT_TRUE(allClose(plainInput(indexedDx.data()), wantDx, kTolerance)) << "indexed backward";
      EXPECT_TRUE(allClose(plainInput(indexedReluDx.get()), wantReluDx, kTolerance))
          << "indexed backward with the ReLU's gradient";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedMaxPool,
    ::testing::Values(PoolCase{"Leaf4x4Stride2", poolGeometry(2, 32, 13, 11, 4, 2, 0, false)},
                      // 2x2 at stride 2 (the forwards' unbounded path), odd sizes.
                      PoolCase{"K2S2Odd", poolGeometry(2, 32, 7, 9, 2, 2, 0, false)},
                      PoolCase{"K3S2P1Ceil", poolGeometry(1, 16, 9, 8, 3, 2, 1, true)},
                      // Ceil mode with a last row and column of windows past the input.
                      PoolCase{"EmptyLastWindows", poolGeometry(2, 16, 10, 13, 4, 3, 2, true)}),
    caseName<Pool2DGeometry>);

// The first-maximum NaN rule on blocked tensors, every path, the indexed forward's codes
// included: a NaN first in its window is the window's maximum, a later one is passed
// over; of -0 and +0 the first is the maximum.
TEST(BlockedLayout, MaxPoolNaNFollowsTheReference) {
  Pool2DGeometry g = poolGeometry(1, 16, 6, 9, 2, 2, 0, false);
  auto x = randomTensor(inputSize(g), 12);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x[0] = nan;                               // channel 0: first tap of window (0, 0)
  x[size_t(g.H * g.W) + 1] = nan;           // channel 1: second tap of window (0, 0), passed over
  x[size_t(9 * g.H * g.W) + g.W + 3] = nan; // channel 9: last tap of window (0, 1)
  float *ties = x.data() + 5 * g.H * g.W;   // channel 5, window (0, 0): -0 first, then +0
  ties[0] = -0.0f;
  ties[1] = 0.0f;
  ties[g.W] = -1.0f;
  ties[g.W + 1] = 0.0f;
  std::vector<float> want(outputSize(g)), wantIndexed(outputSize(g));
  std::vector<uint8_t> wantCodes(outputSize(g));
  ref::max_pool2d_forward(g, x.data(), want.data());
  ref::max_pool2d_indexed_forward(g, x.data(), wantIndexed.data(), wantCodes.data());
  ASSERT_TRUE(std::isnan(want[0]));
  ASSERT_TRUE(std::signbit(want[size_t(5 * g.OH * g.OW)]));
  const auto same = [](float a, float b) {
    return std::isnan(a) ? std::isnan(b) : a == b && std::signbit(a) == std::signbit(b);
  };
  for (Layout layout : kBlockedLayouts) {
    g.layout = layout;
    auto blockedX = reordered(x, g.N, g.C, g.H, g.W, Layout::plain, layout);
    for (bool portable : {false, true}) {
      const bool before = direct::use_portable_code(portable);
      std::vector<float> y(outputSize(g), -7.0f), indexedY(outputSize(g), -7.0f);
      std::vector<uint8_t> codes(outputSize(g), 0x55);
      direct::max_pool2d_forward(g, blockedX.data(), y.data());
      direct::max_pool2d_indexed_forward(g, blockedX.data(), indexedY.data(), codes.data());
      direct::use_portable_code(before);
      std::vector<float> got = reordered(y, g.N, g.C, g.OH, g.OW, layout, Layout::plain),
                         gotIndexed = reordered(indexedY, g.N, g.C, g.OH, g.OW, layout,
                                                Layout::plain);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(same(want[i], got[i]))
            << "output " << i << ", " << dlc::layout_name(layout) << ", portable " << portable;
        EXPECT_TRUE(same(wantIndexed[i], gotIndexed[i]))
            << "indexed output " << i << ", " << dlc::layout_name(layout) << ", portable "
            << portable;
      }
      EXPECT_EQ(codes, blockedBytes(wantCodes, g, layout))
          << dlc::layout_name(layout) << ", portable " << portable;
    }
  }
}

TEST(BlockedLayout, BatchNormMatchesTheReference) {
  BatchNormGeometry g{3, 32, 7 * 5};
  const int64_t H = 7, W = 5;
  auto x = randomTensor(g.N * g.C * g.S, 8), gamma = randomTensor(g.C, 9),
       beta = randomTensor(g.C, 10), dy = randomTensor(g.N * g.C * g.S, 11);
  for (float &v : x)
    v += 3.0f; // the statistics must not assume a centred input
  std::vector<float> wantY(x.size()), wantMean(g.C), wantVar(g.C), wantDx(x.size()),
      wantDgamma(g.C), wantDbeta(g.C);
  ref::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), 1e-5, wantY.data(),
                                   wantMean.data(), wantVar.data());
  ref::batch_norm_backward(g, dy.data(), x.data(), gamma.data(), wantMean.data(), wantVar.data(),
                           1e-5, wantDx.data(), wantDgamma.data(), wantDbeta.data());

  std::vector<float> wantInference(x.size());
  ref::batch_norm_forward_inference(g, x.data(), gamma.data(), beta.data(), wantMean.data(),
                                    wantVar.data(), 1e-5, wantInference.data());

  for (Layout layout : kBlockedLayouts) {
    SCOPED_TRACE(dlc::layout_name(layout));
    auto toBlocked = [&](const std::vector<float> &t) {
      return reordered(t, g.N, g.C, H, W, Layout::plain, layout);
    };
    auto toPlain = [&](const std::vector<float> &t) {
      return reordered(t, g.N, g.C, H, W, layout, Layout::plain);
    };
    g.layout = layout;
    auto blockedX = toBlocked(x);
    std::vector<float> y(x.size()), mean(g.C), var(g.C), dx(x.size()), dgamma(g.C), dbeta(g.C);
    onednn::batch_norm_forward_training(g, blockedX.data(), gamma.data(), beta.data(), 1e-5,
                                        y.data(), mean.data(), var.data());
    EXPECT_TRUE(allClose(toPlain(y), wantY, kTolerance)) << "y";
    EXPECT_TRUE(allClose(mean, wantMean, kTolerance)) << "mean";
    EXPECT_TRUE(allClose(var, wantVar, kTolerance)) << "var";
    onednn::batch_norm_backward(g, toBlocked(dy).data(), blockedX.data(), gamma.data(), mean.data(),
                                var.data(), 1e-5, dx.data(), dgamma.data(), dbeta.data());
    EXPECT_TRUE(allClose(toPlain(dx), wantDx, kTolerance)) << "dx";
    EXPECT_TRUE(allClose(dgamma, wantDgamma, kTolerance)) << "dgamma";
    EXPECT_TRUE(allClose(dbeta, wantDbeta, kTolerance)) << "dbeta";

    std::vector<float> inference(x.size());
    onednn::batch_norm_forward_inference(g, blockedX.data(), gamma.data(), beta.data(),
                                         wantMean.data(), wantVar.data(), 1e-5, inference.data());
    EXPECT_TRUE(allClose(toPlain(inference), wantInference, kTolerance)) << "inference";
    for (bool portable : {false, true}) {
      const bool before = direct::use_portable_code(portable); // AVX2 and the other path
      std::fill(inference.begin(), inference.end(), -7.0f);
      direct::batch_norm_forward_inference(g, blockedX.data(), gamma.data(), beta.data(),
                                           wantMean.data(), wantVar.data(), 1e-5,
                                           inference.data());
      direct::use_portable_code(before);
      EXPECT_TRUE(allClose(toPlain(inference), wantInference, kTolerance))
          << "direct inference" << (portable ? ", portable" : "");
    }
  }
}

} // namespace
