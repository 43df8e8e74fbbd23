//===- TextZoo.cpp - gluon.model_zoo.text: BERT and GPT-2 ---------------------===//
#include "Bindings.h"

namespace dlc::python {

namespace {

namespace text = gluon::model_zoo::text;

py::dict bert_config_dict(const text::BertConfig &c) {
  py::dict d;
  d["vocab_size"] = c.vocab_size;
  d["units"] = c.units;
  d["hidden_size"] = c.hidden_size;
  d["num_layers"] = c.num_layers;
  d["num_heads"] = c.num_heads;
  d["max_length"] = c.max_length;
  d["token_types"] = c.token_types;
  d["layer_norm_eps"] = c.layer_norm_eps;
  d["dropout"] = c.dropout;
  d["attention_dropout"] = c.attention_dropout;
  d["activation"] = c.activation;
  d["gelu_tanh"] = c.gelu_tanh;
  return d;
}

py::dict gpt2_config_dict(const text::GPT2Config &c) {
  py::dict d;
  d["vocab_size"] = c.vocab_size;
  d["units"] = c.units;
  d["num_layers"] = c.num_layers;
  d["num_heads"] = c.num_heads;
  d["max_length"] = c.max_length;
  d["hidden_size"] = c.hidden_size;
  d["layer_norm_eps"] = c.layer_norm_eps;
  d["dropout"] = c.dropout;
  d["attention_dropout"] = c.attention_dropout;
  return d;
}

/// A configuration's fields replaced by the keyword arguments of the same names (the
/// keys of its dict); another keyword is a TypeError naming `where`.
template <typename Config>
Config configured(Config config, const py::kwargs &kwargs, py::dict (*fields)(const Config &),
                  const char *where) {
  py::dict known = fields(config);
  for (auto item : kwargs) {
    std::string key = py::str(item.first);
    if (!known.contains(key))
      throw py::type_error(std::string(where) + "() got an unexpected keyword argument '" + key +
                           "'");
  }
  auto take = [&](const char *key, auto &field) {
    if (kwargs.contains(key))
      field = kwargs[key].cast<std::remove_reference_t<decltype(field)>>();
  };
  if constexpr (std::is_same_v<Config, text::BertConfig>) {
    take("vocab_size", config.vocab_size), take("units", config.units);
    take("hidden_size", config.hidden_size), take("num_layers", config.num_layers);
    take("num_heads", config.num_heads), take("max_length", config.max_length);
    take("token_types", config.token_types), take("layer_norm_eps", config.layer_norm_eps);
    take("dropout", config.dropout), take("attention_dropout", config.attention_dropout);
    take("activation", config.activation), take("gelu_tanh", config.gelu_tanh);
  } else {
    take("vocab_size", config.vocab_size), take("units", config.units);
    take("num_layers", config.num_layers), take("num_heads", config.num_heads);
    take("max_length", config.max_length), take("hidden_size", config.hidden_size);
    take("layer_norm_eps", config.layer_norm_eps), take("dropout", config.dropout);
    take("attention_dropout", config.attention_dropout);
  }
  return config;
}

} // namespace

void bind_text_zoo(py::module_ m) {
  py::class_<text::BertModel, gluon::HybridBlock, std::shared_ptr<text::BertModel>>(
      m, "BertModel",
      "BERT's encoder. net(ids) -> sequence features; net(ids, token_types[, "
      "attention_mask]) -> (sequence, pooled).")
      .def(py::init([](const py::kwargs &kwargs) {
             return std::make_shared<text::BertModel>(
                 configured(text::BertConfig::base(), kwargs, bert_config_dict, "BertModel"));
           }),
           "BertModel(**config): BERT-base's settings, those named replaced (vocab_size, "
           "units, hidden_size, num_layers, num_heads, max_length, token_types, "
           "layer_norm_eps, dropout, attention_dropout, activation, gelu_tanh).")
      .def_property_readonly("config",
                             [](const text::BertModel &b) { return bert_config_dict(b.config()); })
      .def("load_huggingface",
           [](text::BertModel &b, const std::string &path, const py::object &device) {
             b.load_huggingface(path, to_devices(device));
           },
           py::arg("path"), py::arg("device") = py::none(),
           "Reads Hugging Face's model.safetensors of this configuration.")
      .def_readonly("word_embed", &text::BertModel::word_embed)
      .def_readonly("position_embed", &text::BertModel::position_embed)
      .def_readonly("token_type_embed", &text::BertModel::token_type_embed)
      .def_readonly("embed_norm", &text::BertModel::embed_norm)
      .def_readonly("layers", &text::BertModel::layers)
      .def_readonly("pooler", &text::BertModel::pooler);
  py::class_<text::GPT2Model, gluon::HybridBlock, std::shared_ptr<text::GPT2Model>>(
      m, "GPT2Model",
      "GPT-2 with its tied language-model head. net(ids[, attention_mask]) -> logits.")
      .def(py::init([](const py::kwargs &kwargs) {
             return std::make_shared<text::GPT2Model>(
                 configured(text::GPT2Config::base(), kwargs, gpt2_config_dict, "GPT2Model"));
           }),
           "GPT2Model(**config): GPT-2 124M's settings, those named replaced (vocab_size, "
           "units, num_layers, num_heads, max_length, hidden_size, layer_norm_eps, dropout, "
           "attention_dropout).")
      .def_property_readonly("config",
                             [](const text::GPT2Model &g) { return gpt2_config_dict(g.config()); })
      .def("features",
           [](text::GPT2Model &g, const Tensor &ids, const std::optional<Tensor> &mask) {
             return g.features(ids, mask.value_or(Tensor()));
           },
           py::arg("ids"), py::arg("attention_mask") = py::none(),
           "The final layer norm's output (B, L, units).")
      .def("load_huggingface",
           [](text::GPT2Model &g, const std::string &path, const py::object &device) {
             g.load_huggingface(path, to_devices(device));
           },
           py::arg("path"), py::arg("device") = py::none(),
           "Reads Hugging Face's model.safetensors of this configuration.")
      .def_readonly("word_embed", &text::GPT2Model::word_embed)
      .def_readonly("position_embed", &text::GPT2Model::position_embed)
      .def_readonly("layers", &text::GPT2Model::layers)
      .def_readonly("final_norm", &text::GPT2Model::final_norm);
  m.def("get_model", &text::get_model, py::arg("name"),
        "The network `name` (bert_base, bert_small, gpt2_124m, gpt2_small), not initialized.");
  m.def("model_names", &text::model_names, "Every name get_model takes.");
  m.def("from_pretrained",
        [](const std::string &path, const py::object &device) {
          return text::from_pretrained(path, to_devices(device));
        },
        py::arg("path"), py::arg("device") = py::none(),
        "The network of a Hugging Face checkpoint folder (config.json, model.safetensors).");
  m.def("huggingface_name",
        [](const std::string &family, const std::string &entry) -> py::object {
          std::optional<gluon::MappedName> mapped = text::huggingface_name(family, entry);
          if (!mapped)
            return py::none();
          return py::make_tuple(mapped->parameter, mapped->transpose);
        },
        py::arg("family"), py::arg("entry"),
        "(dlc's parameter, stored transposed) for Hugging Face's entry, or None when the "
        "network holds nothing of it.");
}

} // namespace dlc::python
