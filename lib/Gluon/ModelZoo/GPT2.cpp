//===- GPT2.cpp - GPT-2 with its language-model head --------------------------===//
//
// Hugging Face's GPT2LMHeadModel: word and position embeddings, pre-norm causal layers
// with one query-key-value projection and tanh GELU, a final layer norm, and logits from
// the word embedding itself (the head is tied to it, so its gradient sums both uses).
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/TextModels.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "TextModelParts.h"

namespace dlc::gluon::model_zoo::text {

GPT2Config GPT2Config::base() { return GPT2Config{}; }

GPT2Config GPT2Config::small() {
  GPT2Config config;
  config.vocab_size = 256;
  config.units = 256;
  config.num_layers = 4;
  config.num_heads = 4;
  config.max_length = 256;
  return config;
}

GPT2Model::GPT2Model(GPT2Config config) : config_(config) {
  if (config_.hidden_size == 0)
    config_.hidden_size = 4 * config_.units;
  requirePositive("GPT2Model",
                  {{"vocab_size", config_.vocab_size}, {"units", config_.units},
                   {"hidden_size", config_.hidden_size}, {"num_layers", config_.num_layers},
                   {"num_heads", config_.num_heads}, {"max_length", config_.max_length}});
  word_embed = register_child("word_embed",
                              std::make_shared<nn::Embedding>(config_.vocab_size, config_.units));
  position_embed = register_child(
      "position_embed", std::make_shared<nn::Embedding>(config_.max_length, config_.units));
  nn::TransformerLayerOptions layer;
  layer.pre_norm = true;
  layer.causal = true;
  layer.gelu_tanh = true;
  layer.fused_qkv = true;
  layer.dropout = config_.dropout;
  layer.attention_dropout = config_.attention_dropout;
  layer.layer_norm_eps = config_.layer_norm_eps;
  layers = register_child("layers", layerStack(config_.num_layers, config_.units,
                                                  config_.hidden_size, config_.num_heads, layer));
  final_norm = register_child("final_norm", layerNorm(config_.units, config_.layer_norm_eps));
}

Tensor GPT2Model::features(const Tensor &ids, const Tensor &attention_mask) {
  int64_t length = requireIds("GPT2Model", ids, config_.max_length);
  Tensor x = (*word_embed)(ids) + positionRows(*position_embed, length, ids.device());
  x = dropoutWhileTraining(x, config_.dropout);
  Tensor keys = keyMask("GPT2Model", attention_mask, ids.shape());
  x = runLayers("GPT2Model", *layers, x, keys);
  return (*final_norm)(x);
}

Tensor GPT2Model::forward(const Tensor &ids) { return forward_multi({ids})[0]; }

std::vector<Tensor> GPT2Model::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.empty() || inputs.size() > 2)
    throw ValueError("GPT2Model: takes (ids) or (ids, attention_mask), got " +
                     std::to_string(inputs.size()) + " inputs");
  Tensor h = features(inputs[0], inputs.size() > 1 ? inputs[1] : Tensor());
  return {npx::fully_connected(h, word_embed->weight->data(inputs[0].device()), Tensor())};
}

std::string GPT2Model::kind() const {
  return "GPT2Model(layers=" + std::to_string(config_.num_layers) +
         ", units=" + std::to_string(config_.units) +
         ", heads=" + std::to_string(config_.num_heads) +
         ", vocab=" + std::to_string(config_.vocab_size) + ")";
}

void GPT2Model::load_huggingface(const std::string &path, const std::vector<Device> &devices) {
  loadHuggingFace(*this, "gpt2", path, devices);
}

} // namespace dlc::gluon::model_zoo::text
