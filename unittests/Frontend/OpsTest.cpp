//===- OpsTest.cpp - numpy-style ops against independent oracles -------------===//
#include "dlc/Frontend/OpRegistry.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/dlc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace dlc;

namespace {

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> draw(-2.f, 2.f);
  std::vector<float> values(n);
  for (float &v : values)
    v = draw(generator) + 0.01f; // never exactly zero
  return values;
}

Tensor randomTensor(const Shape &shape, uint32_t seed) {
  return np::array(randomValues(size_t(shape_rules::numElements(shape)), seed), shape);
}

/// Element of `values` (shaped `shape`) that numpy pairs with output index `index` of
/// `out`: an independent restatement of the broadcasting rule.
float broadcastElement(const std::vector<float> &values, const Shape &shape, const Shape &out,
                       int64_t index) {
  std::vector<int64_t> coordinate(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    coordinate[d] = index % out[d];
    index /= out[d];
  }
  int64_t offset = 0;
  size_t lead = out.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + (shape[d] == 1 ? 0 : coordinate[lead + d]);
  return values[size_t(offset)];
}

} // namespace

TEST(Ops, BroadcastingFollowsNumpy) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 3}, {3}},       {{4, 1}, {1, 5}},    {{2, 1, 3}, {4, 1}},
      {{}, {2, 3}},        {{1}, {7}},          {{3, 1, 1, 2}, {5, 1}},
      {{2, 3, 4}, {2, 3, 4}}};
  uint32_t seed = 1;
  for (auto [sa, sb] : cases) {
    std::vector<float> va = randomValues(size_t(shape_rules::numElements(sa)), seed++);
    std::vector<float> vb = randomValues(size_t(shape_rules::numElements(sb)), seed++);
    Tensor a = np::array(va, sa), b = np::array(vb, sb);
    Shape out = shape_rules::broadcast(sa, sb).shape;
    std::vector<float> sum = (a + b).to_vector<float>(), product = (a * b).to_vector<float>();
    std::vector<float> quotient = (a / b).to_vector<float>();
    std::vector<float> maxima = np::maximum(a, b).to_vector<float>();
    ASSERT_EQ(sum.size(), size_t(shape_rules::numElements(out)));
    for (int64_t i = 0; i < shape_rules::numElements(out); ++i) {
      float x = broadcastElement(va, sa, out, i), y = broadcastElement(vb, sb, out, i);
      EXPECT_FLOAT_EQ(sum[size_t(i)], x + y);
      EXPECT_FLOAT_EQ(product[size_t(i)], x * y);
      EXPECT_FLOAT_EQ(quotient[size_t(i)], x / y);
      EXPECT_FLOAT_EQ(maxima[size_t(i)], std::max(x, y));
    }
    EXPECT_EQ((a - b).shape(), out);
  }
}

TEST(Ops, BadBroadcastNamesOpAndShapes) {
  try {
    np::add(np::zeros({4, 3}), np::zeros({5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("add: shapes 4x3 and 5 do not broadcast"), std::string::npos)
        << message;
    EXPECT_NE(message.find("float32 4x3 on cpu(0)"), std::string::npos) << message;
  }
  EXPECT_THROW(np::add(np::zeros({2}), np::zeros({2}, DType::i32)), DTypeError);
  EXPECT_THROW(np::exp(np::zeros({2}, DType::i32)), DTypeError);
}

TEST(Ops, DeviceMismatchNamesOpAndDevices) {
  Tensor x = np::ones({3, 4}, cpu(0));
  Tensor w = x.copyto(cpu(1));
  try {
    (void)(x + w);
    FAIL() << "expected DeviceMismatchError";
  } catch (const DeviceMismatchError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("add"), std::string::npos) << message;
    EXPECT_NE(message.find("cpu(0)"), std::string::npos) << message;
    EXPECT_NE(message.find("cpu(1)"), std::string::npos) << message;
  }
  EXPECT_THROW(np::matmul(x, w.reshape({4, 3})), DeviceMismatchError);
  EXPECT_EQ((x + w.to(cpu(0))).device(), cpu(0));
}

// GELU against its definition in double precision, and its gradient op against the
// derivative; the 16-bit floats compute in float and round once.
TEST(Ops, GeluAndItsGradient) {
  std::vector<float> v = randomValues(64, 21), g = randomValues(64, 22);
  for (float &x : v)
    x *= 4; // the tails too
  Tensor x = np::array(v), dy = np::array(g);
  std::vector<float> y = npx::gelu(x).to_vector<float>();
  std::vector<float> dx = npx::gelu_backward(dy, x).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    double t = v[i], cdf = 0.5 * (1 + std::erf(t / std::sqrt(2.0)));
    double pdf = std::exp(-t * t / 2) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(y[i], t * cdf, 1e-6 * std::max(1.0, std::abs(t))) << "gelu(" << t << ")";
    EXPECT_NEAR(dx[i], g[i] * (cdf + t * pdf), 1e-6) << "gelu_backward at " << t;
  }
  std::vector<float> half = npx::gelu(x.astype(DType::bf16)).astype(DType::f32).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_NEAR(half[i], y[i], 0.01 * std::max(1.f, std::abs(y[i]))) << "bfloat16 gelu";
  EXPECT_THROW(npx::gelu(np::array(std::vector<int64_t>{1, 2})), DTypeError);
  EXPECT_THROW(npx::gelu_backward(dy, np::array(std::vector<int64_t>(64, 1))), DTypeError);
  EXPECT_THROW(npx::gelu_backward(dy, x.reshape({8, 8})), ShapeError);
}

// erf, softrelu, hard_swish, relu6, softsign, silu and selu against their definitions in
// double precision, on random inputs over their tails and kinks (softrelu's switch to x
// at 20, hard_swish's at -3 and 3, relu6's at 0 and 6); the 16-bit floats compute in
// float and round once; integers are refused by name.
TEST(Ops, ErfSoftreluAndHardSwish) {
  std::vector<float> v = randomValues(256, 31);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] *= i < 8 ? 40.f : 6.f; // a few far out: softrelu of 20 and more, e^x overflowing
  Tensor x = np::array(v);
  struct Case {
    const char *name;
    Tensor (*op)(const Tensor &);
    double (*definition)(double);
  };
  const Case cases[] = {
      {"erf", npx::erf, [](double t) { return std::erf(t); }},
      {"softrelu", npx::softrelu, [](double t) { return t > 20 ? t : std::log1p(std::exp(t)); }},
      {"hard_swish", npx::hard_swish,
       [](double t) { return t * std::min(std::max(t + 3, 0.0), 6.0) / 6; }},
      {"relu6", npx::relu6, [](double t) { return std::min(std::max(t, 0.0), 6.0); }},
      {"softsign", npx::softsign, [](double t) { return t / (1 + std::abs(t)); }},
      {"silu", npx::silu, [](double t) { return t / (1 + std::exp(-t)); }},
      {"selu", npx::selu,
       [](double t) {
         return 1.0507009873554805 * (t > 0 ? t : 1.6732632423543772 * std::expm1(t));
       }},
  };
  for (const Case &c : cases) {
    std::vector<float> y = c.op(x).to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      double want = c.definition(v[i]);
      EXPECT_NEAR(y[i], want, 2e-6 * std::max(1.0, std::abs(want))) << c.name << "(" << v[i] << ")";
    }
    std::vector<float> half = c.op(x.astype(DType::bf16)).astype(DType::f32).to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_NEAR(half[i], y[i], 0.02 * std::max(1.f, std::abs(y[i]))) << "bfloat16 " << c.name;
    try {
      c.op(np::array(std::vector<int64_t>{1, 2}));
      ADD_FAILURE() << c.name << " took int64";
    } catch (const DTypeError &e) {
      EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
    }
  }
  // relu6 keeps a NaN (as relu does), and its gradient passes dy only inside (0, 6).
  EXPECT_TRUE(std::isnan(npx::relu6(np::array(std::vector<float>{NAN})).to_vector<float>()[0]));
  Tensor y = npx::relu6(x), dy = np::array(randomValues(256, 32));
  std::vector<float> dx = npx::relu6_backward(dy, y).to_vector<float>(), ys = y.to_vector<float>(),
                     dys = dy.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(dx[i], v[i] > 0 && v[i] < 6 ? dys[i] : 0.f) << "relu6_backward at " << v[i];
  // softrelu far below zero keeps e^x (log1p), not 0.
  EXPECT_NEAR(npx::softrelu(np::array(std::vector<float>{-30.f})).to_vector<float>()[0],
              std::exp(-30.0), 1e-18);
}

// The activations with a parameter against their definitions in double precision:
// leaky_relu with a scalar slope and with per-channel slopes (prelu), elu, clip and
// hard_sigmoid, on random inputs across their kinks; shapes that do not fit are refused.
TEST(Ops, ActivationsWithAParameter) {
  Shape shape{2, 3, 4, 5};
  std::vector<float> v = randomValues(120, 41);
  for (float &t : v)
    t *= 4.f;
  Tensor x = np::array(v).reshape(shape);
  std::vector<float> gamma = {0.25f, -0.5f, 1.5f};
  auto expectAll = [&](const Tensor &y, const std::function<double(double, size_t)> &f,
                       const std::string &name) {
    std::vector<float> got = y.to_vector<float>();
    ASSERT_EQ(got.size(), v.size()) << name;
    for (size_t i = 0; i < v.size(); ++i) {
      double want = f(v[i], (i / 20) % 3); // the channel of element i
      EXPECT_NEAR(got[i], want, 2e-6 * std::max(1.0, std::abs(want))) << name << "(" << v[i] << ")";
    }
  };
  expectAll(npx::leaky_relu(x, 0.1), [](double t, size_t) { return t > 0 ? t : 0.1 * t; },
            "leaky_relu");
  expectAll(npx::prelu(x, np::array(gamma)),
            [&](double t, size_t c) { return t > 0 ? t : gamma[c] * t; }, "prelu");
  expectAll(npx::prelu(x, np::array(std::vector<float>{0.3f})),
            [](double t, size_t) { return t > 0 ? t : double(0.3f) * t; }, "prelu, one slope");
  expectAll(npx::elu(x, 0.7), [](double t, size_t) { return t > 0 ? t : 0.7 * std::expm1(t); },
            "elu");
  expectAll(np::clip(x, -1.5, 2.0),
            [](double t, size_t) { return std::min(std::max(t, -1.5), 2.0); }, "clip");
  expectAll(np::clip(x, std::nullopt, 2.0), [](double t, size_t) { return std::min(t, 2.0); },
            "clip above only");
  expectAll(npx::hard_sigmoid(x), [](double t, size_t) {
    return std::min(std::max(0.2 * t + 0.5, 0.0), 1.0);
  }, "hard_sigmoid");
  try {
    npx::prelu(x, np::array(std::vector<float>{1, 2}));
    ADD_FAILURE() << "prelu took 2 slopes for 3 channels";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("prelu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(npx::leaky_relu(x, np::ones({4})), ShapeError); // not broadcastable
  EXPECT_THROW(npx::elu(np::array(std::vector<int64_t>{1, -2}), 1.0), DTypeError);
  // A NaN stays NaN through both.
  Tensor nan = np::array(std::vector<float>{NAN});
  EXPECT_TRUE(std::isnan(npx::leaky_relu(nan, 0.1).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(npx::elu(nan, 1.0).to_vector<float>()[0]));
}

TEST(Ops, UnaryComparisonWhereCast) {
  std::vector<float> v = randomValues(10, 7);
  Tensor x = np::array(v);
  std::vector<float> relu = npx::relu(x).to_vector<float>();
  std::vector<float> sigmoid = npx::sigmoid(x).to_vector<float>();
  std::vector<float> tanh = np::tanh(x).to_vector<float>();
  std::vector<float> e = np::exp(x).to_vector<float>();
  std::vector<bool> positive = (x > np::zeros({1})).to_vector<bool>();
  std::vector<float> clipped = np::where(x > np::zeros({1}), x, np::zeros({})).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_FLOAT_EQ(relu[i], std::max(v[i], 0.f));
    EXPECT_NEAR(sigmoid[i], 1 / (1 + std::exp(-v[i])), 1e-6);
    EXPECT_NEAR(tanh[i], std::tanh(v[i]), 1e-6);
    EXPECT_NEAR(e[i], std::exp(v[i]), 1e-5 * std::exp(v[i]));
    EXPECT_EQ(positive[i], v[i] > 0);
    EXPECT_FLOAT_EQ(clipped[i], v[i] > 0 ? v[i] : 0.f);
  }
  EXPECT_EQ((x == x).astype(DType::i32).to_vector<int>(), std::vector<int>(10, 1));
  EXPECT_FLOAT_EQ((2.0 * x - 1.0).to_vector<float>()[3], 2 * v[3] - 1);
}

TEST(Ops, ReductionsAndArgmax) {
  std::vector<float> v = randomValues(24, 11);
  Tensor x = np::array(v, Shape{2, 3, 4});
  Tensor s = np::sum(x, {0, 2});
  ASSERT_EQ(s.shape(), (Shape{3}));
  for (int j = 0; j < 3; ++j) {
    double expected = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        expected += v[size_t(i * 12 + j * 4 + k)];
    EXPECT_NEAR(s.to_vector<float>()[size_t(j)], expected, 1e-5);
  }
  EXPECT_EQ(np::mean(x, {-1}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_NEAR(np::mean(x).item<double>(),
              std::accumulate(v.begin(), v.end(), 0.0) / 24.0, 1e-6);
  EXPECT_FLOAT_EQ(np::max(x).item<float>(), *std::max_element(v.begin(), v.end()));
  EXPECT_FLOAT_EQ(np::min(x).item<float>(), *std::min_element(v.begin(), v.end()));
  Tensor arg = np::argmax(x, 2);
  EXPECT_EQ(arg.dtype(), DType::i64);
  std::vector<int64_t> idx = arg.to_vector<int64_t>();
  for (int row = 0; row < 6; ++row) {
    auto begin = v.begin() + row * 4;
    EXPECT_EQ(idx[size_t(row)], std::max_element(begin, begin + 4) - begin);
  }
  EXPECT_THROW(np::sum(x, {3}), ShapeError);
  EXPECT_THROW(np::argmax(x, -4), ShapeError);
}

// Large enough for the threaded per-channel path: (R, K, S) summed over R and S (a bias
// gradient) and (K, S) averaged over S.
TEST(Ops, LargeChannelReductions) {
  const int R = 5, K = 7, S = 1501;
  std::vector<float> v = randomValues(size_t(R * K * S), 12);
  Tensor x = np::array(v, Shape{R, K, S});
  std::vector<float> sums = np::sum(x, {0, 2}).to_vector<float>();
  std::vector<float> means = np::mean(x.reshape({R * K, S}), {1}).to_vector<float>();
  ASSERT_EQ(sums.size(), size_t(K));
  ASSERT_EQ(means.size(), size_t(R * K));
  for (int k = 0; k < K; ++k) {
    double expected = 0;
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s)
        expected += v[size_t((r * K + k) * S + s)];
    EXPECT_NEAR(sums[size_t(k)], expected, 1e-4) << "channel " << k;
  }
  for (int row = 0; row < R * K; ++row) {
    double expected = 0;
    for (int s = 0; s < S; ++s)
      expected += v[size_t(row * S + s)];
    EXPECT_NEAR(means[size_t(row)], expected / S, 1e-6) << "row " << row;
  }
}

TEST(Ops, SoftmaxIsStableAndNormalized) {
  Tensor x = np::array(std::vector<float>{1000, 1001, 1002, -5, 0, 5}, Shape{2, 3});
  std::vector<float> p = npx::softmax(x).to_vector<float>();
  std::vector<float> lp = npx::log_softmax(x).to_vector<float>();
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(p[size_t(r * 3)] + p[size_t(r * 3 + 1)] + p[size_t(r * 3 + 2)], 1.0, 1e-6);
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(std::exp(lp[size_t(r * 3 + c)]), p[size_t(r * 3 + c)], 1e-6);
  }
  EXPECT_NEAR(p[2], 1 / (1 + std::exp(-1.f) + std::exp(-2.f)), 1e-6);
  EXPECT_EQ(npx::softmax(x, 0).shape(), (Shape{2, 3}));
  EXPECT_THROW(npx::softmax(x, 2), ShapeError);
}

TEST(Ops, MatmulFastMatchesReference) {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {{{5, 7}, {7, 3}, false, false},
                                   {{7, 5}, {7, 3}, true, false},
                                   {{5, 7}, {3, 7}, false, true},
                                   {{7, 5}, {3, 7}, true, true},
                                   {{2, 1, 4, 6}, {3, 6, 5}, false, false},
                                   {{1, 33}, {33, 17}, false, false}};
  uint32_t seed = 100;
  for (const Case &c : cases) {
    Tensor a = randomTensor(c.a, seed++), b = randomTensor(c.b, seed++);
    std::vector<float> fast = np::matmul(a, b, c.ta, c.tb).to_vector<float>();
    use_reference_kernels(true);
    std::vector<float> reference = np::matmul(a, b, c.ta, c.tb).to_vector<float>();
    use_reference_kernels(false);
    ASSERT_EQ(fast.size(), reference.size());
    for (size_t i = 0; i < fast.size(); ++i)
      EXPECT_NEAR(fast[i], reference[i], 1e-5 * std::max(1.f, std::abs(reference[i]))) << i;
  }
  EXPECT_THROW(np::matmul(np::zeros({2, 3}), np::zeros({2, 3})), ShapeError);
  Tensor v = np::array(std::vector<float>{1, 2, 3});
  EXPECT_FLOAT_EQ(np::dot(v, v).item<float>(), 14.f);
  EXPECT_EQ(np::dot(np::ones({2, 3}), v).to_vector<float>(), (std::vector<float>{6, 6}));
}

TEST(Ops, TransposeConcatSplit) {
  Tensor x = np::arange(0, 24).reshape({2, 3, 4});
  Tensor t = np::transpose(x, {2, 0, 1});
  ASSERT_EQ(t.shape(), (Shape{4, 2, 3}));
  std::vector<float> tv = t.to_vector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(tv[size_t(i * 6 + j * 3 + k)], float(j * 12 + k * 4 + i));
  EXPECT_EQ(np::transpose(np::zeros({2, 5})).shape(), (Shape{5, 2}));
  EXPECT_THROW(np::transpose(x, {0, 0, 1}), ShapeError);

  std::vector<Tensor> parts = np::split(x, 2, 1 - 1);
  ASSERT_EQ(parts.size(), 2u);
  std::vector<Tensor> uneven = np::split_sizes(x, {1, 3}, 2);
  EXPECT_EQ(uneven[1].shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(np::concatenate(uneven, 2).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(np::concatenate(parts, 0).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(np::split(x, 5, 2), ShapeError);
  EXPECT_THROW(np::concatenate({np::zeros({2, 3}), np::zeros({2, 4})}, 0), ShapeError);
  EXPECT_EQ(npx::batch_flatten(x).shape(), (Shape{2, 12}));
}

TEST(Ops, RandomIsSeededPerDevice) {
  np::random::seed(42);
  std::vector<float> first = np::random::uniform(-1, 1, {1000}).to_vector<float>();
  std::vector<float> otherDevice = np::random::uniform(-1, 1, {1000}, cpu(1)).to_vector<float>();
  np::random::seed(42);
  EXPECT_EQ(np::random::uniform(-1, 1, {1000}).to_vector<float>(), first);
  EXPECT_NE(otherDevice, first) << "devices draw their own sequences";
  for (float v : first)
    ASSERT_TRUE(v >= -1 && v < 1);
  std::vector<float> n = np::random::normal(3, 2, {20000}).to_vector<float>();
  double mean = std::accumulate(n.begin(), n.end(), 0.0) / double(n.size()), var = 0;
  for (float v : n)
    var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 3, 0.05);
  EXPECT_NEAR(std::sqrt(var / double(n.size())), 2, 0.05);
  std::vector<int64_t> dice = np::random::randint(1, 7, {600}).to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(dice.begin(), dice.end()), 1);
  EXPECT_EQ(*std::max_element(dice.begin(), dice.end()), 6);
  EXPECT_THROW(np::random::uniform(1, 1, {2}), ValueError);
}

TEST(Ops, EveryOpMapsToAKernel) {
  for (const OpDef *op : all_ops()) {
    EXPECT_NE(find_kernel(op->dialect_op, cpu(0)), nullptr) << op->name;
    EXPECT_NE(op->infer, nullptr) << op->name;
  }
}

// Which ops a tiny call may run on the calling thread (TaskCost::tiny): those whose CPU
// kernels give the same bits at any thread count. oneDNN's split their sums by thread,
// so running them on a one-thread caller or on the worker could differ run to run.
TEST(Ops, OnlyThreadCountIndependentOpsMayRunOnTheCaller) {
  for (const char *name : {"add", "multiply", "relu", "relu_backward", "reduce", "softmax",
                           "transpose", "full", "softmax_cross_entropy"})
    EXPECT_TRUE(find_op(name).may_run_on_caller) << name;
  for (const char *name : {"matmul", "fully_connected", "convolution",
                           "convolution_backward_data", "convolution_backward_filter",
                           "max_pool2d", "avg_pool2d", "batch_norm", "batch_norm_backward"})
    EXPECT_FALSE(find_op(name).may_run_on_caller) << name;
}

// Tensor-scalar arithmetic shares one 0-d tensor per value, dtype and device: results
// stay right across many values (the cache is emptied when it fills), dtypes and devices.
TEST(Ops, ScalarOperandsAreSharedSafely) {
  Tensor x = np::array(std::vector<float>{1, 2, 3});
  for (int i = 0; i < 1100; ++i) {
    double v = 0.25 * i;
    std::vector<float> got = (x * v + 1.0).to_vector<float>();
    ASSERT_EQ(got, (std::vector<float>{float(v + 1), float(2 * v + 1), float(3 * v + 1)}))
        << "value " << v;
  }
  Tensor ints = np::array(std::vector<double>{4, 5}, std::nullopt, DType::i32);
  EXPECT_EQ((ints * 2.0).to_vector<int>(), (std::vector<int>{8, 10}));
  EXPECT_EQ((x.copyto(cpu(1)) * 2.0).device(), cpu(1));
  EXPECT_EQ((x * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ((2.0 - x).to_vector<float>(), (std::vector<float>{1, 0, -1}));
}

TEST(Ops, IntegerDivisionOfTheMostNegativeValueByMinusOneWraps) {
  // x86's idiv traps on it (SIGFPE killed the process); numpy wraps it, so does dlc.
  Tensor a64 = np::array(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -7, 7});
  Tensor b64 = np::full({3}, -1.0, DType::i64);
  EXPECT_EQ((a64 / b64).to_vector<int64_t>(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 7, -7}));
  Tensor a32 =
      np::array(std::vector<int64_t>{std::numeric_limits<int32_t>::min(), 9}).astype(DType::i32);
  Tensor b32 = np::array(std::vector<int64_t>{-1, -2}).astype(DType::i32);
  EXPECT_EQ((a32 / b32).to_vector<int32_t>(),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -4}));
}

TEST(Ops, EmptyMatmulsGiveEmptyOrZeroResults) {
  // They failed inside oneDNN's sgemm (a zero leading dimension).
  // Each is read, so that a failed kernel shows.
  auto product = [](Shape a, Shape b) {
    Tensor c = np::matmul(np::ones(a), np::ones(b));
    c.wait_to_read();
    return c;
  };
  EXPECT_EQ(product({0, 3}, {3, 0}).shape(), (Shape{0, 0}));
  EXPECT_EQ(product({4, 3}, {3, 0}).shape(), (Shape{4, 0}));
  EXPECT_EQ(product({0, 2, 3}, {3, 4}).shape(), (Shape{0, 2, 4}));
  Tensor zeros = product({2, 0}, {0, 3});
  EXPECT_EQ(zeros.shape(), (Shape{2, 3}));
  EXPECT_EQ(zeros.to_vector<float>(), std::vector<float>(6, 0.f));
}

// A float beyond an integer type's range saturates and NaN gives 0, in casts and in
// constants: the C++ conversion is undefined there (an ONNX file filling uint8 with -inf
// reached one through a constant).
TEST(Ops, FloatsOutsideAnIntegersRangeSaturate) {
  double inf = std::numeric_limits<double>::infinity();
  Tensor x = np::array(std::vector<double>{1e30, -1e30, std::nan(""), -2.7, 2.7},
                       std::nullopt, DType::f32);
  EXPECT_EQ(x.astype(DType::i32).to_vector<int64_t>(),
            (std::vector<int64_t>{INT32_MAX, INT32_MIN, 0, -2, 2}));
  EXPECT_EQ(x.astype(DType::u8).to_vector<int64_t>(), (std::vector<int64_t>{255, 0, 0, 0, 2}));
  EXPECT_EQ(x.astype(DType::boolean).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(np::full({2}, -inf, DType::u8).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(np::full({2}, inf, DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  // Reductions store through the same conversion: the integer mean of nothing (0 / 0)
  // is 0, a sum past int32's range saturates.
  EXPECT_EQ(np::mean(np::zeros({2, 0}, DType::i32), {1}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(np::sum(np::full({3}, 2e9, DType::i32)).to_vector<int64_t>(),
            (std::vector<int64_t>{INT32_MAX}));
}
