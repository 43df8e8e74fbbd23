//===- ReferenceKernelTest.cpp - hand-computed values of the reference kernels ===//
//
// The references are the oracle for everything else, so their conventions (padding in
// max and average pooling, tie-breaking, biased variance, label checks) are pinned here
// on inputs small enough to work out by hand.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"
#include "dlc/Core/Error.h"

#include <cmath>
#include <stdexcept>
#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

TEST(ReferenceKernel, ConvSumsTheWindow) {
  // x = [1 2 3; 4 5 6; 7 8 9], w = ones(2x2), b = 0.5
  const Conv2DGeometry g = convGeometry(1, 1, 3, 3, 1, 2, 2);
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 1, 1, 1}, b{0.5f}, y(4);
  ref::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{12.5f, 16.5f, 24.5f, 28.5f}));
}

TEST(ReferenceKernel, GroupedConvKeepsGroupsApart) {
  // Two groups of one channel each: output o only sees input channel o.
  const Conv2DGeometry g = convGeometry(1, 2, 1, 1, 2, 1, 1, 1, 0, 1, 2);
  std::vector<float> x{3, 5}, w{2, 10}, y(2);
  ref::conv2d_forward(g, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{6, 50}));
}

TEST(ReferenceKernel, MaxPoolPaddingNeverWins) {
  // All inputs negative: a zero from the padding must not become the maximum.
  const Pool2DGeometry g = poolGeometry(1, 1, 2, 2, 2, 1, 1, false);
  std::vector<float> x{-4, -3, -2, -1}, y(outputSize(g));
  ref::max_pool2d_forward(g, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{-4, -3, -3, -2, -1, -1, -2, -1, -1}));
}

TEST(ReferenceKernel, MaxPoolGradientGoesToFirstMaximum) {
  const Pool2DGeometry g = poolGeometry(1, 1, 2, 3, 2, 1, 0, false);
  std::vector<float> x{7, 7, 7, 7, 7, 7}, dy{1, 10}, dx(6);
  ref::max_pool2d_backward(g, x.data(), dy.data(), dx.data());
  // Window 0 covers columns 0-1 and window 1 columns 1-2; each picks its top-left.
  EXPECT_EQ(dx, (std::vector<float>{1, 10, 0, 0, 0, 0}));
}

TEST(ReferenceKernel, MaxPoolIndicesNameTheTapAndWhetherTheMaximumIsPositive) {
  // 2x2 windows, stride 1, padding 1, one plane of 2x2: nine windows; the corner
  // windows see one input, the centre all four. Taps count the padding.
  const Pool2DGeometry g = poolGeometry(1, 1, 2, 2, 2, 1, 1, false);
  std::vector<float> x{-4, 3, 3, 0}, y(outputSize(g));
  std::vector<uint8_t> codes(outputSize(g));
  ref::max_pool2d_indexed_forward(g, x.data(), y.data(), codes.data());
  EXPECT_EQ(y, (std::vector<float>{-4, 3, 3, 3, 3, 3, 3, 3, 0}));
  const uint8_t notPositive = dlc::kernels::pool_index::kNotPositive;
  // Window (0,0) holds x[0] at its tap 3 (bottom right), not positive; (1,0) holds
  // x[0] and x[2], the 3 at tap 3; (1,1) holds all four, the first 3 at tap 1; (2,2)
  // holds x[3] = 0 at tap 0, not positive.
  EXPECT_EQ(codes, (std::vector<uint8_t>{uint8_t(3 | notPositive), 3, 2, 3, 1, 0, 1, 0,
                                         uint8_t(0 | notPositive)}));
  std::vector<float> dy{1, 2, 3, 4, 5, 6, 7, 8, 9}, dx(4), want(4);
  ref::max_pool2d_indexed_backward(g, codes.data(), dy.data(), dx.data());
  ref::max_pool2d_backward(g, x.data(), dy.data(), want.data());
  EXPECT_EQ(dx, want);
  EXPECT_EQ(dx, (std::vector<float>{1, 2 + 3 + 5 + 6, 4 + 7 + 8, 9}));
  ref::max_pool2d_indexed_backward(g, codes.data(), dy.data(), dx.data(), /*reluGrad=*/true);
  EXPECT_EQ(dx, (std::vector<float>{0, 2 + 3 + 5 + 6, 4 + 7 + 8, 0}));
}

TEST(ReferenceKernel, MaxPoolIndicesMarkWindowsThatCoverNoInput) {
  // 2x2 windows 3 apart over a 2x2 plane, four outputs (as ceil mode can make them):
  // only window (0, 0) covers input; the others start past it.
  const Pool2DGeometry g{1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 0, 0};
  std::vector<float> x{1, 2, 3, 4}, y(4);
  std::vector<uint8_t> codes(4);
  ref::max_pool2d_indexed_forward(g, x.data(), y.data(), codes.data());
  const uint8_t empty = dlc::kernels::pool_index::kEmpty;
  EXPECT_EQ(codes, (std::vector<uint8_t>{3, empty, empty, empty}));
  EXPECT_EQ(y, (std::vector<float>{4, 0, 0, 0}));
  std::vector<float> dy{1, 2, 3, 4}, dx(4);
  ref::max_pool2d_indexed_backward(g, codes.data(), dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 1}));
}

TEST(ReferenceKernel, AvgPoolDivisors) {
  const Pool2DGeometry g = poolGeometry(1, 1, 2, 2, 2, 1, 1, false);
  std::vector<float> x{4, 4, 4, 4}, y(outputSize(g));
  // Corner windows hold one input element, edges two, the centre four.
  ref::avg_pool2d_forward(g, /*countIncludePad=*/true, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
  ref::avg_pool2d_forward(g, /*countIncludePad=*/false, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{4, 4, 4, 4, 4, 4, 4, 4, 4}));
}

TEST(ReferenceKernel, CeilModeAvgPoolDividesByTheWindowInsideThePadding) {
  // H = W = 4, 3x3 windows, stride 2, padding 1, ceil: OH = 3, and the last window
  // [3, 6) runs past the padded input [-1, 5). With count_include_pad, MXNet, PyTorch
  // and Caffe divide by its part inside, 2x2 for the corner (it was 3x3 = 9).
  const Pool2DGeometry g = poolGeometry(1, 1, 4, 4, 3, 2, 1, true);
  ASSERT_EQ(g.OH, 3);
  std::vector<float> x(16, 1.0f), y(outputSize(g)), dy(outputSize(g), 1.0f), dx(16);
  ref::avg_pool2d_forward(g, /*countIncludePad=*/true, x.data(), y.data());
  // Window (0, 0) covers 2x2 ones of 3x3; (0, 2) 2x1 of 3x2; (2, 2) 1x1 of 2x2.
  EXPECT_FLOAT_EQ(y[0], 4.0f / 9.0f);
  EXPECT_FLOAT_EQ(y[2], 2.0f / 6.0f);
  EXPECT_FLOAT_EQ(y[8], 1.0f / 4.0f);
  // The gradient spreads dy over the same divisors: input (3, 3) is in windows
  // (1, 1) (/9), (1, 2) (/6), (2, 1) (/6) and (2, 2) (/4).
  ref::avg_pool2d_backward(g, true, dy.data(), dx.data());
  EXPECT_FLOAT_EQ(dx[15], 1.0f / 9 + 1.0f / 6 + 1.0f / 6 + 1.0f / 4);
}

TEST(ReferenceKernel, CeilModeWindowPastTheInputIsEmpty) {
  // H = 6, window 2, stride 3, ceil: OH = 3 and the third window starts at row 6, past
  // the input. It yields 0 and takes no gradient, whatever the pooling.
  const Pool2DGeometry g = poolGeometry(1, 1, 6, 6, 2, 3, 0, true);
  ASSERT_EQ(g.OH, 3);
  std::vector<float> x = randomTensor(inputSize(g), 5, 1.0f, 2.0f), y(outputSize(g));
  std::vector<float> dy(outputSize(g), 1.0f), dx(inputSize(g));
  ref::max_pool2d_forward(g, x.data(), y.data());
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[8], 0.0f);
  ref::avg_pool2d_forward(g, true, x.data(), y.data());
  EXPECT_EQ(y[2], 0.0f);
  ref::avg_pool2d_forward(g, false, x.data(), y.data());
  EXPECT_EQ(y[2], 0.0f);
  // Rows/columns 2 and 5 fall in no window at all.
  ref::max_pool2d_backward(g, x.data(), dy.data(), dx.data());
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(dx[2 * 6 + i] + dx[5 * 6 + i] + dx[i * 6 + 2] + dx[i * 6 + 5], 0.0f);
}

TEST(ReferenceKernel, BatchNormUsesBiasedVariance) {
  const BatchNormGeometry g{1, 1, 4};
  std::vector<float> x{1, 2, 3, 4}, gamma{2}, beta{1}, y(4), mean(1), var(1);
  ref::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), 0.0, y.data(),
                                   mean.data(), var.data());
  EXPECT_FLOAT_EQ(mean[0], 2.5f);
  EXPECT_FLOAT_EQ(var[0], 1.25f); // sum of squared deviations 5, divided by 4
  EXPECT_FLOAT_EQ(y[0], 2.0f * (1 - 2.5f) / std::sqrt(1.25f) + 1.0f);
}

TEST(ReferenceKernel, SoftmaxCrossEntropyValues) {
  // Uniform logits: every class has probability 1/C and the loss is log C.
  const int64_t C = 5;
  std::vector<float> uniform(C, 0.3f), loss(1);
  std::vector<int64_t> label{3};
  ref::softmax_cross_entropy_forward(1, C, uniform.data(), label.data(), loss.data());
  EXPECT_FLOAT_EQ(loss[0], std::log(5.0f));
}

TEST(ReferenceKernel, SoftmaxCrossEntropyIsStableForHugeLogits) {
  // exp(1000) overflows; subtracting the row max keeps everything finite.
  std::vector<float> logits{1000.0f, 0.0f, 1000.0f, -1000.0f}, loss(2), dlogits(4);
  std::vector<int64_t> labels{1, 0};
  std::vector<float> dloss{1.0f, 1.0f};
  ref::softmax_cross_entropy_forward(2, 2, logits.data(), labels.data(), loss.data());
  EXPECT_FLOAT_EQ(loss[0], 1000.0f);
  EXPECT_FLOAT_EQ(loss[1], 0.0f);
  ref::softmax_cross_entropy_backward(2, 2, dloss.data(), logits.data(), labels.data(),
                                      dlogits.data());
  EXPECT_EQ(dlogits, (std::vector<float>{1.0f, -1.0f, 0.0f, 0.0f}));
}

::testing::AssertionResult mentions(const std::string &message, const std::string &part) {
  if (message.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << message << "\" does not mention \"" << part
                                       << "\"";
}

// Runs `call` expecting ValueError and returns its message.
template <typename Call> std::string outOfRangeMessage(Call call) {
  try {
    call();
  } catch (const dlc::ValueError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError thrown";
  return "";
}

TEST(ReferenceKernel, SoftmaxCrossEntropyRejectsLabelOutOfRange) {
  const int64_t N = 3, C = 4;
  std::vector<float> logits = randomTensor(N * C, 9), loss(N), dloss(N, 1.0f), dlogits(N * C);
  std::vector<int64_t> tooLarge{0, 3, 4}, negative{-1, 0, 0};

  std::string message = outOfRangeMessage([&] {
    ref::softmax_cross_entropy_forward(N, C, logits.data(), tooLarge.data(), loss.data());
  });
  EXPECT_TRUE(mentions(message, "label 4"));
  EXPECT_TRUE(mentions(message, "row 2"));
  EXPECT_TRUE(mentions(message, "[0, 4)"));

  message = outOfRangeMessage([&] {
    ref::softmax_cross_entropy_backward(N, C, dloss.data(), logits.data(), negative.data(),
                                        dlogits.data());
  });
  EXPECT_TRUE(mentions(message, "label -1"));
  EXPECT_TRUE(mentions(message, "row 0"));
  EXPECT_TRUE(mentions(message, "4 classes"));
}

} // namespace
