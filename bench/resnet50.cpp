//===- resnet50.cpp - ResNet-50 v1, eager and hybridized, predicting and training ===//
//
// MXNet 1.9.1's resnet50_v1 (model_zoo.vision) written with today's layers: a 7x7/2
// convolution, batch norm, ReLU, 3x3/2 max pooling, then 3, 4, 6 and 3 bottleneck blocks
// (1x1 with the stage's stride, 3x3, 1x1, each followed by batch norm; a 1x1
// convolution and batch norm on the shortcut where the shape changes; ReLU after the
// sum), AvgPool2D(7) as the global pool and a dense layer of 1000 classes. Convolutions
// have no bias, as in MXNet. 224x224 inputs.
//
//   resnet50_infer_eager / _hybrid   prediction (autograd paused), batches 1 and 32
//   resnet50_train_eager / _hybrid   record, softmax cross-entropy, backward, SGD with
//                                    momentum, batches 8 and 32
//
// Usage: dlc-bench-resnet50 [--only=BENCH] [--batches=B,B...] [--repeats=N]
//        dlc-bench-resnet50 --save-models=DIR [--batches=B,B...]   (compiled models for
//        bench/compare-inference.py --networks resnet50)
// One JSON line per measurement (median of the repeats after a warm-up), as
// bench/peers/resnet50.py prints for MXNet; bench/compare-resnet.py runs both.
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace dlc;
using namespace dlc::gluon;
using bench::report;
using bench::timeIt;

namespace {

std::shared_ptr<nn::Conv2D> conv(int64_t channels, int64_t kernel, int64_t stride) {
  nn::Conv2DOptions options;
  options.strides = {stride, stride};
  options.padding = {kernel / 2, kernel / 2};
  options.use_bias = false;
  return std::make_shared<nn::Conv2D>(channels, kernel, "", options);
}

std::shared_ptr<nn::BatchNorm> norm() { return std::make_shared<nn::BatchNorm>(); }
std::shared_ptr<nn::Activation> relu() { return std::make_shared<nn::Activation>("relu"); }

/// MXNet's BottleneckV1: relu(body(x) + shortcut(x)).
class Bottleneck : public HybridBlock {
public:
  Bottleneck(int64_t channels, int64_t stride, bool downsample) {
    body_ = register_child("body", std::make_shared<HybridSequential>());
    body_->add(conv(channels / 4, 1, stride), norm(), relu(), conv(channels / 4, 3, 1), norm(),
               relu(), conv(channels, 1, 1), norm());
    if (downsample) {
      shortcut_ = register_child("downsample", std::make_shared<HybridSequential>());
      shortcut_->add(conv(channels, 1, stride), norm());
    }
  }
  Tensor forward(const Tensor &x) override {
    return nn::activate("relu", (*body_)(x) + (shortcut_ ? (*shortcut_)(x) : x));
  }

private:
  std::shared_ptr<HybridSequential> body_, shortcut_;
};

std::shared_ptr<HybridSequential> resnet50() {
  auto net = std::make_shared<HybridSequential>();
  nn::PoolOptions padded;
  padded.padding = {1, 1};
  net->add(conv(64, 7, 2), norm(), relu(), std::make_shared<nn::MaxPool2D>(3, 2, padded));
  const int64_t blocks[] = {3, 4, 6, 3}, channels[] = {256, 512, 1024, 2048};
  for (int stage = 0; stage < 4; ++stage)
    for (int64_t b = 0; b < blocks[stage]; ++b)
      net->add(std::make_shared<Bottleneck>(channels[stage], b == 0 && stage > 0 ? 2 : 1, b == 0));
  net->add(std::make_shared<nn::AvgPool2D>(7), std::make_shared<nn::Flatten>(),
           std::make_shared<nn::Dense>(1000));
  return net;
}

std::vector<int64_t> parseBatches(const std::string &list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char *end = nullptr;
    long long b = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end || b <= 0) {
      std::fprintf(stderr, "dlc-bench-resnet50: '%s' is no batch size\n", item.c_str());
      std::exit(2);
    }
    out.push_back(b);
  }
  return out;
}

/// --save-models=DIR: the prediction bench/compare-inference.py times with dlc-run and
/// ONNX Runtime. Xavier weights and random running statistics (so that every batch norm
/// computes something the peer must match) in DIR/resnet50.safetensors, and per batch
/// the compiled model DIR/resnet50-bB.dlc and an input DIR/resnet50-bB.input.safetensors.
void saveModels(const std::string &dir, const std::vector<int64_t> &batches) {
  np::random::seed(11);
  auto net = resnet50();
  net->initialize(init::Xavier(), {cpu(0)});
  {
    autograd::Pause shapes; // deferred initialization
    (*net)(np::zeros({1, 3, 224, 224}));
  }
  bench::randomizeRunningStatistics(net->collect_params());
  net->save_parameters(dir + "/resnet50.safetensors");
  net->hybridize();
  for (int64_t batch : batches) {
    autograd::Pause predict;
    Tensor x = np::random::normal(0, 1, {batch, 3, 224, 224});
    (*net)(x).wait_to_read(); // compiles the signature save_compiled writes
    std::string prefix = dir + "/resnet50-b" + std::to_string(batch);
    net->save_compiled(prefix + ".dlc");
    safetensors::save(prefix + ".input.safetensors", {{"data", x}});
    std::printf("%s.dlc\n", prefix.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string only, saveDir;
  std::vector<int64_t> batches;
  int repeats = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--only=", 0) == 0)
      only = arg.substr(7);
    else if (arg.rfind("--batches=", 0) == 0)
      batches = parseBatches(arg.substr(10));
    else if (arg.rfind("--repeats=", 0) == 0 && std::atoi(arg.c_str() + 10) > 0)
      repeats = std::atoi(arg.c_str() + 10);
    else if (arg.rfind("--save-models=", 0) == 0 && arg.size() > 14)
      saveDir = arg.substr(14);
    else {
      std::fprintf(stderr, "usage: dlc-bench-resnet50 [--only=BENCH] [--batches=B,B...] "
                           "[--repeats=N] [--save-models=DIR]\n");
      return 2;
    }
  }
  if (!saveDir.empty()) {
    try {
      saveModels(saveDir, batches.empty() ? std::vector<int64_t>{1, 32} : batches);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "dlc-bench-resnet50: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  loss::SoftmaxCrossEntropyLoss lossFn;
  for (const char *name : {"resnet50_infer_eager", "resnet50_infer_hybrid",
                           "resnet50_train_eager", "resnet50_train_hybrid"}) {
    std::string bench = name;
    if (!only.empty() && only != bench)
      continue;
    const bool training = bench.find("train") != std::string::npos;
    std::vector<int64_t> sizes = batches;
    if (sizes.empty())
      sizes = training ? std::vector<int64_t>{8, 32} : std::vector<int64_t>{1, 32};
    for (int64_t batch : sizes) {
      np::random::seed(0);
      auto net = resnet50();
      net->initialize(init::Xavier(), {cpu(0)});
      Tensor images = np::random::uniform(-1, 1, {batch, 3, 224, 224});
      Tensor labels = np::random::randint(0, 1000, {batch});
      {
        autograd::Pause predict; // shapes: deferred initialization
        (*net)(images);
      }
      if (bench.find("hybrid") != std::string::npos)
        net->hybridize();
      Trainer trainer(net->collect_params(), "sgd",
                      {{"learning_rate", 0.01}, {"momentum", 0.9}});
      std::function<void()> work;
      if (training) {
        work = [&] {
          {
            autograd::Record record;
            np::mean(lossFn((*net)(images), labels)).backward();
          }
          trainer.step(batch);
        };
      } else {
        work = [&] {
          autograd::Pause predict;
          (*net)(images);
        };
      }
      report(name, batch, timeIt(work, 1, repeats));
    }
  }
  return 0;
}
