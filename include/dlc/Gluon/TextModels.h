//===- TextModels.h - gluon.model_zoo.text: BERT and GPT-2 --------------------===//
//
// Two transformer families on dlc's layers (nn::TransformerEncoderLayer on dlc.attention
// and dlc.layer_norm), whose weights load from the Hugging Face `model.safetensors` of the
// same configuration through a name map (huggingface_name), shapes checked:
//
//   auto bert = model_zoo::text::from_pretrained("bert-base-uncased/");   // config.json too
//   auto gpt = model_zoo::text::get_model("gpt2_small");
//   gpt->initialize(init::Normal(0.02));                                  // as GPT-2 does
//
// Sequences of ids are (batch, length), int32 or int64.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_TEXTMODELS_H
#define DLC_GLUON_TEXTMODELS_H

#include "dlc/Gluon/Embedding.h"
#include "dlc/Gluon/Transformer.h"

#include <optional>

namespace dlc::gluon::model_zoo::text {

/// Hugging Face's BertConfig fields, in dlc's words (its defaults: BERT-base).
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t units = 768;        ///< hidden_size
  int64_t hidden_size = 3072; ///< intermediate_size: the feed-forward's hidden layer
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t max_length = 512; ///< max_position_embeddings
  int64_t token_types = 2;  ///< type_vocab_size
  double layer_norm_eps = 1e-12;
  double dropout = 0.1;           ///< hidden_dropout_prob
  double attention_dropout = 0.1; ///< attention_probs_dropout_prob
  std::string activation = "gelu";
  bool gelu_tanh = false;
  /// BERT-base (110M parameters) and Google's BERT-Small (4 layers of 512 units, 8 heads).
  static BertConfig base();
  static BertConfig small();
};

/// BERT's encoder: word, position and token-type embeddings, a layer norm, post-norm
/// transformer layers, and the pooler (a tanh Dense on the first token).
///   forward(ids) -> the sequence's features (B, L, units)
///   forward_multi({ids[, token_types[, attention_mask]]}) -> {sequence, pooled (B, units)}
/// attention_mask is Hugging Face's: (B, L), nonzero (or true) where a token is real;
/// an undefined token_types is all zeros.
class BertModel : public HybridBlock {
public:
  explicit BertModel(BertConfig config = {});
  Tensor forward(const Tensor &ids) override;
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  std::string kind() const override;
  const BertConfig &config() const { return config_; }
  /// Reads a Hugging Face BertModel (or BertFor... with its "bert." prefix) safetensors
  /// file of this configuration onto `devices`; see huggingface_name.
  void load_huggingface(const std::string &path, const std::vector<Device> &devices = {cpu()});

  std::shared_ptr<nn::Embedding> word_embed, position_embed, token_type_embed;
  std::shared_ptr<nn::LayerNorm> embed_norm;
  std::shared_ptr<HybridSequential> layers; ///< of nn::TransformerEncoderLayer
  std::shared_ptr<nn::Dense> pooler;

private:
  std::vector<Tensor> run(const Tensor &ids, const Tensor &tokenTypes, const Tensor &mask);
  BertConfig config_;
};

/// Hugging Face's GPT2Config fields, in dlc's words (its defaults: GPT-2 124M).
struct GPT2Config {
  int64_t vocab_size = 50257;
  int64_t units = 768; ///< n_embd
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t max_length = 1024; ///< n_positions
  int64_t hidden_size = 0;   ///< n_inner; 0: 4 * units
  double layer_norm_eps = 1e-5;
  double dropout = 0.1;           ///< resid_pdrop and embd_pdrop
  double attention_dropout = 0.1; ///< attn_pdrop
  /// GPT-2 124M, and a small one to train on two cores (6 layers of 256 units, 8 heads,
  /// 256 positions, a byte-level vocabulary of 256).
  static GPT2Config base();
  static GPT2Config small();
};

/// GPT-2 with its language-model head (the word embedding, tied): word and position
/// embeddings, pre-norm causal transformer layers with tanh GELU, a final layer norm.
///   forward(ids) -> logits (B, L, vocab_size)
///   forward_multi({ids[, attention_mask]}) -> {logits}
class GPT2Model : public HybridBlock {
public:
  explicit GPT2Model(GPT2Config config = {});
  Tensor forward(const Tensor &ids) override;
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  std::string kind() const override;
  const GPT2Config &config() const { return config_; }
  /// The final layer norm's output (B, L, units): what the head multiplies.
  Tensor features(const Tensor &ids, const Tensor &attention_mask = Tensor());
  /// Reads a Hugging Face GPT2Model or GPT2LMHeadModel safetensors file of this
  /// configuration onto `devices`; see huggingface_name.
  void load_huggingface(const std::string &path, const std::vector<Device> &devices = {cpu()});

  std::shared_ptr<nn::Embedding> word_embed, position_embed;
  std::shared_ptr<HybridSequential> layers; ///< of nn::TransformerEncoderLayer
  std::shared_ptr<nn::LayerNorm> final_norm;

private:
  GPT2Config config_;
};

/// The families the name maps know: "bert", "gpt2" and "vit" (Hugging Face's model_type;
/// the ViT is model_zoo::vision::VisionTransformer).
/// Where Hugging Face's entry `entry` goes in dlc's network of `family` (see
/// dlc/Gluon/Block.h's MappedName); nullopt for what the network does not hold
/// (pre-training heads, GPT-2's mask buffers, its tied output layer). An entry no rule
/// knows keeps its name, so loading reports it as extra.
std::optional<MappedName> huggingface_name(const std::string &family, const std::string &entry);

/// Every name get_model takes: bert_base, bert_small, gpt2_124m, gpt2_small.
const std::vector<std::string> &model_names();
/// The network `name`, its parameters not yet initialized. Unknown names are a
/// ValueError listing the known ones.
std::shared_ptr<HybridBlock> get_model(const std::string &name);

/// A Hugging Face checkpoint: `path` is a folder holding config.json and
/// model.safetensors (as save_pretrained writes them). The network its config.json
/// describes (model_type "bert", "gpt2", or "vit": a vision::VisionTransformer), with the
/// file's weights on `devices` (16-bit files are converted to float32).
std::shared_ptr<HybridBlock> from_pretrained(const std::string &path,
                                             const std::vector<Device> &devices = {cpu()});

} // namespace dlc::gluon::model_zoo::text

#endif // DLC_GLUON_TEXTMODELS_H
