//===- BatchNormActivationTest.cpp - training batch norm with its activation ---===//
//
// direct::batch_norm_forward_training and batch_norm_backward with the ReLU, the ReLU6
// or no activation against the reference batch norm followed by the activation (and
// the activation's gradient followed by the reference batch norm's), on random inputs
// with a mean far from zero, in the plain layout (sides that leave partial vectors)
// and both blocked ones, on this CPU's code and the portable code, with 1 to 3 threads.
// The backward is also checked against central differences of a loss over the forward.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <omp.h>
#include <string>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

using direct::NormActivation;
using dlc::Layout;

struct Case {
  std::string name;
  int64_t N, C, H, W;
  Layout layout;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::vector<Case> cases() {
  return {{"Plain", 3, 5, 9, 7, Layout::plain},
          {"PlainWide", 2, 3, 40, 41, Layout::plain},
          {"Blocked16", 3, 32, 6, 5, Layout::nChw16c},
          {"Blocked8", 2, 24, 7, 9, Layout::nChw8c},
          {"Blocked16Large", 2, 16, 60, 61, Layout::nChw16c}};
}

const char *nameOf(NormActivation a) {
  return a == NormActivation::relu ? "relu" : a == NormActivation::relu6 ? "relu6" : "none";
}

float activate(float v, NormActivation a) {
  if (a == NormActivation::none)
    return v;
  v = v > 0.0f ? v : 0.0f;
  return a == NormActivation::relu6 && v > 6.0f ? 6.0f : v;
}

bool passes(float z, NormActivation a) {
  return a == NormActivation::none || (z > 0.0f && (a == NormActivation::relu || z < 6.0f));
}

class BatchNormActivation : public ::testing::TestWithParam<Case> {};

TEST_P(BatchNormActivation, EqualsTheReferenceThenTheActivation) {
  const Case &c = GetParam();
  BatchNormGeometry plain{c.N, c.C, c.H * c.W};
  BatchNormGeometry g = plain;
  g.layout = c.layout;
  const int64_t n = c.N * c.C * c.H * c.W;
  // A mean of 3 and a spread of 4: both sides of 0 and of 6 after the scale and shift.
  const std::vector<float> x = randomTensor(n, 51, -1.0f, 7.0f),
                           gamma = randomTensor(c.C, 52, 0.5f, 4.0f),
                           beta = randomTensor(c.C, 53, -1.0f, 4.0f), dz = randomTensor(n, 54);
  const std::vector<float> xl = inLayout(x, c.N, c.C, c.H, c.W, Layout::plain, c.layout),
                           dzl = inLayout(dz, c.N, c.C, c.H, c.W, Layout::plain, c.layout);
  const int defaultTeam = omp_get_max_threads();
  for (NormActivation act : {NormActivation::none, NormActivation::relu, NormActivation::relu6}) {
    std::vector<float> wantY(static_cast<size_t>(n)), wantMean(static_cast<size_t>(c.C)),
        wantVar(static_cast<size_t>(c.C));
    ref::batch_norm_forward_training(plain, x.data(), gamma.data(), beta.data(), 1e-5, wantY.data(),
                                     wantMean.data(), wantVar.data());
    std::vector<float> z(wantY.size()), dy(wantY.size());
    int64_t masked = 0, capped = 0;
    for (size_t i = 0; i < z.size(); ++i) {
      z[i] = activate(wantY[i], act);
      dy[i] = passes(z[i], act) ? dz[i] : 0.0f;
      masked += !passes(z[i], act);
      capped += z[i] == 6.0f && act == NormActivation::relu6;
    }
    if (act != NormActivation::none) {
      EXPECT_GT(masked, n / 10) << "inputs that leave the activation little to mask";
    }
    if (act == NormActivation::relu6) {
      EXPECT_GT(capped, 0) << "no output reached 6";
    }
    std::vector<float> wantDx(static_cast<size_t>(n)), wantDgamma(static_cast<size_t>(c.C)),
        wantDbeta(static_cast<size_t>(c.C));
    ref::batch_norm_backward(plain, dy.data(), x.data(), gamma.data(), wantMean.data(),
                             wantVar.data(), 1e-5, wantDx.data(), wantDgamma.data(),
                             wantDbeta.data());
    const std::vector<float> zl = inLayout(z, c.N, c.C, c.H, c.W, Layout::plain, c.layout);
    for (bool portable : {false, true})
      for (int team : {1, 2, 3}) {
        SCOPED_TRACE(std::string(nameOf(act)) + (portable ? ", portable" : ", this CPU's code") +
                     ", " + std::to_string(team) + " threads");
        omp_set_num_threads(team);
        const bool before = direct::use_portable_code(portable);
        std::vector<float> y(static_cast<size_t>(n), -7.f), mean(static_cast<size_t>(c.C), -7.f),
            var(static_cast<size_t>(c.C), -7.f);
        direct::batch_norm_forward_training(g, xl.data(), gamma.data(), beta.data(), 1e-5, act,
                                            y.data(), mean.data(), var.data());
        std::vector<float> dx(static_cast<size_t>(n), -7.f), dgamma(static_cast<size_t>(c.C), -7.f),
            dbeta(static_cast<size_t>(c.C), -7.f);
        direct::batch_norm_backward(g, dzl.data(), zl.data(), act, xl.data(), gamma.data(),
                                    wantMean.data(), wantVar.data(), 1e-5, dx.data(), dgamma.data(),
                                    dbeta.data());
        // Writing the masked gradient too (for a shortcut) changes no bit of the others.
        std::vector<float> dx2(dx.size(), -7.f), dgamma2(dgamma.size(), -7.f),
            dbeta2(dbeta.size(), -7.f), masked(dx.size(), -7.f);
        direct::batch_norm_backward(g, dzl.data(), zl.data(), act, xl.data(), gamma.data(),
                                    wantMean.data(), wantVar.data(), 1e-5, dx2.data(),
                                    dgamma2.data(), dbeta2.data(), masked.data());
        direct::use_portable_code(before);
        EXPECT_EQ(dx2, dx);
        EXPECT_EQ(dgamma2, dgamma);
        EXPECT_EQ(dbeta2, dbeta);
        if (act != NormActivation::none) {
          EXPECT_EQ(inLayout(masked, c.N, c.C, c.H, c.W, c.layout, Layout::plain), dy);
        } else {
          EXPECT_EQ(masked, std::vector<float>(dx.size(), -7.f)) << "no activation: untouched";
        }
        omp_set_num_threads(defaultTeam);
        EXPECT_TRUE(allClose(mean, wantMean, 1e-6));
        EXPECT_TRUE(allClose(var, wantVar, 1e-6));
        EXPECT_TRUE(allClose(inLayout(y, c.N, c.C, c.H, c.W, c.layout, Layout::plain), z, 1e-5));
        EXPECT_TRUE(
            allClose(inLayout(dx, c.N, c.C, c.H, c.W, c.layout, Layout::plain), wantDx, 1e-5));
        EXPECT_TRUE(allClose(dgamma, wantDgamma, 1e-5));
        EXPECT_TRUE(allClose(dbeta, wantDbeta, 1e-5));
      }
  }
}

// With a residual (ResNet's shortcut) added before the activation, in the same pass.
TEST_P(BatchNormActivation, AddsAResidualBeforeTheActivation) {
  const Case &c = GetParam();
  BatchNormGeometry plain{c.N, c.C, c.H * c.W};
  BatchNormGeometry g = plain;
  g.layout = c.layout;
  const int64_t n = c.N * c.C * c.H * c.W;
  const std::vector<float> x = randomTensor(n, 81, -1.0f, 7.0f),
                           gamma = randomTensor(c.C, 82, 0.5f, 4.0f),
                           beta = randomTensor(c.C, 83, -1.0f, 4.0f),
                           r = randomTensor(n, 84, -3.0f, 3.0f);
  std::vector<float> wantY(static_cast<size_t>(n)), wantMean(static_cast<size_t>(c.C)),
      wantVar(static_cast<size_t>(c.C));
  ref::batch_norm_forward_training(plain, x.data(), gamma.data(), beta.data(), 1e-5, wantY.data(),
                                   wantMean.data(), wantVar.data());
  const std::vector<float> xl = inLayout(x, c.N, c.C, c.H, c.W, Layout::plain, c.layout),
                           rl = inLayout(r, c.N, c.C, c.H, c.W, Layout::plain, c.layout);
  const int defaultTeam = omp_get_max_threads();
  for (NormActivation act : {NormActivation::relu, NormActivation::relu6})
    for (bool portable : {false, true})
      for (int team : {1, 2}) {
        SCOPED_TRACE(std::string(nameOf(act)) + (portable ? ", portable" : ", this CPU's code") +
                     ", " + std::to_string(team) + " threads");
        std::vector<float> want(wantY.size());
        for (size_t i = 0; i < want.size(); ++i)
          want[i] = activate(wantY[i] + r[i], act);
        omp_set_num_threads(team);
        const bool before = direct::use_portable_code(portable);
        std::vector<float> y(static_cast<size_t>(n), -7.f), mean(static_cast<size_t>(c.C)),
            var(static_cast<size_t>(c.C));
        direct::batch_norm_forward_training(g, xl.data(), gamma.data(), beta.data(), 1e-5, act,
                                            y.data(), mean.data(), var.data(), rl.data());
        direct::use_portable_code(before);
        omp_set_num_threads(defaultTeam);
        EXPECT_TRUE(allClose(inLayout(y, c.N, c.C, c.H, c.W, c.layout, Layout::plain), want, 1e-5));
        EXPECT_TRUE(allClose(mean, wantMean, 1e-6));
      }
}

INSTANTIATE_TEST_SUITE_P(Kernels, BatchNormActivation, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

// The statistics come from one pass of sums shifted by one of each channel's values:
// data far from 0 (a mean of 1000, a spread of 1) keeps its variance, which sums of x
// and x^2 in float would cancel away. Against two passes in double.
TEST(BatchNormActivation, StatisticsOfDataFarFromZeroKeepTheirVariance) {
  for (Layout layout : {Layout::plain, Layout::nChw16c, Layout::nChw8c}) {
    SCOPED_TRACE(dlc::layout_name(layout));
    const int64_t N = 3, C = 16, H = 11, W = 13, S = H * W;
    BatchNormGeometry g{N, C, S};
    g.layout = layout;
    std::vector<float> x = randomTensor(N * C * S, 71, 999.0f, 1001.0f),
                       gamma(static_cast<size_t>(C), 1.0f), beta(static_cast<size_t>(C), 0.0f);
    std::vector<float> y(x.size()), mean(static_cast<size_t>(C)), var(static_cast<size_t>(C));
    direct::batch_norm_forward_training(g, inLayout(x, N, C, H, W, Layout::plain, layout).data(),
                                        gamma.data(), beta.data(), 1e-5, NormActivation::none,
                                        y.data(), mean.data(), var.data());
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0, squares = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t p = 0; p < S; ++p)
          sum += x[size_t((n * C + c) * S + p)];
      const double mu = sum / double(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t p = 0; p < S; ++p) {
          const double d = x[size_t((n * C + c) * S + p)] - mu;
          squares += d * d;
        }
      const double sigma2 = squares / double(N * S);
      EXPECT_NEAR(mean[size_t(c)], mu, 1e-4) << "channel " << c;
      EXPECT_NEAR(var[size_t(c)], sigma2, 1e-4 * sigma2) << "channel " << c;
      EXPECT_GT(sigma2, 0.3) << "a spread of 1 on each side";
    }
  }
}

// sum(weights * act(bn(x))) is differentiated through the batch statistics; central
// differences of it in double against dx, dgamma and dbeta of the fused backward.
TEST(BatchNormActivation, GradientMatchesFiniteDifferences) {
  const int64_t N = 2, C = 16, S = 5 * 4;
  BatchNormGeometry g{N, C, S};
  g.layout = Layout::nChw16c;
  BatchNormGeometry plain{N, C, S};
  std::vector<float> x = randomTensor(N * C * S, 61, -1.0f, 5.0f),
                     gamma = randomTensor(C, 62, 0.5f, 3.0f),
                     beta = randomTensor(C, 63, 0.0f, 3.0f), weights = randomTensor(N * C * S, 64);
  for (NormActivation act : {NormActivation::relu, NormActivation::relu6}) {
    SCOPED_TRACE(nameOf(act));
    auto loss = [&](const std::vector<float> &xs, const std::vector<float> &gs,
                    const std::vector<float> &bs) {
      std::vector<float> y(xs.size()), mean(static_cast<size_t>(C)), var(static_cast<size_t>(C));
      ref::batch_norm_forward_training(plain, xs.data(), gs.data(), bs.data(), 1e-5, y.data(),
                                       mean.data(), var.data());
      double total = 0;
      for (size_t i = 0; i < y.size(); ++i)
        total += double(weights[i]) * activate(y[i], act);
      return total;
    };
    std::vector<float> y(x.size()), mean(static_cast<size_t>(C)), var(static_cast<size_t>(C));
    const std::vector<float> xl = inLayout(x, N, C, 5, 4, Layout::plain, g.layout);
    direct::batch_norm_forward_training(g, xl.data(), gamma.data(), beta.data(), 1e-5, act,
                                        y.data(), mean.data(), var.data());
    const std::vector<float> dz = inLayout(weights, N, C, 5, 4, Layout::plain, g.layout);
    std::vector<float> dx(x.size()), dgamma(static_cast<size_t>(C)), dbeta(static_cast<size_t>(C));
    direct::batch_norm_backward(g, dz.data(), y.data(), act, xl.data(), gamma.data(), mean.data(),
                                var.data(), 1e-5, dx.data(), dgamma.data(), dbeta.data());
    const std::vector<float> dxPlain = inLayout(dx, N, C, 5, 4, g.layout, Layout::plain);
    const float step = 1e-2f;
    int64_t off = 0, total = 0;
    auto check = [&](std::vector<float> &param, const std::vector<float> &got) {
      for (size_t i = 0; i < param.size(); ++i, ++total) {
        const float kept = param[i];
        param[i] = kept + step;
        const double up = loss(x, gamma, beta);
        param[i] = kept - step;
        const double down = loss(x, gamma, beta);
        param[i] = kept;
        const double want = (up - down) / (2 * step);
        if (std::fabs(want - got[i]) > 2e-2 * std::max(1.0, std::fabs(want)))
          ++off;
      }
    };
    check(x, dxPlain);
    check(gamma, dgamma);
    check(beta, dbeta);
    // A step across a kink of the activation is rare; more than 2 % is not.
    EXPECT_LE(off * 50, total) << off << " of " << total << " entries differ";
  }
}

} // namespace

namespace {

// The kernels a batch_norm_activation region's step calls: dlc.batch_norm and
// dlc.batch_norm_backward with the `activation` attribute, fast and reference, against
// the reference batch norm and the activation one after the other.
TEST(BatchNormActivation, ThroughTheKernelTable) {
  dlc::register_builtin_kernels();
  const int64_t N = 2, C = 16, H = 6, W = 7, n = N * C * H * W;
  const dlc::Shape xShape{N, C, H, W}, cShape{C};
  const std::vector<float> x = randomTensor(n, 71, -1.0f, 7.0f),
                           gamma = randomTensor(C, 72, 0.5f, 4.0f),
                           beta = randomTensor(C, 73, -1.0f, 4.0f), dz = randomTensor(n, 74);
  BatchNormGeometry plain{N, C, H * W};
  for (const char *name : {"relu", "relu6"}) {
    const NormActivation act =
        std::string(name) == "relu" ? NormActivation::relu : NormActivation::relu6;
    std::vector<float> wantY(static_cast<size_t>(n)), wantMean(static_cast<size_t>(C)),
        wantVar(static_cast<size_t>(C));
    ref::batch_norm_forward_training(plain, x.data(), gamma.data(), beta.data(), 1e-5, wantY.data(),
                                     wantMean.data(), wantVar.data());
    std::vector<float> dy(wantY.size());
    for (size_t i = 0; i < wantY.size(); ++i) {
      wantY[i] = activate(wantY[i], act);
      dy[i] = passes(wantY[i], act) ? dz[i] : 0.0f;
    }
    std::vector<float> wantDx(static_cast<size_t>(n)), wantDgamma(static_cast<size_t>(C)),
        wantDbeta(static_cast<size_t>(C));
    ref::batch_norm_backward(plain, dy.data(), x.data(), gamma.data(), wantMean.data(),
                             wantVar.data(), 1e-5, wantDx.data(), wantDgamma.data(),
                             wantDbeta.data());
    for (bool reference : {false, true}) {
      SCOPED_TRACE(std::string(name) + (reference ? ", reference" : ", fast"));
      const dlc::KernelEntry *forward = dlc::find_kernel("dlc.batch_norm", dlc::cpu(0)),
                             *backward = dlc::find_kernel("dlc.batch_norm_backward", dlc::cpu(0));
      ASSERT_TRUE(forward && backward);
      dlc::Attrs attrs{{"training", true}, {"activation", std::string(name)}};
      std::vector<float> y(static_cast<size_t>(n)), mean(static_cast<size_t>(C)),
          var(static_cast<size_t>(C));
      dlc::KernelArgs k;
      k.device = dlc::cpu(0);
      k.attrs = &attrs;
      k.inputs = {{const_cast<float *>(x.data()), xShape},
                  {const_cast<float *>(gamma.data()), cShape},
                  {const_cast<float *>(beta.data()), cShape}};
      k.outputs = {{y.data(), xShape}, {mean.data(), cShape}, {var.data(), cShape}};
      (reference ? forward->reference : forward->fast)(k);
      EXPECT_TRUE(allClose(y, wantY, 1e-5));
      EXPECT_TRUE(allClose(mean, wantMean, 1e-6));
      EXPECT_TRUE(allClose(var, wantVar, 1e-6));
      std::vector<float> dx(static_cast<size_t>(n)), dgamma(static_cast<size_t>(C)),
          dbeta(static_cast<size_t>(C));
      dlc::Attrs backAttrs{{"activation", std::string(name)}};
      k.attrs = &backAttrs;
      k.inputs = {{const_cast<float *>(dz.data()), xShape},
                  {y.data(), xShape},
                  {const_cast<float *>(x.data()), xShape},
                  {const_cast<float *>(gamma.data()), cShape},
                  {mean.data(), cShape},
                  {var.data(), cShape}};
      k.outputs = {{dx.data(), xShape}, {dgamma.data(), cShape}, {dbeta.data(), cShape}};
      (reference ? backward->reference : backward->fast)(k);
      EXPECT_TRUE(allClose(dx, wantDx, 1e-5));
      EXPECT_TRUE(allClose(dgamma, wantDgamma, 1e-5));
      EXPECT_TRUE(allClose(dbeta, wantDbeta, 1e-5));
    }
  }
  // A name the kernels do not know is an error that names the op and what it expected.
  dlc::Attrs bad{{"training", true}, {"activation", std::string("gelu")}};
  std::vector<float> y(static_cast<size_t>(n)), mean(static_cast<size_t>(C)),
      var(static_cast<size_t>(C));
  dlc::KernelArgs k;
  k.device = dlc::cpu(0);
  k.attrs = &bad;
  k.inputs = {{const_cast<float *>(x.data()), xShape},
              {const_cast<float *>(gamma.data()), cShape},
              {const_cast<float *>(beta.data()), cShape}};
  k.outputs = {{y.data(), xShape}, {mean.data(), cShape}, {var.data(), cShape}};
  try {
    dlc::find_kernel("dlc.batch_norm", dlc::cpu(0))->fast(k);
    FAIL() << "an unknown activation ran";
  } catch (const dlc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("batch_norm: activation 'gelu', expected relu or relu6"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
