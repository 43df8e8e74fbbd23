//===- GpuTrainingTest.cpp - the seed's training loop on GPUs ----------------===//
//
// The seed's loop (split_and_load, record, backward, Trainer.step) on every GPU ends
// where the same loop on as many CPU devices ends; hybridized and the compiled training
// step (NCCL all-reduce with two GPUs or more) end where the eager GPU loop ends. Every
// test skips, saying why, when this process sees no GPU.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "../Gluon/ElementwiseBlocks.h"
#include "../Gluon/LayerNetworks.h"
#include "../Gluon/GeneratedRegionsCheck.h"
#include "dlc/Hybridize/ModelCompiler.h"

#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <map>
#include <string>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::randomTensor;

namespace {

/// A LeafNetwork with BatchNorm and no dropout (dropout masks differ across devices).
class SmallLeaf : public HybridSequential {
public:
  SmallLeaf() {
    add(leafnet::conv_block(8, 2, 2), leafnet::conv_block(16, 2, 2),
        std::make_shared<nn::Flatten>(), leafnet::dense_block(20, "relu", /*dropout=*/0),
        std::make_shared<nn::Dense>(2));
  }
};

enum class Loop { eager, hybridized, compiled };

/// Parameters after `steps` steps on `devices`, from the same initial values (drawn on
/// cpu(0), then moved).
std::vector<std::vector<float>> train(const std::vector<Device> &devices, Loop loop, int steps = 5,
                                      DType dtype = DType::f32, const char *optimizer = "sgd") {
  np::random::seed(5);
  SmallLeaf net;
  net.initialize(init::Xavier(), {cpu(0)});
  {
    autograd::Pause predict;
    net(np::zeros({1, 3, 32, 32}, cpu(0)));
  }
  net.collect_params().reset_device(devices);
  net.cast(dtype); // BatchNorm's parameters stay float32
  if (loop == Loop::hybridized)
    net.hybridize();
  std::map<std::string, double> options{{"learning_rate", 0.05}, {"momentum", 0.9}};
  if (std::string(optimizer) == "adam")
    options = {{"learning_rate", 0.01}};
  Trainer trainer(net.collect_params(), optimizer, options);
  loss::SoftmaxCrossEntropyLoss lossFn;
  std::optional<TrainStep> step;
  if (loop == Loop::compiled)
    step.emplace(net, lossFn, trainer, devices);
  size_t batch = 4 * devices.size();
  Tensor images = randomTensor({int64_t(batch), 3, 32, 32}, 9).astype(dtype);
  std::vector<int64_t> labelValues;
  for (size_t i = 0; i < batch; ++i)
    labelValues.push_back(int64_t((i * 7) % 2));
  Tensor labels = np::array(labelValues);
  for (int i = 0; i < steps; ++i) {
    if (step)
      (*step)(images, labels).wait_to_read();
    else
      leafnet::seed_loop_step(net, lossFn, trainer, images, labels, devices);
  }
  std::vector<std::vector<float>> params;
  for (const ParameterPtr &p : net.collect_params().values())
    for (Device d : devices)
      params.push_back(p->data(d).astype(DType::f32).to_vector<float>());
  return params;
}

void expectSameParameters(const std::vector<std::vector<float>> &a,
                          const std::vector<std::vector<float>> &b, double tolerance,
                          const char *what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size()) << what;
    for (size_t i = 0; i < a[k].size(); ++i)
      ASSERT_NEAR(a[k][i], b[k][i], tolerance * std::max(1.f, std::abs(b[k][i])))
          << what << ": parameter copy #" << k << " element " << i;
  }
}

class GpuTraining : public ::testing::Test {
protected:
  void SetUp() override {
    if (num_gpus() == 0)
      GTEST_SKIP() << "no GPU in this process (num_gpus() == 0): GPU tests are skipped";
    for (int i = 0; i < num_gpus(); ++i) {
      gpus.push_back(gpu(i));
      cpus.push_back(cpu(i));
    }
  }
  std::vector<Device> gpus, cpus;
};

} // namespace

TEST_F(GpuTraining, SeedLoopOnEveryGpuMatchesTheCpus) {
  expectSameParameters(train(gpus, Loop::eager), train(cpus, Loop::eager), 1e-3,
                       "eager GPUs vs eager CPUs");
}

TEST_F(GpuTraining, HybridizedMatchesEagerOnGpus) {
  expectSameParameters(train(gpus, Loop::hybridized), train(gpus, Loop::eager), 1e-4,
                       "hybridized vs eager on GPUs");
}

TEST_F(GpuTraining, CompiledStepMatchesTheSeedLoopOnGpus) {
  expectSameParameters(train(gpus, Loop::compiled), train(gpus, Loop::eager), 1e-4,
                       "compiled step vs eager loop on GPUs");
}

// On GPUs the compiled step traces the fused update ops (dlc.adam_update, ...), as the
// eager Trainer runs them.
TEST_F(GpuTraining, CompiledAdamStepMatchesTheSeedLoopOnGpus) {
  expectSameParameters(train(gpus, Loop::compiled, 5, DType::f32, "adam"),
                       train(gpus, Loop::eager, 5, DType::f32, "adam"), 1e-4,
                       "compiled Adam step vs eager Adam loop on GPUs");
}

// net.cast to float16 / bfloat16: cuDNN's and cuBLAS's 16-bit kernels train the network
// where the CPU's float32 kernels on 16-bit values do (within a few of the 16-bit type's
// units after two steps), eager and hybridized alike.
TEST_F(GpuTraining, HalfPrecisionTrainingOnGpusMatchesTheCpus) {
  for (DType half : {DType::f16, DType::bf16}) {
    std::string what = std::string(dtype_name(half)) + ": eager GPUs vs eager CPUs";
    double tolerance = half == DType::f16 ? 1e-2 : 6e-2;
    expectSameParameters(train(gpus, Loop::eager, 2, half), train(cpus, Loop::eager, 2, half),
                         tolerance, what.c_str());
    what = std::string(dtype_name(half)) + ": hybridized vs eager on GPUs";
    expectSameParameters(train(gpus, Loop::hybridized, 2, half), train(gpus, Loop::eager, 2, half),
                         tolerance / 4, what.c_str());
  }
}

// Every region the compiled step forms on a GPU, generated kernels (PTX on a GPU, their
// host build on emulated GPUs) against the op-by-op GPU kernels.
TEST_F(GpuTraining, GeneratedRegionsInTheCompiledStepMatchTheOpByOpKernels) {
  dlc::testing::expectGeneratedRegionsMatchTheirReference(gpu(0), 1e-5, "[generated gpu]");
}

// Every element-wise op in one hybridized block on a GPU: the regions run as the
// compiler's generated kernels (PTX on a GPU, their host build on emulated GPUs), one
// launch each, and compute what the CPU's eager ops compute.
TEST_F(GpuTraining, GeneratedRegionsOnGpusMatchTheCpu) {
  dlc::testing::EveryElementwiseOp block;
  Tensor x = randomTensor({64, 129}, 41) * 2.0; // 8256 elements: 33 blocks of 256 threads
  std::vector<float> expected = block(x).to_vector<float>();
  block.hybridize();
  std::vector<float> generated = block(x.copyto(gpu(0))).to_vector<float>();
  std::string programs = block.compiled()->programs();
  EXPECT_NE(programs.find("}[generated gpu]"), std::string::npos) << programs;
  EXPECT_EQ(programs.find("= dlc.exp("), std::string::npos)
      << "every element-wise op ran inside a region\n" << programs;
  // The GPU's math functions (libdevice) may differ from the CPU's by an ulp or so.
  dlc::testing::expectClose(expected, generated, 1e-5, "generated GPU regions against CPU ops");
}

// A GPU model file, written by save_compiled and by compiling the export for the cuda
// target (as dlc-compile --target cuda does), runs like the hybridized block it came
// from, on the GPU it was compiled for and on another.
TEST_F(GpuTraining, CompiledModelFilesGiveTheHybridizedOutputsOnGpus) {
  np::random::seed(7);
  SmallLeaf net;
  net.initialize(init::Xavier(), {gpu(0)});
  net.hybridize();
  Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  Tensor images = randomTensor({4, 3, 16, 16}, 31).copyto(gpu(0));
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0}).copyto(gpu(0));
  for (int step = 0; step < 2; ++step) {
    autograd::Record record;
    lossFn(net(images), labels).backward();
    trainer.step(4);
  }
  std::vector<float> expected = net(images).to_vector<float>();
  std::string prefix = ::testing::TempDir() + "dlc-gpu-model-" + std::to_string(::getpid());
  net.save_compiled(prefix + ".dlc");
  net.export_model(prefix);
  write_model_file(prefix + ".compiled.dlc",
                   compile_exported_model(prefix + ".mlir", prefix + ".safetensors",
                                          DeviceKind::gpu)
                       .file);
  for (const std::string &file : {prefix + ".dlc", prefix + ".compiled.dlc"}) {
    auto model = CompiledModel::load(file);
    EXPECT_EQ(model->target(), "cuda");
    EXPECT_EQ(model->device(), gpu(0));
    dlc::testing::expectClose(model->run({images})[0].to_vector<float>(), expected, 1e-5,
                              file.c_str());
    if (num_gpus() > 1) {
      auto moved = CompiledModel::load(file, gpu(1));
      dlc::testing::expectClose(moved->run({images.copyto(cpu(0))})[0].to_vector<float>(),
                                expected, 1e-5, (file + " on gpu(1)").c_str());
    }
  }
  for (const char *suffix : {".dlc", ".compiled.dlc", ".mlir", ".safetensors"})
    std::remove((prefix + suffix).c_str());
}

// The zoo's newer layers (activation blocks, a transposed convolution, layer, instance
// and group norm, frozen and last-axis batch norm) train on a GPU as on the CPU: the
// compiled step on gpu(0) ends where the CPU's eager steps do.
TEST_F(GpuTraining, NewLayersTrainOnGpusAsOnTheCpu) {
  using Make = std::function<std::shared_ptr<HybridSequential>()>;
  const std::pair<const char *, Make> networks[] = {
      {"activations", dlc::testing::activationNetwork},
      {"transposed convolution", dlc::testing::upSamplingNetwork},
      {"normalization", dlc::testing::normalizationNetwork},
      {"slicing", dlc::testing::slicingNetwork},
      {"attention", dlc::testing::attentionNetwork}};
  for (const auto &[name, make] : networks) {
    auto cpuSteps = dlc::testing::threeSteps(0, make, cpu());
    auto gpuSteps = dlc::testing::threeSteps(2, make, gpu(0));
    ASSERT_EQ(cpuSteps.size(), gpuSteps.size()) << name;
    for (size_t k = 0; k < cpuSteps.size(); ++k)
      dlc::testing::expectClose(cpuSteps[k], gpuSteps[k], 2e-5,
                                std::string(name) + ", vector #" + std::to_string(k));
  }
  auto cpuSteps = dlc::testing::embeddingSteps(0, DType::i64, cpu());
  auto gpuSteps = dlc::testing::embeddingSteps(2, DType::i64, gpu(0));
  ASSERT_EQ(cpuSteps.size(), gpuSteps.size());
  for (size_t k = 0; k < cpuSteps.size(); ++k)
    dlc::testing::expectClose(cpuSteps[k], gpuSteps[k], 2e-5,
                              "embedding, vector #" + std::to_string(k));
}

// BERT and GPT-2 of the text zoo predict on a GPU what they predict on the CPU: int64
// ids, the mask cast to bool, fused attention, layer norms, and BERT's dense + GELU
// region, which GPUs run op by op (the CPU runs it as one oneDNN call).
TEST_F(GpuTraining, TransformerModelsPredictOnGpusAsOnTheCpu) {
  namespace text = model_zoo::text;
  text::BertConfig bertConfig;
  bertConfig.vocab_size = 50, bertConfig.units = 32, bertConfig.hidden_size = 48;
  bertConfig.num_layers = 2, bertConfig.num_heads = 4, bertConfig.max_length = 16;
  text::GPT2Config gptConfig = text::GPT2Config::small();
  gptConfig.units = 32, gptConfig.num_layers = 2, gptConfig.max_length = 16;
  Tensor ids = np::array(std::vector<int64_t>{3, 7, 1, 49, 0, 12, 5, 5, 9, 30, 2, 8}).reshape({2, 6});
  Tensor types = np::array(std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1}).reshape({2, 6});
  Tensor mask = np::array(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}).reshape({2, 6});
  std::vector<std::shared_ptr<HybridBlock>> nets{std::make_shared<text::BertModel>(bertConfig),
                                                 std::make_shared<text::GPT2Model>(gptConfig)};
  for (auto &net : nets) {
    np::random::seed(17);
    net->initialize(init::Normal(0.3), {cpu()});
    net->hybridize();
    bool bert = std::dynamic_pointer_cast<text::BertModel>(net) != nullptr;
    auto predict = [&](Device d) {
      std::vector<Tensor> in{ids.to(d)};
      if (bert)
        in.push_back(types.to(d));
      in.push_back(mask.to(d));
      std::vector<Tensor> out = (*net)(in);
      for (Tensor &t : out)
        t = t.to(cpu());
      return out;
    };
    std::vector<Tensor> onCpu = predict(cpu());
    net->reset_device({gpus[0]});
    std::vector<Tensor> onGpu = predict(gpus[0]);
    ASSERT_EQ(onCpu.size(), onGpu.size());
    for (size_t k = 0; k < onCpu.size(); ++k)
      dlc::testing::expectClose(onCpu[k].to_vector<float>(), onGpu[k].to_vector<float>(), 2e-5,
                                net->kind() + ", output #" + std::to_string(k));
  }
  // The vision zoo's ViT: patches by a strided convolution, the [CLS] token broadcast
  // over the batch and concatenated, the first token sliced for the head.
  model_zoo::vision::ViTConfig vitConfig;
  vitConfig.image_size = 16, vitConfig.patch_size = 4, vitConfig.units = 32;
  vitConfig.hidden_size = 48, vitConfig.num_layers = 2, vitConfig.num_heads = 4;
  vitConfig.classes = 5;
  auto vit = std::make_shared<model_zoo::vision::VisionTransformer>(vitConfig);
  np::random::seed(17);
  vit->initialize(init::Normal(0.3), {cpu()});
  vit->hybridize();
  Tensor images = np::random::normal(0, 1, {3, 3, 16, 16});
  std::vector<float> onCpu = (*vit)(images).to_vector<float>();
  vit->reset_device({gpus[0]});
  std::vector<float> onGpu = (*vit)(images.to(gpus[0])).to(cpu()).to_vector<float>();
  dlc::testing::expectClose(onCpu, onGpu, 2e-5, vit->kind());
}
