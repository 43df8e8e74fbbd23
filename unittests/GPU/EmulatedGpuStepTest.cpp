//===- EmulatedGpuStepTest.cpp - what a training step asks of the GPU runtime --===//
//
// On emulated GPUs the CUDA runtime counts the host's calls (dlc_emu::runtime_calls), so
// the host side of a GPU training step can be checked without a GPU. Once warm, a step
// must not call cudaMalloc or cudaFree (the allocator's cache serves it; both are slow
// and cudaFree waits for the device), must not synchronize a stream, and must not
// copy into pageable memory (the host would wait for the copy): each would stall the
// host thread that keeps the GPU fed, which decides speed at the seed's batch sizes.
// The counts per step are printed, launches among them, for the record. A compiled
// step on one GPU runs as a CUDA graph (Program's graphed runs): once warm, one graph
// launch and no kernel launch, with the same results as launched steps.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "Emulator/CudaEmulator.h"

#include "dlc/Runtime/Program/Program.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace dlc;
using namespace dlc::gluon;

namespace {

enum class Loop { eager, hybridized, compiled };

const char *nameOf(Loop loop) {
  return loop == Loop::eager ? "eager" : loop == Loop::hybridized ? "hybridized" : "compiled";
}

/// The calls `after` made beyond `before`, divided by `steps`.
dlc_emu::RuntimeCalls perStep(const dlc_emu::RuntimeCalls &before,
                              const dlc_emu::RuntimeCalls &after, long steps) {
  dlc_emu::RuntimeCalls d;
  d.kernelLaunches = (after.kernelLaunches - before.kernelLaunches) / steps;
  d.copies = (after.copies - before.copies) / steps;
  d.blockingCopies = after.blockingCopies - before.blockingCopies;
  d.mallocs = after.mallocs - before.mallocs;
  d.frees = after.frees - before.frees;
  d.streamSynchronizes = after.streamSynchronizes - before.streamSynchronizes;
  d.eventRecords = (after.eventRecords - before.eventRecords) / steps;
  d.eventSynchronizes = (after.eventSynchronizes - before.eventSynchronizes) / steps;
  d.streamWaits = (after.streamWaits - before.streamWaits) / steps;
  d.allReduces = (after.allReduces - before.allReduces) / steps;
  d.graphLaunches = (after.graphLaunches - before.graphLaunches) / steps;
  d.graphInstantiations = after.graphInstantiations - before.graphInstantiations;
  return d;
}

/// The seed's LeafNetwork (dropout included) with its trainer, stepped by `loop` on
/// `devices`.
struct Rig {
  Rig(Loop loop, std::vector<Device> devices,
      const CompileOptions &options = compile_options_from_environment())
      : devices(std::move(devices)) {
    np::random::seed(3);
    net = std::make_shared<leafnet::LeafNetwork>();
    net->initialize(init::Xavier(), {cpu(0)});
    {
      autograd::Pause shapes; // deferred initialization: one forward fixes the shapes
      (*net)(np::zeros({1, 3, 64, 64}, cpu(0)));
    }
    net->collect_params().reset_device(this->devices);
    if (loop == Loop::hybridized)
      net->hybridize(true, options);
    trainer.emplace(net->collect_params(), "sgd",
                    std::map<std::string, double>{{"learning_rate", 0.05}, {"momentum", 0.9}});
    if (loop == Loop::compiled)
      compiled.emplace(*net, lossFn, *trainer, this->devices, false, options);
  }
  /// One step on a batch of `perDevice` 64x64 images per device (`labels`: 0 or 1 each,
  /// or what is given).
  Tensor step(const Tensor &images, const Tensor &labels) {
    if (compiled)
      return (*compiled)(images, labels);
    leafnet::seed_loop_step(*net, lossFn, *trainer, images, labels, devices);
    return Tensor();
  }
  /// Every parameter's values, by name.
  std::map<std::string, std::vector<float>> parameters() {
    std::map<std::string, std::vector<float>> out;
    ParameterDict params = net->collect_params();
    for (const std::string &name : params.keys())
      out[name] = params[name]->data(devices.front()).to(cpu(0)).to_vector<float>();
    return out;
  }

  std::vector<Device> devices;
  std::shared_ptr<leafnet::LeafNetwork> net;
  loss::SoftmaxCrossEntropyLoss lossFn;
  std::optional<Trainer> trainer;
  std::optional<TrainStep> compiled;
};

/// A batch of `batch` random 64x64 images and random labels 0 or 1 (`seed` picks them).
std::pair<Tensor, Tensor> batchOf(int64_t batch, uint32_t seed = 4) {
  Tensor images = dlc::testing::randomTensor({batch, 3, 64, 64}, seed);
  Tensor labels = np::random::randint(0, 2, {batch});
  images.wait_to_read();
  labels.wait_to_read();
  return {images, labels};
}

/// Runs the seed's LeafNetwork (batch 8 per device, 64x64 images) for `loop` on
/// `devices`: warm-up steps, then counts what `steps` more ask of the runtime.
dlc_emu::RuntimeCalls measure(Loop loop, const std::vector<Device> &devices, long steps = 3,
                              const CompileOptions &options = compile_options_from_environment()) {
  Rig rig(loop, devices, options);
  auto [images, labels] = batchOf(8 * int64_t(devices.size()));
  auto step = [&, images = images, labels = labels] { rig.step(images, labels); };
  // Each step is waited for, as the seed's loop does when it reads the loss, so that
  // the host runs at most one step ahead: how much memory a step holds does not then
  // depend on how far ahead of the (emulated, slow) GPUs the host got.
  for (int i = 0; i < 3; ++i) { // warm: caches filled, programs compiled
    step();
    npx::waitall();
  }
  dlc_emu::RuntimeCalls before = dlc_emu::runtime_calls();
  for (long i = 0; i < steps; ++i) {
    step();
    npx::waitall(); // the queues' workers make the calls: count once they are done
  }
  return perStep(before, dlc_emu::runtime_calls(), steps);
}

class EmulatedGpuStep : public ::testing::TestWithParam<std::tuple<Loop, int>> {};

TEST_P(EmulatedGpuStep, AWarmStepNeitherAllocatesNorBlocksTheHost) {
  auto [loop, gpus] = GetParam();
  if (num_gpus() < gpus)
    GTEST_SKIP() << "this process has " << num_gpus() << " emulated GPUs, the case needs "
                 << gpus << " (DLC_EMULATED_GPUS)";
  std::vector<Device> devices;
  for (int i = 0; i < gpus; ++i)
    devices.push_back(gpu(i));
  dlc_emu::RuntimeCalls c = measure(loop, devices);
  std::printf("[ calls    ] %s on %d GPU(s), per step: %ld launches, %ld copies, %ld fences, "
              "%ld host waits for fences, %ld device-side waits, %ld all-reduce ranks; in %ld "
              "steps: %ld mallocs, %ld frees, %ld stream syncs, %ld blocking copies\n",
              nameOf(loop), gpus, c.kernelLaunches, c.copies, c.eventRecords,
              c.eventSynchronizes, c.streamWaits, c.allReduces, 3L, c.mallocs, c.frees,
              c.streamSynchronizes, c.blockingCopies);
  EXPECT_TRUE(c.kernelLaunches > 20 || c.graphLaunches > 0) << "the step ran nothing on the GPUs?";
  EXPECT_EQ(c.mallocs, 0) << "cudaMalloc/cudaHostAlloc in warm steps";
  EXPECT_EQ(c.frees, 0) << "cudaFree/cudaFreeHost in warm steps";
  EXPECT_EQ(c.streamSynchronizes, 0) << "cudaStreamSynchronize in warm steps";
  EXPECT_EQ(c.blockingCopies, 0) << "copies into pageable memory in warm steps";
  if (gpus > 1) {
    EXPECT_GT(c.allReduces, 0) << "no NCCL all-reduce in a step on " << gpus << " GPUs";
  }
}

// The compiler's generated kernels take the element-wise regions' ops off the launch
// list: one launch per region instead of one per op (without them, the regions run op
// by op on GPUs), in the hybridized and in the compiled step.
TEST(EmulatedGpuStepLaunches, GeneratedKernelsReplaceTheElementwiseLaunches) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  set_program_graphs(false); // launches are counted: no graph replays them
  for (Loop loop : {Loop::hybridized, Loop::compiled}) {
    CompileOptions withoutGenerated = compile_options_from_environment();
    withoutGenerated.generated_kernels = false;
    long opByOp = measure(loop, {gpu(0)}, 3, withoutGenerated).kernelLaunches;
    long generated = measure(loop, {gpu(0)}).kernelLaunches;
    std::printf("[ launches ] %s on 1 GPU, per warm step: %ld op by op, %ld with generated "
                "kernels\n", nameOf(loop), opByOp, generated);
    EXPECT_LT(generated, opByOp) << nameOf(loop);
  }
  set_program_graphs(true);
}

// The compiled step on one GPU, once warm, is one graph launch: no kernel launch is
// left on the host (the batch comes in and the loss goes out as copies).
TEST(EmulatedGpuGraphs, AWarmCompiledStepIsOneGraphLaunch) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  set_program_graphs(false);
  dlc_emu::RuntimeCalls launched = measure(Loop::compiled, {gpu(0)});
  set_program_graphs(true);
  dlc_emu::RuntimeCalls graphed = measure(Loop::compiled, {gpu(0)});
  std::printf("[ graphs   ] compiled step on 1 GPU, per warm step: %ld kernel launches and "
              "%ld copies launched; %ld kernel launches, %ld graph launches and %ld copies "
              "graphed; %ld graphs instantiated while warm\n",
              launched.kernelLaunches, launched.copies, graphed.kernelLaunches,
              graphed.graphLaunches, graphed.copies, graphed.graphInstantiations);
  EXPECT_GT(launched.kernelLaunches, 20);
  EXPECT_EQ(launched.graphLaunches, 0) << "DLC_CUDA_GRAPHS=0 still replays graphs";
  EXPECT_EQ(graphed.graphLaunches, 1);
  EXPECT_EQ(graphed.kernelLaunches, 0) << "launches left outside the graph";
  EXPECT_EQ(graphed.graphInstantiations, 0) << "a warm step recorded its steps again";
  EXPECT_EQ(graphed.mallocs, 0);
  EXPECT_EQ(graphed.streamSynchronizes, 0);
  EXPECT_EQ(graphed.blockingCopies, 0);
}

// Replaying the recording computes what launching the steps computes, dropout masks
// included (their seeds reach the recorded kernels through device memory).
TEST(EmulatedGpuGraphs, GraphedStepsTrainLikeLaunchedSteps) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  auto train = [](bool graphs) {
    set_program_graphs(graphs);
    Rig rig(Loop::compiled, {gpu(0)});
    std::vector<float> losses;
    for (uint32_t i = 0; i < 5; ++i) { // new images each step: the batch moves
      auto [images, labels] = batchOf(8, 10 + i);
      for (float l : rig.step(images, labels).to(cpu(0)).to_vector<float>())
        losses.push_back(l);
    }
    auto params = rig.parameters();
    ProgramGraphStats stats = rig.compiled->compiled().graph_stats();
    return std::make_tuple(losses, params, stats);
  };
  auto [lossesLaunched, paramsLaunched, statsLaunched] = train(false);
  auto [lossesGraphed, paramsGraphed, statsGraphed] = train(true);
  set_program_graphs(true);
  std::printf("[ graphs   ] 5 steps: %lld launched, %lld recorded, %lld replayed, %lld bindings "
              "staged%s%s\n",
              (long long)statsGraphed.launched, (long long)statsGraphed.captures,
              (long long)statsGraphed.replays, (long long)statsGraphed.staged,
              statsGraphed.not_graphed.empty() ? "" : "; not graphed: ",
              statsGraphed.not_graphed.c_str());
  EXPECT_EQ(statsLaunched.replays, 0);
  EXPECT_TRUE(statsGraphed.not_graphed.empty()) << statsGraphed.not_graphed;
  EXPECT_GE(statsGraphed.replays, 3);
  EXPECT_EQ(lossesGraphed, lossesLaunched);
  ASSERT_EQ(paramsGraphed.size(), paramsLaunched.size());
  for (const auto &[name, values] : paramsLaunched)
    EXPECT_EQ(paramsGraphed[name], values) << name;
}

// What the second run records does not depend on where the allocator put fresh tensors.
// Its batch copy and loss land where the first run's were (those were freed, and the
// allocator hands back the last block freed), yet they are other buffers: they are
// staged at once. Steps that then keep each loss, so that every new loss lands
// elsewhere, replay that recording; none records again.
TEST(EmulatedGpuGraphs, FreshBindingsAreStagedByTheSecondRun) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  set_program_graphs(true);
  Rig rig(Loop::compiled, {gpu(0)});
  auto [images, labels] = batchOf(8);
  for (int i = 0; i < 2; ++i) { // each loss dropped and waited for: its block is free
    rig.step(images, labels);
    npx::waitall();
  }
  ProgramGraphStats settled = rig.compiled->compiled().graph_stats();
  std::vector<Tensor> kept;
  for (int i = 0; i < 4; ++i)
    kept.push_back(rig.step(images, labels));
  npx::waitall();
  ProgramGraphStats after = rig.compiled->compiled().graph_stats();
  std::printf("[ graphs   ] after 2 steps: %lld recorded, %lld staged; after 4 more: %lld "
              "recorded, %lld staged, %lld replayed\n",
              (long long)settled.captures, (long long)settled.staged,
              (long long)after.captures, (long long)after.staged, (long long)after.replays);
  EXPECT_TRUE(after.not_graphed.empty()) << after.not_graphed;
  EXPECT_EQ(settled.captures, 1);
  EXPECT_GE(settled.staged, 1) << "the second run staged no fresh binding";
  EXPECT_EQ(after.captures, 1) << "a binding moved after the recording and was staged late";
  EXPECT_EQ(after.staged, settled.staged);
  EXPECT_EQ(after.replays, settled.replays + 4);
}

// A new batch size is a new program with its own recording; going back replays the
// first one without recording it again.
TEST(EmulatedGpuGraphs, EachSignatureIsRecordedOnce) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  set_program_graphs(true);
  Rig rig(Loop::compiled, {gpu(0)});
  auto [large, largeLabels] = batchOf(8);
  auto [small, smallLabels] = batchOf(4);
  auto run = [&](const Tensor &images, const Tensor &labels, int steps) {
    dlc_emu::RuntimeCalls before = dlc_emu::runtime_calls();
    for (int i = 0; i < steps; ++i)
      rig.step(images, labels);
    npx::waitall();
    return perStep(before, dlc_emu::runtime_calls(), steps);
  };
  dlc_emu::RuntimeCalls first = run(large, largeLabels, 4);
  dlc_emu::RuntimeCalls second = run(small, smallLabels, 4);
  dlc_emu::RuntimeCalls back = run(large, largeLabels, 3);
  EXPECT_GE(first.graphInstantiations, 1);
  EXPECT_GE(second.graphInstantiations, 1) << "the batch of 4 replayed the batch of 8's graph";
  EXPECT_EQ(back.graphInstantiations, 0) << "the batch of 8 was recorded again";
  EXPECT_EQ(back.graphLaunches, 1);
  EXPECT_EQ(back.kernelLaunches, 0);
  EXPECT_EQ(rig.compiled->compiled().compiles(), 2);
}

// A kernel's error flag is part of the recording: a bad label in a replayed step is
// reported for that step, and the next good batch trains without an error.
TEST(EmulatedGpuGraphs, ABadLabelInAReplayedStepIsReportedOnce) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  set_program_graphs(true);
  Rig rig(Loop::compiled, {gpu(0)});
  auto [images, labels] = batchOf(8);
  for (int i = 0; i < 4; ++i)
    rig.step(images, labels);
  npx::waitall();
  dlc_emu::RuntimeCalls before = dlc_emu::runtime_calls();
  Tensor bad = np::full({8}, 1000, DType::i64, cpu(0)); // LeafNetwork has 2 classes here
  rig.step(images, bad);
  try {
    npx::waitall();
    ADD_FAILURE() << "a label of 1000 went unreported";
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("outside [0, "), std::string::npos) << e.what();
  }
  rig.step(images, labels);
  EXPECT_NO_THROW(npx::waitall());
  dlc_emu::RuntimeCalls after = perStep(before, dlc_emu::runtime_calls(), 2);
  EXPECT_EQ(after.graphLaunches, 1) << "the steps after warm-up were not replays";
}

INSTANTIATE_TEST_SUITE_P(
    Loops, EmulatedGpuStep,
    ::testing::Combine(::testing::Values(Loop::eager, Loop::hybridized, Loop::compiled),
                       ::testing::Values(1, 2)),
    [](const ::testing::TestParamInfo<std::tuple<Loop, int>> &info) {
      return std::string(nameOf(std::get<0>(info.param))) + "_on_" +
             std::to_string(std::get<1>(info.param)) + "_gpus";
    });

} // namespace
