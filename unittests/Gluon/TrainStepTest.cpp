//===- TrainStepTest.cpp - the compiled data-parallel step against the seed's loop ===//
#include "../../examples/LeafNetwork.h"
#include "../Frontend/GradientCheck.h"
#include "GeneratedRegionsCheck.h"

#include <cmath>
#include <cstdio>
#include <optional>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::randomTensor;

namespace {

/// The LeafNetwork without BatchNorm and dropout: what one device with the whole batch
/// and two devices with half each compute identically.
class PlainLeaf : public HybridSequential {
public:
  PlainLeaf() {
    add(leafnet::conv_block(8, 2, 2, /*batch_norm=*/false),
        leafnet::conv_block(16, 2, 2, /*batch_norm=*/false), std::make_shared<nn::Flatten>(),
        leafnet::dense_block(20, "relu", /*dropout=*/0), std::make_shared<nn::Dense>(2));
  }
};

struct TrainingRun {
  std::vector<std::vector<float>> params;
  std::vector<float> lastLoss;
};

/// PlainLeaf with BatchNorm in its convolution blocks.
class NormLeaf : public HybridSequential {
public:
  NormLeaf() {
    add(leafnet::conv_block(8, 2, 2), leafnet::conv_block(16, 2, 2),
        std::make_shared<nn::Flatten>(), leafnet::dense_block(20, "relu", /*dropout=*/0),
        std::make_shared<nn::Dense>(2));
  }
};

template <typename Net>
TrainingRun train(bool compiled, const std::vector<Device> &devices, const std::string &optimizer,
                  int steps = 20, double rate = 0.05, bool syncBatchNorm = false,
                  std::optional<CompileOptions> compileOptions = std::nullopt,
                  std::string *ir = nullptr) {
  np::random::seed(5);
  Net net;
  net.initialize(init::Xavier(), devices);
  { // ends deferred initialization the same way for both loops
    autograd::Pause predict;
    net(np::zeros({1, 3, 32, 32}, devices[0]));
  }
  std::map<std::string, double> options{{"learning_rate", rate}};
  if (optimizer == "sgd")
    options["momentum"] = 0.9;
  else
    options["learning_rate"] = 0.01;
  Trainer trainer(net.collect_params(), optimizer, options);
  loss::SoftmaxCrossEntropyLoss lossFn;
  TrainStep step(net, lossFn, trainer, devices, syncBatchNorm,
                 compileOptions.value_or(compile_options_from_environment()));
  Tensor images = randomTensor({8, 3, 32, 32}, 9);
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1});
  np::random::seed(23); // dropout masks
  TrainingRun run;
  for (int i = 0; i < steps; ++i) {
    if (compiled) {
      run.lastLoss = step(images, labels).to_vector<float>();
      continue;
    }
    std::vector<Tensor> losses =
        leafnet::seed_loop_step(net, lossFn, trainer, images, labels, devices);
    run.lastLoss.clear();
    for (const Tensor &l : losses)
      for (float v : l.to_vector<float>())
        run.lastLoss.push_back(v);
  }
  if (compiled) {
    EXPECT_EQ(step.compiled().compiles(), 1) << "one signature, compiled once";
    if (ir)
      *ir = step.compiled().compiled_ir();
  }
  for (const ParameterPtr &p : net.collect_params().values())
    for (Device d : devices)
      run.params.push_back(p->data(d).to_vector<float>());
  return run;
}

void expectSame(const TrainingRun &want, const TrainingRun &got, double tolerance,
                const std::string &what) {
  ASSERT_EQ(want.params.size(), got.params.size());
  for (size_t p = 0; p < want.params.size(); ++p)
    for (size_t i = 0; i < want.params[p].size(); ++i)
      ASSERT_NEAR(got.params[p][i], want.params[p][i],
                  tolerance * std::max(1.f, std::abs(want.params[p][i])))
          << what << ": parameter copy #" << p << " element " << i;
  ASSERT_EQ(want.lastLoss.size(), got.lastLoss.size());
  for (size_t i = 0; i < want.lastLoss.size(); ++i)
    EXPECT_NEAR(got.lastLoss[i], want.lastLoss[i], tolerance * std::max(1.f, want.lastLoss[i]))
        << what << ": last loss of sample " << i;
}

} // namespace

// Every region the compiled step forms, generated code against the reference kernels.
TEST(TrainStep, GeneratedRegionsTrainLikeTheirReferenceKernels) {
  dlc::testing::expectGeneratedRegionsMatchTheirReference(cpu(0), 1e-6, "[generated]");
}

TEST(TrainStep, LeafNetworkMatchesTheSeedLoopOnTwoDevices) {
  dlc::testing::PlainLayouts sameKernels;
  std::vector<Device> two{cpu(0), cpu(1)};
  expectSame(train<leafnet::LeafNetwork>(false, two, "sgd"),
             train<leafnet::LeafNetwork>(true, two, "sgd"), 1e-4, "sgd, momentum");
}

// The compiled step keeps activations blocked (dlc-assign-layouts) and ends where the
// same step on plain tensors ends, to the rounding of oneDNN's other summation order: a
// few small steps (twenty at 0.05 grow that rounding into 1e-3; four at 0.01 reach 1e-4
// now and then, as the plain convolutions' algorithm is picked by timing). A wrong
// layout would be off by far more.
TEST(TrainStep, BlockedLayoutsMatchThePlainStep) {
  std::vector<Device> two{cpu(0), cpu(1)};
  TrainingRun plain;
  {
    dlc::testing::PlainLayouts off;
    plain = train<leafnet::LeafNetwork>(true, two, "sgd", 4, 0.01);
  }
  expectSame(plain, train<leafnet::LeafNetwork>(true, two, "sgd", 4, 0.01), 5e-4,
             "blocked vs plain");
}

// TrainStep.save_states / load_states: a step that loads another's states and
// parameters goes on as the other does; without them Adam's first steps differ.
TEST(TrainStep, SavedStatesResumeTheCompiledStep) {
  dlc::testing::PlainLayouts sameKernels;
  std::vector<Device> two{cpu(0), cpu(1)};
  Tensor images = randomTensor({8, 3, 32, 32}, 9);
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1});
  const std::string states = ::testing::TempDir() + "trainstep.states",
                    parameters = ::testing::TempDir() + "trainstep.safetensors";
  auto valuesOf = [&](PlainLeaf &net) {
    std::vector<float> all;
    for (const ParameterPtr &p : net.collect_params().values())
      for (Device d : two)
        for (float v : p->data(d).to_vector<float>())
          all.push_back(v);
    return all;
  };
  loss::SoftmaxCrossEntropyLoss lossFn;
  auto fresh = [&](PlainLeaf &net) {
    np::random::seed(5);
    net.initialize(init::Xavier(), two);
    autograd::Pause predict;
    net(np::zeros({1, 3, 32, 32}, two[0]));
  };
  PlainLeaf first;
  fresh(first);
  Trainer trainer(first.collect_params(), "adam", {{"learning_rate", 0.01}});
  TrainStep step(first, lossFn, trainer, two);
  for (int i = 0; i < 3; ++i)
    step(images, labels);
  step.save_states(states);
  first.save_parameters(parameters);
  for (int i = 0; i < 3; ++i)
    step(images, labels);

  for (bool withStates : {true, false}) {
    PlainLeaf second;
    fresh(second);
    second.load_parameters(parameters, two);
    Trainer resumedTrainer(second.collect_params(), "adam", {{"learning_rate", 0.01}});
    TrainStep resumed(second, lossFn, resumedTrainer, two);
    if (withStates)
      resumed.load_states(states);
    for (int i = 0; i < 3; ++i)
      resumed(images, labels);
    std::vector<float> want = valuesOf(first), got = valuesOf(second);
    ASSERT_EQ(want.size(), got.size());
    double largest = 0;
    for (size_t i = 0; i < want.size(); ++i)
      largest = std::max(largest, double(std::abs(want[i] - got[i])));
    if (withStates)
      EXPECT_LE(largest, 1e-6) << "resumed with the states";
    else
      EXPECT_GT(largest, 1e-4) << "without the states Adam restarts: the check can fail";
  }
  // The eager Trainer reads the compiled step's file (and the reverse): the same format.
  Trainer eager(first.collect_params(), "adam", {{"learning_rate", 0.01}});
  eager.load_states(states);
  EXPECT_EQ(eager.steps(), 3);
  std::remove(states.c_str());
  std::remove(parameters.c_str());
}

TEST(TrainStep, AdamMatchesTheSeedLoop) {
  dlc::testing::PlainLayouts sameKernels;
  std::vector<Device> two{cpu(0), cpu(1)};
  expectSame(train<leafnet::LeafNetwork>(false, two, "adam", 10),
             train<leafnet::LeafNetwork>(true, two, "adam", 10), 1e-4, "adam");
}

// The rate is small enough that no ReLU flips between the runs: at 0.05 the last few
// steps amplify the 1e-8 difference of summing the gradient over 8 samples or over 4 + 4
// into 1e-3 (in eager runs too), which says nothing about the compiled step.
TEST(TrainStep, TwoDevicesTrainLikeOneWithTheWholeBatch) {
  TrainingRun one = train<PlainLeaf>(false, {cpu(0)}, "sgd", 20, 0.01);
  TrainingRun two = train<PlainLeaf>(true, {cpu(0), cpu(1)}, "sgd", 20, 0.01);
  // Compare the first device's copies (one run has one copy per parameter).
  TrainingRun firstCopies;
  for (size_t p = 0; p < two.params.size(); p += 2)
    firstCopies.params.push_back(two.params[p]);
  firstCopies.lastLoss = two.lastLoss;
  expectSame(one, firstCopies, 1e-4, "one device vs two");
  for (size_t p = 0; p + 1 < two.params.size(); p += 2)
    EXPECT_EQ(two.params[p], two.params[p + 1]) << "replicas stay identical";
}

TEST(TrainStep, SyncBatchNormTrainsLikeOneDeviceWithTheWholeBatch) {
  TrainingRun one = train<NormLeaf>(false, {cpu(0)}, "sgd", 10, 0.01);
  TrainingRun synced = train<NormLeaf>(true, {cpu(0), cpu(1)}, "sgd", 10, 0.01, true);
  TrainingRun perDevice = train<NormLeaf>(true, {cpu(0), cpu(1)}, "sgd", 10, 0.01, false);
  TrainingRun firstCopies, perDeviceFirst;
  for (size_t p = 0; p < synced.params.size(); p += 2) {
    firstCopies.params.push_back(synced.params[p]);
    perDeviceFirst.params.push_back(perDevice.params[p]);
  }
  firstCopies.lastLoss = synced.lastLoss;
  expectSame(one, firstCopies, 1e-4, "sync batch norm vs one device");
  double largest = 0;
  for (size_t p = 0; p < one.params.size(); ++p)
    for (size_t i = 0; i < one.params[p].size(); ++i)
      largest = std::max(largest, double(std::abs(one.params[p][i] - perDeviceFirst.params[p][i])));
  EXPECT_GT(largest, 1e-3) << "per-device statistics differ from the whole batch's";
}

TEST(TrainStep, TheProgramIsShardedWithOneAllReducePerGradient) {
  np::random::seed(1);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), {cpu(0), cpu(1)});
  Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.01}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  TrainStep step(net, lossFn, trainer, {cpu(0), cpu(1)});
  step(randomTensor({4, 3, 32, 32}, 2), np::array(std::vector<int64_t>{0, 1, 0, 1}));
  std::string ir = step.compiled().compiled_ir();
  size_t reduces = 0;
  for (size_t at = ir.find("dlc.all_reduce"); at != std::string::npos;
       at = ir.find("dlc.all_reduce", at + 1))
    ++reduces;
  size_t trained = net.collect_params("weight|bias|gamma|beta").size();
  EXPECT_GE(reduces, 1u);
  EXPECT_LT(reduces, trained) << "gradients are bucketed: fewer all-reduces than parameters";
  EXPECT_NE(ir.find("= dlc.concat "), std::string::npos) << "buckets concatenate gradients";
  EXPECT_EQ(step.last_output().shape(), (Shape{4, 2}));
  EXPECT_NE(ir.find("= dlc.split "), std::string::npos);
  EXPECT_NE(ir.find("#dlc.device<cpu:1>"), std::string::npos);
  EXPECT_NE(step.compiled().traced_ir().find("dlc.gradient"), std::string::npos);
  EXPECT_THROW(
      step(randomTensor({5, 3, 32, 32}, 3), np::array(std::vector<int64_t>{0, 1, 0, 1, 0})), Error)
      << "an uneven batch is a compile error";
}

namespace {

/// ResNet v1's basic block: relu(x + bn(conv(relu(bn(conv(x)))))).
class ResidualBlock : public HybridBlock {
public:
  ResidualBlock() {
    conv1 =
        register_child("conv1", std::make_shared<nn::Conv2D>(16, std::array<int64_t, 2>{3, 3}, "",
                                                             nn::Conv2DOptions{{1, 1}, {1, 1}}));
    norm1 = register_child("norm1", std::make_shared<nn::BatchNorm>());
    conv2 =
        register_child("conv2", std::make_shared<nn::Conv2D>(16, std::array<int64_t, 2>{3, 3}, "",
                                                             nn::Conv2DOptions{{1, 1}, {1, 1}}));
    norm2 = register_child("norm2", std::make_shared<nn::BatchNorm>());
  }
  Tensor forward(const Tensor &x) override {
    Tensor h = npx::relu((*norm1)((*conv1)(x)));
    return npx::relu(x + (*norm2)((*conv2)(h)));
  }
  std::string kind() const override { return "ResidualBlock"; }
  std::shared_ptr<nn::Conv2D> conv1, conv2;
  std::shared_ptr<nn::BatchNorm> norm1, norm2;
};

/// Convolutions each followed by a training batch norm and a ReLU or ReLU6, then a
/// residual block: what dlc-fuse-norm-activation folds, both ways.
class NormActivationNet : public HybridSequential {
public:
  NormActivationNet() {
    add(std::make_shared<nn::Conv2D>(16, 3), std::make_shared<nn::BatchNorm>(),
        std::make_shared<nn::Activation>("relu"), std::make_shared<nn::Conv2D>(16, 3),
        std::make_shared<nn::BatchNorm>(), std::make_shared<nn::Activation>("relu6"),
        std::make_shared<ResidualBlock>(), std::make_shared<nn::Flatten>(),
        std::make_shared<nn::Dense>(2));
  }
};

TrainingRun trainNormActivation(bool normActivation, std::string &ir, int64_t memoryBudget = 0) {
  np::random::seed(5);
  NormActivationNet net;
  net.initialize(init::Xavier());
  {
    autograd::Pause predict;
    net(np::zeros({1, 3, 12, 12}));
  }
  // The second norm scaled so that about a tenth of its outputs pass 6, where ReLU6's
  // gradient stops.
  auto norm = std::dynamic_pointer_cast<nn::BatchNorm>(net.children()[4].second);
  norm->gamma->set_data(np::full({16}, 4.0));
  Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  CompileOptions options = compile_options_from_environment();
  options.norm_activation = normActivation;
  options.memory_budget = memoryBudget;
  TrainStep step(net, lossFn, trainer, {cpu(0)}, false, options);
  Tensor images = randomTensor({6, 3, 12, 12}, 9);
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0, 1, 0});
  TrainingRun run;
  for (int i = 0; i < 4; ++i)
    run.lastLoss = step(images, labels).to_vector<float>();
  for (const ParameterPtr &p : net.collect_params().values())
    run.params.push_back(p->data().to_vector<float>());
  ir = step.compiled().compiled_ir();
  return run;
}

} // namespace

// The folded norms and activations compute what they do apart, to the bit: the same
// batch norm kernels run with and without the activation folded in.
TEST(TrainStep, NormsWithTheirActivationsChangeNoNumber) {
  std::string fusedIR, apartIR;
  TrainingRun fused = trainNormActivation(true, fusedIR),
              apart = trainNormActivation(false, apartIR);
  for (const char *kind :
       {"dlc.fused \"batch_norm_activation\"", "dlc.fused \"batch_norm_activation_backward\"",
        // the residual's forward region (a fourth operand), its gradient's (a fourth result)
        "(tensor<6x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<6x16x8x8xf32>) -> ",
        "-> (tensor<6x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<6x16x8x8xf32>)"}) {
    EXPECT_NE(fusedIR.find(kind), std::string::npos) << kind << " in\n" << fusedIR;
    EXPECT_EQ(apartIR.find(kind), std::string::npos) << kind << " with norm_activation off";
  }
  expectSame(apart, fused, 0, "norm_activation on vs off");
}

namespace {
/// The number after `key` in `ir` (the first occurrence), or -1.
int64_t numberAfter(const std::string &ir, const std::string &key) {
  size_t at = ir.find(key);
  return at == std::string::npos ? -1 : std::stoll(ir.substr(at + key.size()));
}
} // namespace

// dlc-remat under a budget below the step's peak: the norms' activations are computed
// again in the backward, the plan holds less, and the numbers do not change (the copies
// run the same kernels on the same inputs).
TEST(TrainStep, RecomputedActivationsChangeNoNumber) {
  std::string keptIR, recomputedIR;
  // A budget above everything: the pass measures the peak and changes nothing.
  TrainingRun kept = trainNormActivation(true, keptIR, int64_t(1) << 40);
  const int64_t peak = numberAfter(keptIR, "peak_before = ");
  ASSERT_GT(peak, 0) << keptIR;
  EXPECT_EQ(numberAfter(keptIR, "peak_after = "), peak) << keptIR;
  EXPECT_EQ(keptIR.find("dlc.recomputed"), std::string::npos) << keptIR;
  // (Computing values again takes this small network's plan down to about 80 % of its
  // arena at most: with a budget of 1 byte it stops at 258688 of 323456 bytes.)
  const int64_t budget = peak * 17 / 20;
  TrainingRun recomputed = trainNormActivation(true, recomputedIR, budget);
  EXPECT_EQ(numberAfter(recomputedIR, "peak_before = "), peak) << recomputedIR;
  EXPECT_LE(numberAfter(recomputedIR, "peak_after = "), budget) << recomputedIR;
  EXPECT_NE(recomputedIR.find("dlc.fused \"batch_norm_activation\"(%"), std::string::npos);
  EXPECT_NE(recomputedIR.find("dlc.recomputed"), std::string::npos) << recomputedIR;
  // The plan's arena (what the step allocates) shrinks with the peak.
  const std::string arena = "#dlc.arena<cpu:0, ";
  EXPECT_LT(numberAfter(recomputedIR, arena), numberAfter(keptIR, arena));
  expectSame(kept, recomputed, 0, "activations recomputed vs kept");
}

// The same on two devices: each device's values are measured apart, and the copies run
// where the ops they copy do. No device's arena grows.
TEST(TrainStep, RecomputedActivationsOnTwoDevicesChangeNoNumber) {
  std::vector<Device> two{cpu(0), cpu(1)};
  std::string keptIR, recomputedIR;
  // Updates apart: joined, this small network's parameters would set the peak at their
  // update, where nothing can be computed again.
  CompileOptions options = compile_options_from_environment();
  options.group_updates = false;
  TrainingRun kept = train<NormLeaf>(true, two, "sgd", 3, 0.05, false, options, &keptIR);
  options.memory_budget = 1;
  TrainingRun recomputed =
      train<NormLeaf>(true, two, "sgd", 3, 0.05, false, options, &recomputedIR);
  EXPECT_NE(recomputedIR.find("dlc.recomputed"), std::string::npos) << recomputedIR;
  for (const char *device : {"cpu:0", "cpu:1"}) {
    const std::string arena = std::string("#dlc.arena<") + device + ", ";
    EXPECT_LE(numberAfter(recomputedIR, arena), numberAfter(keptIR, arena)) << device;
    EXPECT_GT(numberAfter(recomputedIR, arena), 0) << device;
  }
  expectSame(kept, recomputed, 0, "two devices, activations recomputed vs kept");
}

// dlc-group-updates: each device's small parameters updated as one step over their
// joined elements compute the same bits as one step per parameter, with momentum SGD
// (two results per update) and Adam (three), on one device and on two.
TEST(TrainStep, GroupedUpdatesChangeNoNumber) {
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  for (const std::vector<Device> &devices :
       {std::vector<Device>{cpu(0)}, std::vector<Device>{cpu(0), cpu(1)}})
    for (const char *optimizer : {"sgd", "adam"}) {
      SCOPED_TRACE(std::string(optimizer) + " on " + std::to_string(devices.size()) +
                   " device(s)");
      CompileOptions options = compile_options_from_environment();
      std::string apartIR, groupedIR;
      options.group_updates = false;
      TrainingRun apart = train<NormLeaf>(true, devices, optimizer, 3, 0.05, false, options,
                                          &apartIR);
      options.group_updates = true;
      TrainingRun grouped = train<NormLeaf>(true, devices, optimizer, 3, 0.05, false, options,
                                            &groupedIR);
      // (Two devices join their outputs for the loss apart from this.)
      EXPECT_GT(count(groupedIR, "= dlc.concat "), count(apartIR, "= dlc.concat ")) << groupedIR;
      // Every parameter's update was a region of its own; now one region per device (and
      // one for the norms' running statistics).
      EXPECT_LT(count(groupedIR, "dlc.fused \"elementwise\""),
                count(apartIR, "dlc.fused \"elementwise\"") / 2)
          << groupedIR;
      expectSame(apart, grouped, 0, std::string(optimizer) + ", updates grouped vs apart");
    }
}
