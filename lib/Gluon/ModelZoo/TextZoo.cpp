//===- TextZoo.cpp - get_model, from_pretrained and the parts BERT and GPT-2 share -===//
//
// from_pretrained reads Hugging Face's config.json (nlohmann::json, as the safetensors
// header is read) into the families' configurations (BERT, GPT-2 and the vision zoo's
// ViT); a setting dlc's layers cannot follow (another activation, relative positions) is
// an UnsupportedError naming it, so that no checkpoint loads into a network that
// computes something else.
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/TextModels.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Gluon/VisionTransformer.h"
#include "TextModelParts.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

namespace dlc::gluon::model_zoo::text {

void requirePositive(const char *model,
                     std::initializer_list<std::pair<const char *, int64_t>> settings) {
  for (const auto &[name, value] : settings)
    if (value <= 0)
      throw ValueError(std::string(model) + ": " + name + " must be positive, got " +
                       std::to_string(value));
}

std::shared_ptr<nn::LayerNorm> layerNorm(int64_t units, double epsilon) {
  nn::NormOptions options;
  options.epsilon = epsilon;
  options.in_channels = units;
  return std::make_shared<nn::LayerNorm>(-1, options);
}

int64_t requireIds(const char *model, const Tensor &ids, int64_t maxLength) {
  if (ids.ndim() != 2)
    throw ShapeError(std::string(model) + ": ids must be (batch, length), got shape " +
                     shape_rules::str(ids.shape()));
  int64_t length = ids.shape()[1];
  if (length < 1 || length > maxLength)
    throw ShapeError(std::string(model) + ": a sequence of " + std::to_string(length) +
                     " ids does not fit its " + std::to_string(maxLength) + " positions");
  return length;
}

Tensor positionRows(const nn::Embedding &table, int64_t length, Device device) {
  return npx::slice_axis(table.weight->data(device), 0, 0, length);
}

Tensor dropoutWhileTraining(const Tensor &x, double rate) {
  if (!autograd::is_training() || rate == 0)
    return x;
  return npx::dropout(x, rate).output;
}

Tensor keyMask(const char *model, const Tensor &mask, const Shape &idsShape) {
  if (!mask.defined())
    return mask;
  if (mask.shape() != idsShape)
    throw ShapeError(std::string(model) + ": attention_mask must have the ids' shape " +
                     shape_rules::str(idsShape) + ", got " + shape_rules::str(mask.shape()));
  Tensor keys = mask.dtype() == DType::boolean ? mask : mask.astype(DType::boolean);
  return keys.reshape({idsShape[0], 1, 1, idsShape[1]});
}

std::shared_ptr<HybridSequential> layerStack(int64_t count, int64_t units, int64_t hiddenSize,
                                             int64_t heads,
                                             const nn::TransformerLayerOptions &options) {
  auto layers = std::make_shared<HybridSequential>();
  for (int64_t i = 0; i < count; ++i)
    layers->add(std::make_shared<nn::TransformerEncoderLayer>(units, hiddenSize, heads, options));
  return layers;
}

Tensor runLayers(const char *model, const HybridSequential &layers, Tensor x, const Tensor &mask) {
  for (const auto &[name, child] : layers.children()) {
    auto layer = std::dynamic_pointer_cast<nn::TransformerEncoderLayer>(child);
    if (!layer)
      throw ValueError(std::string(model) + ": layers." + name + " is a " + child->kind() +
                      ", not a TransformerEncoderLayer");
    x = layer->run(x, mask);
  }
  return x;
}

void loadHuggingFace(Block &model, const std::string &family, const std::string &path,
                     const std::vector<Device> &devices) {
  LoadOptions options;
  options.cast_dtype = true;
  options.name_map = [family](const std::string &entry) { return huggingface_name(family, entry); };
  model.load_parameters(path, devices, options);
}

namespace {

const std::vector<std::pair<std::string, std::function<std::shared_ptr<HybridBlock>()>>> &zoo() {
  static const std::vector<std::pair<std::string, std::function<std::shared_ptr<HybridBlock>()>>>
      table = {
          {"bert_base", [] { return std::make_shared<BertModel>(BertConfig::base()); }},
          {"bert_small", [] { return std::make_shared<BertModel>(BertConfig::small()); }},
          {"gpt2_124m", [] { return std::make_shared<GPT2Model>(GPT2Config::base()); }},
          {"gpt2_small", [] { return std::make_shared<GPT2Model>(GPT2Config::small()); }},
      };
  return table;
}

/// A config.json's settings, read with errors that name the file and the key.
class ConfigFile {
public:
  explicit ConfigFile(const std::string &path) : path_(path) {
    std::ifstream in(path);
    if (!in)
      throw Error("from_pretrained: cannot read '" + path +
                  "' (a Hugging Face checkpoint folder holds config.json and model.safetensors)");
    json_ = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!json_.is_object())
      throw ValueError("from_pretrained: '" + path + "' is not a JSON object");
  }
  std::string text(const char *key, const std::string &fallback) const {
    return read<std::string>(key, fallback, "a string");
  }
  int64_t integer(const char *key, int64_t fallback) const {
    return read<int64_t>(key, fallback, "an integer");
  }
  double number(const char *key, double fallback) const {
    return read<double>(key, fallback, "a number");
  }
  bool flag(const char *key, bool fallback) const { return read<bool>(key, fallback, "a boolean"); }
  /// The strings of the list `key` (none when absent).
  std::set<std::string> names(const char *key) const {
    std::set<std::string> out;
    const nlohmann::json *it = find(key);
    if (!it)
      return out;
    if (!it->is_array())
      throw ValueError("from_pretrained('" + path_ + "'): \"" + key +
                       "\" must be a list of strings, got " + it->dump());
    for (const auto &item : *it)
      if (item.is_string())
        out.insert(item.get<std::string>());
    return out;
  }
  /// How many entries the object `key` has (`fallback` when absent).
  int64_t entries(const char *key, int64_t fallback) const {
    const nlohmann::json *it = find(key);
    if (!it)
      return fallback;
    if (!it->is_object())
      throw ValueError("from_pretrained('" + path_ + "'): \"" + key +
                       "\" must be an object, got " + it->dump());
    return int64_t(it->size());
  }
  [[noreturn]] void unsupported(const std::string &what) const {
    throw UnsupportedError("from_pretrained('" + path_ + "'): " + what);
  }

private:
  /// The value of `key`, or null when it is absent or JSON's null.
  const nlohmann::json *find(const char *key) const {
    auto it = json_.find(key);
    return it == json_.end() || it->is_null() ? nullptr : &*it;
  }
  template <typename T> T read(const char *key, T fallback, const char *kind) const {
    const nlohmann::json *it = find(key);
    if (!it)
      return fallback;
    bool fits = std::is_same_v<T, std::string>   ? it->is_string()
                : std::is_same_v<T, bool>        ? it->is_boolean()
                : std::is_same_v<T, int64_t>     ? it->is_number_integer()
                                                 : it->is_number();
    if (!fits)
      throw ValueError("from_pretrained('" + path_ + "'): \"" + key + "\" must be " + kind +
                       ", got " + it->dump());
    return it->template get<T>();
  }
  std::string path_;
  nlohmann::json json_;
};

/// BERT's and ViT's hidden_act as a layer's activation and tanh flag.
void readHiddenAct(const ConfigFile &file, std::string &activation, bool &geluTanh) {
  std::string act = file.text("hidden_act", "gelu");
  if (act == "gelu") {
    activation = "gelu";
  } else if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    activation = "gelu";
    geluTanh = true;
  } else if (act == "relu") {
    activation = "relu";
  } else {
    file.unsupported("hidden_act \"" + act + "\" is not one of gelu, gelu_new, "
                     "gelu_pytorch_tanh and relu");
  }
}

BertConfig bertConfig(const ConfigFile &file) {
  BertConfig c;
  c.vocab_size = file.integer("vocab_size", c.vocab_size);
  c.units = file.integer("hidden_size", c.units);
  c.hidden_size = file.integer("intermediate_size", c.hidden_size);
  c.num_layers = file.integer("num_hidden_layers", c.num_layers);
  c.num_heads = file.integer("num_attention_heads", c.num_heads);
  c.max_length = file.integer("max_position_embeddings", c.max_length);
  c.token_types = file.integer("type_vocab_size", c.token_types);
  c.layer_norm_eps = file.number("layer_norm_eps", c.layer_norm_eps);
  c.dropout = file.number("hidden_dropout_prob", c.dropout);
  c.attention_dropout = file.number("attention_probs_dropout_prob", c.attention_dropout);
  readHiddenAct(file, c.activation, c.gelu_tanh);
  std::string positions = file.text("position_embedding_type", "absolute");
  if (positions != "absolute")
    file.unsupported("position_embedding_type \"" + positions + "\": only absolute positions");
  return c;
}

GPT2Config gpt2Config(const ConfigFile &file) {
  GPT2Config c;
  c.vocab_size = file.integer("vocab_size", c.vocab_size);
  c.units = file.integer("n_embd", c.units);
  c.num_layers = file.integer("n_layer", c.num_layers);
  c.num_heads = file.integer("n_head", c.num_heads);
  c.max_length = file.integer("n_positions", c.max_length);
  c.hidden_size = file.integer("n_inner", 0);
  c.layer_norm_eps = file.number("layer_norm_epsilon", c.layer_norm_eps);
  c.dropout = file.number("resid_pdrop", c.dropout);
  c.attention_dropout = file.number("attn_pdrop", c.attention_dropout);
  if (file.number("embd_pdrop", c.dropout) != c.dropout)
    file.unsupported("embd_pdrop differs from resid_pdrop; dlc's GPT-2 has one dropout rate");
  std::string act = file.text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    file.unsupported("activation_function \"" + act +
                     "\": dlc's GPT-2 layers use the tanh GELU (gelu_new)");
  if (!file.flag("tie_word_embeddings", true))
    file.unsupported("tie_word_embeddings false: dlc's GPT-2 computes logits with its word "
                     "embedding");
  if (!file.flag("scale_attn_weights", true) || file.flag("scale_attn_by_inverse_layer_idx", false))
    file.unsupported("attention scaled other than by 1/sqrt(head size)");
  return c;
}

/// A ViT whose classifier has id2label's outputs when the file is a
/// ViTForImageClassification, and none (the first token's features) for a ViTModel.
vision::ViTConfig vitConfig(const ConfigFile &file) {
  vision::ViTConfig c;
  c.image_size = file.integer("image_size", c.image_size);
  c.patch_size = file.integer("patch_size", c.patch_size);
  c.channels = file.integer("num_channels", c.channels);
  c.units = file.integer("hidden_size", c.units);
  c.hidden_size = file.integer("intermediate_size", c.hidden_size);
  c.num_layers = file.integer("num_hidden_layers", c.num_layers);
  c.num_heads = file.integer("num_attention_heads", c.num_heads);
  c.layer_norm_eps = file.number("layer_norm_eps", c.layer_norm_eps);
  c.dropout = file.number("hidden_dropout_prob", c.dropout);
  c.attention_dropout = file.number("attention_probs_dropout_prob", c.attention_dropout);
  readHiddenAct(file, c.activation, c.gelu_tanh);
  if (!file.flag("qkv_bias", true))
    file.unsupported("qkv_bias false: dlc's ViT layers project queries, keys and values "
                     "with biases");
  c.classes = file.names("architectures").count("ViTForImageClassification")
                  ? file.entries("id2label", 2)
                  : 0;
  return c;
}

} // namespace

const std::vector<std::string> &model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto &entry : zoo())
      n.push_back(entry.first);
    return n;
  }();
  return names;
}

std::shared_ptr<HybridBlock> get_model(const std::string &name) {
  for (const auto &[known, make] : zoo())
    if (known == name)
      return make();
  std::string list;
  for (const std::string &known : model_names())
    list += (list.empty() ? "" : ", ") + known;
  throw ValueError("model_zoo.text.get_model: unknown model '" + name + "' (known: " + list + ")");
}

std::shared_ptr<HybridBlock> from_pretrained(const std::string &path,
                                             const std::vector<Device> &devices) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path))
    throw Error("from_pretrained: '" + path +
                "' is not a folder (a Hugging Face checkpoint folder holds config.json and "
                "model.safetensors)");
  ConfigFile config((fs::path(path) / "config.json").string());
  std::string weights = (fs::path(path) / "model.safetensors").string();
  std::string type = config.text("model_type", "");
  if (type == "bert") {
    auto model = std::make_shared<BertModel>(bertConfig(config));
    model->load_huggingface(weights, devices);
    return model;
  }
  if (type == "gpt2") {
    auto model = std::make_shared<GPT2Model>(gpt2Config(config));
    model->load_huggingface(weights, devices);
    return model;
  }
  if (type == "vit") {
    auto model = std::make_shared<vision::VisionTransformer>(vitConfig(config));
    model->load_huggingface(weights, devices);
    return model;
  }
  config.unsupported("model_type \"" + type + "\" is not one of \"bert\", \"gpt2\" and \"vit\"");
}

} // namespace dlc::gluon::model_zoo::text
