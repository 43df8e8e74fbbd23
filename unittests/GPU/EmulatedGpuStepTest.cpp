//===- EmulatedGpuStepTest.cpp - what a training step asks of the GPU runtime --===//
//
// On emulated GPUs the CUDA runtime counts the host's calls (dlc_emu::runtime_calls), so
// the host side of a GPU training step can be checked without a GPU. Once warm, a step
// must not call cudaMalloc or cudaFree (the allocator's cache serves it; both are slow
// and cudaFree waits for the device), must not synchronize a stream, and must not
// copy into pageable memory (the host would wait for the copy): each would stall the
// host thread that keeps the GPU fed, which decides speed at the seed's batch sizes.
// The counts per step are printed, launches among them, for the record.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "Emulator/CudaEmulator.h"

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
  return d;
}

/// Runs the seed's LeafNetwork (batch 8 per device, 64x64 images) for `loop` on
/// `devices`: warm-up steps, then counts what `steps` more ask of the runtime.
dlc_emu::RuntimeCalls measure(Loop loop, const std::vector<Device> &devices, long steps = 3) {
  np::random::seed(3);
  auto net = std::make_shared<leafnet::LeafNetwork>();
  net->initialize(init::Xavier(), {cpu(0)});
  {
    autograd::Pause shapes; // deferred initialization: one forward fixes the shapes
    (*net)(np::zeros({1, 3, 64, 64}, cpu(0)));
  }
  net->collect_params().reset_device(devices);
  if (loop == Loop::hybridized)
    net->hybridize();
  Trainer trainer(net->collect_params(), "sgd", {{"learning_rate", 0.05}, {"momentum", 0.9}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  std::optional<TrainStep> compiled;
  if (loop == Loop::compiled)
    compiled.emplace(*net, lossFn, trainer, devices);
  int64_t batch = 8 * int64_t(devices.size());
  Tensor images = dlc::testing::randomTensor({batch, 3, 64, 64}, 4);
  Tensor labels = np::random::randint(0, 2, {batch});
  images.wait_to_read();
  labels.wait_to_read();
  auto step = [&] {
    if (compiled)
      (*compiled)(images, labels);
    else
      leafnet::seed_loop_step(*net, lossFn, trainer, images, labels, devices);
  };
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
  EXPECT_GT(c.kernelLaunches, 20) << "the step ran nothing on the GPUs?";
  EXPECT_EQ(c.mallocs, 0) << "cudaMalloc/cudaHostAlloc in warm steps";
  EXPECT_EQ(c.frees, 0) << "cudaFree/cudaFreeHost in warm steps";
  EXPECT_EQ(c.streamSynchronizes, 0) << "cudaStreamSynchronize in warm steps";
  EXPECT_EQ(c.blockingCopies, 0) << "copies into pageable memory in warm steps";
  if (gpus > 1) {
    EXPECT_GT(c.allReduces, 0) << "no NCCL all-reduce in a step on " << gpus << " GPUs";
  }
}

// The compiler's generated kernels take the element-wise regions' ops off the launch
// list: one launch per region instead of one per op (DLC_GENERATED_KERNELS=0 runs them
// op by op on GPUs), in the hybridized and in the compiled step.
TEST(EmulatedGpuStepLaunches, GeneratedKernelsReplaceTheElementwiseLaunches) {
  if (num_gpus() < 1)
    GTEST_SKIP() << "this process has no emulated GPU (DLC_EMULATED_GPUS)";
  for (Loop loop : {Loop::hybridized, Loop::compiled}) {
    ::setenv("DLC_GENERATED_KERNELS", "0", 1);
    long opByOp = measure(loop, {gpu(0)}).kernelLaunches;
    ::unsetenv("DLC_GENERATED_KERNELS");
    long generated = measure(loop, {gpu(0)}).kernelLaunches;
    std::printf("[ launches ] %s on 1 GPU, per warm step: %ld op by op, %ld with generated "
                "kernels\n", nameOf(loop), opByOp, generated);
    EXPECT_LT(generated, opByOp) << nameOf(loop);
  }
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
