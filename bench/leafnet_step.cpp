//===- leafnet_step.cpp - eager LeafNetwork forward+backward, and its layers ---===//
//
// Times, on one device, (1) each layer type of the seed's LeafNetwork forward+backward
// at the network's shapes and (2) a whole eager training step's forward and backward
// (gradients of every parameter, no optimizer update), once with the backward chain
// written out by hand from the eager gradient ops ("leafnet_step") and once as users
// write it, Gluon layers under autograd::Record ("leafnet_step_gluon"), and the same
// network hybridized ("leafnet_step_hybrid"; its trace + compile time is printed as a
// comment line).
// Prints one JSON object per measurement, in the format bench/peers/*.py print, so that
// bench/compare.py can put dlc and its peers side by side.
//
// Usage: dlc-bench-leafnet [--step-only | --only=BENCH] [batch ...]   (default: 4 32)
// (--only=BENCH runs that one benchmark, a layer's or a step's, e.g. for DLC_PROFILE)
// On cpu(0), or on gpu(0) with DLC_BENCH_DEVICES=gpu (see BenchSupport.h).
//
//===----------------------------------------------------------------------===//
#include "../examples/LeafNetwork.h"
#include "BenchSupport.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

using namespace dlc;
using bench::report;
using bench::timeIt;

namespace {

struct ConvBlock {
  Tensor weight, bias, gamma, beta;
};

struct LeafNetwork {
  ConvBlock blocks[3];
  Tensor w1, b1, w2, b2, w3, b3;

  LeafNetwork() {
    int64_t channels[4] = {3, 32, 64, 128};
    for (int i = 0; i < 3; ++i)
      blocks[i] = {np::random::normal(0, 0.1, {channels[i + 1], channels[i], 2, 2}),
                   np::zeros({channels[i + 1]}), np::ones({channels[i + 1]}),
                   np::zeros({channels[i + 1]})};
    w1 = np::random::normal(0, 0.01, {100, 21632});
    b1 = np::zeros({100});
    w2 = np::random::normal(0, 0.1, {10, 100});
    b2 = np::zeros({10});
    w3 = np::random::normal(0, 0.3, {2, 10});
    b3 = np::zeros({2});
  }

  /// Forward and backward of one batch; returns the loss (per sample).
  Tensor step(const Tensor &images, const Tensor &labels) {
    npx::PoolOptions pool;
    pool.kernel = {4, 4};
    pool.stride = {2, 2};
    struct Saved {
      Tensor input, relu, pooled, mean, var;
    } saved[3];
    // Conv2D(activation='relu'): the ReLU is the convolution's epilogue.
    npx::ConvOptions convRelu;
    convRelu.relu = true;
    Tensor x = images;
    for (int i = 0; i < 3; ++i) {
      Saved &s = saved[i];
      s.input = x;
      s.relu = npx::convolution(x, blocks[i].weight, blocks[i].bias, convRelu);
      s.pooled = npx::max_pool2d(s.relu, pool);
      npx::BatchNormResult bn = npx::batch_norm_training(s.pooled, blocks[i].gamma, blocks[i].beta);
      s.mean = bn.mean;
      s.var = bn.var;
      x = bn.output;
    }
    int64_t n = images.shape()[0];
    Tensor flat = x.reshape({n, -1});
    Tensor d1 = npx::fully_connected(flat, w1, b1);
    npx::DropoutResult drop1 = npx::dropout(npx::relu(d1), 0.2);
    Tensor d2 = npx::fully_connected(drop1.output, w2, b2);
    npx::DropoutResult drop2 = npx::dropout(npx::relu(d2), 0.2);
    Tensor logits = npx::fully_connected(drop2.output, w3, b3);
    Tensor loss = npx::softmax_cross_entropy(logits, labels);

    // Backward, from loss.backward() (a head gradient of ones).
    Tensor dlogits = npx::softmax_cross_entropy_backward(np::ones({n}), logits, labels);
    std::vector<Tensor> grads;
    grads.push_back(np::matmul(dlogits, drop2.output, true));
    grads.push_back(np::sum(dlogits, {0}));
    Tensor dd2 = npx::relu_backward(np::matmul(dlogits, w3) * drop2.mask.astype(DType::f32) * 1.25, d2);
    grads.push_back(np::matmul(dd2, drop1.output, true));
    grads.push_back(np::sum(dd2, {0}));
    Tensor dd1 = npx::relu_backward(np::matmul(dd2, w2) * drop1.mask.astype(DType::f32) * 1.25, d1);
    grads.push_back(np::matmul(dd1, flat, true));
    grads.push_back(np::sum(dd1, {0}));
    Tensor dx = np::matmul(dd1, w1).reshape(x.shape());
    for (int i = 2; i >= 0; --i) {
      Saved &s = saved[i];
      npx::BatchNormGrads bn =
          npx::batch_norm_backward(dx, s.pooled, blocks[i].gamma, s.mean, s.var);
      grads.push_back(bn.gamma);
      grads.push_back(bn.beta);
      Tensor dconv = npx::relu_backward(npx::max_pool2d_backward(bn.input, s.relu, pool), s.relu);
      npx::ConvWeightGrads weights =
          npx::convolution_backward_weights(dconv, s.input, blocks[i].weight.shape());
      grads.push_back(weights.weight);
      grads.push_back(weights.bias);
      if (i > 0)
        dx = npx::convolution_backward_data(dconv, blocks[i].weight, s.input.shape());
    }
    return loss;
  }
};

/// Times the layer benchmarks `wanted` accepts.
void benchLayers(int64_t batch, int repeats, const std::function<bool(const char *)> &wanted) {
  // The cost of one eager op on tiny data: 100 dependent adds, then a wait. What is left
  // when the kernels take no time is the framework's own (dispatch, queue, launch).
  Tensor small = np::random::uniform(-1, 1, {4}), increment = np::ones({4});
  if (wanted("small_op_x100"))
    report("small_op_x100", batch, timeIt([&] {
           Tensor acc = small;
           for (int i = 0; i < 100; ++i)
             acc = acc + increment;
         }, 1, repeats));
  if (!wanted("conv2d_fwd_bwd") && !wanted("max_pool2d_fwd_bwd") &&
      !wanted("batch_norm_fwd_bwd") && !wanted("dense_fwd_bwd"))
    return; // the layers' inputs below are large
  npx::PoolOptions pool;
  pool.kernel = {4, 4};
  pool.stride = {2, 2};
  Tensor x = np::random::uniform(-1, 1, {batch, 3, 128, 128});
  Tensor w = np::random::normal(0, 0.1, {32, 3, 2, 2}), b = np::zeros({32});
  Tensor conv = npx::convolution(x, w, b);
  if (wanted("conv2d_fwd_bwd"))
    report("conv2d_fwd_bwd", batch, timeIt([&] {
           Tensor y = npx::convolution(x, w, b);
           Tensor dy = y; // any tensor of y's shape
           npx::convolution_backward_weights(dy, x, w.shape());
           npx::convolution_backward_data(dy, w, x.shape());
         }, 1, repeats));
  if (wanted("max_pool2d_fwd_bwd"))
    report("max_pool2d_fwd_bwd", batch, timeIt([&] {
           Tensor y = npx::max_pool2d(conv, pool);
           npx::max_pool2d_backward(y, conv, pool);
         }, 1, repeats));
  Tensor pooled = npx::max_pool2d(conv, pool);
  Tensor gamma = np::ones({32}), beta = np::zeros({32});
  if (wanted("batch_norm_fwd_bwd"))
    report("batch_norm_fwd_bwd", batch, timeIt([&] {
           npx::BatchNormResult f = npx::batch_norm_training(pooled, gamma, beta);
           npx::batch_norm_backward(f.output, pooled, gamma, f.mean, f.var);
         }, 1, repeats));
  Tensor flat = np::random::uniform(-1, 1, {batch, 21632});
  Tensor w1 = np::random::normal(0, 0.01, {100, 21632}), b1 = np::zeros({100});
  if (wanted("dense_fwd_bwd"))
    report("dense_fwd_bwd", batch, timeIt([&] {
           Tensor y = npx::fully_connected(flat, w1, b1);
           np::matmul(y, flat, true);
           np::sum(y, {0});
           np::matmul(y, w1);
         }, 1, repeats));
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> batches;
  bool stepOnly = false;
  std::string only; // --only=BENCH: run that step benchmark alone (for DLC_PROFILE)
  int askedRepeats = 0; // --repeats=N: timed repeats per benchmark (0: 10, 5 from batch 32)
  const char *usage = "usage: dlc-bench-leafnet [--step-only] [--only=BENCH] [--repeats=N] "
                      "[BATCH ...] (default batches 4 32)\n";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--step-only") {
      stepOnly = true;
    } else if (arg.rfind("--only=", 0) == 0) {
      only = arg.substr(7), stepOnly = true;
    } else if (arg.rfind("--repeats=", 0) == 0) {
      char *end = nullptr;
      long value = std::strtol(arg.c_str() + 10, &end, 10);
      if (*end || value <= 0 || value > 100000) {
        std::fprintf(stderr, "dlc-bench-leafnet: '%s' is no count of repeats\n%s", argv[i], usage);
        return 2;
      }
      askedRepeats = int(value);
    } else if (char *end = nullptr; (batches.push_back(std::strtoll(argv[i], &end, 10)), *end) ||
                                    batches.back() <= 0) {
      std::fprintf(stderr, "dlc-bench-leafnet: '%s' is no batch size\n%s", argv[i], usage);
      return 2;
    }
  }
  if (batches.empty())
    batches = {4, 32};
  Device device = bench::benchDevices({cpu(0)}).front();
  DeviceScope scope(device); // every tensor below is created there
  bool onGpu = !device.is_host();
  np::random::seed(0);
  for (int64_t batch : batches) {
    int repeats = askedRepeats > 0 ? askedRepeats : (batch >= 32 ? 5 : 10) * (onGpu ? 4 : 1);
    auto wanted = [&](const char *bench) { return only.empty() || only == bench; };
    bool layerOnly = only.rfind("leafnet_step", 0) != 0; // --only names a layer benchmark
    if (!stepOnly || (!only.empty() && layerOnly))
      benchLayers(batch, repeats, wanted);
    if (!only.empty() && layerOnly)
      continue; // no network to build
    LeafNetwork net;
    Tensor images = np::random::uniform(-1, 1, {batch, 3, 128, 128});
    Tensor labels = np::random::randint(0, 2, {batch});
    if (wanted("leafnet_step"))
      report("leafnet_step", batch, timeIt([&] { net.step(images, labels); }, 2, repeats));
    // The same step as users write it: Gluon layers and autograd (peers do the same).
    leafnet::LeafNetwork gluonNet;
    gluonNet.initialize(init::Xavier(), {device});
    gluon::loss::SoftmaxCrossEntropyLoss lossFn;
    if (wanted("leafnet_step_gluon"))
      report("leafnet_step_gluon", batch, timeIt([&] {
             Tensor loss;
             {
               autograd::Record record;
               loss = lossFn(gluonNet(images), labels);
             }
             loss.backward();
           }, 2, repeats));
    // The same Gluon step, hybridized: one compiled forward and one compiled backward.
    if (!wanted("leafnet_step_hybrid"))
      continue;
    leafnet::LeafNetwork hybridNet;
    hybridNet.initialize(init::Xavier(), {device});
    hybridNet.hybridize();
    auto hybridStep = [&] {
      Tensor loss;
      {
        autograd::Record record;
        loss = lossFn(hybridNet(images), labels);
      }
      loss.backward();
    };
    auto start = std::chrono::steady_clock::now();
    hybridStep();
    npx::waitall();
    double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CompileStats stats = hybridNet.compile_stats();
    std::printf("# dlc hybridize, batch %lld: trace + compile %.3f s (first step %.3f s), "
                "%lld forward + %lld backward kernel calls, arenas %.1f + %.1f MiB\n",
                (long long)batch, stats.last_compile_seconds, first,
                (long long)stats.forward_steps, (long long)stats.backward_steps,
                stats.forward_arena_bytes / 1048576.0, stats.backward_arena_bytes / 1048576.0);
    report("leafnet_step_hybrid", batch, timeIt(hybridStep, 1, repeats));
  }
  return 0;
}
