//===- BlockedLayoutTest.cpp - the kernels that read and write nChw16c tensors ===//
//
// Each kernel runs on blocked tensors (converted with onednn::reorder_blocked) and its
// results, converted back, must match the reference on the plain ones.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include <algorithm>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

constexpr double kTolerance = 1e-5;

/// An (N, C, H, W) tensor in the other layout.
std::vector<float> reordered(const std::vector<float> &t, int64_t N, int64_t C, int64_t H,
                             int64_t W, bool toBlocked) {
  std::vector<float> out(t.size(), -9.0f);
  onednn::reorder_blocked(N, C, H, W, t.data(), out.data(), toBlocked);
  return out;
}

TEST(BlockedLayout, ReorderMovesEachElementWhereTheLayoutSays) {
  const int64_t N = 2, C = 32, H = 3, W = 5;
  std::vector<float> plain = randomTensor(N * C * H * W, 1);
  std::vector<float> blocked = reordered(plain, N, C, H, W, true);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          ASSERT_EQ(blocked[size_t((((n * C / 16 + c / 16) * H + h) * W + w) * 16 + c % 16)],
                    plain[size_t(((n * C + c) * H + h) * W + w)]);
  EXPECT_EQ(reordered(blocked, N, C, H, W, false), plain);
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
  Conv2DGeometry g = GetParam().g;
  g.inputBlocked = g.C % 16 == 0;
  g.outputBlocked = true;
  auto x = randomTensor(inputSize(g), 2), w = randomTensor(weightSize(g), 3),
       b = randomTensor(g.O, 4), dy = randomTensor(outputSize(g), 5);
  auto toInput = [&](const std::vector<float> &t, bool toBlocked) {
    return g.inputBlocked ? reordered(t, g.N, g.C, g.H, g.W, toBlocked) : t;
  };
  auto toOutput = [&](const std::vector<float> &t, bool toBlocked) {
    return reordered(t, g.N, g.O, g.OH, g.OW, toBlocked);
  };

  for (bool relu : {false, true}) {
    std::vector<float> want(outputSize(g)), got(outputSize(g), -7.0f);
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), relu);
    onednn::conv2d_forward(g, toInput(x, true).data(), w.data(), b.data(), got.data(), relu);
    EXPECT_TRUE(allClose(toOutput(got, false), want, kTolerance)) << "forward, relu " << relu;
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

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedConv,
    ::testing::Values(ConvCase{"PlainInput3To32", convGeometry(2, 3, 17, 15, 32, 2, 2)},
                      ConvCase{"Blocked32To64", convGeometry(2, 32, 11, 9, 64, 2, 2)},
                      ConvCase{"Blocked16To32Stride2Pad1",
                               convGeometry(3, 16, 10, 7, 32, 3, 3, 2, 1)}),
    caseName<Conv2DGeometry>);

using PoolCase = NamedCase<Pool2DGeometry>;

class BlockedMaxPool : public ::testing::TestWithParam<PoolCase> {};

TEST_P(BlockedMaxPool, ForwardAndBackwardMatchTheReferenceOnBothPaths) {
  Pool2DGeometry g = GetParam().g;
  auto x = randomTensor(inputSize(g), 6), dy = randomTensor(outputSize(g), 7);
  // Ties, as a ReLU leaves them, in one plane of every channel block.
  std::fill(x.begin(), x.begin() + g.H * g.W, 0.0f);
  std::vector<float> wantY(outputSize(g)), wantDx(inputSize(g));
  ref::max_pool2d_forward(g, x.data(), wantY.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantDx.data());

  g.blocked = true;
  auto blockedX = reordered(x, g.N, g.C, g.H, g.W, true);
  auto blockedDy = reordered(dy, g.N, g.C, g.OH, g.OW, true);
  for (bool portable : {false, true}) {
    const bool before = direct::use_portable_code(portable);
    std::vector<float> y(outputSize(g), -7.0f), dx(inputSize(g), -7.0f);
    direct::max_pool2d_forward(g, blockedX.data(), y.data());
    direct::max_pool2d_backward(g, blockedX.data(), blockedDy.data(), dx.data());
    direct::use_portable_code(before);
    EXPECT_TRUE(allClose(reordered(y, g.N, g.C, g.OH, g.OW, false), wantY, kTolerance))
        << "forward, portable " << portable;
    EXPECT_TRUE(allClose(reordered(dx, g.N, g.C, g.H, g.W, false), wantDx, kTolerance))
        << "backward, portable " << portable;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedMaxPool,
    ::testing::Values(PoolCase{"Leaf4x4Stride2", poolGeometry(2, 32, 13, 11, 4, 2, 0, false)},
                      PoolCase{"K3S2P1Ceil", poolGeometry(1, 16, 9, 8, 3, 2, 1, true)},
                      // Ceil mode with a last row and column of windows past the input.
                      PoolCase{"EmptyLastWindows", poolGeometry(2, 16, 10, 13, 4, 3, 2, true)}),
    caseName<Pool2DGeometry>);

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

  g.blocked = true;
  auto blockedX = reordered(x, g.N, g.C, H, W, true);
  std::vector<float> y(x.size()), mean(g.C), var(g.C), dx(x.size()), dgamma(g.C), dbeta(g.C);
  onednn::batch_norm_forward_training(g, blockedX.data(), gamma.data(), beta.data(), 1e-5,
                                      y.data(), mean.data(), var.data());
  EXPECT_TRUE(allClose(reordered(y, g.N, g.C, H, W, false), wantY, kTolerance)) << "y";
  EXPECT_TRUE(allClose(mean, wantMean, kTolerance)) << "mean";
  EXPECT_TRUE(allClose(var, wantVar, kTolerance)) << "var";
  onednn::batch_norm_backward(g, reordered(dy, g.N, g.C, H, W, true).data(), blockedX.data(),
                              gamma.data(), mean.data(), var.data(), 1e-5, dx.data(),
                              dgamma.data(), dbeta.data());
  EXPECT_TRUE(allClose(reordered(dx, g.N, g.C, H, W, false), wantDx, kTolerance)) << "dx";
  EXPECT_TRUE(allClose(dgamma, wantDgamma, kTolerance)) << "dgamma";
  EXPECT_TRUE(allClose(dbeta, wantDbeta, kTolerance)) << "dbeta";

  std::vector<float> wantInference(x.size()), inference(x.size());
  g.blocked = false;
  ref::batch_norm_forward_inference(g, x.data(), gamma.data(), beta.data(), wantMean.data(),
                                    wantVar.data(), 1e-5, wantInference.data());
  g.blocked = true;
  onednn::batch_norm_forward_inference(g, blockedX.data(), gamma.data(), beta.data(),
                                       wantMean.data(), wantVar.data(), 1e-5, inference.data());
  EXPECT_TRUE(allClose(reordered(inference, g.N, g.C, H, W, false), wantInference, kTolerance))
      << "inference";
}

} // namespace
