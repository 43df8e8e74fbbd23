//===- ExportTest.cpp - dlc blocks written as ONNX and read back ---------------===//
//
// A round trip: a network exported to ONNX, imported back, gives what it gave before.
// (ONNX Runtime running the exported files is python/tests/test_onnx.py's, in
// bench/.venv.)
//
//===----------------------------------------------------------------------===//
#include "dlc/Frontend/NumPy.h"
#include "dlc/Gluon/Initializer.h"
#include "dlc/Gluon/ModelZoo.h"
#include "dlc/Gluon/TextModels.h"
#include "dlc/Onnx/Export.h"
#include "dlc/Onnx/Import.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace dlc;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string &name) {
  fs::path path = fs::temp_directory_path() / ("dlc-onnx-export-" + name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

void expectNear(const Tensor &got, const Tensor &want, double tolerance = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  std::vector<float> a = got.to_vector<float>(), b = want.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tolerance * (1 + std::abs(b[i]))) << "element " << i;
}

/// Exports `net` on `inputs`, imports the file and runs it eagerly and hybridized.
void expectRoundTrip(gluon::HybridBlock &net, const std::vector<Tensor> &inputs,
                     const std::string &name) {
  std::vector<Tensor> before = net(inputs);
  fs::path file = scratch(name) / "net.onnx";
  onnx::export_onnx(net, file.string(), inputs);
  auto imported = onnx::import(file.string());
  ASSERT_EQ(imported->inputs().size(), inputs.size());
  for (bool hybridized : {false, true}) {
    imported->hybridize(hybridized);
    std::vector<Tensor> after = (*imported)(inputs);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i)
      expectNear(after[i], before[i]);
  }
}

TEST(OnnxExport, ZooNetworksRoundTripThroughOnnx) {
  // DenseNet's last pool is 7x7: it takes 224x224 images.
  const std::pair<const char *, int64_t> networks[] = {
      {"resnet18_v1", 32}, {"resnet18_v2", 32}, {"mobilenetv2_0.25", 32}, {"vgg11_bn", 32},
      {"densenet121", 224}};
  for (const auto &[name, size] : networks) {
    SCOPED_TRACE(name);
    auto net = gluon::model_zoo::vision::get_model(name, 10);
    net->initialize(std::make_shared<init::Xavier>(), {npx::cpu(0)});
    Tensor x = np::random::normal(0, 1, {size == 32 ? 2 : 1, 3, size, size});
    net->hybridize();
    expectRoundTrip(*net, {x}, name);
  }
}

TEST(OnnxExport, BertRoundTripsThroughOnnx) {
  gluon::model_zoo::text::BertConfig config;
  config.vocab_size = 50, config.units = 16, config.hidden_size = 32;
  config.num_layers = 2, config.num_heads = 2, config.max_length = 16;
  auto bert = std::make_shared<gluon::model_zoo::text::BertModel>(config);
  bert->initialize(std::make_shared<init::Normal>(0.2), {npx::cpu(0)});
  Tensor ids = np::random::randint(0, 50, {2, 9});
  Tensor types = np::random::randint(0, 2, {2, 9});
  Tensor mask = np::ones({2, 9}, DType::f32);
  bert->hybridize();
  expectRoundTrip(*bert, {ids, types, mask}, "bert");
}

/// x + noise: a random op, which ONNX files do not carry.
struct Noisy : gluon::HybridBlock {
  Tensor forward(const Tensor &x) override { return x + np::random::normal(0, 1, x.shape()); }
};

TEST(OnnxExport, AnOpWithoutOnnxFormIsRefusedByNameAndNothingIsWritten) {
  Noisy net;
  fs::path file = scratch("refused") / "net.onnx";
  try {
    onnx::export_onnx(net, file.string(), std::vector<Shape>{{2, 3}});
    FAIL() << "exported";
  } catch (const UnsupportedError &e) {
    EXPECT_NE(std::string(e.what()).find("'dlc.random_normal'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has no ONNX form"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(file));
}

} // namespace
