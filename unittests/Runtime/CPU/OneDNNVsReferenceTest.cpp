//===- OneDNNVsReferenceTest.cpp - every oneDNN kernel against its reference twin ===//
//
// Random inputs, odd sizes, every window option the dialect allows, and a few layers of
// the seed's LeafNetwork. Tolerance: max|onednn - ref| <= 1e-5 * max(1, max|ref|). The
// references sum in double, so the gap measured is oneDNN's own float rounding.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

constexpr double kTolerance = 1e-5;

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  std::string name;
  Conv2DGeometry g;
};

void PrintTo(const ConvCase &c, std::ostream *os) { *os << c.name; }

std::vector<ConvCase> convCases() {
  return {
      {"Odd1x3x7x5", convGeometry(1, 3, 7, 5, 4, 3, 3, 1, 1)},
      {"Odd2x5x9x11Stride2Pad2", convGeometry(2, 5, 9, 11, 6, 3, 2, 2, 2)},
      {"Stride3Pad1", convGeometry(2, 4, 10, 8, 5, 3, 3, 3, 1)},
      // The floor rule leaves the last padded row unread: oneDNN gets padding_r 0.
      {"FloorTrimsRightPadding", convGeometry(1, 3, 8, 8, 4, 3, 3, 2, 1)},
      // 1x1 window, stride 2 on an even size: exact padding_r would be -1.
      {"Pointwise1x1Stride2", convGeometry(2, 6, 8, 6, 5, 1, 1, 2, 0)},
      {"Dilation2Pad2", convGeometry(1, 3, 9, 11, 4, 3, 3, 1, 2, 2)},
      {"Groups2Stride2", convGeometry(2, 4, 7, 9, 6, 3, 3, 2, 1, 1, 2)},
      {"Groups3Dilation2", convGeometry(1, 6, 11, 10, 9, 3, 2, 1, 1, 2, 3)},
      {"Depthwise", convGeometry(2, 4, 6, 7, 4, 3, 3, 1, 1, 1, 4)},
      // The seed network's first layer (3->32, k2) on a 32x32 image instead of 128x128.
      {"SeedConv1Small", convGeometry(2, 3, 32, 32, 32, 2, 2)},
      // The LeafNetwork's second conv at batch 1: a 128-term reduction per output and
      // 3721 per weight gradient.
      {"LeafConv2Batch1", convGeometry(1, 32, 62, 62, 64, 2, 2)},
  };
}

class ConvVsReference : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvVsReference, Forward) {
  const Conv2DGeometry &g = GetParam().g;
  auto x = randomTensor(inputSize(g), 1), w = randomTensor(weightSize(g), 2),
       b = randomTensor(g.O, 3);
  std::vector<float> want(outputSize(g)), got(outputSize(g), -7.0f);
  ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data());
  onednn::conv2d_forward(g, x.data(), w.data(), b.data(), got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "with bias";
  ref::conv2d_forward(g, x.data(), w.data(), nullptr, want.data());
  onednn::conv2d_forward(g, x.data(), w.data(), nullptr, got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "without bias";
  // The fused ReLU epilogue: equal to the reference, which clamps what it computed above.
  std::vector<float> plain = want;
  ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), /*relu=*/true);
  onednn::conv2d_forward(g, x.data(), w.data(), b.data(), got.data(), /*relu=*/true);
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "relu epilogue";
  EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](float v) { return v == 0.f; }) &&
              std::any_of(want.begin(), want.end(), [](float v) { return v > 0.f; }))
      << "random inputs give both signs before the ReLU";
  // ReLU6's epilogue (oneDNN's clip post-op), capped low enough that some values reach
  // the cap.
  ConvEpilogue capped = ConvEpilogue::capped(0.5f);
  ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), capped);
  onednn::conv2d_forward(g, x.data(), w.data(), b.data(), got.data(), capped);
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "capped relu epilogue";
  EXPECT_TRUE(std::any_of(want.begin(), want.end(), [](float v) { return v == 0.5f; }))
      << "some values reach the cap";
  // SiLU's epilogue (oneDNN's swish post-op, EfficientNet's activation).
  ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), ConvEpilogue::swish());
  onednn::conv2d_forward(g, x.data(), w.data(), b.data(), got.data(), ConvEpilogue::swish());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "silu epilogue";
}

TEST_P(ConvVsReference, BackwardData) {
  const Conv2DGeometry &g = GetParam().g;
  auto dy = randomTensor(outputSize(g), 4), w = randomTensor(weightSize(g), 5);
  std::vector<float> want(inputSize(g)), got(inputSize(g), -7.0f);
  ref::conv2d_backward_data(g, dy.data(), w.data(), want.data());
  onednn::conv2d_backward_data(g, dy.data(), w.data(), got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance));
}

TEST_P(ConvVsReference, BackwardFilter) {
  const Conv2DGeometry &g = GetParam().g;
  auto dy = randomTensor(outputSize(g), 6), x = randomTensor(inputSize(g), 7);
  std::vector<float> wantW(weightSize(g)), gotW(weightSize(g), -7.0f);
  std::vector<float> wantB(g.O), gotB(g.O, -7.0f);
  ref::conv2d_backward_filter(g, dy.data(), x.data(), wantW.data(), wantB.data());
  onednn::conv2d_backward_filter(g, dy.data(), x.data(), gotW.data(), gotB.data());
  EXPECT_TRUE(allClose(gotW, wantW, kTolerance)) << "dw";
  EXPECT_TRUE(allClose(gotB, wantB, kTolerance)) << "db";
  std::fill(gotW.begin(), gotW.end(), -7.0f);
  onednn::conv2d_backward_filter(g, dy.data(), x.data(), gotW.data(), nullptr);
  EXPECT_TRUE(allClose(gotW, wantW, kTolerance)) << "dw without db";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvVsReference, ::testing::ValuesIn(convCases()),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  std::string name;
  Pool2DGeometry g;
};

void PrintTo(const PoolCase &c, std::ostream *os) { *os << c.name; }

std::vector<PoolCase> poolCases() {
  return {
      {"Odd1x3x7x5K3S2P1", poolGeometry(1, 3, 7, 5, 3, 2, 1, false)},
      {"Odd1x3x7x5K3S2P1Ceil", poolGeometry(1, 3, 7, 5, 3, 2, 1, true)},
      {"Odd2x5x9x11K2S2P1", poolGeometry(2, 5, 9, 11, 2, 2, 1, false)},
      // Ceil mode: the last window overhangs the right padding (padding_r > padH).
      {"Odd2x5x9x11K3S3Ceil", poolGeometry(2, 5, 9, 11, 3, 3, 0, true)},
      // Ceil mode with a last window past the input (rows only, then rows and columns):
      // the empty outputs are 0 and oneDNN runs on a strided view of the rest.
      {"CeilEmptyLastRow", poolGeometry(1, 2, 5, 6, 2, 2, 1, true)},
      {"K4S3P2CeilEmptyRowAndColumn", poolGeometry(2, 3, 10, 13, 4, 3, 2, true)},
      {"K5S1P2", poolGeometry(1, 2, 6, 9, 5, 1, 2, false)},
      // The LeafNetwork's first pooling at batch 1.
      {"LeafPool1Batch1", poolGeometry(1, 32, 127, 127, 4, 2, 0, false)},
      // Rows longer than one strip of the direct max pooling (512 outputs), odd stride.
      {"WideRowsK3S3P1", poolGeometry(1, 2, 4, 1700, 3, 3, 1, true)},
      {"WideRowsK2S2", poolGeometry(1, 1, 3, 1201, 2, 2, 0, false)},
      // Padding wider than the input: some windows see only padding on one side.
      {"K7S1P3Tiny", poolGeometry(1, 2, 3, 4, 7, 1, 3, false)},
  };
}

class PoolVsReference : public ::testing::TestWithParam<PoolCase> {};

// The direct max pooling has a vector path (AVX-512, where the CPU has it) and the
// portable one other machines run; both must match the reference.
class PortableOnly {
public:
  explicit PortableOnly(bool portable) : before_(direct::use_portable_code(portable)) {}
  ~PortableOnly() { direct::use_portable_code(before_); }

private:
  bool before_;
};

// Both paths of the direct max-pool backward give the reference's dx, and with the
// ReLU's gradient folded in, the reference's dx masked where x > 0 (relu_backward's rule).
void expectMaxBackwardMatches(const Pool2DGeometry &g, const std::vector<float> &x,
                              const std::vector<float> &dy) {
  std::vector<float> want(inputSize(g)), wantRelu(inputSize(g));
  ref::max_pool2d_backward(g, x.data(), dy.data(), want.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantRelu.data(), /*reluGrad=*/true);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(wantRelu[i], x[i] > 0.0f ? want[i] : 0.0f) << "the reference's fold at " << i;
  for (bool portable : {false, true})
    for (bool relu : {false, true}) {
      PortableOnly mode(portable);
      std::vector<float> got(inputSize(g), -7.0f);
      direct::max_pool2d_backward(g, x.data(), dy.data(), got.data(), relu);
      EXPECT_TRUE(allClose(got, relu ? wantRelu : want, kTolerance))
          << "portable=" << portable << " relu=" << relu;
    }
}

TEST_P(PoolVsReference, MaxForward) {
  const Pool2DGeometry &g = GetParam().g;
  auto x = randomTensor(inputSize(g), 11);
  std::vector<float> want(outputSize(g));
  ref::max_pool2d_forward(g, x.data(), want.data());
  for (bool portable : {false, true}) {
    PortableOnly mode(portable);
    std::vector<float> got(outputSize(g), -7.0f);
    direct::max_pool2d_forward(g, x.data(), got.data());
    EXPECT_TRUE(allClose(got, want, kTolerance)) << "portable=" << portable;
  }
}

TEST_P(PoolVsReference, MaxBackward) {
  const Pool2DGeometry &g = GetParam().g;
  expectMaxBackwardMatches(g, randomTensor(inputSize(g), 12), randomTensor(outputSize(g), 13));
}

// The indexed pair on plain tensors: the reference's output and indices, and from them
// the unindexed reference's dx, with and without the ReLU's gradient; ties as a ReLU
// leaves them in the first plane.
TEST_P(PoolVsReference, MaxIndexedForwardAndBackward) {
  const Pool2DGeometry &g = GetParam().g;
  auto x = randomTensor(inputSize(g), 14), dy = randomTensor(outputSize(g), 15);
  std::fill(x.begin(), x.begin() + g.H * g.W, 0.0f);
  std::vector<float> wantY(outputSize(g)), wantDx(inputSize(g)), wantReluDx(inputSize(g));
  std::vector<uint8_t> wantCodes(outputSize(g));
  ref::max_pool2d_indexed_forward(g, x.data(), wantY.data(), wantCodes.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantDx.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), wantReluDx.data(), /*reluGrad=*/true);
  for (bool portable : {false, true}) {
    PortableOnly mode(portable);
    std::vector<float> y(outputSize(g), -7.0f), dx(inputSize(g), -7.0f),
        reluDx(inputSize(g), -7.0f);
    std::vector<uint8_t> codes(outputSize(g), 0x55);
    direct::max_pool2d_indexed_forward(g, x.data(), y.data(), codes.data());
    EXPECT_EQ(y, wantY) << "portable=" << portable;
    EXPECT_EQ(codes, wantCodes) << "portable=" << portable;
    direct::max_pool2d_indexed_backward(g, codes.data(), dy.data(), dx.data());
    direct::max_pool2d_indexed_backward(g, codes.data(), dy.data(), reluDx.data(), true);
    EXPECT_TRUE(allClose(dx, wantDx, kTolerance)) << "portable=" << portable;
    EXPECT_TRUE(allClose(reluDx, wantReluDx, kTolerance)) << "portable=" << portable;
  }
}

TEST_P(PoolVsReference, AvgForward) {
  const Pool2DGeometry &g = GetParam().g;
  auto x = randomTensor(inputSize(g), 14);
  for (bool countIncludePad : {true, false}) {
    std::vector<float> want(outputSize(g)), got(outputSize(g), -7.0f);
    ref::avg_pool2d_forward(g, countIncludePad, x.data(), want.data());
    onednn::avg_pool2d_forward(g, countIncludePad, x.data(), got.data());
    EXPECT_TRUE(allClose(got, want, kTolerance)) << "count_include_pad=" << countIncludePad;
  }
}

TEST_P(PoolVsReference, AvgBackward) {
  const Pool2DGeometry &g = GetParam().g;
  auto dy = randomTensor(outputSize(g), 15);
  for (bool countIncludePad : {true, false}) {
    std::vector<float> want(inputSize(g)), got(inputSize(g), -7.0f);
    ref::avg_pool2d_backward(g, countIncludePad, dy.data(), want.data());
    onednn::avg_pool2d_backward(g, countIncludePad, dy.data(), got.data());
    EXPECT_TRUE(allClose(got, want, kTolerance)) << "count_include_pad=" << countIncludePad;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolVsReference, ::testing::ValuesIn(poolCases()),
                         [](const auto &info) { return info.param.name; });

// Ties are the norm after a ReLU (many exact zeros), so the two kernels must also agree
// on which tied element receives the gradient: the first in row-major window order.
TEST(PoolVsReferenceTies, MaxBackwardWithTiesPicksFirstMaximum) {
  const Pool2DGeometry g = poolGeometry(2, 3, 9, 8, 3, 2, 1, true);
  auto x = randomTensor(inputSize(g), 16);
  for (float &v : x)
    v = std::max(0.0f, std::round(v * 2.0f)); // values in {0, 1, 2}: many ties
  expectMaxBackwardMatches(g, x, randomTensor(outputSize(g), 17));
}

// A NaN that comes first in its window is the window's maximum (nothing compares greater);
// one that comes later is passed over. Both kernels follow that rule.
TEST(PoolVsReferenceTies, MaxForwardNaNFollowsTheReference) {
  const Pool2DGeometry g = poolGeometry(1, 2, 6, 40, 2, 2, 0, false);
  auto x = randomTensor(inputSize(g), 18);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x[0] = nan;          // first tap of window (0, 0) in plane 0
  x[3] = nan;          // second tap of window (0, 1): passed over
  x[6 * 40 + 41] = nan; // last tap of window (0, 0) in plane 1: passed over
  std::vector<float> want(outputSize(g));
  ref::max_pool2d_forward(g, x.data(), want.data());
  ASSERT_TRUE(std::isnan(want[0]));
  for (bool portable : {false, true}) {
    PortableOnly mode(portable);
    std::vector<float> got(outputSize(g), -7.0f);
    direct::max_pool2d_forward(g, x.data(), got.data());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << "output " << i << " portable=" << portable;
  }
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

struct BatchNormCase {
  std::string name;
  BatchNormGeometry g;
  double epsilon;
  float offset; // added to x: batch statistics must not assume a centred input
};

void PrintTo(const BatchNormCase &c, std::ostream *os) { *os << c.name; }

std::vector<BatchNormCase> batchNormCases() {
  return {
      {"N2C3S35", {2, 3, 35}, 1e-5, 0.0f},
      {"N3C4S99Offset", {3, 4, 99}, 1e-3, 3.0f},
      {"DenseLikeN7C5S1", {7, 5, 1}, 1e-5, -0.5f},
      // The LeafNetwork's first batch norm at batch 1 (32 channels of 62x62).
      {"LeafBatchNorm1Batch1", {1, 32, 62 * 62}, 1e-5, 0.5f},
      // Over 2^16 elements: the direct inference kernel's rows go over the threads.
      {"N4C8S4096Threaded", {4, 8, 4096}, 1e-5, 1.0f},
  };
}

class BatchNormVsReference : public ::testing::TestWithParam<BatchNormCase> {
protected:
  int64_t dataSize() const {
    const BatchNormGeometry &g = GetParam().g;
    return g.N * g.C * g.S;
  }
  std::vector<float> input(uint32_t seed) const {
    auto x = randomTensor(dataSize(), seed);
    for (float &v : x)
      v += GetParam().offset;
    return x;
  }
};

TEST_P(BatchNormVsReference, ForwardTraining) {
  const auto &[name, g, epsilon, offset] = GetParam();
  auto x = input(21), gamma = randomTensor(g.C, 22), beta = randomTensor(g.C, 23);
  std::vector<float> wantY(dataSize()), wantMean(g.C), wantVar(g.C);
  std::vector<float> gotY(dataSize(), -7.0f), gotMean(g.C, -7.0f), gotVar(g.C, -7.0f);
  ref::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), epsilon,
                                   wantY.data(), wantMean.data(), wantVar.data());
  onednn::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), epsilon,
                                      gotY.data(), gotMean.data(), gotVar.data());
  EXPECT_TRUE(allClose(gotY, wantY, kTolerance)) << "y";
  EXPECT_TRUE(allClose(gotMean, wantMean, kTolerance)) << "mean";
  EXPECT_TRUE(allClose(gotVar, wantVar, kTolerance)) << "var";
}

TEST_P(BatchNormVsReference, ForwardInference) {
  const auto &[name, g, epsilon, offset] = GetParam();
  auto x = input(24), gamma = randomTensor(g.C, 25), beta = randomTensor(g.C, 26);
  auto runningMean = randomTensor(g.C, 27), runningVar = randomTensor(g.C, 28, 0.5f, 1.5f);
  std::vector<float> want(dataSize()), got(dataSize(), -7.0f);
  ref::batch_norm_forward_inference(g, x.data(), gamma.data(), beta.data(), runningMean.data(),
                                    runningVar.data(), epsilon, want.data());
  onednn::batch_norm_forward_inference(g, x.data(), gamma.data(), beta.data(),
                                       runningMean.data(), runningVar.data(), epsilon,
                                       got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "onednn";
  std::fill(got.begin(), got.end(), -7.0f);
  direct::batch_norm_forward_inference(g, x.data(), gamma.data(), beta.data(),
                                       runningMean.data(), runningVar.data(), epsilon,
                                       got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "direct";
}

TEST_P(BatchNormVsReference, Backward) {
  const auto &[name, g, epsilon, offset] = GetParam();
  auto x = input(29), gamma = randomTensor(g.C, 30), beta = randomTensor(g.C, 31);
  auto dy = randomTensor(dataSize(), 32);
  std::vector<float> y(dataSize()), mean(g.C), var(g.C);
  ref::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), epsilon, y.data(),
                                   mean.data(), var.data());
  std::vector<float> wantDx(dataSize()), wantDgamma(g.C), wantDbeta(g.C);
  std::vector<float> gotDx(dataSize(), -7.0f), gotDgamma(g.C, -7.0f), gotDbeta(g.C, -7.0f);
  ref::batch_norm_backward(g, dy.data(), x.data(), gamma.data(), mean.data(), var.data(),
                           epsilon, wantDx.data(), wantDgamma.data(), wantDbeta.data());
  onednn::batch_norm_backward(g, dy.data(), x.data(), gamma.data(), mean.data(), var.data(),
                              epsilon, gotDx.data(), gotDgamma.data(), gotDbeta.data());
  EXPECT_TRUE(allClose(gotDx, wantDx, kTolerance)) << "dx";
  EXPECT_TRUE(allClose(gotDgamma, wantDgamma, kTolerance)) << "dgamma";
  EXPECT_TRUE(allClose(gotDbeta, wantDbeta, kTolerance)) << "dbeta";
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormVsReference, ::testing::ValuesIn(batchNormCases()),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Dense
//===----------------------------------------------------------------------===//

struct DenseCase {
  std::string name;
  int64_t M, K, units;
};

void PrintTo(const DenseCase &c, std::ostream *os) { *os << c.name; }

std::vector<DenseCase> denseCases() {
  return {
      {"M1K7U3", 1, 7, 3},
      {"M5K13U11", 5, 13, 11},
      {"M4K33U17", 4, 33, 17},
      // The LeafNetwork's first dense layer (flattened 128x13x13 -> 100) at batch 1 and
      // 32 (where the matmul form is the faster one on AVX-512 machines).
      {"LeafDense1Batch1", 1, 128 * 13 * 13, 100},
      {"LeafDense1Batch32", 32, 128 * 13 * 13, 100},
      // The Fashion-MNIST network's first two dense layers at batch 1, which
      // direct::dense_forward computes (the first over the threads).
      {"FashionDense1Batch1", 1, 1152, 100},
      {"FashionDense2Batch1", 1, 100, 10},
      // Two rows and units not a multiple of four: every block shape of the AVX2 path.
      {"M2K37U7", 2, 37, 7},
      {"M3K1152U102", 3, 1152, 102},
  };
}

class DenseVsReference : public ::testing::TestWithParam<DenseCase> {};

TEST_P(DenseVsReference, Forward) {
  const auto &[name, M, K, units] = GetParam();
  auto x = randomTensor(M * K, 41), w = randomTensor(units * K, 42), b = randomTensor(units, 43);
  std::vector<float> want(M * units), got(M * units, -7.0f);
  ref::dense_forward(M, K, units, x.data(), w.data(), b.data(), want.data());
  onednn::dense_forward(M, K, units, x.data(), w.data(), b.data(), got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "with bias";
  ref::dense_forward(M, K, units, x.data(), w.data(), nullptr, want.data());
  onednn::dense_forward(M, K, units, x.data(), w.data(), nullptr, got.data());
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "without bias";
  ref::dense_forward(M, K, units, x.data(), w.data(), b.data(), want.data(), /*relu=*/true);
  onednn::dense_forward(M, K, units, x.data(), w.data(), b.data(), got.data(), /*relu=*/true);
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "relu epilogue";
  for (float v : want)
    ASSERT_GE(v, 0.f);
  ref::dense_forward(M, K, units, x.data(), w.data(), b.data(), want.data(), DenseEpilogue::gelu);
  onednn::dense_forward(M, K, units, x.data(), w.data(), b.data(), got.data(),
                        DenseEpilogue::gelu);
  EXPECT_TRUE(allClose(got, want, kTolerance)) << "gelu epilogue";
  ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](float v) { return v < -0.01f; }))
      << "GELU keeps some negative values: the inputs reach them";
}

// The direct kernel takes the small layers (the NN table's choice); it computes any.
TEST_P(DenseVsReference, DirectForward) {
  const auto &[name, M, K, units] = GetParam();
  auto x = randomTensor(M * K, 61), w = randomTensor(units * K, 62), b = randomTensor(units, 63);
  for (bool portable : {false, true}) {
    const bool before = direct::use_portable_code(portable); // the AVX2 path and the other
    for (bool relu : {false, true})
      for (const float *bias : {static_cast<const float *>(b.data()), static_cast<const float *>(nullptr)}) {
        std::vector<float> want(M * units), got(M * units, -7.0f);
        ref::dense_forward(M, K, units, x.data(), w.data(), bias, want.data(), relu);
        direct::dense_forward(M, K, units, x.data(), w.data(), bias, got.data(), relu);
        EXPECT_TRUE(allClose(got, want, kTolerance))
            << (portable ? "portable" : "") << (relu ? ", relu" : "") << (bias ? ", bias" : "");
      }
    direct::use_portable_code(before);
  }
}

TEST(DenseSmall, TakesTheLayersBelowOneDNNsFixedCost) {
  EXPECT_TRUE(direct::dense_is_small(1, 100, 10, DenseEpilogue::relu));
  EXPECT_TRUE(direct::dense_is_small(1, 10, 10, {}));
  EXPECT_TRUE(direct::dense_is_small(1, 1152, 100, DenseEpilogue::relu)) << "460 KB of weights";
  EXPECT_FALSE(direct::dense_is_small(4, 1152, 100, DenseEpilogue::relu)) << "four rows";
  EXPECT_FALSE(direct::dense_is_small(32, 1152, 100, DenseEpilogue::relu)) << "a GEMM";
  EXPECT_FALSE(direct::dense_is_small(1, 128 * 13 * 13, 100, {})) << "8.7 MB of weights";
  EXPECT_FALSE(direct::dense_is_small(1, 10, 10, DenseEpilogue::gelu)) << "no GELU here";
}

// dense_forward keeps the faster of two forms per shape; each is checked on its own.
TEST_P(DenseVsReference, ForwardInBothForms) {
  const auto &[name, M, K, units] = GetParam();
  auto x = randomTensor(M * K, 51), w = randomTensor(units * K, 52), b = randomTensor(units, 53);
  for (onednn::DenseForm form : {onednn::DenseForm::inner_product, onednn::DenseForm::matmul}) {
    const char *what = form == onednn::DenseForm::matmul ? "matmul" : "inner product";
    for (bool relu : {false, true})
      for (const float *bias : {static_cast<const float *>(b.data()), static_cast<const float *>(nullptr)}) {
        std::vector<float> want(M * units), got(M * units, -7.0f);
        ref::dense_forward(M, K, units, x.data(), w.data(), bias, want.data(), relu);
        onednn::dense_forward_as(form, M, K, units, x.data(), w.data(), bias, got.data(), relu);
        EXPECT_TRUE(allClose(got, want, kTolerance))
            << what << (relu ? ", relu" : "") << (bias ? ", bias" : "");
      }
  }
}

TEST_P(DenseVsReference, Backward) {
  const auto &[name, M, K, units] = GetParam();
  auto dy = randomTensor(M * units, 44), x = randomTensor(M * K, 45),
       w = randomTensor(units * K, 46);
  std::vector<float> wantDx(M * K), wantDw(units * K), wantDb(units);
  std::vector<float> gotDx(M * K, -7.0f), gotDw(units * K, -7.0f), gotDb(units, -7.0f);
  ref::dense_backward(M, K, units, dy.data(), x.data(), w.data(), wantDx.data(), wantDw.data(),
                      wantDb.data());
  onednn::dense_backward(M, K, units, dy.data(), x.data(), w.data(), gotDx.data(),
                         gotDw.data(), gotDb.data());
  EXPECT_TRUE(allClose(gotDx, wantDx, kTolerance)) << "dx";
  EXPECT_TRUE(allClose(gotDw, wantDw, kTolerance)) << "dw";
  EXPECT_TRUE(allClose(gotDb, wantDb, kTolerance)) << "db";
  std::fill(gotDx.begin(), gotDx.end(), -7.0f);
  std::fill(gotDw.begin(), gotDw.end(), -7.0f);
  onednn::dense_backward(M, K, units, dy.data(), x.data(), w.data(), gotDx.data(),
                         gotDw.data(), nullptr);
  EXPECT_TRUE(allClose(gotDx, wantDx, kTolerance)) << "dx without db";
  EXPECT_TRUE(allClose(gotDw, wantDw, kTolerance)) << "dw without db";
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseVsReference, ::testing::ValuesIn(denseCases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
