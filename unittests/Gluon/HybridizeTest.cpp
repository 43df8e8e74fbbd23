//===- HybridizeTest.cpp - compiled blocks against eager execution ------------===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "ElementwiseBlocks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <numeric>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::expectClose;
using dlc::testing::randomTensor;

namespace {

struct StepResult {
  std::vector<float> output, loss;
  std::vector<std::vector<float>> grads, params;
};

/// Ends deferred initialization with an eager call in predict mode (no dropout draws):
/// otherwise eager code interleaves initializer draws with dropout draws while a trace
/// initializes every layer first, and the masks would legitimately differ.
void finishInitialization(leafnet::LeafNetwork &net, const Device &device) {
  autograd::Pause predict;
  net(np::zeros({1, 3, 32, 32}, device));
}

/// One forward + loss + backward of a fresh LeafNetwork (same initial values for the
/// same seed) on `devices`, seed-style; eager or hybridized (with `options`, and the
/// compiled IR into `ir`, where given).
StepResult leafStep(bool hybridize, bool training, const std::vector<Device> &devices,
                    int64_t batch = 4, const CompileOptions *options = nullptr,
                    std::string *ir = nullptr) {
  np::random::seed(7);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), devices);
  finishInitialization(net, devices[0]);
  if (hybridize && options)
    net.hybridize(true, *options);
  else if (hybridize)
    net.hybridize();
  loss::SoftmaxCrossEntropyLoss lossFn;
  Tensor images = randomTensor({batch, 3, 32, 32}, 11);
  std::vector<int64_t> labelValues;
  for (int64_t i = 0; i < batch; ++i)
    labelValues.push_back(i % 2);
  Tensor labels = np::array(labelValues);
  np::random::seed(99); // dropout masks
  std::vector<Tensor> data = utils::split_and_load(images, devices);
  std::vector<Tensor> label = utils::split_and_load(labels, devices);
  std::vector<Tensor> outputs, losses;
  {
    autograd::Record record(training);
    for (size_t i = 0; i < data.size(); ++i) {
      outputs.push_back(net(data[i]));
      losses.push_back(lossFn(outputs.back(), label[i]));
    }
  }
  for (Tensor &l : losses)
    l.backward();
  StepResult result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (float v : outputs[i].to_vector<float>())
      result.output.push_back(v);
    for (float v : losses[i].to_vector<float>())
      result.loss.push_back(v);
  }
  for (const ParameterPtr &p : net.collect_params().values()) {
    for (Device d : devices) {
      if (p->grad_req() != GradReq::null)
        result.grads.push_back(p->grad(d).to_vector<float>());
      result.params.push_back(p->data(d).to_vector<float>()); // running stats included
    }
  }
  if (hybridize) {
    EXPECT_EQ(net.compile_stats().compiles, int64_t(devices.size()))
        << "one compile per device signature";
  }
  if (ir)
    *ir = net.compiled()->compiled_ir();
  return result;
}

/// How often `what` occurs in `text`.
int occurrences(const std::string &text, const std::string &what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

void expectSameStep(const StepResult &eager, const StepResult &compiled, const std::string &what,
                    double gradientTolerance = 1e-5) {
  expectClose(eager.output, compiled.output, 1e-5, what + " output");
  expectClose(eager.loss, compiled.loss, 1e-5, what + " loss");
  ASSERT_EQ(eager.grads.size(), compiled.grads.size());
  for (size_t p = 0; p < eager.grads.size(); ++p)
    expectClose(eager.grads[p], compiled.grads[p], gradientTolerance,
                what + " gradient #" + std::to_string(p));
  for (size_t p = 0; p < eager.params.size(); ++p)
    expectClose(eager.params[p], compiled.params[p], 1e-5, what + " parameter #" + std::to_string(p));
}

} // namespace

TEST(Hybridize, LeafNetworkTrainingStepEqualsEager) {
  dlc::testing::PlainLayouts sameKernels;
  expectSameStep(leafStep(false, true, {cpu(0)}), leafStep(true, true, {cpu(0)}), "train");
}

TEST(Hybridize, LeafNetworkInferenceModeEqualsEager) {
  expectSameStep(leafStep(false, false, {cpu(0)}), leafStep(true, false, {cpu(0)}), "predict");
}

TEST(Hybridize, LeafNetworkOnTwoDevicesEqualsEager) {
  dlc::testing::PlainLayouts sameKernels;
  expectSameStep(leafStep(false, true, {cpu(0), cpu(1)}), leafStep(true, true, {cpu(0), cpu(1)}),
                 "two devices");
}

TEST(Hybridize, TwentyTrainingStepsEndWithTheSameParameters) {
  dlc::testing::PlainLayouts sameKernels;
  auto train = [](bool hybridize) {
    np::random::seed(3);
    leafnet::LeafNetwork net;
    std::vector<Device> devices{cpu(0), cpu(1)};
    net.initialize(init::Xavier(), devices);
    finishInitialization(net, devices[0]);
    if (hybridize)
      net.hybridize();
    Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.05}, {"momentum", 0.9}});
    loss::SoftmaxCrossEntropyLoss lossFn;
    Tensor images = randomTensor({8, 3, 32, 32}, 5);
    Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1});
    np::random::seed(17);
    for (int step = 0; step < 20; ++step)
      leafnet::seed_loop_step(net, lossFn, trainer, images, labels, devices);
    if (hybridize) {
      CompileStats stats = net.compile_stats();
      EXPECT_EQ(stats.compiles, 2) << "one signature per device";
      EXPECT_EQ(stats.calls, 40);
    }
    std::vector<std::vector<float>> values;
    for (const ParameterPtr &p : net.collect_params().values())
      values.push_back(p->data(cpu(1)).to_vector<float>());
    return values;
  };
  std::vector<std::vector<float>> eager = train(false), compiled = train(true);
  ASSERT_EQ(eager.size(), compiled.size());
  for (size_t p = 0; p < eager.size(); ++p)
    expectClose(eager[p], compiled[p], 1e-5, "parameter #" + std::to_string(p));
}

TEST(Hybridize, RecompilesOnlyForNewSignatures) {
  np::random::seed(1);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), {cpu(0)});
  net.hybridize();
  EXPECT_EQ(net.compile_stats().compiles, 0);
  Tensor x = randomTensor({2, 3, 32, 32}, 4);
  autograd::Pause predict;
  Tensor first = net(x);
  EXPECT_EQ(net.compile_stats().compiles, 1);
  EXPECT_GT(net.compile_stats().forward_steps, 10);
  for (int i = 0; i < 100; ++i)
    net(x);
  EXPECT_EQ(net.compile_stats().compiles, 1) << "the same signature never recompiles";
  EXPECT_EQ(net.compile_stats().cache_hits, 100);
  expectClose(first.to_vector<float>(), net(x).to_vector<float>(), 0, "a rerun");
  net(randomTensor({3, 3, 32, 32}, 5));
  EXPECT_EQ(net.compile_stats().compiles, 2) << "a new batch size compiles once";
  net(randomTensor({3, 3, 32, 32}, 6));
  EXPECT_EQ(net.compile_stats().compiles, 2);
  {
    autograd::TrainMode train;
    net(x);
  }
  EXPECT_EQ(net.compile_stats().compiles, 3) << "training mode is part of the signature";
}

namespace {
/// Branches on a value: what a trace cannot capture.
class ValueBranch : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor total = np::sum(x);
    if (total.item<float>() > 0)
      return x * 2.0;
    return x;
  }
  std::string kind() const override { return "ValueBranch"; }
};

/// A chain of element-wise ops: its intermediates can share two buffers.
class Chain : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor y = x;
    for (int i = 0; i < 8; ++i)
      y = np::tanh(y * 0.5 + 0.25);
    return y;
  }
  std::string kind() const override { return "Chain"; }
};
} // namespace

// The generated code of the fused regions against their interpreted sub-kernels (the
// reference) and against eager ops, on random inputs over several chunks.
TEST(Hybridize, GeneratedRegionsMatchTheirInterpretedSubKernels) {
  dlc::testing::EveryElementwiseOp block;
  Tensor x = randomTensor({64, 129}, 41) * 2.0; // 8256 elements: three chunks
  std::vector<float> eager = block(x).to_vector<float>();
  block.hybridize();
  std::vector<float> generated = block(x).to_vector<float>();
  std::string programs = block.compiled()->programs();
  EXPECT_NE(programs.find("}[generated]"), std::string::npos) << programs;
  EXPECT_EQ(programs.find("dlc.exp("), std::string::npos)
      << "every element-wise op ran inside a region\n" << programs;
  use_reference_kernels(true);
  std::vector<float> interpreted = block(x).to_vector<float>();
  use_reference_kernels(false);
  expectClose(interpreted, generated, 1e-6, "generated against interpreted regions");
  expectClose(eager, generated, 1e-6, "generated regions against eager ops");
}

TEST(Hybridize, ReadingATracedValueIsAnErrorNotAFrozenBranch) {
  ValueBranch block;
  Tensor x = np::ones({4});
  EXPECT_EQ(block(x).to_vector<float>(), std::vector<float>(4, 2.f)) << "eager runs the branch";
  block.hybridize();
  try {
    block(x);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("inside a hybridized forward"), std::string::npos) << message;
    EXPECT_NE(message.find("'reduce'"), std::string::npos) << "names the op: " << message;
    EXPECT_NE(message.find("hybridize(false)"), std::string::npos) << message;
  }
  block.hybridize(false);
  EXPECT_EQ(block(x).to_vector<float>(), std::vector<float>(4, 2.f));
}

TEST(Hybridize, ElementwiseChainRunsAsOneFusedKernel) {
  Chain chain;
  chain.hybridize();
  Tensor x = randomTensor({300, 70}, 3); // 21000 elements: several chunks
  Tensor compiled = chain(x);
  chain.hybridize(false);
  expectClose(chain(x).to_vector<float>(), compiled.to_vector<float>(), 1e-6, "chain");
  chain.hybridize();
  chain(x);
  CompileStats stats = chain.compile_stats();
  // 24 eager ops; compiled: the three scalar constants and one fused chunked kernel.
  EXPECT_LE(stats.forward_steps, 4) << chain.compiled()->programs();
  EXPECT_NE(chain.compiled()->programs().find("dlc.fused.elementwise{dlc.mul, dlc.add, dlc.tanh"),
            std::string::npos)
      << chain.compiled()->programs();
  EXPECT_NE(chain.compiled()->programs().find("}[generated]"), std::string::npos)
      << "the region runs as generated code by default\n"
      << chain.compiled()->programs();
  EXPECT_NE(chain.compiled()->compiled_ir().find("dlc.fused \"elementwise\""), std::string::npos);
  EXPECT_EQ(chain.compiled()->traced_ir().find("dlc.fused \""), std::string::npos)
      << "the trace itself is unfused";
}

namespace {
/// Attention written in steps, as code ported from frameworks without a fused op does:
/// scores, a scale, a padding mask, softmax, the weighted values.
class UnfusedAttention : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor q = x * 1.5, k = x * 0.5; // (2, 10, 8) computed values, as a projection gives
    Tensor scores = np::matmul(q, k, false, true) * (1.0 / std::sqrt(8.0));
    Tensor keep = np::arange(0, 10).reshape({1, 1, 10}) < np::full({}, 7.0);
    Tensor weights = npx::softmax(np::where(keep, scores, np::full({}, -1e38)), -1);
    return np::matmul(weights, x);
  }
  std::string kind() const override { return "UnfusedAttention"; }
};
} // namespace

// dlc-fuse-attention turns the steps into one dlc.attention in a hybridized prediction,
// with the eager steps' results; a recorded forward keeps the steps (the backward reads
// the weights).
TEST(Hybridize, AttentionWrittenInStepsRunsFused) {
  UnfusedAttention block;
  Tensor x = randomTensor({2, 10, 8}, 5) * 2.0;
  std::vector<float> eager = block(x).to_vector<float>();
  block.hybridize();
  std::vector<float> compiled;
  {
    autograd::Pause predict;
    compiled = block(x).to_vector<float>();
  }
  expectClose(eager, compiled, 1e-5, "fused attention against the eager steps");
  // (The module's target attribute lists every op name: look for the ops themselves.)
  EXPECT_NE(block.compiled()->compiled_ir().find("= dlc.attention "), std::string::npos)
      << block.compiled()->compiled_ir();
  EXPECT_EQ(block.compiled()->compiled_ir().find("= dlc.softmax "), std::string::npos)
      << block.compiled()->compiled_ir();
  EXPECT_EQ(block.compiled()->traced_ir().find("= dlc.attention "), std::string::npos)
      << "the trace itself has the steps\n" << block.compiled()->traced_ir();
}

// Compile options are part of every compiled signature's key: the same block under two
// option sets is two cache entries, each compiled as its options say, and going back
// to the first reuses it.
TEST(Hybridize, EachOptionSetIsItsOwnCacheEntry) {
  Chain chain;
  CompileOptions fused = compile_options_from_environment();
  fused.fuse = true;
  CompileOptions unfused = fused;
  unfused.fuse = false;
  ASSERT_NE(fused.key(), unfused.key());
  Tensor x = randomTensor({30, 70}, 3);
  autograd::Pause predict;
  chain.hybridize(true, fused);
  std::vector<float> first = chain(x).to_vector<float>();
  EXPECT_NE(chain.compiled()->compiled_ir().find("dlc.fused \""), std::string::npos);
  chain.set_compile_options(unfused);
  std::vector<float> second = chain(x).to_vector<float>();
  EXPECT_EQ(chain.compile_stats().compiles, 2) << "the new options compile once";
  EXPECT_EQ(chain.compiled()->cached_signatures(), 2);
  EXPECT_EQ(chain.compiled()->compiled_ir().find("dlc.fused \""), std::string::npos)
      << "compiled without dlc-fuse\n"
      << chain.compiled()->compiled_ir();
  expectClose(first, second, 1e-6, "fused against unfused");
  chain.set_compile_options(fused);
  chain(x);
  EXPECT_EQ(chain.compile_stats().compiles, 2) << "the first options' entry is reused";
  EXPECT_EQ(chain.compile_stats().cache_hits, 1);
  EXPECT_TRUE(chain.compiled()->options().fuse);
}

TEST(Hybridize, ExportWritesTheModuleAndTheParameters) {
  np::random::seed(2);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), {cpu(0)});
  net.hybridize();
  std::string prefix = ::testing::TempDir() + "dlc-export-test";
  EXPECT_THROW(net.export_model(prefix), Error) << "no trace before the first call";
  net(randomTensor({2, 3, 32, 32}, 8));
  net.export_model(prefix);
  std::ifstream module(prefix + ".mlir");
  std::stringstream text;
  text << module.rdbuf();
  EXPECT_NE(text.str().find("func.func @forward"), std::string::npos);
  EXPECT_NE(text.str().find("= dlc.conv2d "), std::string::npos);
  EXPECT_NE(text.str().find("dlc.name = \"conv1.0.weight\""), std::string::npos) << text.str();
  leafnet::LeafNetwork loaded;
  loaded.load_parameters(prefix + ".safetensors");
  EXPECT_EQ(loaded.collect_params()["dense3.weight"]->data().to_vector<float>(),
            net.collect_params()["dense3.weight"]->data().to_vector<float>());
  std::remove((prefix + ".mlir").c_str());
  std::remove((prefix + ".safetensors").c_str());
}


TEST(Hybridize, InferenceBatchNormFoldsIntoTheConvolution) {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(8, 3), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Activation>("relu"));
  np::random::seed(4);
  net->initialize(init::Xavier(), {cpu(0)});
  for (int i = 0; i < 3; ++i) { // running statistics far from 0 and 1
    autograd::Record train;
    (*net)(randomTensor({4, 3, 10, 10}, 30 + i) * 3.0 + 1.0);
  }
  Tensor x = randomTensor({2, 3, 10, 10}, 7);
  std::vector<float> eager = (*net)(x).to_vector<float>();
  net->hybridize();
  std::vector<float> compiled = (*net)(x).to_vector<float>();
  expectClose(eager, compiled, 1e-5, "conv + batch norm + relu, folded");
  std::string ir = net->compiled()->compiled_ir();
  EXPECT_EQ(ir.find("= dlc.batch_norm"), std::string::npos) << ir;
  EXPECT_NE(ir.find("dlc.fused \"conv2d_relu\""), std::string::npos) << ir;
}

/// Trains `net`'s running statistics away from 0 and 1 on 3-channel side x side
/// images, predicts eagerly and hybridized, expects the same outputs to 1e-5, and
/// returns the compiled IR.
static std::string predictionsWithNormsFoldedEqualEager(HybridSequential &net, int64_t side,
                                                        uint64_t seed, const char *what) {
  np::random::seed(seed);
  net.initialize(init::Xavier(), {cpu(0)});
  for (int i = 0; i < 3; ++i) {
    autograd::Record train;
    net(randomTensor({4, 3, side, side}, 40 + 10 * seed + i) * 3.0 + 1.0);
  }
  Tensor x = randomTensor({2, 3, side, side}, seed + 3) * 2.0 + 0.5;
  std::vector<float> eager = net(x).to_vector<float>();
  net.hybridize();
  expectClose(eager, net(x).to_vector<float>(), 1e-5, what);
  return net.compiled()->compiled_ir();
}

// The seed's blocks predicting: MaxPool2D -> BatchNorm -> Conv2D (no padding) folds the
// norm into the convolution after it (scaled input channels, a shifted bias), twice
// here (each norm reads a pooling or a ReLU, so none folds into a convolution before
// it); the padded convolution's norm stays, as its border windows would differ.
TEST(Hybridize, InferenceBatchNormFoldsIntoTheUnpaddedConvolutionAfterIt) {
  auto net = std::make_shared<HybridSequential>();
  nn::Conv2DOptions same;
  same.padding = {1, 1};
  net->add(std::make_shared<nn::Conv2D>(8, 2, "relu"), std::make_shared<nn::MaxPool2D>(2, 2),
           std::make_shared<nn::BatchNorm>(), std::make_shared<nn::Conv2D>(16, 2, "relu"),
           std::make_shared<nn::BatchNorm>(), std::make_shared<nn::Conv2D>(8, 2, "relu"),
           std::make_shared<nn::BatchNorm>(), std::make_shared<nn::Conv2D>(4, 3, "", same));
  std::string ir = predictionsWithNormsFoldedEqualEager(
      *net, 17, 5, "batch norms folded into the convolutions after them");
  size_t norms = 0;
  for (size_t at = ir.find("= dlc.batch_norm"); at != std::string::npos;
       at = ir.find("= dlc.batch_norm", at + 1))
    ++norms;
  EXPECT_EQ(norms, 1u) << "only the padded convolution's norm stays\n" << ir;
}

// The last norm of a classifier's feature blocks, before Flatten and Dense, folds into
// the dense weights (each flattened feature is its channel's, scaled and shifted).
TEST(Hybridize, InferenceBatchNormFoldsIntoTheDenseLayerAfterFlatten) {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(8, 3, "relu"), std::make_shared<nn::MaxPool2D>(2, 2),
           std::make_shared<nn::BatchNorm>(), std::make_shared<nn::Flatten>(),
           std::make_shared<nn::Dense>(10, "relu"), std::make_shared<nn::Dense>(3));
  std::string ir = predictionsWithNormsFoldedEqualEager(
      *net, 12, 6, "batch norm folded into the dense layer after Flatten");
  EXPECT_EQ(ir.find("= dlc.batch_norm"), std::string::npos) << "the norm is folded\n" << ir;
}

// What a compiled prediction prepares once and keeps (dlc.prepared values, weights its
// convolution steps keep reordered or Winograd-transformed) is done again whenever a
// parameter it reads changes: after the trainer's update (written in place), after
// set_data (another tensor), each prediction equals the eager block's on the same
// parameters.
static void expectPreparedWorkFollowsTheParameters(
    const std::function<std::shared_ptr<HybridSequential>()> &build, int64_t channels,
    double tolerance, const std::string &listed, const std::string &convAlgorithms = "auto") {
  auto net = build(), twin = build();
  np::random::seed(4);
  net->initialize(init::Xavier(), {cpu(0)});
  twin->initialize(init::Xavier(), {cpu(0)});
  (*twin)(randomTensor({1, channels, 10, 10}, 1)); // its shapes: deferred initialization
  ParameterDict params = net->collect_params(), twinParams = twin->collect_params();
  auto eager = [&](const Tensor &x) { // the twin, un-hybridized, on net's parameters
    for (const std::string &name : params.keys())
      twinParams[name]->set_data(params[name]->data() * 1.0);
    return (*twin)(x).to_vector<float>();
  };
  // A small step: the weights stay near their initial scale. With 0.5 two steps of this
  // summed loss grew them to 3e5, where oneDNN's F(4x4, 3x3) Winograd kernel (which it
  // picks for these shapes when a worker runs one OpenMP thread, as with two host
  // devices) gave -80358.8 for an output the direct convolution puts at -92854.9: that
  // measured Winograd's rounding on blown-up weights, not the kept weights.
  Trainer trainer(params, "sgd", {{"learning_rate", 0.001}});
  auto train = [&](uint32_t seed) {
    Tensor batch = randomTensor({4, channels, 10, 10}, seed) * 3.0 + 1.0;
    {
      autograd::Record record;
      np::sum((*net)(batch)).backward();
    }
    trainer.step(4);
  };
  train(30);
  CompileOptions options = compile_options_from_environment();
  options.conv_algorithms = convAlgorithms;
  net->hybridize(true, options);
  Tensor x = randomTensor({2, channels, 10, 10}, 7);
  std::vector<float> first = (*net)(x).to_vector<float>();
  expectClose(first, eager(x), tolerance, "the first prediction");
  EXPECT_NE(net->compiled()->programs().find(listed), std::string::npos)
      << net->compiled()->programs();
  EXPECT_EQ((*net)(x).to_vector<float>(), first) << "kept: the same program, the same values";

  train(31); // hybridized training: the trainer writes the weights in place
  std::vector<float> trained = (*net)(x).to_vector<float>();
  expectClose(trained, eager(x), tolerance, "after a training step");
  double moved = 0;
  for (size_t i = 0; i < first.size(); ++i)
    moved += std::abs(double(trained[i]) - double(first[i]));
  EXPECT_GT(moved, 1e-3) << "the step changed the prediction";

  Parameter &weight = *params[params.keys().front()];
  weight.set_data(weight.data() * 0.5); // another tensor
  expectClose((*net)(x).to_vector<float>(), eager(x), tolerance, "after set_data");
}

// Batch norm folded into the convolution's weights: the folding is prepared (the
// convolution is too small for Winograd under conv_algorithms=auto).
TEST(Hybridize, PreparedWeightsFollowEveryChangeOfTheParameters) {
  expectPreparedWorkFollowsTheParameters(
      [] {
        auto net = std::make_shared<HybridSequential>();
        net->add(std::make_shared<nn::Conv2D>(8, 3), std::make_shared<nn::BatchNorm>(),
                 std::make_shared<nn::Activation>("relu"));
        return net;
      },
      3, 1e-4, "= prepared dlc.");
}

// Convolutions reading their weights straight from the parameters, 3x3 ones of 16
// channels, by Winograd (conv_algorithms=winograd; auto would leave convolutions this
// small direct) where oneDNN has it: the steps keep their weights transformed for
// oneDNN ("kept" in the listing).
TEST(Hybridize, KeptConvolutionWeightsFollowEveryChangeOfTheParameters) {
  expectPreparedWorkFollowsTheParameters(
      [] {
        auto net = std::make_shared<HybridSequential>();
        nn::Conv2DOptions same;
        same.padding = {1, 1};
        net->add(std::make_shared<nn::Conv2D>(16, 3, "relu", same),
                 std::make_shared<nn::Conv2D>(16, 3, "", same));
        return net;
      },
      16, 1e-4, " kept", "winograd");
}

/// One training call of `net` on `x`: its output, then every parameter's gradient.
static std::vector<float> outputAndGradients(HybridSequential &net, const Tensor &x) {
  Tensor out;
  {
    autograd::Record record;
    out = net(x);
  }
  out.backward();
  std::vector<float> values = out.to_vector<float>();
  for (const ParameterPtr &p : net.collect_params().values())
    for (float g : p->grad(cpu(0)).to_vector<float>())
      values.push_back(g);
  return values;
}

// Two 3x3 convolutions trained with the algorithm dlc-choose-conv-algorithms records:
// Winograd wherever the shape allows (forward and both gradients say so in the IR),
// and the timed choice (whatever this machine measured): the step's output and every
// gradient match the eager step's within Winograd's rounding.
TEST(Hybridize, ConvolutionAlgorithmsTrainLikeEager) {
  auto step = [](const std::string &algorithms, std::string *ir) {
    auto net = std::make_shared<HybridSequential>();
    nn::Conv2DOptions same;
    same.padding = {1, 1};
    net->add(std::make_shared<nn::Conv2D>(32, 3, "relu", same),
             std::make_shared<nn::Conv2D>(16, 3, "", same));
    np::random::seed(6);
    net->initialize(init::Xavier(), {cpu(0)});
    if (!algorithms.empty()) {
      CompileOptions options = compile_options_from_environment();
      options.conv_algorithms = algorithms;
      net->hybridize(true, options);
    }
    std::vector<float> values = outputAndGradients(*net, randomTensor({2, 16, 12, 12}, 19));
    if (ir)
      *ir = net->compiled()->compiled_ir();
    return values;
  };
  std::vector<float> eager = step("", nullptr);
  std::string ir;
  expectClose(eager, step("winograd", &ir), 1e-4, "winograd: output and gradients");
  for (const char *op : {"dlc.conv2d ", "dlc.conv2d_backward_data ", "dlc.conv2d_backward_filter "}) {
    size_t at = ir.find(op);
    ASSERT_NE(at, std::string::npos) << op << " in\n" << ir;
    EXPECT_NE(ir.substr(at, ir.find('\n', at) - at).find("algorithm winograd"), std::string::npos)
        << op << " in\n" << ir;
  }
  expectClose(eager, step("timed", nullptr), 1e-4, "timed: output and gradients");
}

// A GELU layer compiles like any element-wise op (it joins dlc-fuse's chunked chains on
// CPUs) and its gradient op into the backward: the hybridized step computes what eager
// code does.
TEST(Hybridize, GeluLayerTrainsLikeEager) {
  auto step = [](bool hybridize, std::string *ir) {
    auto net = std::make_shared<HybridSequential>();
    net->add(std::make_shared<nn::Dense>(32, "gelu"), std::make_shared<nn::Dense>(5));
    np::random::seed(5);
    net->initialize(init::Xavier(), {cpu(0)});
    if (hybridize)
      net->hybridize();
    std::vector<float> values = outputAndGradients(*net, randomTensor({8, 12}, 17) * 2.0);
    if (ir)
      *ir = net->compiled()->compiled_ir();
    return values;
  };
  std::string ir;
  std::vector<float> compiled = step(true, &ir);
  expectClose(step(false, nullptr), compiled, 1e-5, "gelu dense: output and gradients");
  EXPECT_NE(ir.find("dlc.gelu "), std::string::npos) << ir;
  EXPECT_NE(ir.find("dlc.gelu_backward"), std::string::npos) << ir;
}

// MXNet's net.cast('float16'): weights become float16 (bfloat16), BatchNorm's parameters
// stay float32, and the network trains on 16-bit images, eagerly and hybridized alike
// (the compiled program runs the same kernels), close to its float32 self.
TEST(Hybridize, CastLeafNetworkTrainsInHalfPrecision) {
  for (DType half : {DType::f16, DType::bf16}) {
    std::string name = dtype_name(half);
    struct Result {
      std::vector<float> output, loss, firstWeight;
      std::vector<std::vector<float>> grads; // of every parameter that has one
    };
    auto step = [&](bool cast, bool hybridize) {
      np::random::seed(7);
      leafnet::LeafNetwork net;
      net.initialize(init::Xavier(), {cpu()});
      finishInitialization(net, cpu());
      if (cast)
        net.cast(half);
      if (hybridize)
        net.hybridize();
      ParameterDict params = net.collect_params();
      for (const std::string &pname : params.keys()) {
        const ParameterPtr &p = params[pname];
        bool batchNorm = pname.find("gamma") != std::string::npos ||
                         pname.find("beta") != std::string::npos ||
                         pname.find("running") != std::string::npos;
        EXPECT_EQ(p->data().dtype(), cast && !batchNorm ? half : DType::f32) << name << " " << pname;
      }
      Tensor images = randomTensor({4, 3, 32, 32}, 11);
      if (cast)
        images = images.astype(half);
      Tensor labels = np::array(std::vector<int64_t>{0, 1, 0, 1});
      Trainer trainer(params, "sgd", {{"learning_rate", 0.05}});
      loss::SoftmaxCrossEntropyLoss lossFn;
      np::random::seed(99); // dropout masks
      Tensor output, loss;
      {
        autograd::Record record;
        output = net(images);
        loss = lossFn(output, labels);
      }
      loss.backward();
      trainer.step(4);
      EXPECT_EQ(output.dtype(), cast ? half : DType::f32) << name;
      auto floats = [](const Tensor &t) { return t.astype(DType::f32).to_vector<float>(); };
      Result result{floats(output), floats(loss), floats(params.values().front()->data()), {}};
      for (const ParameterPtr &p : params.values())
        if (p->grad_req() != GradReq::null)
          result.grads.push_back(floats(p->grad(cpu())));
      return result;
    };
    Result wide = step(false, false), eager = step(true, false), compiled = step(true, true);
    expectClose(eager.output, compiled.output, 1e-6, name + " hybridized output");
    expectClose(eager.loss, compiled.loss, 1e-6, name + " hybridized loss");
    expectClose(eager.firstWeight, compiled.firstWeight, 1e-6, name + " hybridized update");
    // Against float32: the relative L2 error, in units of the 16-bit type's precision
    // (2^-11 for float16, 2^-8 for bfloat16). Outputs, the loss and the last layers'
    // gradients stay within a few dozen units (the dense gradients measured up to 41
    // units in bfloat16, depending on which units the dropout masks keep). The convolutions' gradients are further off
    // (measured: 0.02-0.04 in float16, 8x that in bfloat16): below a max pooling, inputs
    // that rounding makes equal or reorders route the gradient to another pixel, and batch
    // norm's backward subtracts nearly equal terms. The biases of convolutions followed by
    // batch norm have no gradient in exact arithmetic (about 1e-5 in float32) and are
    // left out.
    auto relativeError = [](const std::vector<float> &got, const std::vector<float> &want) {
      double error = 0, norm = 0;
      for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        error += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += double(want[i]) * want[i];
      }
      return got.size() == want.size() && norm > 0 ? std::sqrt(error / norm) : INFINITY;
    };
    double unit = half == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    EXPECT_LT(relativeError(eager.output, wide.output), 40 * unit) << name << " output";
    EXPECT_LT(relativeError(eager.loss, wide.loss), 40 * unit) << name << " loss";
    ASSERT_EQ(eager.grads.size(), wide.grads.size());
    for (size_t p = 0; p < eager.grads.size(); ++p) {
      double norm = std::sqrt(std::inner_product(wide.grads[p].begin(), wide.grads[p].end(),
                                                 wide.grads[p].begin(), 0.0));
      if (norm < 1e-3)
        continue; // a convolution's bias before batch norm
      // The three dense layers' parameters and the last batch norm's.
      bool dense = p + 8 >= eager.grads.size();
      EXPECT_LT(relativeError(eager.grads[p], wide.grads[p]), (dense ? 50 : 200) * unit)
          << name << " gradient #" << p;
    }
  }
}

namespace {
/// One transcendental op per block, after a halving (exact in float32) so that the
/// region has two ops and is generated.
class UnaryOp : public HybridBlock {
public:
  explicit UnaryOp(std::function<Tensor(const Tensor &)> op) : op_(std::move(op)) {}
  Tensor forward(const Tensor &x) override { return op_(x * 0.5); }
  std::string kind() const override { return "UnaryOp"; }

private:
  std::function<Tensor(const Tensor &)> op_;
};
} // namespace

// The generated kernels compute tanh, exp, log, sigmoid and GELU with MLIR's polynomial
// approximations (vectorized) instead of libm: over wide ranges, including the tails and
// tiny arguments, they stay within a few float32 ulp of the function in double.
TEST(Hybridize, GeneratedMathIsWithinAFewUlpOfDouble) {
  std::vector<float> wide, positive;
  for (int i = -200000; i <= 200000; ++i)
    wide.push_back(float(i) * 1e-4f * (1 + std::abs(i) / 20000)); // to about +-220, dense near 0
  for (float tiny : {1e-30f, 1e-20f, 1e-10f, 1e-6f, -1e-6f, -1e-10f, -1e-30f, 0.f})
    wide.push_back(tiny);
  for (float x : wide)
    if (x > 0)
      positive.push_back(x);
  struct Case {
    const char *name;
    std::function<Tensor(const Tensor &)> op;
    std::function<double(double)> exact;
    const std::vector<float> *inputs;
    /// What an error is relative to: the result, except for GELU, whose 1 + erf(x)
    /// cancels for negative x (in float32 libm too): there erf's few-ulp error counts
    /// times 0.5 |x|.
    std::function<double(double x, double want)> scale = [](double, double want) {
      return std::abs(want);
    };
  };
  std::vector<Case> cases = {
      {"tanh", [](const Tensor &x) { return np::tanh(x); }, [](double x) { return std::tanh(x); }, &wide},
      {"exp", [](const Tensor &x) { return np::exp(x); }, [](double x) { return std::exp(x); }, &wide},
      {"log", [](const Tensor &x) { return np::log(x); }, [](double x) { return std::log(x); }, &positive},
      {"sigmoid", [](const Tensor &x) { return npx::sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, &wide},
      {"gelu", [](const Tensor &x) { return npx::gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, &wide,
       [](double x, double want) { return std::max(std::abs(want), 0.5 * std::abs(x)); }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    UnaryOp block(c.op);
    block.hybridize();
    std::vector<float> doubled;
    for (float v : *c.inputs)
      doubled.push_back(v * 2);
    Tensor x = np::array(doubled, Shape{int64_t(doubled.size())});
    std::vector<float> got = block(x).to_vector<float>();
    ASSERT_NE(block.compiled()->programs().find("}[generated]"), std::string::npos)
        << block.compiled()->programs();
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double want = c.exact(double((*c.inputs)[i]));
      if (!std::isfinite(want) || std::abs(want) > 3e38)
        continue; // float32 overflows there: inf is the right answer
      // Relative error, in units of float32's epsilon, with an absolute floor for
      // results too small to carry relative precision.
      double scale = c.scale((*c.inputs)[i], want);
      double error = std::abs(got[i] - want) / std::max(scale, 1e-30) / 1.1920929e-7;
      if (scale < 1e-35)
        error = std::abs(got[i] - want) < 1e-37 ? 0 : 1e9;
      if (error > worst) {
        worst = error;
        at = i;
      }
    }
    EXPECT_LT(worst, 8) << "worst at x = " << (*c.inputs)[at] << ": " << got[at] << " vs "
                        << c.exact(double((*c.inputs)[at]));
  }
}

// dlc-keep-pool-indices: the training step's poolings write where each maximum was and
// their gradients (the ReLU's folded in) read that instead of the activations, in the
// layouts this CPU's kernels use. Off, the gradients find the maxima again. Both steps
// compute the same numbers; the IR says which ran.
TEST(Hybridize, PoolingIndicesTrainAsTheActivationsDo) {
  CompileOptions on = compile_options_from_environment(), off = on;
  on.pool_indices = true;
  off.pool_indices = false;
  std::string indexedIR, plainIR;
  StepResult indexed = leafStep(true, true, {cpu(0)}, 4, &on, &indexedIR);
  StepResult found = leafStep(true, true, {cpu(0)}, 4, &off, &plainIR);
  // The two paths sum the first block's weight and bias gradients in other orders (from
  // the codes, or over the pooling's gradient written out). Each bias gradient sums 784
  // terms of about 0.25 (their absolute values add up to 160-280 per channel) that the
  // batch norm after the pooling makes cancel to about 1e-6: float32 rounding in two
  // orders then differs by up to about one epsilon of that absolute sum (1.2e-7 * 200 =
  // 2.4e-5; 1.05e-5 was seen in the -O1 sanitizer build), hence 3e-5 for the gradients.
  // A wrong maximum moves a whole term, 1e-2 or more.
  expectSameStep(found, indexed, "pool indices", 3e-5);
  for (const char *op : {"dlc.max_pool2d_indexed ", "dlc.max_pool2d_backward_indexed "})
    EXPECT_EQ(occurrences(indexedIR, op), 3) << op << " in\n" << indexedIR;
  EXPECT_EQ(occurrences(indexedIR, "dlc.max_pool2d_backward "), 0) << indexedIR;
  EXPECT_EQ(occurrences(plainIR, "_indexed "), 0) << plainIR;
  EXPECT_EQ(occurrences(plainIR, "dlc.max_pool2d_backward "), 3) << plainIR;
  // The forward returns the indices for the backward, no longer the activations
  // (dlc-drop-unread-saved), and the convolution-pooling regions keep them inside.
  EXPECT_EQ(occurrences(indexedIR, "xui8> {dlc.saved}"), 3) << indexedIR;
  EXPECT_EQ(occurrences(indexedIR, "xf32> {dlc.saved}"),
            occurrences(plainIR, "xf32> {dlc.saved}") - 3)
      << indexedIR;
  EXPECT_EQ(occurrences(indexedIR, ":2 = dlc.fused \"conv2d_max_pool2d\""), 3) << indexedIR;
}

namespace {
/// Two inputs, two outputs, parameters on both paths, one output reusing the other
/// (a siamese pair of embeddings and their distance, in miniature).
class PairBlock : public HybridBlock {
public:
  PairBlock() {
    embed_ = register_child("embed", std::make_shared<nn::Dense>(6, "tanh"));
    head_ = register_child("head", std::make_shared<nn::Dense>(3));
  }
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override {
    if (inputs.size() != 2)
      throw ValueError(kind() + ": takes two inputs, got " + std::to_string(inputs.size()));
    Tensor a = (*embed_)(inputs[0]), b = (*embed_)(inputs[1]);
    Tensor difference = a - b;
    return {(*head_)(a * b), difference * difference};
  }

  std::string kind() const override { return "PairBlock"; }

private:
  std::shared_ptr<nn::Dense> embed_, head_;
};

/// Both outputs, the loss and every gradient (parameters and both inputs) of one step;
/// `onlyFirst` backpropagates from the first output alone (the second gets none).
std::vector<float> pairStep(bool hybridize, bool onlyFirst, int64_t *compiles = nullptr) {
  np::random::seed(3);
  PairBlock net;
  net.initialize(init::Xavier(), {cpu(0)});
  if (hybridize)
    net.hybridize();
  Tensor x = randomTensor({5, 4}, 21), y = randomTensor({5, 4}, 22);
  x.attach_grad();
  y.attach_grad();
  std::vector<Tensor> outputs;
  Tensor loss;
  {
    autograd::Record record;
    outputs = net({x, y});
    loss = onlyFirst ? np::sum(outputs[0] * outputs[0])
                     : np::sum(outputs[0] * outputs[0]) + np::sum(outputs[1]) * 0.5;
  }
  loss.backward();
  std::vector<float> values;
  auto append = [&](const Tensor &t) {
    for (float v : t.to_vector<float>())
      values.push_back(v);
  };
  EXPECT_EQ(outputs.size(), 2u);
  for (const Tensor &t : outputs)
    append(t);
  append(loss);
  append(x.grad());
  append(y.grad());
  for (const ParameterPtr &p : net.collect_params().values())
    append(p->grad(cpu(0)));
  if (compiles)
    *compiles = net.compile_stats().compiles;
  return values;
}
} // namespace

TEST(Hybridize, TwoInputTwoOutputBlockGivesTheEagerResults) {
  for (bool onlyFirst : {false, true}) {
    int64_t compiles = 0;
    std::vector<float> compiled = pairStep(true, onlyFirst, &compiles);
    EXPECT_EQ(compiles, 1) << "one compiled signature for the pair of inputs";
    expectClose(pairStep(false, onlyFirst), compiled, 1e-5,
                onlyFirst ? "pair block, loss on the first output"
                          : "pair block: outputs and gradients");
  }
}

TEST(Hybridize, SeveralInputsAreCheckedAndNamed) {
  PairBlock net;
  net.initialize(init::Xavier(), {cpu(0)});
  net.hybridize();
  // A failed trace (the block's own check, an op's shape error) compiles nothing and
  // leaves the block usable.
  EXPECT_THROW(net(randomTensor({2, 4}, 1)), ValueError);
  Tensor x = randomTensor({2, 4}, 1), y = randomTensor({2, 4}, 2);
  std::vector<Tensor> outputs = net({x, y});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(outputs[1].shape(), (Shape{2, 6}));
  // The signature covers both inputs: a new second shape compiles again.
  net({x, randomTensor({2, 4}, 3)});
  EXPECT_EQ(net.compile_stats().compiles, 1);
  EXPECT_THROW(net({x, randomTensor({3, 4}, 3)}), ShapeError);
  EXPECT_EQ(net({x, y}).size(), 2u);
  EXPECT_EQ(net.compile_stats().compiles, 1);
}

TEST(Hybridize, OneTensorCallOfATwoOutputBlockAsksForTheList) {
  struct Halves : HybridBlock {
    std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override {
      return np::split(inputs[0], 2, 1);
    }
  };
  Halves net;
  Tensor x = randomTensor({2, 4}, 1);
  for (bool hybridize : {false, true}) {
    net.hybridize(hybridize);
    try {
      net(x);
      FAIL() << "a two-output block called for one tensor";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("returned 2"), std::string::npos) << e.what();
    }
    std::vector<Tensor> halves = net(std::vector<Tensor>{x});
    ASSERT_EQ(halves.size(), 2u);
    expectClose(halves[1].to_vector<float>(),
                np::split(x, 2, 1)[1].to_vector<float>(), 0, "second half");
  }
}

TEST(Hybridize, TwoInputBlockSavesAModelFileWithTwoInputsAndOutputs) {
  np::random::seed(3);
  PairBlock net;
  net.initialize(init::Xavier(), {cpu(0)});
  net.hybridize();
  Tensor x = randomTensor({5, 4}, 21), y = randomTensor({5, 4}, 22);
  std::vector<Tensor> expected = net({x, y});
  std::string path = ::testing::TempDir() + "/pair.dlc";
  net.save_compiled(path);
  auto model = CompiledModel::load(path);
  ASSERT_EQ(model->inputs().size(), 2u);
  EXPECT_EQ(model->inputs()[0].name, "data0");
  EXPECT_EQ(model->inputs()[1].name, "data1");
  ASSERT_EQ(model->outputs().size(), 2u);
  std::vector<Tensor> outputs = model->run({x, y});
  ASSERT_EQ(outputs.size(), 2u);
  for (size_t k = 0; k < 2; ++k)
    expectClose(expected[k].to_vector<float>(), outputs[k].to_vector<float>(), 1e-6,
                "model file output #" + std::to_string(k));
  std::remove(path.c_str());
}

// Predicting, batch norm folds into the depthwise convolution before it and ReLU6
// becomes the convolution's clip post-op (MobileNetV2's blocks): the same values as
// eager, one library step for the three ops.
TEST(Hybridize, Relu6FoldsIntoTheConvolutionBeforeIt) {
  auto net = std::make_shared<HybridSequential>();
  nn::Conv2DOptions depthwise;
  depthwise.groups = 16;
  depthwise.padding = {1, 1};
  net->add(std::make_shared<nn::Conv2D>(16, 3, "", depthwise), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Activation>("relu6"));
  np::random::seed(2);
  net->initialize(init::Xavier());
  Tensor x = randomTensor({2, 16, 9, 9}, 12) * 30.0; // values above 6 and below 0
  std::vector<float> eager = (*net)(x).to_vector<float>();
  net->hybridize();
  std::vector<float> compiled = (*net)(x).to_vector<float>();
  expectClose(eager, compiled, 1e-5, "conv, batch norm, relu6");
  EXPECT_NE(net->compiled()->programs().find("dlc.conv2d+relu6"), std::string::npos)
      << net->compiled()->programs();
  EXPECT_TRUE(std::count(eager.begin(), eager.end(), 6.f) > 0 &&
              std::count(eager.begin(), eager.end(), 0.f) > 0)
      << "both caps reached";
}

namespace {

/// A 64 -> 64 Dense layer's gradients after two backward passes, each through `calls`
/// calls of the layer; the second pass's input is the weight's own gradient buffer when
/// `inputIsGrad`. `view` is what a view of the weight's grad(), taken before the
/// passes, reads at the end.
struct DenseGradients {
  std::vector<float> weight, bias, view;
};
DenseGradients denseGradients(bool hybridize, int calls, GradReq req, bool inputIsGrad) {
  np::random::seed(5);
  nn::DenseOptions options;
  options.in_units = 64; // big enough for the matrix product to work in tiles
  nn::Dense dense(64, "", options);
  dense.initialize(init::Xavier(), {cpu(0)});
  dense.collect_params().set_grad_req(req);
  if (hybridize)
    dense.hybridize();
  ParameterPtr weight, bias;
  for (const ParameterPtr &p : dense.collect_params().values())
    (p->data(cpu(0)).ndim() == 2 ? weight : bias) = p;
  Tensor view = weight->grad(cpu(0)).reshape({64 * 64});
  Tensor x = randomTensor({48, 64}, 8);
  for (int pass = 0; pass < 2; ++pass) {
    Tensor input = inputIsGrad && pass == 1 ? weight->grad(cpu(0)).slice(0, 48) : x;
    Tensor loss;
    {
      autograd::Record record;
      Tensor y = dense(input);
      for (int call = 1; call < calls; ++call)
        y = y * dense(input * (0.5 * call) - 1.0); // another input, another gradient
      loss = np::sum(y * y);
    }
    loss.backward();
  }
  return {weight->grad(cpu(0)).to_vector<float>(), bias->grad(cpu(0)).to_vector<float>(),
          view.to_vector<float>()};
}

} // namespace

// A compiled backward writes a parameter's gradient straight into its grad() buffer
// where that gradient is the whole of it; elsewhere (a parameter read twice, grad_req
// add, a gradient buffer the program also reads) it is computed apart and then written
// or added, as eager code does. Either way the buffer and its views see the result.
TEST(Hybridize, GradientsWrittenInPlaceKeepGradReqSemantics) {
  struct Case {
    int calls;
    GradReq req;
    bool inputIsGrad;
    const char *what;
  };
  for (const Case &c : {Case{1, GradReq::write, false, "one call, write"},
                        Case{2, GradReq::write, false, "two calls, write"},
                        Case{1, GradReq::add, false, "one call, add"},
                        Case{1, GradReq::write, true, "the gradient buffer as input"}}) {
    DenseGradients eager = denseGradients(false, c.calls, c.req, c.inputIsGrad);
    DenseGradients compiled = denseGradients(true, c.calls, c.req, c.inputIsGrad);
    expectClose(eager.weight, compiled.weight, 1e-5, std::string(c.what) + ": weight gradient");
    expectClose(eager.bias, compiled.bias, 1e-5, std::string(c.what) + ": bias gradient");
    expectClose(compiled.weight, compiled.view, 0, std::string(c.what) + ": view of grad()");
    EXPECT_GT(std::abs(compiled.weight[0]) + std::abs(compiled.weight[65]), 0.0f) << c.what;
  }
}
