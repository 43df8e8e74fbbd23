//===- NNOpsTest.cpp - eager NN ops: wiring, fast vs reference, gradients ----===//
//
// The kernels themselves are tested in unittests/Runtime/CPU; these tests check what
// the eager layer adds: argument order and attributes reach the kernels correctly
// (gradients against finite differences through the public API), fast and reference
// agree through dispatch, and bad calls give clear errors.
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

#include "dlc/Hybridize/CompiledFunction.h"
#include "dlc/Frontend/OpRegistry.h"

#include <algorithm>
#include <functional>
#include <random>

using namespace dlc;
using dlc::testing::expectGradient;
using dlc::testing::randomTensor;

namespace {

void expectFastMatchesReference(const std::function<std::vector<Tensor>()> &run,
                                const char *what) {
  std::vector<Tensor> fast = run();
  use_reference_kernels(true);
  std::vector<Tensor> reference = run();
  use_reference_kernels(false);
  for (size_t k = 0; k < fast.size(); ++k) {
    std::vector<float> f = fast[k].to_vector<float>(), r = reference[k].to_vector<float>();
    ASSERT_EQ(f.size(), r.size()) << what;
    for (size_t i = 0; i < f.size(); ++i)
      ASSERT_NEAR(f[i], r[i], 1e-5 * std::max(1.f, std::abs(r[i]))) << what << " #" << k;
  }
}

} // namespace

TEST(NNOps, ConvolutionGradientsThroughTheApi) {
  npx::ConvOptions options;
  options.stride = {2, 1};
  options.padding = {1, 0};
  options.groups = 1;
  Tensor x = randomTensor({2, 3, 5, 4}, 1), w = randomTensor({4, 3, 3, 2}, 2);
  Tensor b = randomTensor({4}, 3);
  Tensor y = npx::convolution(x, w, b, options);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3, 3}));
  Tensor r = randomTensor(y.shape(), 4);
  expectGradient(x, npx::convolution_backward_data(r, w, x.shape(), options),
                 [&](const Tensor &v) { return npx::convolution(v, w, b, options); }, r, "dx");
  expectGradient(w, npx::convolution_backward_filter(r, x, w.shape(), options),
                 [&](const Tensor &v) { return npx::convolution(x, v, b, options); }, r, "dw");
  expectGradient(b, np::sum(r, {0, 2, 3}),
                 [&](const Tensor &v) { return npx::convolution(x, w, v, options); }, r, "db");
  expectFastMatchesReference(
      [&] {
        return std::vector<Tensor>{npx::convolution(x, w, b, options),
                                   npx::convolution_backward_data(r, w, x.shape(), options),
                                   npx::convolution_backward_filter(r, x, w.shape(), options)};
      },
      "conv");
}

// The weight and bias gradients of one call are the separate ops' results, and the
// bias one is the finite-difference gradient.
TEST(NNOps, ConvolutionWeightAndBiasGradientsTogether) {
  npx::ConvOptions options;
  options.stride = {1, 2};
  options.padding = {0, 1};
  Tensor x = randomTensor({2, 3, 5, 6}, 21), w = randomTensor({5, 3, 2, 3}, 22),
         b = randomTensor({5}, 23);
  Tensor r = randomTensor(npx::convolution(x, w, b, options).shape(), 24);
  npx::ConvWeightGrads grads = npx::convolution_backward_weights(r, x, w.shape(), options);
  expectGradient(b, grads.bias,
                 [&](const Tensor &v) { return npx::convolution(x, w, v, options); }, r, "db");
  expectGradient(w, grads.weight,
                 [&](const Tensor &v) { return npx::convolution(x, v, b, options); }, r, "dw");
  expectFastMatchesReference(
      [&] {
        npx::ConvWeightGrads g = npx::convolution_backward_weights(r, x, w.shape(), options);
        return std::vector<Tensor>{g.weight, g.bias, np::sum(r, {0, 2, 3})};
      },
      "conv weight and bias gradients");
  // Blocked activations (16 channels and more) take the same path to the same values.
  Tensor wide = randomTensor({2, 16, 6, 5}, 25), kernel = randomTensor({32, 16, 2, 2}, 26);
  Tensor dy = randomTensor({2, 32, 5, 4}, 27);
  expectFastMatchesReference(
      [&] {
        npx::ConvWeightGrads g = npx::convolution_backward_weights(
            npx::relu(npx::convolution(wide, kernel, Tensor())) * dy, wide, kernel.shape());
        return std::vector<Tensor>{g.weight, g.bias};
      },
      "blocked conv weight and bias gradients");
}

// Conv2D(activation='relu') as one op: the values and gradients of relu(conv), eagerly
// and when hybridize traces it (as two ops, which the compiler fuses again).
TEST(NNOps, ConvolutionWithFusedReluEqualsReluOfConvolution) {
  npx::ConvOptions fused;
  fused.relu = true;
  Tensor x = randomTensor({2, 16, 7, 6}, 31), w = randomTensor({32, 16, 3, 3}, 32),
         b = randomTensor({32}, 33);
  Tensor want = npx::relu(npx::convolution(x, w, b));
  Tensor got = npx::convolution(x, w, b, fused);
  std::vector<float> g = got.to_vector<float>(), e = want.to_vector<float>();
  ASSERT_EQ(g.size(), e.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], e[i], 1e-5 * std::max(1.f, std::abs(e[i]))) << "element " << i;
  EXPECT_TRUE(std::count(e.begin(), e.end(), 0.f) > 0) << "some outputs are clamped";

  // Gradients: those of the two ops (each checked against finite differences above and
  // in ReluBackwardMatchesItsDecomposition; the kinks of a ReLU next to a convolution's
  // many terms defeat a finite-difference check of the composition itself).
  Tensor r = randomTensor(got.shape(), 34);
  auto gradients = [&](bool fuse) {
    std::vector<Tensor> leaves{x.detach(), w.detach(), b.detach()};
    for (Tensor &leaf : leaves)
      leaf.attach_grad();
    {
      autograd::Record record;
      Tensor y = fuse ? npx::convolution(leaves[0], leaves[1], leaves[2], fused)
                      : npx::relu(npx::convolution(leaves[0], leaves[1], leaves[2]));
      (y * r).backward();
    }
    std::vector<std::vector<float>> grads;
    for (Tensor &leaf : leaves)
      grads.push_back(leaf.grad().to_vector<float>());
    return grads;
  };
  std::vector<std::vector<float>> viaFused = gradients(true), viaTwoOps = gradients(false);
  for (size_t k = 0; k < viaFused.size(); ++k)
    for (size_t i = 0; i < viaFused[k].size(); ++i)
      ASSERT_NEAR(viaFused[k][i], viaTwoOps[k][i],
                  1e-5 * std::max(1.f, std::abs(viaTwoOps[k][i])))
          << "gradient of input #" << k << ", element " << i;
  expectFastMatchesReference([&] { return std::vector<Tensor>{npx::convolution(x, w, b, fused)}; },
                             "fused relu");

  CompiledFunction compiled("conv_relu", [&](const Tensor &v) {
    return npx::convolution(v, w, b, fused);
  }, [](Device) { return std::vector<BoundParameter>{}; });
  std::vector<float> c = compiled(x).to_vector<float>();
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_NEAR(c[i], e[i], 1e-5 * std::max(1.f, std::abs(e[i]))) << "compiled, element " << i;
  EXPECT_NE(compiled.traced_ir().find("= dlc.relu "), std::string::npos)
      << "the trace records the ReLU as its own op";
}

// The transposed convolution against its definition, written as the scatter it is
// (each input element adds its weight window into the output), for strides, padding,
// dilation, groups and output padding; the output shape follows MXNet's formula.
TEST(NNOps, DeconvolutionIsTheScatterOfItsWeightWindows) {
  struct Case {
    Shape x, w;
    npx::DeconvOptions options;
  };
  auto make = [](std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                 std::array<int64_t, 2> dilation, int64_t groups,
                 std::array<int64_t, 2> outputPadding) {
    npx::DeconvOptions o;
    o.conv.stride = stride;
    o.conv.padding = padding;
    o.conv.dilation = dilation;
    o.conv.groups = groups;
    o.output_padding = outputPadding;
    return o;
  };
  const Case cases[] = {
      {{2, 3, 4, 5}, {3, 4, 3, 3}, make({1, 1}, {0, 0}, {1, 1}, 1, {0, 0})},
      {{2, 4, 5, 3}, {4, 3, 4, 4}, make({2, 2}, {1, 1}, {1, 1}, 1, {1, 0})}, // DCGAN-like
      {{1, 6, 4, 4}, {6, 2, 3, 2}, make({3, 2}, {1, 0}, {2, 1}, 3, {2, 1})},
      {{2, 4, 3, 3}, {4, 1, 3, 3}, make({2, 2}, {1, 1}, {1, 1}, 4, {0, 0})}, // depthwise
  };
  for (const Case &c : cases) {
    const npx::ConvOptions &conv = c.options.conv;
    Tensor x = randomTensor(c.x, 31), w = randomTensor(c.w, 32);
    Tensor b = randomTensor({c.w[1] * conv.groups}, 33);
    Tensor y = npx::deconvolution(x, w, b, c.options);
    int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], Og = c.w[1], KH = c.w[2],
            KW = c.w[3], Cg = C / conv.groups;
    int64_t OH = (H - 1) * conv.stride[0] - 2 * conv.padding[0] + conv.dilation[0] * (KH - 1) +
                 c.options.output_padding[0] + 1;
    int64_t OW = (W - 1) * conv.stride[1] - 2 * conv.padding[1] + conv.dilation[1] * (KW - 1) +
                 c.options.output_padding[1] + 1;
    ASSERT_EQ(y.shape(), (Shape{N, Og * conv.groups, OH, OW}));
    std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>(),
                       bs = b.to_vector<float>();
    std::vector<double> want(size_t(N * Og * conv.groups * OH * OW));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < Og * conv.groups; ++o)
        for (int64_t i = 0; i < OH * OW; ++i)
          want[size_t((n * Og * conv.groups + o) * OH * OW + i)] = bs[size_t(o)];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t v = 0; v < W; ++v)
            for (int64_t og = 0; og < Og; ++og)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  int64_t oh = h * conv.stride[0] - conv.padding[0] + kh * conv.dilation[0];
                  int64_t ow = v * conv.stride[1] - conv.padding[1] + kw * conv.dilation[1];
                  if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
                    continue;
                  int64_t o = (ci / Cg) * Og + og;
                  want[size_t(((n * Og * conv.groups + o) * OH + oh) * OW + ow)] +=
                      double(xs[size_t(((n * C + ci) * H + h) * W + v)]) *
                      ws[size_t(((ci * Og + og) * KH + kh) * KW + kw)];
                }
    std::vector<float> got = y.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i])))
          << "element " << i << " of deconvolution " << shape_rules::str(c.x) << " * "
          << shape_rules::str(c.w);
  }
  // Shapes and settings that do not fit are refused by name.
  npx::DeconvOptions bad;
  bad.conv.stride = {2, 2};
  bad.output_padding = {2, 0};
  EXPECT_THROW(npx::deconvolution(randomTensor({1, 2, 3, 3}, 1), randomTensor({2, 2, 3, 3}, 2),
                                  Tensor(), bad),
               ValueError);
  try {
    npx::deconvolution(randomTensor({1, 2, 3, 3}, 1), randomTensor({3, 2, 3, 3}, 2), Tensor());
    FAIL() << "3 weight rows for 2 input channels";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("deconvolution"), std::string::npos) << e.what();
  }
}

// Layer, instance and group norm against their definitions in double precision: each
// normalized slice has mean beta and standard deviation |gamma| (up to eps).
TEST(NNOps, LayerInstanceAndGroupNormsAgainstTheirDefinitions) {
  Shape shape{2, 6, 3, 4};
  Tensor x = randomTensor(shape, 51) * 3.0 + 1.0;
  std::vector<float> xs = x.to_vector<float>();
  const double eps = 1e-5;
  // Standardizes `xs` over the elements of each slice; `slice(i)` names element i's slice
  // and `channel(i)` its gamma/beta index.
  auto reference = [&](const std::function<int64_t(size_t)> &slice,
                       const std::function<int64_t(size_t)> &channel, int64_t slices,
                       const std::vector<float> &gamma, const std::vector<float> &beta) {
    std::vector<double> sum(static_cast<size_t>(slices)), squares(sum.size()), count(sum.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      sum[size_t(slice(i))] += xs[i];
      count[size_t(slice(i))] += 1;
    }
    for (size_t i = 0; i < xs.size(); ++i) {
      double d = xs[i] - sum[size_t(slice(i))] / count[size_t(slice(i))];
      squares[size_t(slice(i))] += d * d;
    }
    std::vector<double> out(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      size_t s = size_t(slice(i));
      double mean = sum[s] / count[s], var = squares[s] / count[s];
      out[i] = (xs[i] - mean) / std::sqrt(var + eps) * gamma[size_t(channel(i))] +
               beta[size_t(channel(i))];
    }
    return out;
  };
  auto expectNear = [](const Tensor &got, const std::vector<double> &want, const char *what) {
    std::vector<float> g = got.to_vector<float>();
    ASSERT_EQ(g.size(), want.size()) << what;
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], want[i], 2e-5 * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
  };
  std::vector<float> g4 = {0.5f, -1.5f, 2.f, 1.f}, b4 = {0.1f, 0.2f, -0.3f, 0.4f};
  expectNear(npx::layer_norm(x, np::array(g4), np::array(b4)),
             reference([](size_t i) { return int64_t(i / 4); }, [](size_t i) { return int64_t(i % 4); },
                       2 * 6 * 3, g4, b4),
             "layer_norm (last axis)");
  std::vector<float> g6 = {0.5f, -1.5f, 2.f, 1.f, 0.7f, 1.2f}, b6 = {0.1f, 0.2f, -0.3f, 0.4f, 0.f, 1.f};
  expectNear(npx::layer_norm(x, np::array(g6), np::array(b6), 1),
             reference([](size_t i) { return int64_t((i / 72) * 12 + i % 12); },
                       [](size_t i) { return int64_t((i / 12) % 6); }, 2 * 12, g6, b6),
             "layer_norm (axis 1)");
  expectNear(npx::instance_norm(x, np::array(g6), np::array(b6)),
             reference([](size_t i) { return int64_t(i / 12); },
                       [](size_t i) { return int64_t((i / 12) % 6); }, 12, g6, b6),
             "instance_norm");
  std::vector<float> g3 = {0.5f, -1.5f, 2.f}, b3 = {0.1f, 0.2f, -0.3f};
  expectNear(npx::group_norm(x, np::array(g3), np::array(b3), 3),
             reference([](size_t i) { return int64_t(i / 24); },
                       [](size_t i) { return int64_t((i / 24) % 3); }, 6, g3, b3),
             "group_norm");
  EXPECT_THROW(npx::group_norm(x, Tensor(), Tensor(), 4), ShapeError); // 6 channels
  EXPECT_THROW(npx::layer_norm(x, np::array(g6), Tensor()), ShapeError); // 6 for 4
  EXPECT_THROW(npx::layer_norm(x, Tensor(), Tensor(), 4), ShapeError);   // no axis 4
}

// Masked softmax against a loop over rows: masked elements and fully masked rows give 0
// (log: -inf), the rest a softmax of the kept ones at the temperature; the mask
// broadcasts (a (1, 5) padding mask over (3, 5) scores) and any axis works.
TEST(NNOps, MaskedSoftmaxKeepsOnlyTheUnmaskedElements) {
  Tensor x = randomTensor({3, 5}, 96) * 4.0;
  std::vector<float> xs = x.to_vector<float>();
  std::vector<int64_t> keep = {1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1};
  Tensor mask = np::array(keep).reshape({3, 5}) > np::zeros({3, 5}, DType::i64);
  const double temperature = 2.0;
  std::vector<float> y = npx::masked_softmax(x, mask, -1, temperature).to_vector<float>();
  std::vector<float> logY = npx::masked_log_softmax(x, mask, 1, temperature).to_vector<float>();
  for (int64_t r = 0; r < 3; ++r) {
    double total = 0;
    for (int64_t c = 0; c < 5; ++c)
      if (keep[size_t(r * 5 + c)])
        total += std::exp(xs[size_t(r * 5 + c)] / temperature);
    for (int64_t c = 0; c < 5; ++c) {
      size_t i = size_t(r * 5 + c);
      double want = keep[i] ? std::exp(xs[i] / temperature) / total : 0.0;
      EXPECT_NEAR(y[i], want, 1e-6) << "row " << r << ", column " << c;
      if (keep[i])
        EXPECT_NEAR(logY[i], std::log(want), 1e-5) << "row " << r << ", column " << c;
      else
        EXPECT_TRUE(std::isinf(logY[i]) && logY[i] < 0) << "row " << r << ", column " << c;
    }
  }
  // A broadcast mask along axis 0.
  Tensor columns = np::array(std::vector<int64_t>{1, 1, 0}).reshape({3, 1}) >
                   np::zeros({3, 1}, DType::i64);
  std::vector<float> byColumn = npx::masked_softmax(x, columns, 0).to_vector<float>();
  for (int64_t c = 0; c < 5; ++c) {
    double a = std::exp(xs[size_t(c)]), b = std::exp(xs[size_t(5 + c)]);
    EXPECT_NEAR(byColumn[size_t(c)], a / (a + b), 1e-6);
    EXPECT_EQ(byColumn[size_t(10 + c)], 0.f);
  }
  EXPECT_THROW(npx::masked_softmax(x, x, -1), DTypeError);
  EXPECT_THROW(npx::masked_softmax(x, mask, -1, 0.0), ValueError);
}

// dlc.layer_norm's fast kernels (float32 vector lanes, row chunks for gamma's and beta's
// gradients) against the reference's double sums: over the last axis of many rows and a
// middle axis, in float32 and bfloat16; and its statistics are the rows' own.
TEST(NNOps, LayerNormFastKernelsMatchTheReference) {
  for (auto [shape, axis] : {std::pair<Shape, int64_t>{{3, 70, 200}, -1}, {{4, 9, 5}, 1}}) {
    const int64_t n = shape[size_t(axis < 0 ? axis + 3 : axis)];
    Tensor x = randomTensor(shape, 91) * 3.0 + 1.0, dy = randomTensor(shape, 92);
    Tensor gamma = randomTensor({n}, 93), beta = randomTensor({n}, 94);
    for (DType dtype : {DType::f32, DType::bf16}) {
      Tensor xt = x.astype(dtype), dyt = dy.astype(dtype);
      auto run = [&] {
        npx::LayerNormResult r = npx::layer_norm_with_stats(xt, gamma, beta, axis);
        npx::LayerNormGrads g = npx::layer_norm_backward(dyt, xt, gamma, r.mean, r.var, axis);
        return std::vector<Tensor>{r.output, r.mean, r.var, g.input, g.gamma, g.beta};
      };
      if (dtype == DType::f32) {
        expectFastMatchesReference(run, "layer_norm, float32");
        continue;
      }
      // bfloat16 results: float32 and double sums may round to neighbouring values.
      std::vector<Tensor> fast = run();
      use_reference_kernels(true);
      std::vector<Tensor> reference = run();
      use_reference_kernels(false);
      for (size_t k = 0; k < fast.size(); ++k) {
        std::vector<float> f = fast[k].astype(DType::f32).to_vector<float>(),
                           r = reference[k].astype(DType::f32).to_vector<float>();
        for (size_t i = 0; i < f.size(); ++i)
          ASSERT_NEAR(f[i], r[i], 8e-3 * std::max(1.f, std::abs(r[i])))
              << "layer_norm, bfloat16, result " << k << " at " << i;
      }
    }
    npx::LayerNormResult r = npx::layer_norm_with_stats(x, gamma, beta, axis);
    int64_t a = axis < 0 ? axis + 3 : axis;
    Tensor centred = x - np::mean(x, {a}, /*keepdims=*/true);
    std::vector<float> mean = np::mean(x, {a}).to_vector<float>(),
                       var = np::mean(centred * centred, {a}).to_vector<float>();
    std::vector<float> gotMean = r.mean.to_vector<float>(), gotVar = r.var.to_vector<float>();
    ASSERT_EQ(gotMean.size(), mean.size());
    for (size_t i = 0; i < mean.size(); ++i) {
      ASSERT_NEAR(gotMean[i], mean[i], 1e-5) << "row " << i;
      ASSERT_NEAR(gotVar[i], var[i], 1e-4 * var[i]) << "row " << i;
    }
  }
  Tensor x = randomTensor({2, 3}, 95);
  EXPECT_THROW(npx::layer_norm_with_stats(x, np::ones({3}, DType::f16), np::zeros({3})),
               DTypeError);
  EXPECT_THROW(npx::layer_norm_backward(x, x, np::ones({3}), np::zeros({3}), np::ones({2})),
               ShapeError); // statistics of 2 rows
}

// pad against numpy's definition, read index by index: constant fills, edge clamps,
// reflect mirrors without repeating the edge; on 2 axes at once and at the widest
// reflection (size - 1).
TEST(NNOps, PadFillsClampsAndMirrors) {
  Tensor x = randomTensor({2, 3, 4, 5}, 61);
  std::vector<float> xs = x.to_vector<float>();
  struct Case {
    npx::PadMode mode;
    std::vector<int64_t> widths;
  };
  const Case cases[] = {
      {npx::PadMode::constant, {0, 0, 1, 0, 2, 1, 0, 3}},
      {npx::PadMode::edge, {0, 0, 0, 0, 2, 3, 1, 2}},
      {npx::PadMode::reflect, {0, 0, 0, 0, 3, 1, 2, 4}},
      {npx::PadMode::reflect, {1, 1, 0, 0, 0, 0, 1, 1}},
  };
  for (const Case &c : cases) {
    Tensor y = npx::pad(x, c.mode, c.widths, 0.5);
    Shape out = x.shape();
    for (size_t d = 0; d < 4; ++d)
      out[d] += c.widths[2 * d] + c.widths[2 * d + 1];
    ASSERT_EQ(y.shape(), out);
    std::vector<float> ys = y.to_vector<float>();
    // Where output index i of axis d reads from in the input (-1: the constant).
    auto source = [&](size_t d, int64_t i) -> int64_t {
      int64_t n = x.shape()[d], j = i - c.widths[2 * d];
      if (j >= 0 && j < n)
        return j;
      if (c.mode == npx::PadMode::constant)
        return -1;
      if (c.mode == npx::PadMode::edge)
        return j < 0 ? 0 : n - 1;
      return j < 0 ? -j : 2 * (n - 1) - j;
    };
    size_t flat = 0;
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t h = 0; h < out[2]; ++h)
          for (int64_t w = 0; w < out[3]; ++w, ++flat) {
            int64_t sa = source(0, a), sb = source(1, b), sh = source(2, h), sw = source(3, w);
            float want = sa < 0 || sb < 0 || sh < 0 || sw < 0
                             ? 0.5f
                             : xs[size_t(((sa * 3 + sb) * 4 + sh) * 5 + sw)];
            ASSERT_EQ(ys[flat], want) << "mode " << int(c.mode) << " at " << a << "," << b
                                      << "," << h << "," << w;
          }
  }
  EXPECT_THROW(npx::pad(x, npx::PadMode::reflect, {0, 0, 0, 0, 4, 0, 0, 0}), ShapeError);
  EXPECT_THROW(npx::pad(x, npx::PadMode::edge, {0, 0, 1, 1}), ShapeError);
  EXPECT_THROW(npx::pad(x, npx::PadMode::constant, {0, 0, 0, 0, -1, 0, 0, 0}), ValueError);
}

// Bilinear resizing against the interpolation formula, up and down, with and without
// aligned corners.
TEST(NNOps, BilinearResizeInterpolatesBetweenTheFourNearestPixels) {
  Tensor x = randomTensor({2, 3, 4, 5}, 71);
  std::vector<float> xs = x.to_vector<float>();
  for (bool align : {true, false})
    for (auto [oh, ow] : {std::pair<int64_t, int64_t>{7, 9}, {3, 2}, {1, 1}}) {
      std::vector<float> ys = npx::bilinear_resize(x, oh, ow, align).to_vector<float>();
      ASSERT_EQ(ys.size(), size_t(6 * oh * ow));
      auto source = [&](int64_t i, int64_t in, int64_t out) {
        if (align)
          return out > 1 ? double(i) * (in - 1) / (out - 1) : 0.0;
        return std::max(0.0, (i + 0.5) * in / out - 0.5);
      };
      for (int64_t p = 0; p < 6; ++p)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double sy = source(i, 4, oh), sx = source(j, 5, ow);
            int64_t y0 = std::min<int64_t>(int64_t(sy), 3), x0 = std::min<int64_t>(int64_t(sx), 4);
            int64_t y1 = std::min<int64_t>(y0 + 1, 3), x1 = std::min<int64_t>(x0 + 1, 4);
            double fy = sy - y0, fx = sx - x0;
            auto at = [&](int64_t r, int64_t c) { return double(xs[size_t((p * 4 + r) * 5 + c)]); };
            double want = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                          fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
            ASSERT_NEAR(ys[size_t((p * oh + i) * ow + j)], want, 1e-5)
                << (align ? "aligned " : "") << oh << "x" << ow << " at " << i << "," << j;
          }
    }
  EXPECT_THROW(npx::bilinear_resize(x, 0, 3), ShapeError);
}

TEST(NNOps, PoolingGradientsThroughTheApi) {
  npx::PoolOptions options;
  options.kernel = {3, 2};
  options.stride = {2, 2};
  options.padding = {1, 0};
  // Spread values so a small perturbation never changes which element wins a window.
  Tensor x = np::arange(0, 2 * 3 * 6 * 5).reshape({2, 3, 6, 5}) * 0.05;
  x = np::array(randomTensor({180}, 9).to_vector<float>(), Shape{2, 3, 6, 5}) * 0.01 + x;
  Tensor y = npx::max_pool2d(x, options);
  Tensor r = randomTensor(y.shape(), 5);
  expectGradient(x, npx::max_pool2d_backward(r, x, options),
                 [&](const Tensor &v) { return npx::max_pool2d(v, options); }, r, "max dx");
  for (bool includePad : {true, false}) {
    options.count_include_pad = includePad;
    expectGradient(x, npx::avg_pool2d_backward(r, x.shape(), options),
                   [&](const Tensor &v) { return npx::avg_pool2d(v, options); }, r, "avg dx");
  }
  expectFastMatchesReference(
      [&] {
        return std::vector<Tensor>{npx::max_pool2d(x, options), npx::avg_pool2d(x, options),
                                   npx::max_pool2d_backward(r, x, options),
                                   npx::avg_pool2d_backward(r, x.shape(), options)};
      },
      "pool");
}

TEST(NNOps, BatchNormGradientsThroughTheApi) {
  Tensor x = randomTensor({3, 2, 2, 3}, 6), gamma = randomTensor({2}, 7);
  Tensor beta = randomTensor({2}, 8);
  npx::BatchNormResult forward = npx::batch_norm_training(x, gamma, beta);
  Tensor r = randomTensor(x.shape(), 10);
  npx::BatchNormGrads grads =
      npx::batch_norm_backward(r, x, gamma, forward.mean, forward.var);
  expectGradient(
      x, grads.input,
      [&](const Tensor &v) { return npx::batch_norm_training(v, gamma, beta).output; }, r, "dx",
      5e-2);
  expectGradient(
      gamma, grads.gamma,
      [&](const Tensor &v) { return npx::batch_norm_training(x, v, beta).output; }, r, "dgamma");
  expectGradient(
      beta, grads.beta,
      [&](const Tensor &v) { return npx::batch_norm_training(x, gamma, v).output; }, r, "dbeta");
  // Inference with the batch's own statistics reproduces the training output.
  Tensor inferred = npx::batch_norm_inference(x, gamma, beta, forward.mean, forward.var);
  std::vector<float> a = inferred.to_vector<float>(), b = forward.output.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5);
  expectFastMatchesReference(
      [&] {
        npx::BatchNormResult f = npx::batch_norm_training(x, gamma, beta);
        npx::BatchNormGrads g = npx::batch_norm_backward(r, x, gamma, f.mean, f.var);
        return std::vector<Tensor>{f.output, f.mean, f.var, g.input, g.gamma, g.beta};
      },
      "batch_norm");
}

TEST(NNOps, DenseAndLossGradientsThroughTheApi) {
  Tensor x = randomTensor({4, 5}, 11), w = randomTensor({3, 5}, 12), b = randomTensor({3}, 13);
  Tensor y = npx::fully_connected(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  Tensor r = randomTensor(y.shape(), 14);
  // The dense layer's gradients are matmuls: dx = r·w, dw = rᵀ·x.
  expectGradient(x, np::matmul(r, w),
                 [&](const Tensor &v) { return npx::fully_connected(v, w, b); }, r, "dx");
  expectGradient(w, np::matmul(r, x, /*transpose_a=*/true),
                 [&](const Tensor &v) { return npx::fully_connected(x, v, b); }, r, "dw");
  Tensor labels = np::array(std::vector<int64_t>{2, 0, 1, 2});
  Tensor dloss = randomTensor({4}, 15);
  expectGradient(y, npx::softmax_cross_entropy_backward(dloss, y, labels),
                 [&](const Tensor &v) { return npx::softmax_cross_entropy(v, labels); }, dloss,
                 "dlogits");
  // The loss is -log_softmax at the label.
  std::vector<float> loss = npx::softmax_cross_entropy(y, labels.astype(DType::i32)).to_vector<float>();
  std::vector<float> logp = npx::log_softmax(y).to_vector<float>();
  std::vector<int64_t> l = labels.to_vector<int64_t>();
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(loss[i], -logp[i * 3 + size_t(l[i])], 1e-5);
  expectFastMatchesReference(
      [&] { return std::vector<Tensor>{npx::fully_connected(x, w, b)}; }, "dense");
}

TEST(NNOps, ReluBackwardMatchesItsDecomposition) {
  Tensor x = randomTensor({3, 7}, 21), dy = randomTensor({3, 7}, 22);
  EXPECT_EQ(npx::relu_backward(dy, x).to_vector<float>(),
            np::where(x > np::zeros({}), dy, np::zeros({})).to_vector<float>());
  expectGradient(x, npx::relu_backward(dy, x), [](const Tensor &v) { return npx::relu(v); }, dy,
                 "relu dx");
  EXPECT_THROW(npx::relu_backward(dy, np::zeros({3, 6})), ShapeError);
}

TEST(NNOps, DropoutIsSeededAndScaled) {
  Tensor x = np::ones({100, 100});
  npx::DropoutResult a = npx::dropout(x, 0.2, 7), b = npx::dropout(x, 0.2, 7);
  EXPECT_EQ(a.output.to_vector<float>(), b.output.to_vector<float>());
  std::vector<bool> mask = a.mask.to_vector<bool>();
  std::vector<float> y = a.output.to_vector<float>();
  size_t kept = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    kept += mask[i];
    EXPECT_FLOAT_EQ(y[i], mask[i] ? 1.25f : 0.f);
  }
  EXPECT_NEAR(double(kept) / double(mask.size()), 0.8, 0.02);
  EXPECT_NE(npx::dropout(x, 0.2).mask.to_vector<bool>(), npx::dropout(x, 0.2).mask.to_vector<bool>());
  EXPECT_THROW(npx::dropout(x, 1.0), ShapeError);
}

// Masks are a hash of (seed, element): nearby seeds and nearby elements must still be
// independent draws. Two masks kept with probability 0.8 agree on 0.8^2 + 0.2^2 = 68%
// of the elements when independent; each mask's neighbours agree as often.
TEST(NNOps, DropoutMasksOfNearbySeedsAreIndependent) {
  Tensor x = np::ones({200, 100});
  std::vector<bool> a = npx::dropout(x, 0.2, 41).mask.to_vector<bool>();
  std::vector<bool> b = npx::dropout(x, 0.2, 42).mask.to_vector<bool>();
  size_t agree = 0, neighbours = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    agree += a[i] == b[i];
    neighbours += i + 1 < a.size() && a[i] == a[i + 1];
  }
  EXPECT_NEAR(double(agree) / double(a.size()), 0.68, 0.02);
  EXPECT_NEAR(double(neighbours) / double(a.size() - 1), 0.68, 0.02);
}

namespace {

Tensor widened(const Tensor &t) { return t.astype(DType::f32); }

/// Expects `got` (a float16 or bfloat16 result) to be `reference` (the float32 op on the
/// widened inputs) rounded once to got's dtype, bit for bit.
void expectRoundedOnce(const Tensor &got, const Tensor &reference, DType half,
                       const std::string &what) {
  ASSERT_EQ(got.dtype(), half) << what;
  ASSERT_EQ(got.shape(), reference.shape()) << what;
  EXPECT_EQ(widened(got).to_vector<float>(), widened(reference.astype(half)).to_vector<float>())
      << what;
}

/// Expects `got` within `tolerance` of the largest magnitude of `reference`.
void expectClose(const Tensor &got, const Tensor &reference, double tolerance,
                 const std::string &what) {
  std::vector<float> g = widened(got).to_vector<float>(), r = widened(reference).to_vector<float>();
  ASSERT_EQ(g.size(), r.size()) << what;
  float scale = 0;
  for (float v : r)
    scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.f) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], r[i], tolerance * scale) << what << " element " << i;
}

} // namespace

// float16 and bfloat16 NN ops compute in float32 and round each result once: every result
// equals the float32 op on the widened inputs, rounded, bit for bit (CPU; the GPU test
// checks cuDNN's and cuBLAS's against these). Batch norm keeps gamma, beta and the
// statistics in float32, as MXNet and cuDNN do.
TEST(NNOps, HalfPrecisionOpsAreTheFloat32OpsRoundedOnce) {
  for (DType half : {DType::f16, DType::bf16}) {
    std::string name = dtype_name(half);
    auto narrowed = [&](const Tensor &t) { return t.astype(half); };
    npx::ConvOptions conv;
    conv.padding = {1, 1};
    Tensor x = narrowed(randomTensor({2, 3, 6, 5}, 51)), w = narrowed(randomTensor({4, 3, 3, 3}, 52)),
           b = narrowed(randomTensor({4}, 53));
    Tensor y = npx::convolution(x, w, b, conv);
    expectRoundedOnce(y, npx::convolution(widened(x), widened(w), widened(b), conv), half,
                      name + " convolution");
    Tensor dy = narrowed(randomTensor(y.shape(), 54));
    expectRoundedOnce(npx::convolution_backward_data(dy, w, x.shape(), conv),
                      npx::convolution_backward_data(widened(dy), widened(w), x.shape(), conv),
                      half, name + " convolution_backward_data");
    npx::ConvWeightGrads grads = npx::convolution_backward_weights(dy, x, w.shape(), conv);
    npx::ConvWeightGrads wideGrads =
        npx::convolution_backward_weights(widened(dy), widened(x), w.shape(), conv);
    expectRoundedOnce(grads.weight, wideGrads.weight, half, name + " weight gradient");
    expectRoundedOnce(grads.bias, wideGrads.bias, half, name + " bias gradient");
    npx::PoolOptions pool;
    pool.stride = {2, 2};
    pool.ceil_mode = true;
    expectRoundedOnce(npx::max_pool2d(y, pool), npx::max_pool2d(widened(y), pool), half,
                      name + " max_pool2d");
    expectRoundedOnce(npx::avg_pool2d(y, pool), npx::avg_pool2d(widened(y), pool), half,
                      name + " avg_pool2d");
    Tensor py = narrowed(randomTensor(npx::max_pool2d(y, pool).shape(), 55));
    expectRoundedOnce(npx::max_pool2d_backward(py, y, pool),
                      npx::max_pool2d_backward(widened(py), widened(y), pool), half,
                      name + " max_pool2d_backward");
    Tensor gamma = randomTensor({4}, 56), beta = randomTensor({4}, 57);
    npx::BatchNormResult bn = npx::batch_norm_training(y, gamma, beta);
    npx::BatchNormResult wideBn = npx::batch_norm_training(widened(y), gamma, beta);
    expectRoundedOnce(bn.output, wideBn.output, half, name + " batch_norm");
    EXPECT_EQ(bn.mean.dtype(), DType::f32);
    EXPECT_EQ(bn.mean.to_vector<float>(), wideBn.mean.to_vector<float>()) << name;
    EXPECT_EQ(bn.var.to_vector<float>(), wideBn.var.to_vector<float>()) << name;
    npx::BatchNormGrads bnGrads = npx::batch_norm_backward(dy, y, gamma, bn.mean, bn.var);
    npx::BatchNormGrads wideBnGrads =
        npx::batch_norm_backward(widened(dy), widened(y), gamma, bn.mean, bn.var);
    expectRoundedOnce(bnGrads.input, wideBnGrads.input, half, name + " batch_norm dx");
    EXPECT_EQ(bnGrads.gamma.to_vector<float>(), wideBnGrads.gamma.to_vector<float>()) << name;
    EXPECT_EQ(bnGrads.beta.to_vector<float>(), wideBnGrads.beta.to_vector<float>()) << name;
    Tensor runningMean = randomTensor({4}, 62) * 0.1, runningVar = randomTensor({4}, 63) * 0.2 + 1.0;
    expectRoundedOnce(npx::batch_norm_inference(y, gamma, beta, runningMean, runningVar),
                      npx::batch_norm_inference(widened(y), gamma, beta, runningMean, runningVar),
                      half, name + " batch_norm inference");
    expectRoundedOnce(npx::avg_pool2d_backward(py, y.shape(), pool),
                      npx::avg_pool2d_backward(widened(py), y.shape(), pool), half,
                      name + " avg_pool2d_backward");
    npx::ConvOptions fused = conv;
    fused.relu = true;
    expectRoundedOnce(npx::convolution(x, w, b, fused),
                      npx::convolution(widened(x), widened(w), widened(b), fused), half,
                      name + " convolution with the ReLU epilogue");
    // The VJPs written with element-wise ops (inference batch norm, dropout): gradients of
    // x's dtype, close to float32's.
    auto inputGradient = [&](const Tensor &input, bool dropout) {
      Tensor leaf = input.detach();
      leaf.attach_grad();
      {
        autograd::Record record(/*train_mode=*/dropout);
        Tensor out = dropout ? npx::dropout(leaf, 0.3, 4).output
                             : npx::batch_norm_inference(leaf, gamma, beta, runningMean, runningVar);
        (out * widened(dy).astype(input.dtype())).backward();
      }
      return leaf.grad();
    };
    for (bool dropout : {false, true}) {
      std::string what = name + (dropout ? " dropout" : " batch_norm inference") + " gradient";
      Tensor got = inputGradient(y, dropout);
      EXPECT_EQ(got.dtype(), half) << what;
      expectClose(got, inputGradient(widened(y), dropout), half == DType::f16 ? 2e-3 : 1.6e-2, what);
    }
    Tensor features = narrowed(randomTensor({5, 7}, 58)), weight = narrowed(randomTensor({3, 7}, 59)),
           bias = narrowed(randomTensor({3}, 60));
    Tensor logits = npx::fully_connected(features, weight, bias);
    expectRoundedOnce(logits, npx::fully_connected(widened(features), widened(weight), widened(bias)),
                      half, name + " fully_connected");
    Tensor labels = np::array(std::vector<int64_t>{0, 2, 1, 1, 0});
    expectRoundedOnce(npx::softmax_cross_entropy(logits, labels),
                      npx::softmax_cross_entropy(widened(logits), labels), half,
                      name + " softmax_cross_entropy");
    expectRoundedOnce(npx::dropout(y, 0.3, 9).output, npx::dropout(widened(y), 0.3, 9).output,
                      half, name + " dropout");
    // Gradients through a small network, in the narrow dtype and in float32: equal within
    // the narrow dtype's precision (several roundings apart).
    auto gradients = [&](bool narrow) {
      auto cast = [&](const Tensor &t) { return narrow ? t : widened(t); };
      std::vector<Tensor> leaves{cast(x).detach(), cast(w).detach()};
      for (Tensor &leaf : leaves)
        leaf.attach_grad();
      {
        autograd::Record record;
        Tensor h = npx::convolution(leaves[0], leaves[1], cast(b), conv);
        h = npx::relu(npx::batch_norm_training(h, gamma, beta).output);
        h = npx::max_pool2d(h, pool).reshape({2, -1});
        Tensor head = cast(narrowed(randomTensor({3, h.shape()[1]}, 61)));
        Tensor loss = npx::softmax_cross_entropy(npx::fully_connected(h, head, Tensor()),
                                                 np::array(std::vector<int64_t>{0, 2}));
        np::sum(loss).backward();
      }
      return std::vector<Tensor>{leaves[0].grad(), leaves[1].grad()};
    };
    std::vector<Tensor> narrowGrads = gradients(true), wideGradsNet = gradients(false);
    double tolerance = half == DType::bf16 ? 5e-2 : 1e-2;
    EXPECT_EQ(narrowGrads[0].dtype(), half);
    expectClose(narrowGrads[0], wideGradsNet[0], tolerance, name + " network dx");
    expectClose(narrowGrads[1], wideGradsNet[1], tolerance, name + " network dw");
  }
  EXPECT_THROW(npx::convolution(np::zeros({1, 1, 3, 3}, DType::i32), np::zeros({1, 1, 1, 1}, DType::i32),
                                Tensor()),
               DTypeError);
  EXPECT_THROW(npx::batch_norm_training(np::zeros({2, 3, 2, 2}, DType::f16),
                                        np::ones({3}, DType::f16), np::zeros({3}, DType::f16)),
               DTypeError)
      << "batch norm's per-channel vectors are float32";
}

// A dense layer over zero input features gives the bias on every row (it used to leave
// the output unwritten).
TEST(NNOps, DenseWithNoInputFeaturesGivesTheBias) {
  Tensor bias = randomTensor({2}, 81);
  for (bool reference : {false, true}) {
    use_reference_kernels(reference);
    Tensor y = npx::fully_connected(np::zeros({3, 0}), np::zeros({2, 0}), bias);
    use_reference_kernels(false);
    ASSERT_EQ(y.shape(), (Shape{3, 2}));
    std::vector<float> b = bias.to_vector<float>(), got = y.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], b[i % 2]) << "row " << i / 2 << (reference ? " (reference)" : "");
  }
}

TEST(NNOps, ClearErrors) {
  Tensor x = np::zeros({4, 3, 8, 8});
  try {
    npx::convolution(x, np::zeros({16, 2, 2, 2}), Tensor());
    FAIL() << "expected ShapeError";
  } catch (const ShapeError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("convolution: input 4x3x8x8 has 3 channels but weight 16x2x2x2"),
              std::string::npos)
        << message;
  }
  npx::PoolOptions tooBig;
  tooBig.kernel = {9, 9};
  EXPECT_THROW(npx::max_pool2d(x, tooBig), ShapeError);
  EXPECT_THROW(npx::fully_connected(np::zeros({4, 7}), np::zeros({3, 8}), Tensor()), ShapeError);
  EXPECT_THROW(npx::softmax_cross_entropy(np::zeros({4, 2}), np::zeros({4})), DTypeError);
  EXPECT_THROW(npx::batch_norm_training(x, np::ones({4}), np::zeros({3})), ShapeError);
  EXPECT_THROW(npx::convolution(x.astype(DType::f16), np::zeros({16, 3, 2, 2}), Tensor()),
               DTypeError);
  EXPECT_THROW(npx::convolution_backward_data(np::zeros({4, 16, 6, 6}), np::zeros({16, 3, 2, 2}),
                                              x.shape()),
               ShapeError);
  // A label outside [0, classes) fails in the kernel and surfaces at the read.
  Tensor loss = npx::softmax_cross_entropy(np::zeros({2, 3}),
                                           np::array(std::vector<int64_t>{0, 5}));
  EXPECT_THROW(loss.wait_to_read(), ValueError);
  EXPECT_THROW(npx::waitall(), ValueError);
}

// The fused optimizer updates give the bits of the same formulas written with separate
// ops (the traced path, and the reference), on random values of a whole parameter (big
// enough to be split over threads).
TEST(NNOps, FusedOptimizerUpdatesEqualTheSeparateOps) {
  Tensor w = randomTensor({301, 129}, 60), g = randomTensor({301, 129}, 61) * 0.1;
  Tensor mean = randomTensor({301, 129}, 62) * 0.01;
  Tensor var = np::exp(randomTensor({301, 129}, 63)) * 1e-4; // positive
  Tensor rate = np::full({}, 0.0013);
  double beta1 = 0.85, beta2 = 0.995, epsilon = 1e-7;
  npx::AdamUpdate fused = npx::adam_update(w, g, mean, var, rate, beta1, beta2, epsilon);
  Tensor m2 = mean * beta1 + g * (1 - beta1);
  Tensor v2 = var * beta2 + g * g * (1 - beta2);
  Tensor w2 = w - m2 * rate / (np::sqrt(v2) + epsilon);
  EXPECT_EQ(fused.mean.to_vector<float>(), m2.to_vector<float>());
  EXPECT_EQ(fused.var.to_vector<float>(), v2.to_vector<float>());
  EXPECT_EQ(fused.weight.to_vector<float>(), w2.to_vector<float>());
  EXPECT_NE(fused.weight.to_vector<float>(), w.to_vector<float>()) << "nothing was updated";

  for (bool nesterov : {false, true}) {
    npx::MomentumUpdate step = npx::sgd_momentum_update(w, g, mean, rate, 0.9, nesterov);
    Tensor s2 = mean * 0.9 + g;
    Tensor direction = nesterov ? g + s2 * 0.9 : s2;
    EXPECT_EQ(step.momentum.to_vector<float>(), s2.to_vector<float>()) << nesterov;
    EXPECT_EQ(step.weight.to_vector<float>(), (w - direction * rate).to_vector<float>())
        << nesterov;
  }

  // rescale_grad multiplies the gradient first, as `g * rescale` does.
  double rescale = 1.0 / 24;
  Tensor scaled = g * rescale;
  npx::AdamUpdate rescaled =
      npx::adam_update(w, g, mean, var, rate, beta1, beta2, epsilon, rescale);
  npx::AdamUpdate prescaled = npx::adam_update(w, scaled, mean, var, rate, beta1, beta2, epsilon);
  EXPECT_EQ(rescaled.weight.to_vector<float>(), prescaled.weight.to_vector<float>());
  EXPECT_EQ(rescaled.var.to_vector<float>(), prescaled.var.to_vector<float>());
  EXPECT_NE(rescaled.weight.to_vector<float>(), fused.weight.to_vector<float>());
  npx::MomentumUpdate rescaledStep = npx::sgd_momentum_update(w, g, mean, rate, 0.9, true, rescale);
  npx::MomentumUpdate prescaledStep = npx::sgd_momentum_update(w, scaled, mean, rate, 0.9, true);
  EXPECT_EQ(rescaledStep.weight.to_vector<float>(), prescaledStep.weight.to_vector<float>());
  EXPECT_EQ(rescaledStep.momentum.to_vector<float>(), prescaledStep.momentum.to_vector<float>());

  // Plain SGD (the seed's optimizer), with and without rescale_grad.
  EXPECT_EQ(npx::sgd_update(w, g, rate).to_vector<float>(), (w - g * rate).to_vector<float>());
  EXPECT_EQ(npx::sgd_update(w, g, rate, rescale).to_vector<float>(),
            (w - scaled * rate).to_vector<float>());

  // Errors name the op and what was expected.
  auto message = [](const std::function<void()> &call) {
    try {
      call();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string wrongShape =
      message([&] { npx::adam_update(w, g.reshape({129, 301}), mean, var, rate); });
  EXPECT_NE(wrongShape.find("adam_update"), std::string::npos) << wrongShape;
  EXPECT_NE(wrongShape.find("one shape"), std::string::npos) << wrongShape;
  std::string notScalar = message([&] { npx::sgd_momentum_update(w, g, mean, w, 0.9); });
  EXPECT_NE(notScalar.find("0-d"), std::string::npos) << notScalar;
  std::string wrongType =
      message([&] { npx::sgd_momentum_update(w.astype(DType::f16), g, mean, rate, 0.9); });
  EXPECT_NE(wrongType.find("float32"), std::string::npos) << wrongType;
}

// The in-place forms (what Trainer.step runs) write the value-returning forms' bits into
// the weight and state tensors themselves, ordered like any write: a read queued before
// them sees the old values, every handle of the tensors the new ones.
TEST(NNOps, InPlaceOptimizerUpdatesWriteTheSameBitsIntoTheirTensors) {
  Tensor w0 = randomTensor({301, 129}, 70), g = randomTensor({301, 129}, 71) * 0.1;
  Tensor m0 = randomTensor({301, 129}, 72) * 0.01;
  Tensor v0 = np::exp(randomTensor({301, 129}, 73)) * 1e-4;
  Tensor rate = np::full({}, 0.002);
  double rescale = 1.0 / 16;

  npx::AdamUpdate adam = npx::adam_update(w0, g, m0, v0, rate, 0.9, 0.999, 1e-8, rescale);
  Tensor w = w0.copyto(cpu(0)), m = m0.copyto(cpu(0)), v = v0.copyto(cpu(0));
  Tensor handle = w; // another handle of the same tensor, as a layer holds its weight
  Tensor before = w * 1.0; // queued before the update: must read the old weights
  npx::adam_update_in_place(w, g, m, v, rate, 0.9, 0.999, 1e-8, rescale);
  EXPECT_EQ(before.to_vector<float>(), w0.to_vector<float>());
  EXPECT_EQ(handle.to_vector<float>(), adam.weight.to_vector<float>());
  EXPECT_EQ(m.to_vector<float>(), adam.mean.to_vector<float>());
  EXPECT_EQ(v.to_vector<float>(), adam.var.to_vector<float>());

  for (bool nesterov : {false, true}) {
    npx::MomentumUpdate step = npx::sgd_momentum_update(w0, g, m0, rate, 0.9, nesterov, rescale);
    Tensor wm = w0.copyto(cpu(0)), s = m0.copyto(cpu(0));
    npx::sgd_momentum_update_in_place(wm, g, s, rate, 0.9, nesterov, rescale);
    EXPECT_EQ(wm.to_vector<float>(), step.weight.to_vector<float>()) << nesterov;
    EXPECT_EQ(s.to_vector<float>(), step.momentum.to_vector<float>()) << nesterov;
  }
  Tensor ws = w0.copyto(cpu(0));
  npx::sgd_update_in_place(ws, g, rate, rescale);
  EXPECT_EQ(ws.to_vector<float>(), npx::sgd_update(w0, g, rate, rescale).to_vector<float>());
  EXPECT_NE(ws.to_vector<float>(), w0.to_vector<float>()) << "nothing was updated";

  // What cannot take results in place is refused, saying why.
  {
    autograd::Record recording;
    EXPECT_THROW(npx::sgd_update_in_place(ws, g, rate), UnsupportedError);
  }
  const OpDef &sgd = find_op("sgd_update");
  EXPECT_THROW(invoke_into(sgd, {ws, g, rate}, {}, {ws.reshape({129, 301})}), ShapeError);
  EXPECT_THROW(invoke_into(sgd, {ws, g, rate}, {}, {}), Error);
}

// take against the definition, element by element: every dtype (it moves bytes), int32
// and int64 indices, negative ones, every axis; an index out of range names itself.
// Slices against an index walk written here: every element of y is x at begin + i * step
// along each axis, NumPy's bounds (negative, clamped, reversed, empty).
TEST(NNOps, StridedSlicesReadWhatNumPysWould) {
  using R = npx::SliceRange;
  Tensor x = randomTensor({4, 5, 6}, 82) * 10.0;
  struct Case {
    std::vector<R> ranges;
    Shape shape;
    std::vector<int64_t> begin, step; // resolved
  };
  const std::vector<Case> cases = {
      {{R{1, 3, 1}}, {2, 5, 6}, {1, 0, 0}, {1, 1, 1}},
      {{R{}, R{1, std::nullopt, 2}, R{-1, std::nullopt, -2}}, {4, 2, 3}, {0, 1, 5}, {1, 2, -2}},
      {{R{std::nullopt, std::nullopt, -1}, R{-99, 99, 3}, R{-2, -6, -1}}, {4, 2, 4}, {3, 0, 4}, {-1, 3, -1}},
      {{R{}, R{}, R{2, -1, 1}}, {4, 5, 3}, {0, 0, 2}, {1, 1, 1}},
      {{R{3, 1, 1}}, {0, 5, 6}, {3, 0, 0}, {1, 1, 1}}, // empty
  };
  for (DType type : {DType::f32, DType::bf16, DType::i32})
    for (size_t n = 0; n < cases.size(); ++n) {
      const Case &c = cases[n];
      Tensor y = npx::slice(x.astype(type), c.ranges);
      ASSERT_EQ(y.shape(), c.shape) << "case " << n;
      ASSERT_EQ(y.dtype(), type);
      std::vector<float> ys = y.astype(DType::f32).to_vector<float>();
      std::vector<float> xs = x.astype(type).astype(DType::f32).to_vector<float>();
      for (int64_t i = 0; i < c.shape[0]; ++i)
        for (int64_t j = 0; j < c.shape[1]; ++j)
          for (int64_t k = 0; k < c.shape[2]; ++k) {
            int64_t a = c.begin[0] + i * c.step[0], b = c.begin[1] + j * c.step[1],
                    d = c.begin[2] + k * c.step[2];
            float want = xs[size_t((a * 5 + b) * 6 + d)];
            float at = ys[size_t((i * c.shape[1] + j) * c.shape[2] + k)];
            ASSERT_EQ(at, want) << dtype_name(type) << ", case " << n << " at " << i << ","
                                << j << "," << k;
          }
    }
  // slice_axis, and Tensor::slice's view, read the same rows.
  EXPECT_EQ(npx::slice_axis(x, -1, 2, std::nullopt).shape(), (Shape{4, 5, 4}));
  EXPECT_EQ(npx::slice_axis(x, 0, 1, 3).to_vector<float>(), x.slice(1, 3).to_vector<float>());
  // The gradient puts the slice back where it was read, zeros elsewhere.
  Tensor g = npx::slice_backward(np::ones({2, 3}), {4, 3}, {3, 0}, {-1, 3}, {-2, 1});
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}));
  // Bad input is named.
  EXPECT_THROW(npx::slice(x, {R{0, 2, 0}}), ValueError);
  EXPECT_THROW(npx::slice(x, {R{}, R{}, R{}, R{}}), ShapeError);
  EXPECT_THROW(npx::slice_axis(x, 3, 0, 1), ShapeError);
  EXPECT_THROW(npx::slice_backward(np::ones({3, 3}), {4, 3}, {3, 0}, {-1, 3}, {-2, 1}),
               ShapeError);
}

TEST(NNOps, TakeGathersSlicesAlongAnAxis) {
  Tensor x = randomTensor({3, 4, 5}, 81);
  std::vector<float> xs = x.to_vector<float>();
  const std::vector<int64_t> ids = {3, -1, 0, 3, 1, -4};
  for (DType indexType : {DType::i64, DType::i32})
    for (int64_t axis : {0, 1, 2, -1}) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const int64_t size = x.shape()[size_t(a)];
      std::vector<int64_t> valid;
      for (int64_t id : ids)
        valid.push_back(id % size); // inside (-size, size), negative ones included
      Tensor indices = np::array(valid).reshape({2, 3}).astype(indexType);
      Tensor y = np::take(x, indices, axis);
      Shape want(x.shape().begin(), x.shape().begin() + a);
      want.insert(want.end(), {2, 3});
      want.insert(want.end(), x.shape().begin() + a + 1, x.shape().end());
      ASSERT_EQ(y.shape(), want) << "axis " << axis;
      std::vector<float> ys = y.to_vector<float>();
      // Walk y: (outer, 6 indices, inner) around the axis.
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < a; ++d)
        outer *= x.shape()[size_t(d)];
      for (int64_t d = a + 1; d < 3; ++d)
        inner *= x.shape()[size_t(d)];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < 6; ++j)
          for (int64_t c = 0; c < inner; ++c) {
            int64_t slice = valid[size_t(j)] < 0 ? valid[size_t(j)] + size : valid[size_t(j)];
            ASSERT_EQ(ys[size_t((o * 6 + j) * inner + c)],
                      xs[size_t((o * size + slice) * inner + c)])
                << "axis " << axis << " at " << o << "," << j << "," << c;
          }
    }
  // Without an axis, numpy's take reads the flattened input.
  EXPECT_EQ(np::take(x, np::array(std::vector<int64_t>{59, 7})).to_vector<float>(),
            (std::vector<float>{xs[59], xs[7]}));
  // Bytes of any dtype.
  Tensor counts = np::array(std::vector<int64_t>{10, 20, 30, 40});
  EXPECT_EQ(np::take(counts, np::array(std::vector<int64_t>{3, 0, 3}).astype(DType::i32), 0).to_vector<int64_t>(),
            (std::vector<int64_t>{40, 10, 40}));
  Tensor half = x.astype(DType::bf16);
  EXPECT_EQ(np::take(half, np::array(std::vector<int64_t>{1}), 0).astype(DType::f32).to_vector<float>(),
            np::take(x, np::array(std::vector<int64_t>{1}), 0).astype(DType::bf16).astype(DType::f32).to_vector<float>());

  try {
    np::take(x, np::array(std::vector<int64_t>{0, 2, 7, 1}), 1).to_vector<float>();
    FAIL() << "no error for index 7 of an axis of 4";
  } catch (const IndexError &e) {
    EXPECT_NE(std::string(e.what()).find("take: index 7 (element 2 of the indices) is outside "
                                         "[-4, 4) for input 3x4x5"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(np::take(x, np::array(std::vector<int64_t>{-5}), 1).to_vector<float>(), IndexError);
  EXPECT_THROW(np::take(x, np::array(std::vector<float>{1.f}), 1), DTypeError);
  EXPECT_THROW(np::take(x, np::array(std::vector<int64_t>{0}), 3), ShapeError);
  EXPECT_THROW(np::take(np::zeros({0, 2}), np::array(std::vector<int64_t>{0}), 0), ShapeError);
}

// The gradient adds the slices of ids taken twice; float ids (MXNet 1.x's) are truncated.
TEST(NNOps, EmbeddingLooksUpRowsAndAddsGradientsOfRepeatedIds) {
  Tensor weight = randomTensor({6, 4}, 83);
  std::vector<float> ws = weight.to_vector<float>();
  Tensor ids = np::array(std::vector<float>{5.f, 1.f, 5.f, 0.f}).reshape({2, 2});
  Tensor y = npx::embedding(ids, weight);
  ASSERT_EQ(y.shape(), (Shape{2, 2, 4}));
  std::vector<float> ys = y.to_vector<float>();
  const int64_t rows[] = {5, 1, 5, 0};
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t c = 0; c < 4; ++c)
      ASSERT_EQ(ys[size_t(j * 4 + c)], ws[size_t(rows[j] * 4 + c)]);

  Tensor grad = randomTensor({2, 2, 4}, 84);
  std::vector<float> gs = grad.to_vector<float>();
  std::vector<float> dw = npx::take_backward(grad, ids.astype(DType::i64), 0, 6).to_vector<float>();
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      float want = 0.f;
      for (int64_t j = 0; j < 4; ++j)
        if (rows[j] == r)
          want += gs[size_t(j * 4 + c)];
      ASSERT_EQ(dw[size_t(r * 4 + c)], want) << "row " << r;
    }
  EXPECT_THROW(npx::embedding(ids, np::ones({6})), ShapeError);
  EXPECT_THROW(npx::take_backward(grad, ids.astype(DType::i64), 0, 0), ShapeError);
  EXPECT_THROW(npx::take_backward(grad.astype(DType::f16), ids.astype(DType::i64), 0, 6), DTypeError);
}

// A language model's loss: the fast kernels (rows over the threads, float exps) give the
// reference's loss and gradient on random logits wide enough to be split over threads.
TEST(NNOps, SoftmaxCrossEntropyFastMatchesReference) {
  Tensor logits = randomTensor({37, 1000}, 91) * 8.0;
  std::vector<int64_t> ids;
  std::mt19937 rng(5);
  for (int i = 0; i < 37; ++i)
    ids.push_back(int64_t(rng() % 1000));
  Tensor labels = np::array(ids), dloss = randomTensor({37}, 92);
  expectFastMatchesReference(
      [&] {
        return std::vector<Tensor>{npx::softmax_cross_entropy(logits, labels),
                                   npx::softmax_cross_entropy_backward(dloss, logits, labels)};
      },
      "softmax cross-entropy");
  Tensor bad = np::array(std::vector<int64_t>(37, 1000));
  EXPECT_THROW(npx::softmax_cross_entropy(logits, bad).to_vector<float>(), ValueError);
}

// oneDNN's softmax (float32, plain) against the reference kernel, along the last, a
// middle and the first axis, on wide-ranged random rows; and the gradients of softmax and
// log-softmax (composed from the forward's output) against finite differences.
TEST(NNOps, SoftmaxFastMatchesReferenceOnEveryAxis) {
  Tensor x = randomTensor({3, 5, 37}, 93) * 6.0;
  for (int64_t axis : {-1, 1, 0}) {
    expectFastMatchesReference(
        [&] {
          return std::vector<Tensor>{npx::softmax(x, axis)};
        },
        "softmax");
    Tensor small = randomTensor({2, 3, 4}, 95);
    Tensor rs = randomTensor(small.shape(), 96);
    for (bool log : {false, true}) {
      auto f = [&](const Tensor &v) {
        return log ? npx::log_softmax(v, axis) : npx::softmax(v, axis);
      };
      Tensor xg = small.copyto(npx::cpu(0));
      xg.attach_grad();
      {
        autograd::Record record;
        np::sum(np::multiply(f(xg), rs)).backward();
      }
      expectGradient(small, xg.grad(), f, rs, log ? "d log_softmax" : "d softmax");
    }
  }
}
