//===- leafnet.cpp - the seed tutorial's data-parallel training, in C++ -------===//
//
// The seed's LeafNetwork (conv_block / dense_block helpers as written there) trained
// with the tutorial's five "Diff" steps: every device in a list, parameters initialized
// on all of them, split_and_load of each batch, forward and backward on each device
// under autograd::Record, and the losses summed on the host. The data is a synthetic
// two-class image set (horizontal vs vertical stripes under noise) made in memory, so
// the example runs anywhere; the seed's log lines are printed as it trains.
//
// By default diffs 3-5 run as one compiled data-parallel program per step
// (gluon::TrainStep: the same numbers as the loop); --seed-loop runs them as the seed
// writes them, with the network hybridized as in the seed (each device's forward and
// backward compiled); --eager keeps everything imperative. --export PREFIX writes the
// latest traced module (PREFIX.mlir, readable by dlc-opt) and the parameters.
//
// Usage: dlc-example-leafnet [epochs] [images per class] [--seed-loop] [--eager]
//                            [--export PREFIX]
//
//===----------------------------------------------------------------------===//
#include "LeafNetwork.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace dlc;
using namespace dlc::gluon;

using leafnet::LeafNetwork;

namespace {

/// `count` images of each class, 3x128x128, normalized like the seed's transforms;
/// class 0 has horizontal stripes, class 1 vertical ones, both under heavy noise.
std::pair<Tensor, Tensor> stripes(int64_t count, uint32_t seed) {
  const int64_t size = 128, pixels = 3 * size * size;
  std::mt19937 generator(seed);
  std::normal_distribution<float> noise(0.f, 0.6f);
  std::uniform_int_distribution<int> period(6, 12), phase(0, 11);
  std::vector<float> images(size_t(2 * count * pixels));
  std::vector<int64_t> labels(size_t(2 * count));
  for (int64_t i = 0; i < 2 * count; ++i) {
    int64_t label = i % 2;
    labels[size_t(i)] = label;
    int p = period(generator), offset = phase(generator);
    float *image = images.data() + i * pixels;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < size; ++h)
        for (int64_t w = 0; w < size; ++w) {
          int64_t along = label == 0 ? h : w;
          float stripe = ((along + offset) / p) % 2 ? 1.f : -1.f;
          image[(c * size + h) * size + w] = stripe + noise(generator);
        }
  }
  return {np::array(images, Shape{2 * count, 3, size, size}), np::array(labels)};
}

/// Accuracy of `net` over `images` in batches, each split over `devices` (the seed's test()).
double test(LeafNetwork &net, const Tensor &images, const Tensor &labels, int64_t batch_size,
            const std::vector<Device> &devices) {
  metric::Accuracy acc;
  for (int64_t start = 0; start + batch_size <= images.shape()[0]; start += batch_size) {
    std::vector<Tensor> data_list =
        utils::split_and_load(images.slice(start, start + batch_size), devices);
    std::vector<Tensor> label_list =
        utils::split_and_load(labels.slice(start, start + batch_size), devices);
    std::vector<Tensor> outputs;
    for (const Tensor &x : data_list)
      outputs.push_back(net(x));
    acc.update(label_list, outputs);
  }
  return acc.get().second;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::vector<std::string> positional;
    bool eager = false, seed_loop = false;
    std::string export_prefix;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--eager")
        eager = seed_loop = true;
      else if (arg == "--seed-loop")
        seed_loop = true;
      else if (arg == "--export" && i + 1 < argc)
        export_prefix = argv[++i];
      else
        positional.push_back(arg);
    }
    int epochs = positional.size() > 0 ? std::atoi(positional[0].c_str()) : 3;
    int64_t per_class = positional.size() > 1 ? std::atoll(positional[1].c_str()) : 48;
    const int64_t batch_size = 8;
    np::random::seed(42);
    auto [train_images, train_labels] = stripes(per_class, 1);
    auto [val_images, val_labels] = stripes(16, 2);

    // Diff 1: train on (up to) two GPUs, or on two CPU devices when there is none or this
    // build cannot compute on GPUs yet.
    std::vector<Device> devices;
    for (int i = 0; i < npx::num_gpus() && i < 2 && can_compute_on(npx::gpu(i)); ++i)
      devices.push_back(npx::gpu(i));
    if (devices.empty())
      devices = {npx::cpu(0), npx::cpu(1)};
    std::printf("Using %zu devices: %s%s%s\n", devices.size(), devices[0].str().c_str(),
                devices.size() > 1 ? ", " : "", devices.size() > 1 ? devices[1].str().c_str() : "");

    // Diff 2: initialize the parameters on every device.
    LeafNetwork net;
    net.initialize(init::Xavier(), devices, /*force_reinit=*/true);
    if (!eager)
      net.hybridize();

    loss::SoftmaxCrossEntropyLoss loss_fn;
    Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.01}, {"momentum", 0.9}});
    // Diffs 3-5 as one compiled program per step (split, forward, loss, backward,
    // gradient all-reduce, update), unless --seed-loop.
    TrainStep step(net, loss_fn, trainer, devices);
    std::printf("Training with %s\n", seed_loop ? (eager ? "the seed's loop, eager"
                                                          : "the seed's loop, hybridized")
                                                 : "one compiled data-parallel step");
    metric::Accuracy accuracy;
    const int log_interval = 5;
    int64_t samples = train_images.shape()[0];

    for (int epoch = 0; epoch < epochs; ++epoch) {
      auto tic = std::chrono::steady_clock::now(), btic = tic;
      accuracy.reset();
      int64_t idx = 0;
      for (int64_t start = 0; start + batch_size <= samples; start += batch_size, ++idx) {
        Tensor data = train_images.slice(start, start + batch_size);
        Tensor label = train_labels.slice(start, start + batch_size);
        std::vector<Tensor> outputs, losses, label_list;
        if (!seed_loop) {
          losses = {step(data, label)};
          outputs = {step.last_output()};
          label_list = {label};
        } else {
          // Diff 3: split the batch and load each part onto its device.
          std::vector<Tensor> data_list = utils::split_and_load(data, devices);
          label_list = utils::split_and_load(label, devices);
          // Diff 4: forward and backward on each device; the devices' queues run them at
          // the same time.
          {
            autograd::Record record;
            for (const Tensor &x : data_list)
              outputs.push_back(net(x));
            for (size_t i = 0; i < outputs.size(); ++i)
              losses.push_back(loss_fn(outputs[i], label_list[i]));
          }
          for (Tensor &l : losses)
            l.backward();
          trainer.step(batch_size);
        }
        // Diff 5: sum the devices' losses (item() copies each to the host).
        double train_loss = 0;
        for (const Tensor &l : losses)
          train_loss += np::sum(l).item<double>();
        accuracy.update(label_list, outputs);
        if (log_interval && (idx + 1) % log_interval == 0) {
          std::printf("Epoch[%d] Batch[%lld] Speed: %.1f samples/sec batch loss %.4f | "
                      "accuracy %.4f\n",
                      epoch + 1, (long long)(idx + 1), double(batch_size) / seconds_since(btic),
                      train_loss, accuracy.get().second);
          std::fflush(stdout);
        }
        btic = std::chrono::steady_clock::now();
      }
      double acc_val = test(net, val_images, val_labels, batch_size, devices);
      std::printf("[Epoch %d] training: accuracy=%.4f\n", epoch + 1, accuracy.get().second);
      std::printf("[Epoch %d] time cost: %.2f\n", epoch + 1, seconds_since(tic));
      std::printf("[Epoch %d] validation: validation accuracy=%.4f\n", epoch + 1, acc_val);
      std::fflush(stdout);
    }
    npx::waitall();
    if (!eager) {
      CompileStats stats = net.compile_stats();
      std::printf("hybridized: %lld signatures compiled, %lld compiled calls\n",
                  (long long)stats.compiles, (long long)stats.calls);
    }
    if (!export_prefix.empty()) {
      net.export_model(export_prefix);
      std::printf("exported %s.mlir and %s.safetensors\n", export_prefix.c_str(),
                  export_prefix.c_str());
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "leafnet: %s\n", e.what());
    return 1;
  }
  return 0;
}
