//===- TransformerTest.cpp - multi-head attention and transformer layers ------===//
//
// The layers against their formulas written with dlc's unfused ops and the layers' own
// parameters (post-norm with a padding mask, as BERT; pre-norm, causal, one fused
// projection and tanh GELU, as GPT-2), errors, and three training steps alike eagerly,
// hybridized and as the compiled step.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"
#include "LayerNetworks.h"

#include <dlc/gluon.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::randomTensor;

namespace {

Tensor linear(const nn::Dense &d, const Tensor &x) {
  return np::matmul(x, d.weight->data(), false, true) + d.bias->data();
}

/// Attention with matmul, where and softmax; `heads` heads of (B, L, units) projections.
Tensor unfusedAttention(const Tensor &q, const Tensor &k, const Tensor &v, int64_t heads,
                        const Tensor &mask, bool causal) {
  const Shape &s = q.shape();
  const int64_t d = s[2] / heads;
  auto split = [&](const Tensor &t) {
    return np::transpose(t.reshape({s[0], t.shape()[1], heads, d}), {0, 2, 1, 3});
  };
  Tensor scores = np::matmul(split(q), split(k), false, true) * (1.0 / std::sqrt(double(d)));
  Tensor lowest = np::full({}, -3e38);
  if (mask.defined())
    scores = np::where(mask, scores, lowest);
  if (causal) {
    const int64_t L = s[1];
    Tensor tril = np::arange(0, double(L)).reshape({L, 1}) >= np::arange(0, double(L)).reshape({1, L});
    scores = np::where(tril, scores, lowest);
  }
  Tensor out = np::matmul(npx::softmax(scores, -1), split(v));
  return np::transpose(out, {0, 2, 1, 3}).reshape(s);
}

Tensor norm(const nn::LayerNorm &n, const Tensor &x, double eps) {
  Tensor mean = np::mean(x, {-1}, true), centred = x - mean;
  Tensor var = np::mean(centred * centred, {-1}, true);
  return centred * np::rsqrt(var + eps) * n.gamma->data() + n.beta->data();
}

void expectClose(const Tensor &got, const Tensor &want, double tolerance, const std::string &what) {
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tolerance * std::max(1.f, std::abs(w[i]))) << what << " at " << i;
}

} // namespace

TEST(Transformer, PostNormLayerWithAPaddingMaskIsItsFormula) {
  nn::TransformerLayerOptions options;
  nn::TransformerEncoderLayer layer(8, 16, 2, options);
  layer.initialize(init::Xavier());
  Tensor x = randomTensor({2, 5, 8}, 1) * 2.0;
  Tensor mask = np::array(std::vector<int64_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}).reshape({2, 1, 1, 5}) >
                np::zeros({}, DType::i64);
  Tensor y = layer({x, mask})[0];
  const nn::MultiHeadAttention &a = *layer.attention;
  Tensor att = linear(*a.out_proj, unfusedAttention(linear(*a.query_proj, x), linear(*a.key_proj, x),
                                                    linear(*a.value_proj, x), 2, mask, false));
  Tensor h = norm(*layer.attention_norm, x + att, 1e-12);
  Tensor want = norm(*layer.ffn_norm,
                     h + linear(*layer.ffn_out, npx::gelu(linear(*layer.ffn_hidden, h))), 1e-12);
  expectClose(y, want, 1e-5, "post-norm layer");
  EXPECT_EQ(layer.kind(), "TransformerEncoderLayer(post-norm)");
}

TEST(Transformer, PreNormCausalLayerWithAFusedProjectionIsItsFormula) {
  nn::TransformerLayerOptions options;
  options.pre_norm = true;
  options.causal = true;
  options.fused_qkv = true;
  options.gelu_tanh = true;
  options.layer_norm_eps = 1e-5;
  nn::TransformerEncoderLayer layer(12, 20, 3, options);
  layer.initialize(init::Xavier());
  Tensor x = randomTensor({2, 6, 12}, 2) * 2.0;
  Tensor y = layer(x);
  const nn::MultiHeadAttention &a = *layer.attention;
  Tensor n = norm(*layer.attention_norm, x, 1e-5);
  std::vector<Tensor> qkv = np::split(linear(*a.qkv_proj, n), 3, 2);
  Tensor h = x + linear(*a.out_proj, unfusedAttention(qkv[0], qkv[1], qkv[2], 3, Tensor(), true));
  Tensor want = h + linear(*layer.ffn_out,
                           npx::gelu_tanh(linear(*layer.ffn_hidden, norm(*layer.ffn_norm, h, 1e-5))));
  expectClose(y, want, 1e-5, "pre-norm causal layer");
  EXPECT_EQ(layer.collect_params()["attention.qkv_proj.weight"]->shape(), (Shape{36, 12}));
}

TEST(Transformer, DecoderLayerIsItsFormulaEagerlyAndHybridized) {
  nn::TransformerDecoderLayer layer(8, 16, 2);
  layer.initialize(init::Xavier());
  Tensor x = randomTensor({2, 4, 8}, 7) * 2.0, memory = randomTensor({2, 6, 8}, 8) * 2.0;
  Tensor memoryMask =
      np::array(std::vector<int64_t>{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}).reshape({2, 1, 1, 6}) >
      np::zeros({}, DType::i64);
  Tensor y = layer({x, memory, memoryMask})[0];
  const nn::MultiHeadAttention &sa = *layer.self_attention, &ca = *layer.cross_attention;
  Tensor h = norm(*layer.self_attention_norm,
                  x + linear(*sa.out_proj,
                             unfusedAttention(linear(*sa.query_proj, x), linear(*sa.key_proj, x),
                                              linear(*sa.value_proj, x), 2, Tensor(), true)),
                  1e-12);
  h = norm(*layer.cross_attention_norm,
           h + linear(*ca.out_proj, unfusedAttention(linear(*ca.query_proj, h),
                                                     linear(*ca.key_proj, memory),
                                                     linear(*ca.value_proj, memory), 2,
                                                     memoryMask, false)),
           1e-12);
  Tensor want = norm(*layer.ffn_norm,
                     h + linear(*layer.ffn_out, npx::gelu(linear(*layer.ffn_hidden, h))), 1e-12);
  expectClose(y, want, 1e-5, "decoder layer");
  EXPECT_EQ(layer.kind(), "TransformerDecoderLayer(post-norm, causal)");
  layer.hybridize();
  expectClose(layer({x, memory, memoryMask})[0], want, 1e-5, "decoder layer, hybridized");
  EXPECT_THROW(layer({x}), ValueError);
  nn::TransformerLayerOptions fused = nn::TransformerDecoderLayer::causalOptions();
  fused.fused_qkv = true;
  EXPECT_THROW(nn::TransformerDecoderLayer(8, 16, 2, fused), UnsupportedError);
}

TEST(Transformer, BadSettingsAndInputsAreNamed) {
  EXPECT_THROW(nn::MultiHeadAttention(10, 3), ValueError);
  nn::MultiHeadAttention attention(8, 2);
  attention.initialize();
  EXPECT_THROW(attention(randomTensor({2, 8}, 3)), ShapeError);
  nn::MultiHeadAttentionOptions fused;
  fused.fused_qkv = true;
  nn::MultiHeadAttention self(8, 2, fused);
  self.initialize();
  Tensor x = randomTensor({2, 3, 8}, 4);
  EXPECT_THROW(self({x, x, Tensor()}), UnsupportedError);
  nn::TransformerLayerOptions bad;
  bad.activation = "tanh";
  nn::TransformerEncoderLayer layer(8, 16, 2, bad);
  layer.initialize();
  EXPECT_THROW(layer(x), ValueError);
  // Cross-attention: queries of one length over a memory of another.
  nn::MultiHeadAttention cross(8, 2);
  cross.initialize();
  EXPECT_EQ(cross({randomTensor({2, 3, 8}, 5), randomTensor({2, 7, 8}, 6), Tensor()})[0].shape(),
            (Shape{2, 3, 8}));
}

TEST(Transformer, LayersTrainAlikeEagerlyHybridizedAndCompiled) {
  auto eager = dlc::testing::threeSteps(0, dlc::testing::transformerNetwork);
  for (int mode : {1, 2}) {
    auto other = dlc::testing::threeSteps(mode, dlc::testing::transformerNetwork);
    ASSERT_EQ(other.size(), eager.size());
    for (size_t k = 0; k < eager.size(); ++k)
      dlc::testing::expectClose(eager[k], other[k], 1e-5,
                                std::string(mode == 1 ? "hybridized" : "compiled step") +
                                    ", vector #" + std::to_string(k));
  }
}
