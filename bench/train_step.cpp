//===- train_step.cpp - the training step three ways, on two CPU devices ------===//
//
// The seed's LeafNetwork (128x128 inputs), SGD with momentum, a batch split over
// cpu(0) and cpu(1):
//   seed_loop_eager   split_and_load, record, backward, trainer.step, layers run op by op
//   seed_loop_hybrid  the same loop with the network hybridized (a program per device)
//   train_step        gluon::TrainStep: one compiled data-parallel program per step
// Prints one JSON line per measurement (samples/s) and, as # lines, what each runs:
// kernel launches per step and compile times. DLC_DISABLE_FUSION=1 compiles without
// dlc-fuse, to count what fusion saves.
//
// Usage: dlc-bench-trainstep [batch] [repeats] [mode]   (default: 32 5, every mode)
// DLC_BENCH_DEVICES=gpu (every GPU) or gpu:N runs it on GPUs instead (BenchSupport.h).
//
//===----------------------------------------------------------------------===//
#include "../examples/LeafNetwork.h"
#include "BenchSupport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

using namespace dlc;
using bench::report;
using bench::timeIt;
using namespace dlc::gluon;

int main(int argc, char **argv) {
  int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  std::string only = argc > 3 ? argv[3] : ""; // one mode alone (for DLC_PROFILE)
  std::vector<Device> devices = bench::benchDevices({cpu(0), cpu(1)});
  np::random::seed(0);
  Tensor images = np::random::uniform(-1, 1, {batch, 3, 128, 128});
  Tensor labels = np::random::randint(0, 2, {batch});
  loss::SoftmaxCrossEntropyLoss lossFn;

  for (const char *mode : {"seed_loop_eager", "seed_loop_hybrid", "train_step"}) {
    leafnet::LeafNetwork net;
    net.initialize(init::Xavier(), devices);
    {
      autograd::Pause predict;
      net(np::zeros({1, 3, 128, 128}, devices.front()));
    }
    Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.01}, {"momentum", 0.9}});
    std::string name = mode;
    if (!only.empty() && only != name)
      continue;
    if (name == "seed_loop_hybrid")
      net.hybridize();
    TrainStep step(net, lossFn, trainer, devices);
    std::function<void()> work;
    if (name == "train_step") {
      work = [&] { step(images, labels); };
    } else {
      work = [&] { leafnet::seed_loop_step(net, lossFn, trainer, images, labels, devices); };
    }
    double first = 0;
    if (name == "train_step") { // trace + compile + one run; a warm step is timed below
      auto start = std::chrono::steady_clock::now();
      work();
      npx::waitall();
      first = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    double seconds = bench::timeIt(work, 1, repeats);
    report(mode, batch, seconds);
    if (name == "train_step") {
      auto [compile, trace] = step.compiled().last_compile_seconds();
      std::printf("# train_step, batch %lld: first step %.3f s, of which the compile %.3f s "
                  "(tracing %.3f s; passes, lowering, kernels %.3f s)\n",
                  (long long)batch, first, compile, trace, compile - trace);
    }
    if (name == "seed_loop_hybrid") {
      CompileStats stats = net.compile_stats();
      std::printf("# seed_loop_hybrid, batch %lld: per device %lld forward + %lld backward "
                  "kernel calls, plus the optimizer's eager ops\n",
                  (long long)batch, (long long)stats.forward_steps,
                  (long long)stats.backward_steps);
    }
    if (name == "train_step") {
      int64_t kernels = 0, transfers = 0;
      std::string text = step.compiled().program();
      for (size_t at = text.find("\n  ["); at != std::string::npos; at = text.find("\n  [", at + 1))
        ++kernels;
      for (size_t at = text.find("dlc.copy("); at != std::string::npos; at = text.find("dlc.copy(", at + 1))
        ++transfers;
      std::printf("# train_step, batch %lld: %lld program steps for both devices (%lld copies, "
                  "all-reduces included), fusion %s\n",
                  (long long)batch, (long long)kernels, (long long)transfers,
                  step.compiled().options().fuse ? "on" : "disabled");
    }
  }
  return 0;
}
