//===- inference_models.cpp - the models bench/compare-inference.py times ------===//
//
//   dlc-bench-inference-models OUT_DIR [BATCH ...]
//
// Writes, for the network dlc-train trains (leafnet::fashion_network: 1x28x28 inputs)
// and the seed's LeafNetwork (3x128x128), their parameters (OUT_DIR/NET.safetensors,
// which the peers load) and one compiled model per batch size (OUT_DIR/NET-bB.dlc,
// which dlc-run times), plus an input batch per size (OUT_DIR/NET-bB.input.safetensors)
// for the outputs' cross-check. Weights are Xavier-initialized and BatchNorm's running
// statistics random, so that every layer computes something the peers must match.
//
//===----------------------------------------------------------------------===//
#include "../examples/LeafNetwork.h"
#include "BenchSupport.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dlc;
using namespace dlc::gluon;

namespace {

void writeModels(const std::string &out, const std::string &name, HybridBlock &net,
                 const Shape &sample, const std::vector<int64_t> &batches) {
  net.initialize(init::Xavier(), {cpu(0)});
  {
    autograd::Pause shapes;
    Shape one = sample;
    one.insert(one.begin(), 1);
    net(np::zeros(one)); // deferred shapes
  }
  bench::randomizeRunningStatistics(net.collect_params());
  net.save_parameters(out + "/" + name + ".safetensors");
  net.hybridize();
  for (int64_t batch : batches) {
    Shape shape = sample;
    shape.insert(shape.begin(), batch);
    Tensor x = np::random::normal(0, 1, shape);
    net(x).wait_to_read(); // predicting: compiles the signature save_compiled writes
    std::string prefix = out + "/" + name + "-b" + std::to_string(batch);
    net.save_compiled(prefix + ".dlc");
    safetensors::save(prefix + ".input.safetensors", {{"data", x}});
    std::printf("%s.dlc\n", prefix.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dlc-bench-inference-models OUT_DIR [BATCH ...]\n");
    return 2;
  }
  std::vector<int64_t> batches;
  for (int i = 2; i < argc; ++i)
    batches.push_back(std::atoll(argv[i]));
  if (batches.empty())
    batches = {1, 32};
  try {
    np::random::seed(11);
    auto fashion = leafnet::fashion_network();
    writeModels(argv[1], "fashion", *fashion, {1, 28, 28}, batches);
    leafnet::LeafNetwork leaf;
    writeModels(argv[1], "leaf", leaf, {3, 128, 128}, batches);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-bench-inference-models: %s\n", e.what());
    return 1;
  }
  return 0;
}
