//===- AttentionTest.cpp - fused attention against the unfused ops ------------===//
//
// dlc.attention against the chain it replaces (matmul, scale, mask, softmax, dropout,
// matmul) built from dlc's other ops: outputs and the gradients of query, key and value,
// with no mask, causal, a boolean padding mask, an additive mask, unequal lengths and
// feature counts, bfloat16, and dropout with a fixed seed; fast kernels against the
// reference's; finite differences; errors.
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

#include "dlc/Core/Error.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/OpRegistry.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dlc;
using dlc::testing::randomTensor;

namespace {

/// A mask's lowest score: softmax gives it weight 0 while the row has any other.
constexpr double kLowest = -3.0e38;

/// (Lq, Lk) true where key j <= query i.
Tensor causalMask(int64_t lq, int64_t lk) {
  return np::arange(0, double(lq)).reshape({lq, 1}) >= np::arange(0, double(lk)).reshape({1, lk});
}

/// The unfused chain; `kept` (when defined) is dropout's 0/1 mask of the weights.
Tensor unfused(const Tensor &q, const Tensor &k, const Tensor &v, const npx::AttentionOptions &o,
               const Tensor &kept = Tensor()) {
  double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(q.shape().back()));
  Tensor s = np::matmul(q, k, false, true) * scale;
  Tensor lowest = np::full({}, kLowest, s.dtype());
  if (o.mask.defined())
    s = o.mask.dtype() == DType::boolean ? np::where(o.mask, s, lowest) : s + o.mask;
  if (o.causal)
    s = np::where(causalMask(q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]), s, lowest);
  Tensor p = npx::softmax(s, -1);
  if (kept.defined())
    p = p * kept * (1.0 / (1.0 - o.dropout));
  return np::matmul(p, v);
}

struct Case {
  const char *name;
  Shape q, k, v;
  npx::AttentionOptions options;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back({"plain", {2, 3, 5, 8}, {2, 3, 5, 8}, {2, 3, 5, 8}, {}});
  npx::AttentionOptions causal;
  causal.causal = true;
  all.push_back({"causal", {2, 2, 70, 16}, {2, 2, 70, 16}, {2, 2, 70, 16}, causal});
  // Padding: batch 0 attends its first 5 keys, batch 1 all 9 (a (2, 1, 1, 9) mask).
  npx::AttentionOptions padded;
  std::vector<int64_t> lengths(18, 1);
  for (int64_t j = 5; j < 9; ++j)
    lengths[size_t(j)] = 0;
  padded.mask = np::array(lengths).reshape({2, 1, 1, 9}) > np::zeros({}, DType::i64);
  padded.scale = 0.3;
  all.push_back({"padded, Lq != Lk, Dv != D", {2, 3, 4, 6}, {2, 3, 9, 6}, {2, 3, 9, 5}, padded});
  npx::AttentionOptions additive;
  additive.mask = randomTensor({1, 7, 7}, 71) * 2.0;
  additive.causal = true;
  all.push_back({"additive and causal", {3, 7, 4}, {3, 7, 4}, {3, 7, 4}, additive});
  return all;
}

/// Output and the query, key and value gradients against a weighting of the output.
std::vector<Tensor> withGradients(const std::function<Tensor(const std::vector<Tensor> &)> &f,
                                  const std::vector<Tensor> &inputs, const Tensor &weights) {
  std::vector<Tensor> leaves;
  for (const Tensor &t : inputs) {
    leaves.push_back(t.copyto(t.device()));
    leaves.back().attach_grad();
  }
  Tensor out;
  {
    autograd::Record record;
    out = f(leaves);
    np::sum(out * weights).backward();
  }
  return {out, leaves[0].grad(), leaves[1].grad(), leaves[2].grad()};
}

void expectClose(const Tensor &got, const Tensor &want, double tolerance, const std::string &what) {
  std::vector<float> g = got.astype(DType::f32).to_vector<float>(),
                     w = want.astype(DType::f32).to_vector<float>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tolerance * std::max(1.f, std::abs(w[i]))) << what << " at " << i;
}

} // namespace

TEST(Attention, FusedEqualsTheUnfusedChainForwardAndBackward) {
  for (const Case &c : cases())
    for (DType dtype : {DType::f32, DType::bf16}) {
      std::vector<Tensor> in{(randomTensor(c.q, 72) * 2.0).astype(dtype),
                             (randomTensor(c.k, 73) * 2.0).astype(dtype),
                             randomTensor(c.v, 74).astype(dtype)};
      Shape outShape = c.q;
      outShape.back() = c.v.back();
      Tensor weights = randomTensor(outShape, 75).astype(dtype);
      npx::AttentionOptions o = c.options;
      if (o.mask.defined() && o.mask.dtype() != DType::boolean)
        o.mask = o.mask.astype(dtype);
      auto fused = withGradients(
          [&](const std::vector<Tensor> &v) {
            return npx::scaled_dot_product_attention(v[0], v[1], v[2], o);
          },
          in, weights);
      auto chain = withGradients(
          [&](const std::vector<Tensor> &v) { return unfused(v[0], v[1], v[2], o); }, in, weights);
      const double tolerance = dtype == DType::f32 ? 1e-5 : 3e-2;
      const char *names[] = {"output", "dq", "dk", "dv"};
      for (size_t k = 0; k < 4; ++k)
        expectClose(fused[k], chain[k], tolerance,
                    std::string(c.name) + ", " + dtype_name(dtype) + ", " + names[k]);
    }
}

// Dropout with a fixed seed: with the identity as values the output is the dropped
// weights themselves, which give the unfused chain its mask; then both agree for other
// values and in every gradient, and the same seed drops the same weights again.
TEST(Attention, DropoutWithAFixedSeedIsTheUnfusedChainWithItsMask) {
  npx::AttentionOptions o;
  o.dropout = 0.3;
  o.seed = 1234;
  o.causal = true;
  const int64_t L = 12;
  Tensor q = randomTensor({2, L, 8}, 76) * 2.0, k = randomTensor({2, L, 8}, 77) * 2.0;
  Tensor identity = np::broadcast_to(
      (np::arange(0, L).reshape({L, 1}) == np::arange(0, L).reshape({1, L})).astype(DType::f32),
      {2, L, L});
  Tensor dropped = npx::scaled_dot_product_attention(q, k, identity, o);
  Tensor kept = (dropped != np::zeros({})).astype(DType::f32);
  double keptShare = np::sum(kept).item<float>() / (2.0 * L * (L + 1) / 2); // causal weights
  EXPECT_GT(keptShare, 0.5);
  EXPECT_LT(keptShare, 0.9);
  Tensor v = randomTensor({2, L, 5}, 78), weights = randomTensor({2, L, 5}, 79);
  auto fused = withGradients(
      [&](const std::vector<Tensor> &x) { return npx::scaled_dot_product_attention(x[0], x[1], x[2], o); },
      {q, k, v}, weights);
  auto chain = withGradients(
      [&](const std::vector<Tensor> &x) { return unfused(x[0], x[1], x[2], o, kept); }, {q, k, v},
      weights);
  const char *names[] = {"output", "dq", "dk", "dv"};
  for (size_t i = 0; i < 4; ++i)
    expectClose(fused[i], chain[i], 1e-5, std::string("dropout, ") + names[i]);
  expectClose(npx::scaled_dot_product_attention(q, k, identity, o), dropped, 0, "the same seed");
  o.seed = 1235;
  EXPECT_NE(npx::scaled_dot_product_attention(q, k, identity, o).to_vector<float>(),
            dropped.to_vector<float>());
}

TEST(Attention, FastKernelsMatchTheReference) {
  for (const Case &c : cases()) {
    npx::AttentionOptions o = c.options;
    o.dropout = 0.2;
    o.seed = 99;
    Tensor q = randomTensor(c.q, 80) * 2.0, k = randomTensor(c.k, 81), v = randomTensor(c.v, 82);
    auto run = [&] {
      npx::AttentionResult r = npx::attention(q, k, v, o);
      Tensor dout = randomTensor(r.output.shape(), 83);
      std::vector<Tensor> operands{dout, q, k, v, r.output, r.logsumexp, r.used_seed};
      if (o.mask.defined())
        operands.push_back(o.mask);
      Attrs attrs{{"scale", o.scale ? *o.scale : 1.0 / std::sqrt(double(c.q.back()))},
                  {"causal", o.causal},
                  {"dropout", o.dropout}};
      std::vector<Tensor> grads = invoke(find_op("attention_backward"), operands, attrs);
      return std::vector<Tensor>{r.output, r.logsumexp, grads[0], grads[1], grads[2]};
    };
    std::vector<Tensor> fast = run();
    use_reference_kernels(true);
    std::vector<Tensor> reference = run();
    use_reference_kernels(false);
    for (size_t i = 0; i < fast.size(); ++i)
      expectClose(fast[i], reference[i], 2e-5, std::string(c.name) + ", result " + std::to_string(i));
  }
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  npx::AttentionOptions o;
  o.causal = true;
  o.mask = randomTensor({3, 4}, 84) * 0.5;
  dlc::testing::checkAutograd(
      {randomTensor({2, 3, 5}, 85), randomTensor({2, 4, 5}, 86), randomTensor({2, 4, 3}, 87)},
      [&](const std::vector<Tensor> &v) {
        return npx::scaled_dot_product_attention(v[0], v[1], v[2], o);
      },
      "attention");
}

TEST(Attention, AQueryThatMayAttendNothingGetsZeros) {
  npx::AttentionOptions o;
  o.mask = np::array(std::vector<int64_t>{1, 1, 0, 0, 0, 0}).reshape({2, 3}) >
           np::zeros({}, DType::i64);
  Tensor q = randomTensor({2, 4}, 88), k = randomTensor({3, 4}, 89), v = randomTensor({3, 2}, 90);
  q.attach_grad();
  Tensor y;
  {
    autograd::Record record;
    y = npx::scaled_dot_product_attention(q, k, v, o);
    np::sum(y).backward();
  }
  std::vector<float> ys = y.to_vector<float>(), dq = q.grad().to_vector<float>();
  EXPECT_EQ(ys[2], 0.f);
  EXPECT_EQ(ys[3], 0.f);
  for (float g : dq)
    EXPECT_TRUE(std::isfinite(g));
  EXPECT_EQ(dq[4], 0.f);
}

TEST(Attention, BadInputIsNamed) {
  Tensor q = randomTensor({2, 3, 4}, 91);
  EXPECT_THROW(npx::scaled_dot_product_attention(q, randomTensor({2, 3, 5}, 92), q), ShapeError);
  EXPECT_THROW(npx::scaled_dot_product_attention(q, q, randomTensor({2, 4, 4}, 93)), ShapeError);
  npx::AttentionOptions o;
  o.mask = randomTensor({4, 4}, 94);
  EXPECT_THROW(npx::scaled_dot_product_attention(q, q, q, o), ShapeError);
  o.mask = np::zeros({3, 3}, DType::i32);
  EXPECT_THROW(npx::scaled_dot_product_attention(q, q, q, o), DTypeError);
  npx::AttentionOptions drop;
  drop.dropout = 1.0;
  EXPECT_THROW(npx::scaled_dot_product_attention(q, q, q, drop), ValueError);
  EXPECT_THROW(npx::scaled_dot_product_attention(q, q.astype(DType::bf16), q), DTypeError);
}
