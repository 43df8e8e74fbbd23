//===- zoo.cpp - a model-zoo network predicting and training, for compare-zoo.py ===//
//
// One network of gluon::model_zoo::vision (MXNet's structure and names), 224x224 inputs
// (299 for inceptionv3), 1000 classes, Xavier weights:
//
//   infer_eager / infer_hybrid    prediction (autograd paused)
//   train_eager / train_hybrid    record, softmax cross-entropy, backward, Trainer::step
//                                 (SGD, momentum 0.9); hybridized: one compiled forward
//                                 and one compiled backward per call
//   train_step                    the same step as one compiled TrainStep
//   macs                          multiply-accumulates of one image's forward, from the
//                                 convolutions and dense layers of the compiled program
//   matmul                        oneDNN's fp32 2048x2048x2048 matmul through dlc, GFLOP/s
//
// Usage: dlc-bench-zoo --network=NAME --only=BENCH [--batch=B] [--repeats=N]
//        dlc-bench-zoo --network=NAME --save-model=FILE --batch=B   (dlc-run's model)
// One JSON line per measurement (median of the repeats after a warm-up) with the
// process's peak resident memory: bench/compare-zoo.py runs each in its own process.
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"

#include <dlc/Gluon/ModelZoo.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

#include <sys/resource.h>

using namespace dlc;
using namespace dlc::gluon;

namespace {

double peakResidentMiB() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0; // kilobytes on Linux
}

void reportRow(const std::string &network, const std::string &bench, int64_t batch,
               double seconds) {
  std::printf("{\"framework\": \"dlc\", \"network\": \"%s\", \"bench\": \"%s\", \"batch\": %lld, "
              "\"seconds\": %.6f, \"samples_per_s\": %.2f, \"peak_rss_mib\": %.1f}\n",
              network.c_str(), bench.c_str(), (long long)batch, seconds, double(batch) / seconds,
              peakResidentMiB());
  std::fflush(stdout);
}

int64_t inputSize(const std::string &network) { return network == "inceptionv3" ? 299 : 224; }

/// The int64 dimensions of `tensor<AxBxCxf32>`.
std::vector<int64_t> dims(const std::string &type) {
  std::vector<int64_t> out;
  std::smatch m;
  std::string rest = type;
  static const std::regex dim("([0-9]+)x");
  while (std::regex_search(rest, m, dim)) {
    out.push_back(std::stoll(m[1]));
    rest = m.suffix();
  }
  return out;
}

/// Multiply-accumulates of the convolutions and dense layers of a compiled prediction
/// at batch 1, read from its IR (the op's operand and result types).
double forwardMacs(const std::string &ir) {
  static const std::regex conv(
      R"(dlc\.conv2d [^\n]*? : \((tensor<[^>]*>), (tensor<[^>]*>)[^)\n]*\) -> (tensor<[^>]*>))");
  static const std::regex dense(
      R"(dlc\.dense [^\n]*? : \((tensor<[^>]*>), (tensor<[^>]*>)[^)\n]*\) -> (tensor<[^>]*>))");
  double macs = 0;
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), conv); it != std::sregex_iterator(); ++it) {
    std::vector<int64_t> w = dims((*it)[2]), y = dims((*it)[3]);
    if (w.size() == 4 && y.size() == 4)
      macs += double(y[0] * y[1] * y[2] * y[3]) * double(w[1] * w[2] * w[3]);
  }
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), dense); it != std::sregex_iterator(); ++it) {
    std::vector<int64_t> w = dims((*it)[2]), y = dims((*it)[3]);
    if (w.size() == 2 && y.size() == 2)
      macs += double(y[0] * y[1]) * double(w[1]);
  }
  return macs;
}

} // namespace

int main(int argc, char **argv) {
  std::string network = "resnet50_v1", only, saveModel;
  int64_t batch = 1;
  int repeats = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--network=", 0) == 0)
      network = arg.substr(10);
    else if (arg.rfind("--only=", 0) == 0)
      only = arg.substr(7);
    else if (arg.rfind("--batch=", 0) == 0 && std::atoll(arg.c_str() + 8) > 0)
      batch = std::atoll(arg.c_str() + 8);
    else if (arg.rfind("--repeats=", 0) == 0 && std::atoi(arg.c_str() + 10) > 0)
      repeats = std::atoi(arg.c_str() + 10);
    else if (arg.rfind("--save-model=", 0) == 0 && arg.size() > 13)
      saveModel = arg.substr(13);
    else {
      std::fprintf(stderr, "usage: dlc-bench-zoo --network=NAME (--only=BENCH [--batch=B] "
                           "[--repeats=N] | --save-model=FILE --batch=B)\n");
      return 2;
    }
  }
  try {
    if (only == "matmul") {
      Tensor a = np::random::uniform(-1, 1, {2048, 2048}), b = np::random::uniform(-1, 1, {2048, 2048});
      double seconds = bench::timeIt([&] { np::matmul(a, b); }, 2, std::max(repeats, 5));
      std::printf("{\"framework\": \"dlc\", \"bench\": \"matmul\", \"gflops\": %.1f}\n",
                  2.0 * 2048 * 2048 * 2048 / seconds / 1e9);
      return 0;
    }
    const int64_t size = inputSize(network);
    np::random::seed(0);
    auto net = model_zoo::vision::get_model(network);
    net->initialize(init::Xavier(), {cpu(0)});
    Tensor images = np::random::uniform(-1, 1, {batch, 3, size, size});
    Tensor labels = np::random::randint(0, 1000, {batch});
    {
      // Deferred initialization, on one image: an eager forward of the whole batch would
      // set the process's peak memory before the measured work runs.
      autograd::Pause shapes;
      (*net)(images.slice(0, 1)).wait_to_read();
    }
    if (!saveModel.empty() || only == "macs") {
      bench::randomizeRunningStatistics(net->collect_params());
      net->hybridize();
      autograd::Pause predict;
      (*net)(only == "macs" ? images.slice(0, 1) : images).wait_to_read();
      if (only == "macs") {
        std::printf("{\"framework\": \"dlc\", \"network\": \"%s\", \"bench\": \"macs\", "
                    "\"forward_macs_per_image\": %.0f}\n",
                    network.c_str(), forwardMacs(net->compiled()->compiled_ir()));
        return 0;
      }
      net->save_compiled(saveModel);
      safetensors::save(saveModel + ".input.safetensors", {{"data", images}});
      return 0;
    }
    const bool training = only.rfind("train", 0) == 0;
    if (only != "infer_eager" && only != "infer_hybrid" && only != "train_eager" &&
        only != "train_hybrid" && only != "train_step")
      throw ValueError("--only=" + only + ": expected infer_eager, infer_hybrid, train_eager, "
                       "train_hybrid, train_step, macs or matmul");
    if (only.find("hybrid") != std::string::npos)
      net->hybridize();
    Trainer trainer(net->collect_params(), "sgd", {{"learning_rate", 0.01}, {"momentum", 0.9}});
    loss::SoftmaxCrossEntropyLoss lossFn;
    std::unique_ptr<TrainStep> step;
    if (only == "train_step")
      step = std::make_unique<TrainStep>(*net, lossFn, trainer, std::vector<Device>{cpu(0)});
    std::function<void()> work;
    if (step) {
      work = [&] { (*step)(images, labels); };
    } else if (training) {
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
    reportRow(network, only, batch, bench::timeIt(work, 1, repeats));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-bench-zoo: %s\n", e.what());
    return 1;
  }
  return 0;
}
