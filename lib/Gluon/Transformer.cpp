//===- Transformer.cpp - multi-head attention and transformer layers ----------===//
#include "dlc/Gluon/Transformer.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

namespace dlc::gluon::nn {

namespace {

std::shared_ptr<Dense> projection(int64_t units, bool useBias, int64_t inUnits) {
  DenseOptions options;
  options.flatten = false;
  options.use_bias = useBias;
  options.in_units = inUnits;
  return std::make_shared<Dense>(units, "", options);
}

/// (B, L, heads * d) -> (B, heads, L, d)
Tensor splitHeads(const Tensor &x, int64_t heads) {
  const Shape &s = x.shape();
  return np::transpose(x.reshape({s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3});
}

/// (B, heads, L, d) -> (B, L, heads * d)
Tensor joinHeads(const Tensor &x) {
  const Shape &s = x.shape();
  return np::transpose(x, {0, 2, 1, 3}).reshape({s[0], s[2], s[1] * s[3]});
}

void requireSequence(const Tensor &x, const char *what) {
  if (x.ndim() != 3)
    throw ShapeError(std::string("MultiHeadAttention: the ") + what +
                     " must be (batch, length, units), got " + shape_rules::str(x.shape()));
}

/// Dropout after a sub-layer, while training only.
Tensor residualDropout(const Tensor &t, double rate) {
  if (!autograd::is_training() || rate == 0)
    return t;
  return npx::dropout(t, rate).output;
}

/// The position-wise feed-forward network: hidden layer, activation, output layer.
Tensor feedForward(const char *layer, Dense &hidden, Dense &out, const Tensor &t,
                   const TransformerLayerOptions &options) {
  Tensor h = hidden(t);
  if (options.activation == "gelu")
    h = options.gelu_tanh ? npx::gelu_tanh(h) : npx::gelu(h);
  else if (options.activation == "relu")
    h = npx::relu(h);
  else
    throw ValueError(std::string(layer) + ": activation '" + options.activation +
                     "' is not one of 'gelu' and 'relu'");
  return out(h);
}

std::shared_ptr<LayerNorm> layerNorm(int64_t units, double epsilon) {
  NormOptions norm;
  norm.epsilon = epsilon;
  norm.in_channels = units;
  return std::make_shared<LayerNorm>(-1, norm);
}

} // namespace

MultiHeadAttention::MultiHeadAttention(int64_t units, int64_t num_heads,
                                       MultiHeadAttentionOptions options)
    : units_(units), heads_(num_heads), options_(options) {
  if (units <= 0 || num_heads <= 0 || units % num_heads != 0)
    throw ValueError("MultiHeadAttention: units (" + std::to_string(units) +
                     ") must be a positive multiple of num_heads (" +
                     std::to_string(num_heads) + ")");
  if (!(options.dropout >= 0 && options.dropout < 1))
    throw ValueError("MultiHeadAttention: dropout must be in [0, 1), got " +
                     std::to_string(options.dropout));
  if (options.fused_qkv) {
    qkv_proj = register_child("qkv_proj", projection(3 * units, options.use_bias, options.in_units));
  } else {
    query_proj = register_child("query_proj", projection(units, options.use_bias, options.in_units));
    key_proj = register_child("key_proj", projection(units, options.use_bias, options.in_units));
    value_proj = register_child("value_proj", projection(units, options.use_bias, options.in_units));
  }
  out_proj = register_child("out_proj", projection(units, options.use_bias, units));
}

Tensor MultiHeadAttention::attend(const Tensor &query, const Tensor &memory, const Tensor &mask) {
  requireSequence(query, "query");
  if (memory.defined())
    requireSequence(memory, "memory");
  Tensor q, k, v;
  if (qkv_proj) {
    if (memory.defined())
      throw UnsupportedError("MultiHeadAttention: a fused query-key-value projection attends "
                             "to the query's own sequence only, not to a memory");
    std::vector<Tensor> parts = np::split((*qkv_proj)(query), 3, 2);
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    const Tensor &source = memory.defined() ? memory : query;
    q = (*query_proj)(query);
    k = (*key_proj)(source);
    v = (*value_proj)(source);
  }
  npx::AttentionOptions attention;
  attention.mask = mask;
  attention.causal = options_.causal;
  attention.dropout = autograd::is_training() ? options_.dropout : 0.0;
  Tensor heads = npx::scaled_dot_product_attention(splitHeads(q, heads_), splitHeads(k, heads_),
                                                   splitHeads(v, heads_), attention);
  return (*out_proj)(joinHeads(heads));
}

Tensor MultiHeadAttention::forward(const Tensor &x) { return attend(x, Tensor(), Tensor()); }

std::vector<Tensor> MultiHeadAttention::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.empty() || inputs.size() > 3)
    throw ValueError("MultiHeadAttention: takes (x), (x, mask) or (query, memory, mask), got " +
                     std::to_string(inputs.size()) + " inputs");
  if (inputs.size() == 1)
    return {forward(inputs[0])};
  if (inputs.size() == 2)
    return {attend(inputs[0], Tensor(), inputs[1])};
  return {attend(inputs[0], inputs[1], inputs[2])};
}

std::string MultiHeadAttention::kind() const {
  return "MultiHeadAttention(" + std::to_string(units_) + ", heads=" + std::to_string(heads_) +
         (options_.causal ? ", causal" : "") + ")";
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t units, int64_t hidden_size,
                                                 int64_t num_heads,
                                                 TransformerLayerOptions options)
    : options_(options) {
  if (!(options.dropout >= 0 && options.dropout < 1))
    throw ValueError("TransformerEncoderLayer: dropout must be in [0, 1), got " +
                     std::to_string(options.dropout));
  MultiHeadAttentionOptions attentionOptions;
  attentionOptions.causal = options.causal;
  attentionOptions.dropout = options.attention_dropout;
  attentionOptions.fused_qkv = options.fused_qkv;
  attentionOptions.in_units = units;
  attention = register_child("attention", std::make_shared<MultiHeadAttention>(
                                              units, num_heads, attentionOptions));
  attention_norm = register_child("attention_norm", layerNorm(units, options.layer_norm_eps));
  ffn_hidden = register_child("ffn_hidden", projection(hidden_size, true, units));
  ffn_out = register_child("ffn_out", projection(units, true, hidden_size));
  ffn_norm = register_child("ffn_norm", layerNorm(units, options.layer_norm_eps));
}

Tensor TransformerEncoderLayer::run(const Tensor &x, const Tensor &mask) {
  auto dropout = [&](const Tensor &t) { return residualDropout(t, options_.dropout); };
  auto ffn = [&](const Tensor &t) {
    return feedForward("TransformerEncoderLayer", *ffn_hidden, *ffn_out, t, options_);
  };
  if (options_.pre_norm) {
    Tensor h = x + dropout(attention->attend((*attention_norm)(x), Tensor(), mask));
    return h + dropout(ffn((*ffn_norm)(h)));
  }
  Tensor h = (*attention_norm)(x + dropout(attention->attend(x, Tensor(), mask)));
  return (*ffn_norm)(h + dropout(ffn(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor &x) { return run(x, Tensor()); }

std::vector<Tensor> TransformerEncoderLayer::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw ValueError("TransformerEncoderLayer: takes (x) or (x, mask), got " +
                     std::to_string(inputs.size()) + " inputs");
  return {run(inputs[0], inputs.size() > 1 ? inputs[1] : Tensor())};
}

std::string TransformerEncoderLayer::kind() const {
  return std::string("TransformerEncoderLayer(") + (options_.pre_norm ? "pre-norm" : "post-norm") +
         (options_.causal ? ", causal" : "") + ")";
}

TransformerLayerOptions TransformerDecoderLayer::causalOptions() {
  TransformerLayerOptions options;
  options.causal = true;
  return options;
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t units, int64_t hidden_size,
                                                 int64_t num_heads,
                                                 TransformerLayerOptions options)
    : options_(options) {
  if (!(options.dropout >= 0 && options.dropout < 1))
    throw ValueError("TransformerDecoderLayer: dropout must be in [0, 1), got " +
                     std::to_string(options.dropout));
  if (options.fused_qkv)
    throw UnsupportedError("TransformerDecoderLayer: fused_qkv: its cross-attention projects "
                           "the queries and the memory apart");
  MultiHeadAttentionOptions self;
  self.causal = options.causal;
  self.dropout = options.attention_dropout;
  self.in_units = units;
  MultiHeadAttentionOptions cross = self;
  cross.causal = false;
  self_attention = register_child("self_attention",
                                  std::make_shared<MultiHeadAttention>(units, num_heads, self));
  self_attention_norm = register_child("self_attention_norm", layerNorm(units, options.layer_norm_eps));
  cross_attention = register_child("cross_attention",
                                   std::make_shared<MultiHeadAttention>(units, num_heads, cross));
  cross_attention_norm =
      register_child("cross_attention_norm", layerNorm(units, options.layer_norm_eps));
  ffn_hidden = register_child("ffn_hidden", projection(hidden_size, true, units));
  ffn_out = register_child("ffn_out", projection(units, true, hidden_size));
  ffn_norm = register_child("ffn_norm", layerNorm(units, options.layer_norm_eps));
}

Tensor TransformerDecoderLayer::run(const Tensor &x, const Tensor &memory,
                                    const Tensor &memoryMask, const Tensor &selfMask) {
  auto dropout = [&](const Tensor &t) { return residualDropout(t, options_.dropout); };
  auto ffn = [&](const Tensor &t) {
    return feedForward("TransformerDecoderLayer", *ffn_hidden, *ffn_out, t, options_);
  };
  if (options_.pre_norm) {
    Tensor h = x + dropout(self_attention->attend((*self_attention_norm)(x), Tensor(), selfMask));
    h = h + dropout(cross_attention->attend((*cross_attention_norm)(h), memory, memoryMask));
    return h + dropout(ffn((*ffn_norm)(h)));
  }
  Tensor h = (*self_attention_norm)(x + dropout(self_attention->attend(x, Tensor(), selfMask)));
  h = (*cross_attention_norm)(h + dropout(cross_attention->attend(h, memory, memoryMask)));
  return (*ffn_norm)(h + dropout(ffn(h)));
}

std::vector<Tensor> TransformerDecoderLayer::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.size() < 2 || inputs.size() > 4)
    throw ValueError("TransformerDecoderLayer: takes (x, memory), (x, memory, memory_mask) or "
                     "(x, memory, memory_mask, self_mask), got " +
                     std::to_string(inputs.size()) + " inputs");
  return {run(inputs[0], inputs[1], inputs.size() > 2 ? inputs[2] : Tensor(),
              inputs.size() > 3 ? inputs[3] : Tensor())};
}

std::string TransformerDecoderLayer::kind() const {
  return std::string("TransformerDecoderLayer(") + (options_.pre_norm ? "pre-norm" : "post-norm") +
         (options_.causal ? ", causal" : "") + ")";
}

} // namespace dlc::gluon::nn
