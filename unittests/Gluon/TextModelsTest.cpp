//===- TextModelsTest.cpp - BERT, GPT-2 and ViT against transformers' results --===//
//
// The fixtures in Inputs/huggingface are checkpoints `transformers` wrote with random
// (perturbed) weights, with its outputs and parameter gradients for fixed inputs
// (python/tests/huggingface_reference.py). dlc loads each checkpoint with
// from_pretrained and must give the same outputs (1e-4) and gradients (1e-3), eagerly
// and hybridized. Also: the name maps, mismatched files and configurations refused with
// their reasons, and a compiled GPT-2 training step.
//
//===----------------------------------------------------------------------===//
#include <dlc/gluon.h>

#include "dlc/Frontend/CompiledModel.h"
#include "dlc/Frontend/SafeTensors.h"
#include "dlc/Gluon/ModelZoo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dlc;
using namespace dlc::gluon;
namespace text = dlc::gluon::model_zoo::text;
namespace vision = dlc::gluon::model_zoo::vision;

namespace {

std::string fixture(const std::string &name) {
  return std::string(DLC_HUGGINGFACE_FIXTURES) + "/" + name;
}

std::map<std::string, Tensor> expected(const std::string &name) {
  std::map<std::string, Tensor> out;
  for (auto &[key, value] : safetensors::load(fixture(name) + "/expected.safetensors"))
    out[key] = value;
  return out;
}

/// |got - want| <= tolerance * max|want| for every element: relative to the tensor's
/// scale, so that entries near zero are held to the same absolute error as large ones.
void expectClose(const Tensor &got, const Tensor &want, double tolerance, const std::string &what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.astype(DType::f32).to_vector<float>(), w = want.to_vector<float>();
  // A floor for the gradients that are zero in exact arithmetic (a key projection's
  // bias: softmax ignores what every score of a query shares), rounding noise in both.
  double scale = 1e-3;
  for (float v : w)
    scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tolerance * scale) << what << " at " << i;
}

/// The checkpoint's outputs for its inputs; with gradients, checks every parameter's.
std::vector<Tensor> runBert(text::BertModel &bert, std::map<std::string, Tensor> &want,
                            bool checkGradients) {
  autograd::Record record;
  std::vector<Tensor> out =
      bert({want["input.ids"], want["input.token_types"], want["input.mask"]});
  Tensor loss = np::sum(out[0] * want["input.weights_sequence"]) +
                np::sum(out[1] * want["input.weights_pooled"]);
  if (checkGradients)
    loss.backward();
  return out;
}

void expectGradients(Block &model, const std::string &family,
                     std::map<std::string, Tensor> &want) {
  ParameterDict params = model.collect_params();
  size_t checked = 0;
  for (auto &[key, value] : want) {
    if (key.rfind("grad.", 0) != 0)
      continue;
    std::string hfName = key.substr(5);
    std::optional<MappedName> mapped = text::huggingface_name(family, hfName);
    ASSERT_TRUE(mapped) << hfName;
    ASSERT_TRUE(params.contains(mapped->parameter)) << hfName << " -> " << mapped->parameter;
    Tensor grad = params[mapped->parameter]->grad(cpu());
    expectClose(mapped->transpose ? np::transpose(grad) : grad, value, 1e-3,
                "gradient of " + hfName);
    ++checked;
  }
  EXPECT_EQ(checked, params.size()) << "every parameter's gradient is in the fixture";
}

} // namespace

TEST(TextModels, BertGivesTransformersOutputsAndGradients) {
  auto want = expected("bert-tiny");
  auto net = text::from_pretrained(fixture("bert-tiny"));
  auto bert = std::dynamic_pointer_cast<text::BertModel>(net);
  ASSERT_TRUE(bert);
  EXPECT_EQ(bert->config().num_layers, 2);
  EXPECT_EQ(bert->config().token_types, 3);
  std::vector<Tensor> out = runBert(*bert, want, /*checkGradients=*/true);
  expectClose(out[0], want["output.sequence"], 1e-4, "sequence");
  expectClose(out[1], want["output.pooled"], 1e-4, "pooled");
  expectGradients(*bert, "bert", want);
}

TEST(TextModels, BertHybridizedGivesTheSameOutputsAndGradients) {
  auto want = expected("bert-tiny");
  auto bert = std::dynamic_pointer_cast<text::BertModel>(text::from_pretrained(fixture("bert-tiny")));
  bert->hybridize();
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> out = runBert(*bert, want, true);
    expectClose(out[0], want["output.sequence"], 1e-4, "sequence");
    expectClose(out[1], want["output.pooled"], 1e-4, "pooled");
    expectGradients(*bert, "bert", want);
  }
  // Predicting, the feed-forward's GELU is the dense layer's epilogue (dense_gelu).
  std::vector<Tensor> out = (*bert)({want["input.ids"], want["input.token_types"], want["input.mask"]});
  expectClose(out[0], want["output.sequence"], 1e-4, "sequence, predicting");
  expectClose(out[1], want["output.pooled"], 1e-4, "pooled, predicting");
  EXPECT_EQ(bert->compile_stats().compiles, 2);
}

TEST(TextModels, GPT2GivesTransformersLogitsAndGradients) {
  auto want = expected("gpt2-tiny");
  for (bool hybridized : {false, true}) {
    SCOPED_TRACE(hybridized ? "hybridized" : "eager");
    auto gpt = std::dynamic_pointer_cast<text::GPT2Model>(text::from_pretrained(fixture("gpt2-tiny")));
    ASSERT_TRUE(gpt);
    if (hybridized)
      gpt->hybridize();
    autograd::Record record;
    Tensor logits = (*gpt)({want["input.ids"], want["input.mask"]})[0];
    np::sum(logits * want["input.weights_logits"]).backward();
    expectClose(logits, want["output.logits"], 1e-4, "logits");
    // The word embedding's gradient sums its two uses (input rows and the tied head).
    expectGradients(*gpt, "gpt2", want);
  }
}

TEST(TextModels, GPT2WithoutAMaskEqualsAllTokensReal) {
  auto want = expected("gpt2-tiny");
  auto gpt = std::dynamic_pointer_cast<text::GPT2Model>(text::from_pretrained(fixture("gpt2-tiny")));
  Tensor ids = want["input.ids"];
  Tensor all = np::ones(ids.shape(), DType::i64);
  expectClose((*gpt)(ids), (*gpt)({ids, all})[0], 1e-6, "no mask vs all real");
  // A padded key changes nothing for the queries before it (causal anyway) and, being
  // masked, nothing for those after it: the first sequence's logits are the fixture's.
  std::vector<float> got = (*gpt)({ids, want["input.mask"]})[0].to_vector<float>();
  std::vector<float> first = (*gpt)(ids).to_vector<float>();
  size_t row = got.size() / 2;
  for (size_t i = 0; i < row; ++i)
    ASSERT_NEAR(got[i], first[i], 1e-6);
}

TEST(TextModels, NameMapsFollowHuggingFaceNames) {
  auto q = text::huggingface_name("bert", "bert.encoder.layer.11.attention.self.query.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->parameter, "layers.11.attention.query_proj.weight");
  EXPECT_FALSE(q->transpose);
  EXPECT_EQ(text::huggingface_name("bert", "encoder.layer.0.output.LayerNorm.gamma")->parameter,
            "layers.0.ffn_norm.gamma");
  EXPECT_EQ(text::huggingface_name("bert", "encoder.layer.0.attention.output.LayerNorm.bias")
                ->parameter,
            "layers.0.attention_norm.beta");
  EXPECT_FALSE(text::huggingface_name("bert", "cls.predictions.transform.dense.weight"));
  EXPECT_FALSE(text::huggingface_name("bert", "bert.embeddings.position_ids"));
  auto qkv = text::huggingface_name("gpt2", "h.3.attn.c_attn.weight");
  ASSERT_TRUE(qkv);
  EXPECT_EQ(qkv->parameter, "layers.3.attention.qkv_proj.weight");
  EXPECT_TRUE(qkv->transpose);
  EXPECT_FALSE(text::huggingface_name("gpt2", "h.3.attn.bias"));
  EXPECT_FALSE(text::huggingface_name("gpt2", "lm_head.weight"));
  EXPECT_EQ(text::huggingface_name("gpt2", "transformer.ln_f.weight")->parameter, "final_norm.gamma");
  // Unknown entries keep their name (and loading reports them).
  EXPECT_EQ(text::huggingface_name("gpt2", "score.weight")->parameter, "score.weight");
  EXPECT_THROW(text::huggingface_name("t5", "x"), ValueError);
}

TEST(TextModels, MismatchedFilesAreRefusedWithTheirDifferences) {
  text::BertConfig tinyConfig;
  tinyConfig.vocab_size = 99, tinyConfig.units = 32, tinyConfig.hidden_size = 64;
  tinyConfig.num_layers = 2, tinyConfig.num_heads = 4, tinyConfig.max_length = 40;
  tinyConfig.token_types = 3;
  auto refusal = [&](const text::BertConfig &config) -> std::string {
    text::BertModel bert(config);
    try {
      bert.load_huggingface(fixture("bert-tiny") + "/model.safetensors");
    } catch (const Error &e) {
      return e.what();
    }
    return "loaded";
  };
  text::BertConfig wider = tinyConfig;
  wider.units = 64;
  std::string what = refusal(wider);
  EXPECT_NE(what.find("'embeddings.word_embeddings.weight' (the network's "
                      "'word_embed.weight') has shape 99x32 in the file but 99x64"),
            std::string::npos)
      << what;
  text::BertConfig deeper = tinyConfig;
  deeper.num_layers = 3;
  what = refusal(deeper);
  EXPECT_NE(what.find("'layers.2.attention.query_proj.weight' is in the network but not in "
                      "the file"),
            std::string::npos)
      << what;
  EXPECT_EQ(refusal(tinyConfig), "loaded");
  // A GPT-2 file is not a BERT.
  text::BertModel tiny(tinyConfig);
  try {
    tiny.load_huggingface(fixture("gpt2-tiny") + "/model.safetensors");
    FAIL() << "a GPT-2 file loaded into BERT";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("'transformer.h.0.attn.c_attn.bias' is in the file but not in the network"),
              std::string::npos)
        << e.what();
  }
  // GPT-2's transposed entries are checked transposed.
  text::GPT2Config g;
  g.vocab_size = 64, g.units = 32, g.num_layers = 2, g.num_heads = 4, g.max_length = 32;
  g.hidden_size = 96;
  text::GPT2Model gpt(g);
  try {
    gpt.load_huggingface(fixture("gpt2-tiny") + "/model.safetensors");
    FAIL() << "a narrower feed-forward loaded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("'transformer.h.0.mlp.c_fc.weight' (the network's "
                                         "'layers.0.ffn_hidden.weight') has shape 32x128 in the "
                                         "file (stored transposed) but 96x32"),
              std::string::npos)
        << e.what();
  }
}

TEST(TextModels, ConfigurationsDlcCannotFollowAreRefused) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("dlc-text-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fixture("bert-tiny") + "/model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  auto write = [&](const std::string &json) { std::ofstream(dir / "config.json") << json; };
  auto message = [&]() -> std::string {
    try {
      text::from_pretrained(dir.string());
    } catch (const Error &e) {
      return e.what();
    }
    return "loaded";
  };
  write(R"({"model_type": "bert", "hidden_act": "silu"})");
  EXPECT_NE(message().find("hidden_act \"silu\""), std::string::npos) << message();
  write(R"({"model_type": "t5"})");
  EXPECT_NE(message().find("model_type \"t5\""), std::string::npos) << message();
  write(R"({"model_type": "bert", "hidden_size": "wide"})");
  EXPECT_NE(message().find("\"hidden_size\" must be an integer"), std::string::npos) << message();
  write(R"({"model_type": "vit", "qkv_bias": false})");
  EXPECT_NE(message().find("qkv_bias false"), std::string::npos) << message();
  write(R"({"model_type": "gpt2", "tie_word_embeddings": false})");
  EXPECT_NE(message().find("tie_word_embeddings"), std::string::npos) << message();
  write("not json");
  EXPECT_NE(message().find("is not a JSON object"), std::string::npos) << message();
  EXPECT_NE(message().find(dir.string()), std::string::npos);
  fs::remove_all(dir);
  EXPECT_THROW(text::from_pretrained("/nonexistent/bert"), Error);
}

TEST(TextModels, ZooNamesAndInputChecks) {
  EXPECT_EQ(text::model_names(),
            (std::vector<std::string>{"bert_base", "bert_small", "gpt2_124m", "gpt2_small"}));
  try {
    text::get_model("bert_huge");
    FAIL();
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("known: bert_base, bert_small"), std::string::npos);
  }
  auto gpt = std::dynamic_pointer_cast<text::GPT2Model>(text::get_model("gpt2_small"));
  ASSERT_TRUE(gpt);
  gpt->initialize(init::Normal(0.02));
  EXPECT_EQ(gpt->collect_params().size(), 4u + 4 * 12);
  Tensor ids = np::zeros({1, 300}, DType::i64);
  try {
    (*gpt)(ids);
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("300 ids does not fit its 256 positions"),
              std::string::npos);
  }
  EXPECT_THROW((*gpt)(np::zeros({4}, DType::i64)), ShapeError);
  Tensor bad = np::array(std::vector<int64_t>{1, 2, 256}).reshape({1, 3});
  EXPECT_THROW((*gpt)(bad).to_vector<float>(), IndexError);
  // The layers are read from the children at each call: a replaced one runs, and one
  // of another kind is named.
  gpt->layers->replace_child("1", std::make_shared<nn::Dense>(4));
  try {
    (*gpt)(np::zeros({1, 3}, DType::i64));
    FAIL();
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("GPT2Model: layers.1 is a Dense(4)"), std::string::npos)
        << e.what();
  }
}

TEST(TextModels, GPT2CompiledTrainingStepLowersTheLoss) {
  text::GPT2Config config = text::GPT2Config::small();
  config.num_layers = 2;
  config.units = 64;
  config.num_heads = 4;
  config.max_length = 32;
  config.dropout = config.attention_dropout = 0;
  auto gpt = std::make_shared<text::GPT2Model>(config);
  gpt->initialize(init::Normal(0.02));
  // A repeating byte pattern: the next byte is predictable from the previous one.
  std::vector<int64_t> bytes;
  for (int i = 0; i < 4 * 17; ++i)
    bytes.push_back("abcdefgh"[i % 8]);
  Tensor all = np::array(bytes).reshape({4, 17});
  Tensor inputs = npx::slice_axis(all, 1, 0, 16), labels = npx::slice_axis(all, 1, 1, 17);
  Trainer trainer(gpt->collect_params(), "adam", {{"learning_rate", 3e-3}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  TrainStep step(*gpt, lossFn, trainer, {cpu()});
  float first = np::mean(step(inputs, labels)).item<float>(), last = first;
  for (int i = 0; i < 30; ++i)
    last = np::mean(step(inputs, labels)).item<float>();
  EXPECT_LT(last, first * 0.3) << "first " << first << ", last " << last;
}

// A hybridized BERT as one model file: three int64 inputs, the mask cast to bool, fused
// attention and layer norms, run without the compiler as dlc-run runs it.
TEST(TextModels, BertModelFileGivesTheHybridizedOutputs) {
  auto want = expected("bert-tiny");
  auto bert = text::from_pretrained(fixture("bert-tiny"));
  bert->hybridize();
  std::vector<Tensor> inputs{want["input.ids"], want["input.token_types"], want["input.mask"]};
  std::vector<Tensor> hybridized = (*bert)(inputs);
  std::string path = (std::filesystem::temp_directory_path() /
                      ("dlc-bert-" + std::to_string(::getpid()) + ".dlc"))
                         .string();
  bert->save_compiled(path);
  auto model = CompiledModel::load(path);
  std::vector<Tensor> loaded = model->run(inputs);
  ASSERT_EQ(loaded.size(), 2u);
  expectClose(loaded[0], hybridized[0], 1e-6, "sequence");
  expectClose(loaded[1], hybridized[1], 1e-6, "pooled");
  std::filesystem::remove(path);
}

// The vision zoo's ViT, loaded from a ViTForImageClassification checkpoint: the final
// layer norm's sequence and the logits, and every parameter's gradient of both.
TEST(TextModels, ViTGivesTransformersOutputsAndGradients) {
  auto want = expected("vit-tiny");
  auto vit = std::dynamic_pointer_cast<vision::VisionTransformer>(
      text::from_pretrained(fixture("vit-tiny")));
  ASSERT_TRUE(vit);
  EXPECT_EQ(vit->config().classes, 5);
  EXPECT_EQ(vit->patches(), 16);
  Tensor images = want["input.images"];
  {
    autograd::Record record;
    Tensor sequence = vit->features(images), logits = (*vit)(images);
    Tensor loss = np::sum(sequence * want["input.weights_sequence"]) +
                  np::sum(logits * want["input.weights_logits"]);
    loss.backward();
    expectClose(sequence, want["output.sequence"], 1e-4, "sequence");
    expectClose(logits, want["output.logits"], 1e-4, "logits");
  }
  expectGradients(*vit, "vit", want);

  // Hybridized: the same logits, and the same gradients of the logits' loss as eagerly.
  auto hybrid = std::dynamic_pointer_cast<vision::VisionTransformer>(
      text::from_pretrained(fixture("vit-tiny")));
  hybrid->hybridize();
  for (auto *net : {vit.get(), hybrid.get()}) {
    autograd::Record record;
    Tensor logits = (*net)(images);
    np::sum(logits * want["input.weights_logits"]).backward();
    expectClose(logits, want["output.logits"], 1e-4, "logits");
  }
  ParameterDict eagerParams = vit->collect_params(), hybridParams = hybrid->collect_params();
  for (const std::string &name : eagerParams.keys())
    expectClose(hybridParams[name]->grad(cpu()), eagerParams[name]->grad(cpu()), 1e-4,
                "hybridized gradient of " + name);
  EXPECT_EQ(hybrid->compile_stats().compiles, 1);
}

// A hybridized ViT as a model file: its [CLS] token broadcast to the batch is a step
// whose target shape the file carries, checked and run as dlc-run runs it.
TEST(TextModels, ViTModelFileGivesTheHybridizedLogits) {
  auto want = expected("vit-tiny");
  auto vit = text::from_pretrained(fixture("vit-tiny"));
  vit->hybridize();
  Tensor images = want["input.images"];
  ASSERT_EQ(images.shape()[0], 2) << "a batch of several images, which the broadcast fills";
  Tensor hybridized = (*vit)(images);
  std::string path = (std::filesystem::temp_directory_path() /
                      ("dlc-vit-" + std::to_string(::getpid()) + ".dlc"))
                         .string();
  vit->save_compiled(path);
  auto model = CompiledModel::load(path);
  std::vector<Tensor> loaded = model->run({images});
  ASSERT_EQ(loaded.size(), 1u);
  expectClose(loaded[0], hybridized, 1e-6, "logits");
  std::filesystem::remove(path);
}

TEST(TextModels, ViTB16IsInTheVisionZoo) {
  auto net = vision::get_model("vit_b_16", 1000);
  auto vit = std::dynamic_pointer_cast<vision::VisionTransformer>(net);
  ASSERT_TRUE(vit);
  int64_t count = 0;
  for (const ParameterPtr &p : net->collect_params().values())
    count += shape_rules::numElements(p->shape());
  EXPECT_EQ(count, 86567656) << "ViT-B/16's parameters (torchvision and Hugging Face agree)";
  EXPECT_EQ(vit->patches(), 196);
  vision::ModelOptions pretrained;
  pretrained.pretrained = true;
  try {
    vision::get_model("vit_b_16", pretrained);
    FAIL() << "MXNet published no ViT";
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("from_pretrained"), std::string::npos) << e.what();
  }
  EXPECT_EQ(text::huggingface_name("vit", "vit.encoder.layer.7.attention.attention.key.bias")
                ->parameter,
            "layers.7.attention.key_proj.bias");
  EXPECT_EQ(text::huggingface_name("vit", "vit.encoder.layer.0.layernorm_after.weight")->parameter,
            "layers.0.ffn_norm.gamma");
  EXPECT_EQ(text::huggingface_name("vit", "classifier.weight")->parameter, "head.weight");
  EXPECT_FALSE(text::huggingface_name("vit", "pooler.dense.weight"));

  // Without a classifier: the first token's features. Images of another size are named.
  vision::ViTConfig small;
  small.image_size = 32, small.patch_size = 8, small.units = 16, small.hidden_size = 32;
  small.num_layers = 1, small.num_heads = 2, small.classes = 0;
  vision::VisionTransformer features(small);
  features.initialize(init::Normal(0.02));
  EXPECT_EQ(features(np::random::normal(0, 1, {3, 3, 32, 32})).shape(), (Shape{3, 16}));
  EXPECT_FALSE(features.head);
  try {
    features(np::random::normal(0, 1, {1, 3, 30, 30}));
    FAIL();
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("images must be batch x 3 x 32 x 32, got 1x3x30x30"),
              std::string::npos)
        << e.what();
  }
  small.patch_size = 7;
  EXPECT_THROW(vision::VisionTransformer{small}, ValueError);
}

// The compiled step split over two devices (each replica takes half of the images and
// broadcasts the [CLS] token to its half, dlc-shard-data-parallel) ends where the
// compiled step on one device does, from the same weights.
TEST(TextModels, ViTDataParallelStepEqualsOneDevices) {
  vision::ViTConfig config;
  config.image_size = 16, config.patch_size = 4, config.channels = 1, config.units = 32;
  config.hidden_size = 64, config.num_layers = 2, config.num_heads = 4, config.classes = 3;
  Tensor images = np::random::normal(0, 1, {8, 1, 16, 16});
  Tensor labels = np::random::randint(0, 3, {8});
  std::vector<std::vector<float>> ends[2];
  float losses[2][2];
  vision::VisionTransformer reference(config);
  reference.initialize(init::Normal(0.02));
  for (int run = 0; run < 2; ++run) {
    std::vector<Device> devices =
        run ? std::vector<Device>{cpu(0), cpu(1)} : std::vector<Device>{cpu()};
    vision::VisionTransformer vit(config);
    vit.initialize(init::Zero(), devices);
    ParameterDict params = vit.collect_params(), start = reference.collect_params();
    for (const std::string &name : params.keys())
      params[name]->set_data(start[name]->data(cpu()));
    Trainer trainer(params, "sgd", {{"learning_rate", 0.1}});
    loss::SoftmaxCrossEntropyLoss lossFn;
    TrainStep step(vit, lossFn, trainer, devices);
    losses[run][0] = np::mean(step(images, labels)).item<float>();
    for (int i = 0; i < 2; ++i)
      losses[run][1] = np::mean(step(images, labels)).item<float>();
    for (const ParameterPtr &p : params.values())
      ends[run].push_back(p->data(cpu()).to_vector<float>());
  }
  EXPECT_NEAR(losses[1][0], losses[0][0], 1e-5);
  EXPECT_NEAR(losses[1][1], losses[0][1], 1e-5);
  EXPECT_LT(losses[0][1], losses[0][0]);
  ASSERT_EQ(ends[0].size(), ends[1].size());
  for (size_t p = 0; p < ends[0].size(); ++p)
    for (size_t i = 0; i < ends[0][p].size(); ++i)
      ASSERT_NEAR(ends[1][p][i], ends[0][p][i], 1e-5 * std::max(1.f, std::abs(ends[0][p][i])))
          << "parameter #" << p << " element " << i;
}
