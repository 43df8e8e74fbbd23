//===- Bert.cpp - BERT's encoder ----------------------------------------------===//
//
// Hugging Face's BertModel, layer for layer: embeddings summed then normalized, post-norm
// transformer layers (exact GELU), the pooler on the first token. Positions are a slice
// of the position table, so their gradient is a slice's, not a scatter.
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/TextModels.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "TextModelParts.h"

namespace dlc::gluon::model_zoo::text {

BertConfig BertConfig::base() { return BertConfig{}; }

BertConfig BertConfig::small() {
  BertConfig config;
  config.units = 512;
  config.hidden_size = 2048;
  config.num_layers = 4;
  config.num_heads = 8;
  return config;
}

BertModel::BertModel(BertConfig config) : config_(config) {
  requirePositive("BertModel",
                  {{"vocab_size", config.vocab_size}, {"units", config.units},
                   {"hidden_size", config.hidden_size}, {"num_layers", config.num_layers},
                   {"num_heads", config.num_heads}, {"max_length", config.max_length},
                   {"token_types", config.token_types}});
  word_embed = register_child("word_embed",
                              std::make_shared<nn::Embedding>(config.vocab_size, config.units));
  position_embed = register_child("position_embed",
                                  std::make_shared<nn::Embedding>(config.max_length, config.units));
  token_type_embed = register_child(
      "token_type_embed", std::make_shared<nn::Embedding>(config.token_types, config.units));
  embed_norm = register_child("embed_norm", layerNorm(config.units, config.layer_norm_eps));
  nn::TransformerLayerOptions layer;
  layer.activation = config.activation;
  layer.gelu_tanh = config.gelu_tanh;
  layer.dropout = config.dropout;
  layer.attention_dropout = config.attention_dropout;
  layer.layer_norm_eps = config.layer_norm_eps;
  layers = register_child("layers", layerStack(config.num_layers, config.units,
                                                  config.hidden_size, config.num_heads, layer));
  nn::DenseOptions dense;
  dense.flatten = false;
  dense.in_units = config.units;
  pooler = register_child("pooler", std::make_shared<nn::Dense>(config.units, "tanh", dense));
}

std::vector<Tensor> BertModel::run(const Tensor &ids, const Tensor &tokenTypes,
                                   const Tensor &mask) {
  int64_t length = requireIds("BertModel", ids, config_.max_length);
  Device device = ids.device();
  Tensor x = (*word_embed)(ids) + positionRows(*position_embed, length, device);
  if (tokenTypes.defined()) {
    if (tokenTypes.shape() != ids.shape())
      throw ShapeError("BertModel: token_types must have the ids' shape " +
                       shape_rules::str(ids.shape()) + ", got " +
                       shape_rules::str(tokenTypes.shape()));
    x = x + (*token_type_embed)(tokenTypes);
  } else {
    x = x + npx::slice_axis(token_type_embed->weight->data(device), 0, 0, 1);
  }
  x = dropoutWhileTraining((*embed_norm)(x), config_.dropout);
  Tensor keys = keyMask("BertModel", mask, ids.shape());
  x = runLayers("BertModel", *layers, x, keys);
  Tensor first = npx::slice_axis(x, 1, 0, 1).reshape({ids.shape()[0], config_.units});
  return {x, (*pooler)(first)};
}

Tensor BertModel::forward(const Tensor &ids) { return run(ids, Tensor(), Tensor())[0]; }

std::vector<Tensor> BertModel::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.empty() || inputs.size() > 3)
    throw ValueError("BertModel: takes (ids), (ids, token_types) or (ids, token_types, "
                     "attention_mask), got " +
                     std::to_string(inputs.size()) + " inputs");
  return run(inputs[0], inputs.size() > 1 ? inputs[1] : Tensor(),
             inputs.size() > 2 ? inputs[2] : Tensor());
}

std::string BertModel::kind() const {
  return "BertModel(layers=" + std::to_string(config_.num_layers) +
         ", units=" + std::to_string(config_.units) +
         ", heads=" + std::to_string(config_.num_heads) + ")";
}

void BertModel::load_huggingface(const std::string &path, const std::vector<Device> &devices) {
  loadHuggingFace(*this, "bert", path, devices);
}

} // namespace dlc::gluon::model_zoo::text
