//===- dlc-run.cpp - run a compiled model file -----------------------------------===//
//
//   dlc-run model.dlc --input data=batch.safetensors --output out.safetensors
//   dlc-run model.dlc --benchmark 100 --device cpu:1
//
// Loads a `.dlc` file (docs/design/model-file.md) with CompiledModel, which checks it
// and needs no compiler, binds each input from a safetensors file (the tensor of the
// input's name, or the file's only tensor), runs the model and writes or prints the
// outputs. --benchmark N runs it N times after a warm-up, on the given inputs or random
// ones, and prints latency percentiles and throughput.
//
//===----------------------------------------------------------------------===//
#include <dlc/dlc.h>

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <iostream>
#include <map>

using namespace dlc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory runOptions("dlc-run options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.dlc>"), cl::Required,
                               cl::cat(runOptions));
cl::list<std::string> inputOptions(
    "input", cl::desc("NAME=FILE.safetensors: the input NAME from that file (its tensor called "
                      "NAME, or its only tensor); repeat for each input"),
    cl::cat(runOptions));
cl::opt<std::string> outputPath("output",
                                cl::desc("write the outputs to this safetensors file"),
                                cl::cat(runOptions));
cl::opt<bool> printOutputs("print", cl::desc("print the outputs (and each row's argmax)"),
                           cl::cat(runOptions));
cl::opt<std::string> deviceOption("device",
                                  cl::desc("cpu:N or gpu:N: run there (a device of the kind "
                                           "the model was compiled for; default: the one)"),
                                  cl::cat(runOptions));
cl::opt<int> benchmarkRuns("benchmark",
                           cl::desc("run N times after a warm-up and print latency "
                                    "percentiles and throughput (random inputs where none "
                                    "are given)"),
                           cl::cat(runOptions), cl::init(0));

/// The tensor for `input` from `file`: the one of its name, or the file's only one.
Tensor readInput(const ModelTensor &input, const std::string &file) {
  safetensors::Reader reader(file);
  const safetensors::TensorInfo *found = nullptr;
  for (const safetensors::TensorInfo &entry : reader.tensors())
    if (entry.name == input.name || reader.tensors().size() == 1)
      found = &entry;
  if (!found)
    throw ValueError("--input " + input.name + "=" + file + ": the file has " +
                     std::to_string(reader.tensors().size()) +
                     " tensors and none is called '" + input.name + "'");
  return reader.read(*found);
}

std::string describe(const ModelTensor &t) {
  return "'" + t.name + "' " + dtype_name(t.dtype) + " " + shape_rules::str(t.shape);
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(runOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "dlc-run: runs a compiled model file (.dlc) without compiling\n");
  try {
    std::optional<Device> device;
    if (!deviceOption.empty()) {
      size_t colon = deviceOption.find(':');
      std::string kind = deviceOption.substr(0, colon);
      int id = colon == std::string::npos ? 0 : std::atoi(deviceOption.c_str() + colon + 1);
      if ((kind != "cpu" && kind != "gpu") || id < 0)
        throw ValueError("--device " + deviceOption + ": expected cpu:N or gpu:N");
      device = kind == "cpu" ? cpu(id) : gpu(id);
      if (!can_compute_on(*device))
        throw ValueError("--device " + deviceOption + ": " + device->str() +
                         " is not present in this process");
    }
    std::shared_ptr<const CompiledModel> model = CompiledModel::load(modelPath, device);
    std::map<std::string, std::string> files;
    for (const std::string &option : inputOptions) {
      size_t equals = option.find('=');
      if (equals == std::string::npos || equals == 0)
        throw ValueError("--input " + option + ": expected NAME=FILE.safetensors");
      files[option.substr(0, equals)] = option.substr(equals + 1);
    }
    std::vector<Tensor> inputs;
    for (const ModelTensor &input : model->inputs()) {
      auto file = files.find(input.name);
      if (file != files.end()) {
        inputs.push_back(readInput(input, file->second));
        files.erase(file);
      } else if (benchmarkRuns > 0) {
        inputs.push_back(is_floating(input.dtype)
                             ? np::random::uniform(0, 1, input.shape).astype(input.dtype)
                             : np::zeros(input.shape, input.dtype));
      } else {
        throw ValueError("input " + describe(input) + " is missing: give --input " +
                         input.name + "=FILE.safetensors");
      }
    }
    if (!files.empty())
      throw ValueError("--input " + files.begin()->first + ": the model has no such input");

    std::printf("dlc-run: %s: %s model on %s, inputs", modelPath.c_str(), model->target().c_str(),
                model->device().str().c_str());
    for (const ModelTensor &t : model->inputs())
      std::printf(" %s", describe(t).c_str());
    std::printf(", outputs");
    for (const ModelTensor &t : model->outputs())
      std::printf(" %s", describe(t).c_str());
    std::printf("\n");

    std::vector<Tensor> outputs = model->run(inputs);
    for (Tensor &out : outputs)
      out.wait_to_read();
    if (printOutputs)
      for (size_t k = 0; k < outputs.size(); ++k) {
        std::printf("%s =\n", model->outputs()[k].name.c_str());
        std::cout << outputs[k] << "\n";
        if (outputs[k].ndim() == 2)
          std::cout << "argmax = " << np::argmax(outputs[k], 1) << "\n";
      }
    if (!outputPath.empty()) {
      std::vector<std::pair<std::string, Tensor>> named;
      for (size_t k = 0; k < outputs.size(); ++k)
        named.push_back({model->outputs()[k].name, outputs[k]});
      safetensors::save(outputPath, named);
      std::printf("dlc-run: outputs written to %s\n", outputPath.c_str());
    }
    if (benchmarkRuns > 0) {
      std::vector<double> ms;
      for (int i = 0; i < benchmarkRuns; ++i) {
        auto start = std::chrono::steady_clock::now();
        for (Tensor &out : model->run(inputs))
          out.wait_to_read();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                               start)
                         .count());
      }
      std::sort(ms.begin(), ms.end());
      auto percentile = [&](double p) { return ms[size_t(p * double(ms.size() - 1) + 0.5)]; };
      double mean = 0;
      for (double m : ms)
        mean += m / double(ms.size());
      int64_t batch = model->inputs().empty() || model->inputs()[0].shape.empty()
                          ? 1
                          : model->inputs()[0].shape[0];
      std::printf("dlc-run: %d runs: latency p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, min %.3f "
                  "ms; %.1f runs/s, %.1f samples/s (batch %lld)\n",
                  benchmarkRuns.getValue(), percentile(0.5), percentile(0.9), percentile(0.99),
                  ms.front(), 1000.0 / mean, 1000.0 * double(batch) / mean, (long long)batch);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
