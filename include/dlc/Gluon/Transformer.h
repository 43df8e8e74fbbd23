//===- Transformer.h - multi-head attention and transformer layers ------------===//
//
// The blocks BERT and GPT-2 are made of, on dlc.attention (fused, causal or masked) and
// dlc.layer_norm. Sequences are (batch, length, units); a head's features are units /
// num_heads. Projections are Dense layers with MXNet's (out, in) weights; GPT-2's fused
// query-key-value projection is one Dense of 3 * units (`fused_qkv`).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_TRANSFORMER_H
#define DLC_GLUON_TRANSFORMER_H

#include "dlc/Gluon/Layers.h"
#include "dlc/Gluon/Normalization.h"

namespace dlc::gluon::nn {

struct MultiHeadAttentionOptions {
  bool causal = false;    ///< a query attends the keys up to its own position
  double dropout = 0;     ///< on the attention weights, while training
  bool use_bias = true;   ///< of every projection
  bool fused_qkv = false; ///< one projection to 3 * units (self-attention only)
  int64_t in_units = 0;   ///< 0: inferred at the first forward
};

/// Multi-head scaled dot-product attention: projections of the query (and of the key
/// and value sequence, the query's own for self-attention), one dlc.attention over
/// (batch, heads, length, units / heads), and the output projection.
/// forward(x): self-attention. forward_multi({x, mask}) or ({query, memory, mask}):
/// with a mask that broadcasts to (batch, heads, Lq, Lk) (boolean: true may attend; or
/// additive), e.g. a (batch, 1, 1, Lk) padding mask; an undefined mask is none.
class MultiHeadAttention : public HybridBlock {
public:
  MultiHeadAttention(int64_t units, int64_t num_heads, MultiHeadAttentionOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  std::string kind() const override;
  /// Attention of `query` (B, Lq, in) over `memory` (B, Lk, in), or over itself when
  /// `memory` is undefined, with `mask` (undefined: none).
  Tensor attend(const Tensor &query, const Tensor &memory, const Tensor &mask);

  std::shared_ptr<Dense> query_proj, key_proj, value_proj, qkv_proj, out_proj;

private:
  int64_t units_, heads_;
  MultiHeadAttentionOptions options_;
};

struct TransformerLayerOptions {
  /// Layer norm before each sub-layer, inside the residual (GPT-2), or after the
  /// residual sum (BERT, the original transformer).
  bool pre_norm = false;
  bool causal = false;               ///< causal self-attention (a decoder-only model)
  std::string activation = "gelu";   ///< of the feed-forward's hidden layer
  bool gelu_tanh = false;            ///< GELU's tanh approximation (GPT-2's)
  double dropout = 0;                ///< after attention and feed-forward, while training
  double attention_dropout = 0;      ///< on the attention weights
  double layer_norm_eps = 1e-12;     ///< BERT's; GPT-2's is 1e-5
  bool fused_qkv = false;
};

/// A transformer layer: self-attention and a position-wise feed-forward network
/// (units -> hidden -> units), each with a residual connection and a layer norm.
/// forward(x) or forward_multi({x, mask}).
class TransformerEncoderLayer : public HybridBlock {
public:
  TransformerEncoderLayer(int64_t units, int64_t hidden_size, int64_t num_heads,
                          TransformerLayerOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  std::string kind() const override;
  Tensor run(const Tensor &x, const Tensor &mask);

  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<LayerNorm> attention_norm, ffn_norm;
  std::shared_ptr<Dense> ffn_hidden, ffn_out;

private:
  TransformerLayerOptions options_;
};

/// A transformer decoder layer (the original transformer's, PyTorch's
/// TransformerDecoderLayer): causal self-attention, attention over an encoder's output
/// (the memory), and the feed-forward network, each with a residual connection and a
/// layer norm (after the sum, or before the sub-layer with `pre_norm`).
/// forward_multi({x, memory[, memory_mask[, self_mask]]}): x (B, L, units), memory
/// (B, S, units); memory_mask broadcasts to (B, heads, L, S) (a (B, 1, 1, S) padding
/// mask), self_mask to (B, heads, L, L); undefined masks are none. `options.causal`
/// applies to the self-attention (true unless set otherwise); `fused_qkv` is refused.
class TransformerDecoderLayer : public HybridBlock {
public:
  TransformerDecoderLayer(int64_t units, int64_t hidden_size, int64_t num_heads,
                          TransformerLayerOptions options = causalOptions());
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  std::string kind() const override;
  Tensor run(const Tensor &x, const Tensor &memory, const Tensor &memoryMask,
             const Tensor &selfMask);
  /// The defaults with causal self-attention.
  static TransformerLayerOptions causalOptions();

  std::shared_ptr<MultiHeadAttention> self_attention, cross_attention;
  std::shared_ptr<LayerNorm> self_attention_norm, cross_attention_norm, ffn_norm;
  std::shared_ptr<Dense> ffn_hidden, ffn_out;

private:
  TransformerLayerOptions options_;
};

} // namespace dlc::gluon::nn

#endif // DLC_GLUON_TRANSFORMER_H
