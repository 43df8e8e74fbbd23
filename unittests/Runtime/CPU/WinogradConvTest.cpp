//===- WinogradConvTest.cpp - oneDNN's Winograd convolutions against the reference ===//
//
// A compiled program may ask a 3x3, stride-1 convolution for Winograd (the op's
// `algorithm`). Forward (with bias, with the ReLU epilogue), input gradient and weight
// gradient are checked against the reference on random inputs, in the plain and both
// blocked layouts. Winograd transforms tiles, so it rounds more than the direct kernel:
// the tolerance is 1e-4 of the tensor's scale instead of 1e-5. Where oneDNN has a
// Winograd kernel (AVX-512), the result must also differ from the direct kernel's bits,
// which shows the algorithm took effect; elsewhere the direct kernel runs, bit for bit,
// except where dlc's own F(4x4, 3x3) computes on AVX2 (nChw8c, 64 channels and more,
// all three directions: WinogradAvx2.h), which must differ from the direct bits too.
// Called without a memo, as here, the forward runs oneDNN's training kernel, which
// transforms the weights itself; with one (WeightsMemo below) its inference kernel, on
// weights transformed into the memo.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include "dlc/Runtime/CPU/Winograd2x2.h"
#include "dlc/Runtime/CPU/WinogradAvx2.h"

#include "dlc/Runtime/Engine/Kernel.h"

#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

using dlc::Layout;
using dlc::op_enums::ConvAlgorithm;

constexpr double kWinogradTolerance = 1e-4;

/// Whether oneDNN computes Winograd on this CPU for activations in `layout`: its
/// kernels are AVX-512 ones, on 16-channel blocks (a plain tensor is reordered to them;
/// nChw8c, AVX2's layout, meets the direct kernel).
bool winogradComputes(Layout layout) {
  return onednn::preferred_blocked_layout() == Layout::nChw16c && layout != Layout::nChw8c;
}

/// Whether a forward asked for Winograd computes it: oneDNN's, or dlc's own where oneDNN
/// has none (`g` with its layouts).
bool forwardWinogradComputes(const Conv2DGeometry &g, bool relu) {
  return winogradComputes(g.inputLayout) || winograd_avx2::applies(g, relu);
}

struct WinogradCase {
  std::string name;
  Conv2DGeometry g;
  Layout layout; ///< of x/dx and y/dy
};

void PrintTo(const WinogradCase &c, std::ostream *os) { *os << c.name; }

std::vector<WinogradCase> winogradCases() {
  std::vector<WinogradCase> cases;
  for (Layout layout : {Layout::plain, Layout::nChw16c, Layout::nChw8c}) {
    std::string suffix = layout == Layout::plain     ? "Plain"
                         : layout == Layout::nChw16c ? "Blocked16"
                                                     : "Blocked8";
    cases.push_back({"Pad1Square" + suffix, convGeometry(2, 32, 14, 14, 32, 3, 3, 1, 1), layout});
    cases.push_back({"NoPadWide" + suffix, convGeometry(1, 16, 9, 13, 48, 3, 3, 1, 0), layout});
    // Enough channels for dlc's own kernel on nChw8c; odd sides leave partial tiles
    // (9 rows: two 4x4 tiles and one row of a third).
    cases.push_back({"Pad1Odd128" + suffix, convGeometry(2, 128, 9, 7, 144, 3, 3, 1, 1), layout});
    // The fewest channels dlc's own kernel takes on nChw8c; 6x6 in two tiles a side.
    cases.push_back({"Pad1Square64" + suffix, convGeometry(2, 64, 6, 6, 64, 3, 3, 1, 1), layout});
  }
  return cases;
}

class WinogradVsReference : public ::testing::TestWithParam<WinogradCase> {
protected:
  /// The geometry with `algorithm`, both sides in the case's layout.
  Conv2DGeometry geometry(ConvAlgorithm algorithm) const {
    Conv2DGeometry g = GetParam().g;
    g.inputLayout = g.outputLayout = GetParam().layout;
    g.algorithm = algorithm;
    return g;
  }
  std::vector<float> toLayout(const std::vector<float> &plain, int64_t C, int64_t H,
                              int64_t W) const {
    return inLayout(plain, GetParam().g.N, C, H, W, Layout::plain, GetParam().layout);
  }
  std::vector<float> toPlain(const std::vector<float> &t, int64_t C, int64_t H,
                             int64_t W) const {
    return inLayout(t, GetParam().g.N, C, H, W, GetParam().layout, Layout::plain);
  }
};

TEST_P(WinogradVsReference, Forward) {
  const Conv2DGeometry &g = GetParam().g;
  auto x = randomTensor(inputSize(g), 11), w = randomTensor(weightSize(g), 12),
       b = randomTensor(g.O, 13);
  auto xl = toLayout(x, g.C, g.H, g.W);
  for (bool relu : {false, true}) {
    std::vector<float> want(outputSize(g)), winograd(outputSize(g), -7.f),
        direct(outputSize(g), -7.f);
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), want.data(), relu);
    onednn::conv2d_forward(geometry(ConvAlgorithm::winograd), xl.data(), w.data(), b.data(),
                           winograd.data(), relu);
    onednn::conv2d_forward(geometry(ConvAlgorithm::direct), xl.data(), w.data(), b.data(),
                           direct.data(), relu);
    winograd = toPlain(winograd, g.O, g.OH, g.OW);
    direct = toPlain(direct, g.O, g.OH, g.OW);
    EXPECT_TRUE(allClose(winograd, want, kWinogradTolerance)) << (relu ? "relu" : "plain");
    EXPECT_EQ(winograd != direct, forwardWinogradComputes(geometry(ConvAlgorithm::winograd), relu))
        << "Winograd's rounding shows where oneDNN or dlc has it, and only there";
  }
}

TEST_P(WinogradVsReference, BackwardData) {
  const Conv2DGeometry &g = GetParam().g;
  auto dy = randomTensor(outputSize(g), 14), w = randomTensor(weightSize(g), 15);
  auto dyl = toLayout(dy, g.O, g.OH, g.OW);
  std::vector<float> want(inputSize(g)), winograd(inputSize(g), -7.f), direct(inputSize(g), -7.f);
  ref::conv2d_backward_data(g, dy.data(), w.data(), want.data());
  onednn::conv2d_backward_data(geometry(ConvAlgorithm::winograd), dyl.data(), w.data(),
                               winograd.data());
  onednn::conv2d_backward_data(geometry(ConvAlgorithm::direct), dyl.data(), w.data(),
                               direct.data());
  winograd = toPlain(winograd, g.C, g.H, g.W);
  direct = toPlain(direct, g.C, g.H, g.W);
  EXPECT_TRUE(allClose(winograd, want, kWinogradTolerance));
  EXPECT_EQ(winograd != direct,
            winogradComputes(GetParam().layout) ||
                winograd_avx2::appliesToBackwardData(geometry(ConvAlgorithm::winograd)));
}

TEST_P(WinogradVsReference, BackwardFilter) {
  const Conv2DGeometry &g = GetParam().g;
  auto dy = randomTensor(outputSize(g), 16), x = randomTensor(inputSize(g), 17);
  auto dyl = toLayout(dy, g.O, g.OH, g.OW), xl = toLayout(x, g.C, g.H, g.W);
  std::vector<float> wantW(weightSize(g)), wantB(g.O);
  std::vector<float> winogradW(weightSize(g), -7.f), winogradB(g.O, -7.f),
      directW(weightSize(g), -7.f);
  ref::conv2d_backward_filter(g, dy.data(), x.data(), wantW.data(), wantB.data());
  onednn::conv2d_backward_filter(geometry(ConvAlgorithm::winograd), dyl.data(), xl.data(),
                                 winogradW.data(), winogradB.data());
  onednn::conv2d_backward_filter(geometry(ConvAlgorithm::direct), dyl.data(), xl.data(),
                                 directW.data(), nullptr);
  EXPECT_TRUE(allClose(winogradW, wantW, kWinogradTolerance)) << "dw";
  EXPECT_TRUE(allClose(winogradB, wantB, kWinogradTolerance)) << "db";
  EXPECT_EQ(winogradW != directW,
            winogradComputes(GetParam().layout) ||
                winograd_avx2::appliesToBackwardFilter(geometry(ConvAlgorithm::winograd)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradVsReference, ::testing::ValuesIn(winogradCases()),
                         [](const auto &info) { return info.param.name; });

// A shape Winograd has no transform for (stride 2): asked for it, the kernel computes
// directly, bit for bit, instead of failing: a model file compiled on one machine runs
// on any other.
TEST(WinogradFallback, StridedConvolutionRunsTheDirectKernel) {
  Conv2DGeometry g = convGeometry(2, 16, 11, 11, 16, 3, 3, 2, 1);
  auto x = randomTensor(inputSize(g), 18), w = randomTensor(weightSize(g), 19);
  std::vector<float> winograd(outputSize(g), -7.f), direct(outputSize(g), -7.f);
  Conv2DGeometry asked = g;
  asked.algorithm = ConvAlgorithm::winograd;
  onednn::conv2d_forward(asked, x.data(), w.data(), nullptr, winograd.data());
  onednn::conv2d_forward(g, x.data(), w.data(), nullptr, direct.data());
  EXPECT_EQ(winograd, direct);
}

// A WeightsMemo keeps the weights as the kernel prepared them for oneDNN (reordered into
// its blocked layout, or Winograd-transformed): a call with the memo's generation and
// weights buffer skips the preparation (so it computes with what the memo holds, even
// though the buffer's values changed: a program reuses a generation only while the
// weights did not change); a new generation, or another buffer, prepares them again.
// The same for dlc's own Winograd kernels: F(4x4, 3x3) (nChw8c, 64 channels or more), where the
// CPU has AVX2, and F(3x3, 2x2) for 2x2 windows, on every CPU.
TEST(WeightsMemo, KeptWhileTheGenerationAndTheBufferHold) {
  const Layout preferred = onednn::preferred_blocked_layout();
  ASSERT_NE(preferred, Layout::plain) << "oneDNN's blocked kernels need AVX2 or AVX-512";
  struct MemoCase {
    Layout layout;
    int64_t channels;
    ConvAlgorithm algorithm;
    std::string what;
    int64_t window = 3;
  };
  for (const MemoCase &c :
       {MemoCase{preferred, 16, ConvAlgorithm::direct, "direct"},
        MemoCase{preferred, 16, ConvAlgorithm::winograd, "winograd"},
        MemoCase{Layout::nChw8c, 128, ConvAlgorithm::winograd, "dlc's winograd"},
        MemoCase{preferred, 16, ConvAlgorithm::winograd, "dlc's 2x2 winograd", 2}}) {
    const Layout layout = c.layout;
    const ConvAlgorithm algorithm = c.algorithm;
    const std::string &what = c.what;
    Conv2DGeometry plain = convGeometry(2, c.channels, 10, 10, c.channels, c.window, c.window,
                                        1, c.window == 3 ? 1 : 0);
    Conv2DGeometry g = plain;
    g.inputLayout = g.outputLayout = layout;
    g.algorithm = algorithm;
    auto x = randomTensor(inputSize(g), 21), first = randomTensor(weightSize(g), 22),
         second = randomTensor(weightSize(g), 23);
    auto xb = inLayout(x, g.N, g.C, g.H, g.W, Layout::plain, layout);
    auto convolve = [&](const std::vector<float> &w, uint64_t generation,
                        dlc::KernelMemo &memo) {
      std::vector<float> y(outputSize(g), -7.f);
      onednn::conv2d_forward(g, xb.data(), w.data(), nullptr, y.data(), false,
                             {&memo, generation});
      return inLayout(y, g.N, g.O, g.OH, g.OW, layout, Layout::plain);
    };
    auto reference = [&](const std::vector<float> &w) {
      std::vector<float> y(outputSize(g));
      ref::conv2d_forward(plain, x.data(), w.data(), nullptr, y.data());
      return y;
    };
    dlc::KernelMemo memo;
    std::vector<float> weights = first;
    std::vector<float> y1 = convolve(weights, 1, memo);
    EXPECT_TRUE(allClose(y1, reference(first), kWinogradTolerance)) << what;
    weights = second; // same buffer (same capacity: no reallocation), new values
    EXPECT_EQ(convolve(weights, 1, memo), y1) << what << ": generation 1 keeps the first weights";
    EXPECT_TRUE(allClose(convolve(weights, 2, memo), reference(second), kWinogradTolerance))
        << what << ": generation 2 prepares them again";
    std::vector<float> other = first; // another buffer, the same generation
    EXPECT_TRUE(allClose(convolve(other, 2, memo), reference(first), kWinogradTolerance))
        << what << ": another weights buffer is prepared again";
    if (c.channels == 128 && winograd_avx2::applies(g, false)) {
      EXPECT_EQ(memo.bytes, size_t(36 * 128 * 128) * sizeof(float))
          << what << ": the memo holds the 36 transformed weight matrices";
    }
    if (c.window == 2) {
      ASSERT_TRUE(winograd_2x2::applies(g, false));
      EXPECT_EQ(memo.bytes, size_t(16 * 16 * 16) * sizeof(float))
          << what << ": the memo holds the 16 transformed weight matrices";
    }
  }
}

} // namespace
