//===- ReferenceGradientTest.cpp - reference backward kernels against finite differences ===//
//
// For each backward kernel, the loss L = sum(forward(inputs) * r) with fixed random r is
// differentiated numerically by central differences, (L(v+eps) - L(v-eps)) / 2eps, for
// every element v of every differentiated input, and compared with the analytic
// gradient the backward kernel returns for dy = r.
//
// eps = 1e-2 with the forward in float: the linear kernels (conv, dense, avg pooling)
// have no truncation error, the others' is O(eps^2) ~ 1e-4, and float rounding of L
// divided by 2eps stays near 1e-5 on these small shapes; hence a 1e-2 relative tolerance
// (max|num - ana| <= 1e-2 * max(1, max|ana|)), still far below any real mistake (a
// missing term or a wrong index moves gradients by O(1)).
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include <functional>
#include <numeric>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

constexpr float kEps = 1e-2f;
constexpr double kTolerance = 1e-2;

double dot(const std::vector<float> &a, const std::vector<float> &b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += double(a[i]) * double(b[i]);
  return sum;
}

// Central-difference gradient of `loss` with respect to each element of `v`; `v` is
// perturbed in place and restored.
std::vector<float> numericGradient(std::vector<float> &v, const std::function<double()> &loss) {
  std::vector<float> grad(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float saved = v[i];
    v[i] = saved + kEps;
    const double up = loss();
    v[i] = saved - kEps;
    const double down = loss();
    v[i] = saved;
    grad[i] = float((up - down) / (2.0 * double(kEps)));
  }
  return grad;
}

// Distinct values spaced 0.05 apart in shuffled order: perturbing one by eps = 0.01
// never changes which element of a max-pooling window wins, so max pooling is
// differentiable at every sample point.
std::vector<float> wellSeparated(int64_t n, uint32_t seed) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = 0.05f * float(order[i] - n / 2);
  return values;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

void checkConvGradients(const Conv2DGeometry &g) {
  auto x = randomTensor(inputSize(g), 101), w = randomTensor(weightSize(g), 102),
       b = randomTensor(g.O, 103), r = randomTensor(outputSize(g), 104);
  std::vector<float> y(outputSize(g));
  auto loss = [&] {
    ref::conv2d_forward(g, x.data(), w.data(), b.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(inputSize(g)), dw(weightSize(g)), db(g.O);
  ref::conv2d_backward_data(g, r.data(), w.data(), dx.data());
  ref::conv2d_backward_filter(g, r.data(), x.data(), dw.data(), db.data());
  EXPECT_TRUE(allClose(dx, numericGradient(x, loss), kTolerance)) << "dx";
  EXPECT_TRUE(allClose(dw, numericGradient(w, loss), kTolerance)) << "dw";
  EXPECT_TRUE(allClose(db, numericGradient(b, loss), kTolerance)) << "db";
}

TEST(ReferenceGradient, ConvStride2Pad1Groups2) {
  checkConvGradients(convGeometry(1, 4, 5, 6, 4, 3, 3, 2, 1, 1, 2));
}

TEST(ReferenceGradient, ConvDilation2Pad2) {
  checkConvGradients(convGeometry(2, 2, 6, 5, 3, 3, 2, 1, 2, 2));
}

TEST(ReferenceGradient, ConvStride3Groups3) {
  checkConvGradients(convGeometry(1, 3, 7, 8, 6, 2, 3, 3, 1, 1, 3));
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

void checkMaxPoolGradient(const Pool2DGeometry &g) {
  auto x = wellSeparated(inputSize(g), 111), r = randomTensor(outputSize(g), 112);
  std::vector<float> y(outputSize(g));
  auto loss = [&] {
    ref::max_pool2d_forward(g, x.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(inputSize(g));
  ref::max_pool2d_backward(g, x.data(), r.data(), dx.data());
  const std::vector<float> numeric = numericGradient(x, loss);
  EXPECT_TRUE(allClose(dx, numeric, kTolerance));
  // The same gradient from the forward's indices instead of x.
  std::vector<uint8_t> codes(outputSize(g));
  std::vector<float> dxIndexed(inputSize(g));
  ref::max_pool2d_indexed_forward(g, x.data(), y.data(), codes.data());
  ref::max_pool2d_indexed_backward(g, codes.data(), r.data(), dxIndexed.data());
  EXPECT_TRUE(allClose(dxIndexed, numeric, kTolerance)) << "from the indices";
}

void checkAvgPoolGradient(const Pool2DGeometry &g, bool countIncludePad) {
  auto x = randomTensor(inputSize(g), 113), r = randomTensor(outputSize(g), 114);
  std::vector<float> y(outputSize(g));
  auto loss = [&] {
    ref::avg_pool2d_forward(g, countIncludePad, x.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(inputSize(g));
  ref::avg_pool2d_backward(g, countIncludePad, r.data(), dx.data());
  EXPECT_TRUE(allClose(dx, numericGradient(x, loss), kTolerance))
      << "count_include_pad=" << countIncludePad;
}

TEST(ReferenceGradient, MaxPoolK3S2P1) { checkMaxPoolGradient(poolGeometry(2, 2, 7, 6, 3, 2, 1, false)); }

TEST(ReferenceGradient, MaxPoolCeilMode) { checkMaxPoolGradient(poolGeometry(1, 3, 8, 7, 3, 2, 1, true)); }

TEST(ReferenceGradient, AvgPoolK3S2P1) {
  for (bool countIncludePad : {true, false})
    checkAvgPoolGradient(poolGeometry(2, 2, 7, 6, 3, 2, 1, false), countIncludePad);
}

TEST(ReferenceGradient, AvgPoolCeilMode) {
  for (bool countIncludePad : {true, false})
    checkAvgPoolGradient(poolGeometry(1, 3, 8, 7, 3, 2, 1, true), countIncludePad);
}

//===----------------------------------------------------------------------===//
// Batch normalization, dense, softmax cross-entropy
//===----------------------------------------------------------------------===//

TEST(ReferenceGradient, BatchNormTraining) {
  // The batch statistics depend on x, so this also checks the terms through mean and var.
  const BatchNormGeometry g{2, 3, 4};
  const double epsilon = 1e-5;
  const int64_t size = g.N * g.C * g.S;
  auto x = randomTensor(size, 121), gamma = randomTensor(g.C, 122),
       beta = randomTensor(g.C, 123), r = randomTensor(size, 124);
  std::vector<float> y(size), mean(g.C), var(g.C);
  auto loss = [&] {
    ref::batch_norm_forward_training(g, x.data(), gamma.data(), beta.data(), epsilon, y.data(),
                                     mean.data(), var.data());
    return dot(y, r);
  };
  loss(); // leaves the batch mean and var of the unperturbed x for the backward
  std::vector<float> dx(size), dgamma(g.C), dbeta(g.C);
  ref::batch_norm_backward(g, r.data(), x.data(), gamma.data(), mean.data(), var.data(),
                           epsilon, dx.data(), dgamma.data(), dbeta.data());
  EXPECT_TRUE(allClose(dx, numericGradient(x, loss), kTolerance)) << "dx";
  EXPECT_TRUE(allClose(dgamma, numericGradient(gamma, loss), kTolerance)) << "dgamma";
  EXPECT_TRUE(allClose(dbeta, numericGradient(beta, loss), kTolerance)) << "dbeta";
}

TEST(ReferenceGradient, Dense) {
  const int64_t M = 3, K = 5, units = 4;
  auto x = randomTensor(M * K, 131), w = randomTensor(units * K, 132),
       b = randomTensor(units, 133), r = randomTensor(M * units, 134);
  std::vector<float> y(M * units);
  auto loss = [&] {
    ref::dense_forward(M, K, units, x.data(), w.data(), b.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(M * K), dw(units * K), db(units);
  ref::dense_backward(M, K, units, r.data(), x.data(), w.data(), dx.data(), dw.data(),
                      db.data());
  EXPECT_TRUE(allClose(dx, numericGradient(x, loss), kTolerance)) << "dx";
  EXPECT_TRUE(allClose(dw, numericGradient(w, loss), kTolerance)) << "dw";
  EXPECT_TRUE(allClose(db, numericGradient(b, loss), kTolerance)) << "db";
}

TEST(ReferenceGradient, SoftmaxCrossEntropy) {
  const int64_t N = 4, C = 5;
  // Logits spread over [-3, 3] so the softmax is far from uniform.
  auto logits = randomTensor(N * C, 141, -3.0f, 3.0f), dloss = randomTensor(N, 142);
  const std::vector<int64_t> labels{0, 4, 2, 2};
  std::vector<float> perRow(N);
  auto loss = [&] {
    ref::softmax_cross_entropy_forward(N, C, logits.data(), labels.data(), perRow.data());
    return dot(perRow, dloss);
  };
  std::vector<float> dlogits(N * C);
  ref::softmax_cross_entropy_backward(N, C, dloss.data(), logits.data(), labels.data(),
                                      dlogits.data());
  EXPECT_TRUE(allClose(dlogits, numericGradient(logits, loss), kTolerance));
}

} // namespace
