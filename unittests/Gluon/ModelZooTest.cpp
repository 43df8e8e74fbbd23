//===- ModelZooTest.cpp - gluon.model_zoo.vision against MXNet 1.9.1 -----------===//
//
// Every network of the zoo builds, predicts (N, classes) and has the parameter count
// MXNet 1.9.1's same network has; two networks MXNet saved with random weights
// (Inputs/mxnet/zoo, written by python/tests/mxnet_zoo_reference.py) predict what MXNet
// predicted, eagerly and hybridized; compiled training steps end where eager ones do.
// python/tests/test_model_zoo.py checks every network against MXNet where it is
// installed.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"

#include "dlc/Frontend/MXNetParams.h"
#include "dlc/Gluon/Loss.h"
#include "dlc/Gluon/ModelZoo.h"
#include "dlc/Gluon/TrainStep.h"
#include "LayerNetworks.h"
#include "dlc/Gluon/Trainer.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace dlc;
using namespace dlc::gluon;
namespace zoo = dlc::gluon::model_zoo::vision;

namespace {

/// MXNet 1.9.1's parameter counts with 10 classes (mxnet_zoo_reference.py's counts.json).
const std::map<std::string, int64_t> &mxnetCounts() {
  static const std::map<std::string, int64_t> counts = {
      {"resnet18_v1", 11191242},   {"resnet34_v1", 21306826},   {"resnet50_v1", 23600522},
      {"resnet101_v1", 42666634},  {"resnet152_v1", 58375562},  {"resnet18_v2", 11187926},
      {"resnet34_v2", 21303510},   {"resnet50_v2", 23566550},   {"resnet101_v2", 42610902},
      {"resnet152_v2", 58300630},  {"vgg11", 128807306},        {"vgg13", 128991818},
      {"vgg16", 134301514},        {"vgg19", 139611210},        {"vgg11_bn", 128818314},
      {"vgg13_bn", 129003594},     {"vgg16_bn", 134318410},     {"vgg19_bn", 139633226},
      {"alexnet", 57044810},       {"densenet121", 7047754},    {"densenet161", 26714026},
      {"densenet169", 12659530},   {"densenet201", 18341194},   {"squeezenet1.0", 740554},
      {"squeezenet1.1", 727626},   {"inceptionv3", 21840490},   {"mobilenet1.0", 3239114},
      {"mobilenet0.75", 1840666},  {"mobilenet0.5", 834666},    {"mobilenet0.25", 221114},
      {"mobilenetv2_1.0", 2271936}, {"mobilenetv2_0.75", 1386664}, {"mobilenetv2_0.5", 715904},
      {"mobilenetv2_0.25", 259656}};
  return counts;
}

int64_t inputSize(const std::string &name) { return name == "inceptionv3" ? 299 : 224; }

std::string fixture(const std::string &name) {
  return std::string(DLC_MXNET_FIXTURES) + "/zoo/" + name;
}

/// mxnet_zoo_reference.py's zoo_input: sin(0.37 i) over the flat index, 2 images.
Tensor zooInput(const std::string &name) {
  const int64_t size = inputSize(name);
  std::vector<float> values(size_t(2 * 3 * size * size));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(std::sin(0.37 * double(i)));
  return np::array(values).reshape({2, 3, size, size});
}

int64_t parameterCount(Block &net) {
  int64_t count = 0;
  for (const ParameterPtr &p : net.collect_params().values())
    count += p->data(cpu()).size();
  return count;
}

} // namespace

TEST(ModelZoo, EveryNetworkHasMXNetsParametersAndPredictsEachClass) {
  ASSERT_EQ(zoo::mxnet_model_names().size(), mxnetCounts().size());
  EXPECT_EQ(zoo::model_names().size(), mxnetCounts().size() + 1) << "and vit_b_16";
  for (const std::string &name : zoo::mxnet_model_names()) {
    SCOPED_TRACE(name);
    ASSERT_EQ(mxnetCounts().count(name), 1u) << "a network MXNet's zoo does not have";
    auto net = zoo::get_model(name, 10);
    // Constant weights: drawing 1.3 billion random ones would cost this test most of its
    // time (the values are checked against MXNet's below and in test_model_zoo.py).
    net->initialize(std::make_shared<init::Zero>(), {cpu()});
    autograd::Pause predict;
    const int64_t size = inputSize(name);
    Tensor y = (*net)(np::ones({1, 3, size, size}));
    EXPECT_EQ(y.shape(), (Shape{1, 10}));
    for (float v : y.to_vector<float>()) // waits for the forward
      ASSERT_TRUE(std::isfinite(v));
    EXPECT_EQ(parameterCount(*net), mxnetCounts().at(name));
  }
}

// MXNet saved these with random weights and batch-norm statistics; its predictions for
// the same input are in the files beside them.
TEST(ModelZoo, NetworksMXNetSavedPredictAsMXNetDid) {
  for (const std::string name : {"mobilenet0.25", "squeezenet1.1"}) {
    for (bool hybrid : {false, true}) {
      SCOPED_TRACE(name + (hybrid ? std::string(" hybridized") : std::string(" eager")));
      auto net = zoo::get_model(name, 10);
      net->load_parameters(fixture(name + ".params"));
      if (hybrid)
        net->hybridize();
      mxnet_params::Reader reader(fixture(name + ".output.params"));
      ASSERT_EQ(reader.tensors().size(), 1u);
      Tensor want = reader.read(reader.tensors()[0]);
      autograd::Pause predict;
      Tensor got = (*net)(zooInput(name));
      ASSERT_EQ(got.shape(), want.shape());
      std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
      float scale = 0;
      for (float v : w)
        scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < w.size(); ++i)
        ASSERT_NEAR(g[i], w[i], 1e-4 * scale) << "output " << i;
      if (hybrid) {
        EXPECT_NE(net->compiled(), nullptr) << "the hybridized call compiled";
      }
    }
  }
}

namespace {

struct TrainingRun {
  std::vector<std::vector<float>> params;
  std::vector<float> loss;
  std::string ir; ///< the compiled step's
};

/// What a compiled zoo step is asked to do besides the defaults.
struct ZooStepOptions {
  bool poolIndices = false;
  int64_t memoryBudget = 0;
  int steps = 3;
};

/// SGD-with-momentum steps (three unless `zooStep` says) of zoo network `name` on
/// `batch` random images, eagerly (record, backward, Trainer::step) or as the compiled
/// TrainStep.
TrainingRun trainSteps(const std::string &name, int64_t size, int64_t batch, bool compiled,
                       const ZooStepOptions &zooStep = {}) {
  np::random::seed(5);
  zoo::ModelOptions zooOptions;
  zooOptions.classes = 3;
  zooOptions.image_size = size; // a ViT is built for it
  auto net = zoo::get_model(name, zooOptions);
  net->initialize(init::Xavier());
  {
    autograd::Pause shapes;
    (*net)(np::zeros({1, 3, size, size}));
  }
  // The eager convolutions compute directly; so does the compiled step here, so that the
  // two compare the compiler's work, not two algorithms' rounding: at batch 4 from a
  // random start DenseNet-121's gradients hang on the last bits of its activations
  // (eager on plain against blocked layouts, both direct, already differ by 36 % in the
  // first norm's gamma and 19 % in a convolution's weights; Winograd's results differ as
  // much, and no more). Winograd is checked against the reference kernels elsewhere.
  // Likewise max pooling's gradient finds the maxima again, as eager code does, unless
  // asked: from the forward's indices the filter gradients sum in another order, and
  // that rounding flipped a ReLU of VGG-16's second dense layer in the third step on an
  // AVX2 EPYC (its bias then 6.9e-5 off, every other parameter within 5e-6; after one
  // or two steps all within 1e-8). PoolIndicesChangeOnlyRounding compares that path.
  CompileOptions options = compile_options_from_environment();
  options.conv_algorithms = "direct";
  options.pool_indices = zooStep.poolIndices;
  options.memory_budget = zooStep.memoryBudget;
  Tensor images = dlc::testing::randomTensor({batch, 3, size, size}, 9);
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < batch; ++i)
    classes.push_back((i * 2) % 3);
  Tensor labels = np::array(classes);
  np::random::seed(23); // dropout masks
  std::string ir;
  std::vector<std::vector<float>> steps =
      dlc::testing::trainSteps(*net, images, labels, compiled, options, /*learningRate=*/0.01,
                               zooStep.steps, &ir);
  TrainingRun run;
  run.ir = ir;
  run.loss = steps[size_t(zooStep.steps) - 1];
  run.params.assign(steps.begin() + zooStep.steps, steps.end());
  return run;
}

/// The smallest input each network takes (a multiple of its strides): the fixed-size
/// average pools at the ends of DenseNet (7), SqueezeNet (13) and Inception (8) need
/// ImageNet's sizes; the global pools of the others take small images. The deeper
/// DenseNets train on 2 images rather than 4 to keep the test short.
struct ZooTrainingCase {
  int64_t size;
  int64_t batch;
};

ZooTrainingCase trainingCase(const std::string &name) {
  if (name == "inceptionv3")
    return {299, 4};
  if (name.rfind("squeezenet", 0) == 0 || name == "densenet121")
    return {224, 4};
  if (name.rfind("densenet", 0) == 0)
    return {224, 2};
  if (name.rfind("mobilenet", 0) == 0 || name == "alexnet")
    return {64, 4};
  return {32, 4}; // ResNets, VGGs and the ViT (built for 32x32: 4 patches)
}

/// gtest's name for a zoo network: "mobilenetv2_0.25" -> "mobilenetv2_0_25".
std::string testName(const ::testing::TestParamInfo<std::string> &info) {
  std::string name = info.param;
  for (char &c : name)
    if (c == '.')
      c = '_';
  return name;
}

class EveryZooNetwork : public ::testing::TestWithParam<std::string> {};

} // namespace

// Every network of the zoo, each its own test so that ctest runs them side by side:
// depthwise convolutions, ReLU6 and shortcuts (MobileNetV2), depthwise ones without
// shortcuts (MobileNet), concatenated branches and ceil-mode pooling (SqueezeNet), the
// dense blocks' concatenations (DenseNet), v2's pre-activation, v1's bottlenecks, VGG's
// and AlexNet's dropout between dense layers, Inception's asymmetric kernels and
// four-way branches, the ViT's [CLS] token and attention: 3 compiled steps end where 3
// eager steps do.
TEST_P(EveryZooNetwork, CompiledTrainingStepsEndWhereEagerOnesDo) {
  const std::string name = GetParam();
  const ZooTrainingCase c = trainingCase(name);
  TrainingRun eager = trainSteps(name, c.size, c.batch, false),
              compiled = trainSteps(name, c.size, c.batch, true);
  ASSERT_EQ(eager.params.size(), compiled.params.size());
  for (size_t p = 0; p < eager.params.size(); ++p)
    for (size_t i = 0; i < eager.params[p].size(); ++i)
      ASSERT_NEAR(compiled.params[p][i], eager.params[p][i],
                  1e-5 * std::max(1.f, std::abs(eager.params[p][i])))
          << "parameter #" << p << " element " << i;
  ASSERT_EQ(eager.loss.size(), size_t(c.batch));
  for (size_t i = 0; i < eager.loss.size(); ++i)
    EXPECT_NEAR(compiled.loss[i], eager.loss[i], 1e-5 * std::max(1.f, eager.loss[i]));
}

// Max pooling's gradient from the forward's indices (dlc-keep-pool-indices, with the
// convolutions around it in one step, dlc-fuse-conv-pool) against finding the maxima
// again: one step, so that the filter gradients' other summation order shows as rounding
// and is not amplified by the steps after (see trainSteps).
TEST_P(EveryZooNetwork, PoolIndicesChangeOnlyRounding) {
  const std::string name = GetParam();
  const ZooTrainingCase c = trainingCase(name);
  ZooStepOptions indexed, found;
  indexed.poolIndices = true;
  indexed.steps = found.steps = 1;
  TrainingRun fromIndices = trainSteps(name, c.size, c.batch, true, indexed),
              maximaFound = trainSteps(name, c.size, c.batch, true, found);
  ASSERT_EQ(fromIndices.params.size(), maximaFound.params.size());
  for (size_t p = 0; p < fromIndices.params.size(); ++p)
    for (size_t i = 0; i < fromIndices.params[p].size(); ++i)
      ASSERT_NEAR(fromIndices.params[p][i], maximaFound.params[p][i],
                  1e-5 * std::max(1.f, std::abs(maximaFound.params[p][i])))
          << "parameter #" << p << " element " << i;
  EXPECT_EQ(fromIndices.loss, maximaFound.loss) << "the forwards compute alike";
}

INSTANTIATE_TEST_SUITE_P(ModelZoo, EveryZooNetwork, ::testing::ValuesIn(zoo::model_names()),
                         testName);

// dlc-remat under a budget of 1 byte computes again every activation it can (batch
// norms with their activations, residual sums, convolutions with their inputs): the
// copies run the same kernels on the same values, so the steps end on the same bits as
// with every activation kept (and so where the eager ones do, as above). ResNet-50 v1's
// bottlenecks and downsampling shortcuts, on ImageNet's size (on small images its step
// holds the most at the end, the 100 MB of weight gradients the update reads, where no
// activation is left to free); MobileNetV2's ReLU6, depthwise convolutions and linear
// bottlenecks with their residual sums.
TEST(ModelZoo, ActivationsComputedAgainChangeNoNumber) {
  for (auto [name, c] : {std::pair<const char *, ZooTrainingCase>{"resnet50_v1", {224, 4}},
                         {"mobilenetv2_0.25", trainingCase("mobilenetv2_0.25")}}) {
    SCOPED_TRACE(name);
    ZooStepOptions keep, recompute;
    keep.poolIndices = recompute.poolIndices = true;
    recompute.memoryBudget = 1;
    TrainingRun kept = trainSteps(name, c.size, c.batch, true, keep),
                recomputed = trainSteps(name, c.size, c.batch, true, recompute);
    ASSERT_EQ(kept.params.size(), recomputed.params.size());
    for (size_t p = 0; p < kept.params.size(); ++p)
      ASSERT_EQ(kept.params[p], recomputed.params[p]) << "parameter #" << p;
    EXPECT_EQ(kept.loss, recomputed.loss);
    for (const char *copy : {"dlc.fused \"batch_norm_activation\"(", "dlc.conv2d "}) {
      auto copied = [&](const std::string &ir) {
        int count = 0;
        for (size_t at = ir.find(copy); at != std::string::npos; at = ir.find(copy, at + 1))
          count += ir.substr(at, ir.find('\n', at) - at).find("dlc.recomputed") != std::string::npos;
        return count;
      };
      EXPECT_EQ(copied(kept.ir), 0) << copy;
      EXPECT_GT(copied(recomputed.ir), 4) << copy << " copies in\n" << recomputed.ir;
    }
  }
}

TEST(ModelZoo, ClearErrors) {
  try {
    zoo::get_model("resnet51_v1");
    FAIL() << "an unknown name";
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("no model named 'resnet51_v1'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("mobilenetv2_0.25"), std::string::npos) << "lists the zoo";
  }
  EXPECT_THROW(zoo::get_model("vgg16", 0), ValueError);
  EXPECT_THROW(zoo::resnet(3, 50), ValueError);
  EXPECT_THROW(zoo::squeezenet("1.2"), ValueError);

  // pretrained: MXNet's file name in the store, never downloaded.
  const std::string root = ::testing::TempDir() + "dlc_zoo_" + std::to_string(getpid());
  EXPECT_EQ(zoo::pretrained_file("resnet50_v1", root), root + "/resnet50_v1-0aee57f9.params");
  try {
    zoo::get_model("mobilenet0.25", {1000, true, root});
    FAIL() << "no file in the store";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("mobilenet0.25-9f83e440.params"), std::string::npos) << message;
    EXPECT_NE(message.find(root), std::string::npos) << message;
  }
  // A file of that name whose SHA-1 is another's is refused, naming both digests.
  std::string mkdir = "mkdir -p '" + root + "'";
  ASSERT_EQ(std::system(mkdir.c_str()), 0);
  std::ofstream(zoo::pretrained_file("mobilenet0.25", root), std::ios::binary) << "not weights";
  try {
    zoo::get_model("mobilenet0.25", {1000, true, root});
    FAIL() << "a file with another SHA-1";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("is not MXNet's mobilenet0.25 file"), std::string::npos) << message;
    EXPECT_NE(message.find("8a4b233beff2f9eee3d9a4b9d478722ae1d8b562"), std::string::npos) << "the file's SHA-1: " << message;
    EXPECT_NE(message.find("9f83e440996887baf91a6aff1cccc1c903a64274"), std::string::npos);
  }
  EXPECT_THROW(zoo::get_model("mobilenet0.25", {10, true, root}),
               ValueError);
  std::remove(zoo::pretrained_file("mobilenet0.25", root).c_str());
}

// Fine-tuning: the output layer replaced by one for other classes; the hybridized
// network forgets what it compiled with the old one.
TEST(ModelZoo, TheOutputLayerIsReplacedForFineTuning) {
  auto net = zoo::get_model("mobilenet0.25", 10);
  net->load_parameters(fixture("mobilenet0.25.params"));
  net->hybridize();
  autograd::Pause predict;
  Tensor x = np::random::uniform(-1, 1, {2, 3, 64, 64});
  EXPECT_EQ((*net)(x).shape(), (Shape{2, 10}));
  auto head = std::make_shared<nn::Dense>(3);
  head->initialize(init::Xavier());
  net->replace_child("output", head);
  EXPECT_EQ((*net)(x).shape(), (Shape{2, 3}));
  EXPECT_EQ(net->collect_params().select("^output\\.").size(), 2u);
  try {
    net->replace_child("classifier", head);
    FAIL() << "no such child";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no child named 'classifier' to replace (its children: "
                                         "features, output)"),
              std::string::npos)
        << e.what();
  }
}
