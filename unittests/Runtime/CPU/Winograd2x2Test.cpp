//===- Winograd2x2Test.cpp - dlc's F(3x3, 2x2) convolution against the reference ===//
//
// A compiled program asks 2x2, stride-1 convolutions for Winograd (the op's
// `algorithm`): forward (with and without bias and the ReLU), data gradient and weight
// gradient (with and without the bias's) are checked against the reference on random
// inputs, in both blocked layouts, with
// padding 0 and 1, sides that leave partial tiles and more tiles than one block holds;
// on the CPU's own vector code and on the portable code (use_portable_code). Both
// gradients are also checked by finite differences of the Winograd forward. The
// convolution entry points route to it (bit for bit) and leave what it does not
// compute to oneDNN's direct kernel.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include "dlc/Runtime/CPU/Winograd2x2.h"

#include <omp.h>
#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

using dlc::Layout;
using dlc::op_enums::ConvAlgorithm;

// Its transforms add and halve, so it rounds about as the direct sum does.
constexpr double kTolerance = 1e-5;

struct Case {
  std::string name;
  Conv2DGeometry g; ///< plain; the layout below goes on both sides
  Layout layout;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> all;
  for (Layout layout : {Layout::nChw16c, Layout::nChw8c}) {
    const std::string suffix = layout == Layout::nChw16c ? "Blocked16" : "Blocked8";
    all.push_back({"NoPad" + suffix, convGeometry(2, 32, 14, 14, 48, 2, 2, 1, 0), layout});
    all.push_back({"Pad1" + suffix, convGeometry(1, 16, 10, 10, 32, 2, 2, 1, 1), layout});
    // Partial tiles on both sides (13 and 9 outputs: 5 and 3 tiles, the last ones short).
    all.push_back({"OddSides" + suffix, convGeometry(2, 16, 14, 10, 16, 2, 2, 1, 0), layout});
    // 3 x 7 x 7 = 147 tiles: three whole blocks of 48 and a short one.
    all.push_back({"ManyBlocks" + suffix, convGeometry(3, 16, 20, 20, 80, 2, 2, 1, 0), layout});
  }
  return all;
}

class Winograd2x2VsReference : public ::testing::TestWithParam<Case> {
protected:
  /// The case's convolution asked for Winograd, the case's layout on both sides.
  static Conv2DGeometry asked() {
    Conv2DGeometry g = GetParam().g;
    g.inputLayout = g.outputLayout = GetParam().layout;
    g.algorithm = ConvAlgorithm::winograd;
    return g;
  }
  /// An activation of the case's batch, `channels` x `rows` x `columns`, from plain
  /// into the case's layout (or back).
  static std::vector<float> moved(const std::vector<float> &t, int64_t channels, int64_t rows,
                                  int64_t columns, bool intoCaseLayout) {
    const Layout layout = GetParam().layout;
    return inLayout(t, GetParam().g.N, channels, rows, columns,
                    intoCaseLayout ? Layout::plain : layout,
                    intoCaseLayout ? layout : Layout::plain);
  }
};

TEST_P(Winograd2x2VsReference, Forward) {
  const Conv2DGeometry &g = GetParam().g;
  ASSERT_TRUE(winograd_2x2::applies(asked(), ConvEpilogue(true)));
  auto x = randomTensor(inputSize(g), 31), w = randomTensor(weightSize(g), 32),
       b = randomTensor(g.O, 33);
  auto xl = moved(x, g.C, g.H, g.W, true);
  for (bool portable : {false, true})
    for (bool relu : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE(std::string(portable ? "portable" : "this CPU's code") +
                     (relu ? ", relu" : "") + (bias ? ", bias" : ""));
        const float *bp = bias ? b.data() : nullptr;
        std::vector<float> want(outputSize(g)), got(outputSize(g), -7.f),
            routed(outputSize(g), -7.f);
        ref::conv2d_forward(g, x.data(), w.data(), bp, want.data(), relu);
        const bool before = direct::use_portable_code(portable);
        winograd_2x2::forward(asked(), xl.data(), w.data(), bp, got.data(), ConvEpilogue(relu),
                              WeightsMemo());
        onednn::conv2d_forward(asked(), xl.data(), w.data(), bp, routed.data(), relu);
        direct::use_portable_code(before);
        EXPECT_EQ(routed, got) << "conv2d_forward asked for Winograd runs this kernel";
        EXPECT_TRUE(allClose(moved(got, g.O, g.OH, g.OW, false), want, kTolerance));
      }
}

TEST_P(Winograd2x2VsReference, BackwardData) {
  const Conv2DGeometry &g = GetParam().g;
  ASSERT_TRUE(winograd_2x2::appliesToBackwardData(asked()));
  auto dy = randomTensor(outputSize(g), 34), w = randomTensor(weightSize(g), 35);
  auto dyl = moved(dy, g.O, g.OH, g.OW, true);
  std::vector<float> want(inputSize(g));
  ref::conv2d_backward_data(g, dy.data(), w.data(), want.data());
  for (bool portable : {false, true}) {
    SCOPED_TRACE(portable ? "portable" : "this CPU's code");
    std::vector<float> got(inputSize(g), -7.f), routed(inputSize(g), -7.f);
    const bool before = direct::use_portable_code(portable);
    winograd_2x2::backward_data(asked(), dyl.data(), w.data(), got.data());
    onednn::conv2d_backward_data(asked(), dyl.data(), w.data(), routed.data());
    direct::use_portable_code(before);
    EXPECT_EQ(routed, got) << "conv2d_backward_data asked for Winograd runs this kernel";
    EXPECT_TRUE(allClose(moved(got, g.C, g.H, g.W, false), want, kTolerance));
  }
}

TEST_P(Winograd2x2VsReference, BackwardFilter) {
  const Conv2DGeometry &g = GetParam().g;
  const int defaultTeam = omp_get_max_threads();
  ASSERT_TRUE(winograd_2x2::appliesToBackwardFilter(asked()));
  auto dy = randomTensor(outputSize(g), 41), x = randomTensor(inputSize(g), 42);
  auto dyl = moved(dy, g.O, g.OH, g.OW, true), xl = moved(x, g.C, g.H, g.W, true);
  std::vector<float> wantW(weightSize(g)), wantB(g.O);
  ref::conv2d_backward_filter(g, dy.data(), x.data(), wantW.data(), wantB.data());
  // The tiles' blocks split over teams of 1, 2 and 3 threads, each part summing its own.
  for (int team : {1, 2, 3})
    for (bool portable : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE(std::string(portable ? "portable" : "this CPU's code") +
                     (bias ? ", bias" : "") + ", " + std::to_string(team) + " threads");
        omp_set_num_threads(team);
        std::vector<float> gotW(weightSize(g), -7.f), routedW(weightSize(g), -7.f), gotB(g.O, -7.f),
            routedB(g.O, -7.f);
        const bool before = direct::use_portable_code(portable);
        winograd_2x2::backward_filter(asked(), dyl.data(), xl.data(), gotW.data(),
                                      bias ? gotB.data() : nullptr);
        onednn::conv2d_backward_filter(asked(), dyl.data(), xl.data(), routedW.data(),
                                       bias ? routedB.data() : nullptr);
        direct::use_portable_code(before);
        omp_set_num_threads(defaultTeam);
        EXPECT_EQ(routedW, gotW) << "conv2d_backward_filter asked for Winograd runs this kernel";
        EXPECT_TRUE(allClose(gotW, wantW, kTolerance));
        if (bias) {
          EXPECT_EQ(routedB, gotB);
          EXPECT_TRUE(allClose(gotB, wantB, kTolerance));
        } else {
          EXPECT_EQ(gotB, std::vector<float>(g.O, -7.f)) << "no bias gradient asked, none written";
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Winograd2x2VsReference, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

/// sum(r . y) for y = conv2d(x, w) (+ b) by the Winograd forward: the loss both gradient
/// checks differentiate.
double weightedOutput(const Conv2DGeometry &g, const std::vector<float> &x,
                      const std::vector<float> &w, const float *b, const std::vector<float> &r) {
  std::vector<float> y(outputSize(g));
  winograd_2x2::forward(g, x.data(), w.data(), b, y.data(), ConvEpilogue(), WeightsMemo());
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i)
    sum += double(y[i]) * r[i];
  return sum;
}

/// The central difference of `loss` in element i of `at`, steps of h.
template <typename Loss>
double centralDifference(const std::vector<float> &at, int64_t i, float h, Loss loss) {
  std::vector<float> plus = at, minus = at;
  plus[size_t(i)] += h;
  minus[size_t(i)] -= h;
  return (loss(plus) - loss(minus)) / (2 * h);
}

/// A 2x2 convolution of 16 channels each way on 7x8, asked for Winograd in nChw16c.
Conv2DGeometry smallWinograd(int64_t batch, int64_t pad) {
  Conv2DGeometry g = convGeometry(batch, 16, 7, 8, 16, 2, 2, 1, pad);
  g.inputLayout = g.outputLayout = Layout::nChw16c;
  g.algorithm = ConvAlgorithm::winograd;
  return g;
}

// Both gradients against central differences of sum(r . conv(x, w) + b), computed by the
// Winograd kernels: linear in each, so the differences are exact up to rounding.
TEST(Winograd2x2Gradient, DataGradientMatchesFiniteDifferences) {
  for (int64_t pad : {0, 1}) {
    SCOPED_TRACE("padding " + std::to_string(pad));
    const Conv2DGeometry g = smallWinograd(1, pad);
    auto x = randomTensor(inputSize(g), 36), w = randomTensor(weightSize(g), 37),
         r = randomTensor(outputSize(g), 38);
    std::vector<float> dx(inputSize(g));
    winograd_2x2::backward_data(g, r.data(), w.data(), dx.data());
    for (int64_t i = 0; i < inputSize(g); i += 37) {
      const double numeric = centralDifference(x, i, 0.25f, [&](const std::vector<float> &v) {
        return weightedOutput(g, v, w, nullptr, r);
      });
      EXPECT_NEAR(dx[size_t(i)], numeric, 1e-4 * (1 + std::abs(numeric))) << "element " << i;
    }
  }
}

TEST(Winograd2x2Gradient, WeightGradientMatchesFiniteDifferences) {
  for (int64_t pad : {0, 1}) {
    SCOPED_TRACE("padding " + std::to_string(pad));
    const Conv2DGeometry g = smallWinograd(2, pad);
    auto x = randomTensor(inputSize(g), 43), w = randomTensor(weightSize(g), 44),
         b = randomTensor(g.O, 45), r = randomTensor(outputSize(g), 46);
    std::vector<float> dw(weightSize(g)), db(g.O);
    winograd_2x2::backward_filter(g, r.data(), x.data(), dw.data(), db.data());
    for (int64_t i = 0; i < weightSize(g); i += 13) {
      const double numeric = centralDifference(w, i, 0.25f, [&](const std::vector<float> &v) {
        return weightedOutput(g, x, v, b.data(), r);
      });
      EXPECT_NEAR(dw[size_t(i)], numeric, 1e-4 * (1 + std::abs(numeric))) << "weight " << i;
    }
    for (int64_t o = 0; o < g.O; o += 5) {
      const double numeric = centralDifference(b, o, 0.25f, [&](const std::vector<float> &v) {
        return weightedOutput(g, x, w, v.data(), r);
      });
      EXPECT_NEAR(db[size_t(o)], numeric, 1e-4 * (1 + std::abs(numeric))) << "bias " << o;
    }
  }
}

// What the kernel does not compute goes to oneDNN's direct kernel, bit for bit: a plain
// layout, stride 2, padding 2, the capped ReLU.
TEST(Winograd2x2Fallback, OtherConvolutionsRunTheDirectKernel) {
  struct Fallback {
    std::string what;
    Conv2DGeometry g;
    Layout layout;
    ConvEpilogue epilogue;
  };
  for (const Fallback &f :
       {Fallback{"plain", convGeometry(2, 16, 9, 9, 16, 2, 2, 1, 0), Layout::plain, {}},
        Fallback{"stride 2", convGeometry(2, 16, 9, 9, 16, 2, 2, 2, 0), Layout::nChw16c, {}},
        Fallback{"padding 2", convGeometry(2, 16, 9, 9, 16, 2, 2, 1, 2), Layout::nChw16c, {}},
        Fallback{"relu6", convGeometry(2, 16, 9, 9, 16, 2, 2, 1, 0), Layout::nChw16c,
                 ConvEpilogue::capped(6.0f)}}) {
    SCOPED_TRACE(f.what);
    Conv2DGeometry g = f.g;
    g.inputLayout = g.outputLayout = f.layout;
    Conv2DGeometry asked = g;
    asked.algorithm = ConvAlgorithm::winograd;
    EXPECT_FALSE(winograd_2x2::applies(asked, f.epilogue));
    auto x = randomTensor(inputSize(g), 39), w = randomTensor(weightSize(g), 40);
    std::vector<float> winograd(outputSize(g), -7.f), directY(outputSize(g), -7.f);
    onednn::conv2d_forward(asked, x.data(), w.data(), nullptr, winograd.data(), f.epilogue);
    onednn::conv2d_forward(g, x.data(), w.data(), nullptr, directY.data(), f.epilogue);
    EXPECT_EQ(winograd, directY);
  }
}

} // namespace
