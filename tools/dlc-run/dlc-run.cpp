//===- dlc-run.cpp - run a compiled model file -----------------------------------===//
//
//   dlc-run model.dlc --input data=batch.safetensors --output out.safetensors
//   dlc-run model.dlc --benchmark 100 --device cpu:1
//
// Loads a `.dlc` file (docs/design/model-file.md) with CompiledModel, which checks it
// and needs no compiler, binds each input from a safetensors file (the tensor of the
// input's name, or the file's only tensor), runs the model and writes or prints the
// outputs. --benchmark N runs it N times after a warm-up (the first run, which also
// prepares what reads only weights, timed on its own, then --warmup runs), on the given
// inputs or random ones, and prints latency percentiles and throughput.
//
// It links libdlc (the runtime, the eager ops and CompiledModel) and neither MLIR nor
// LLVM, so its options are parsed with getopt_long rather than llvm::cl.
//
//===----------------------------------------------------------------------===//
#include <dlc/dlc.h>

#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <iostream>
#include <map>

using namespace dlc;

namespace {

const char *kUsage =
    "usage: dlc-run MODEL.dlc [options]\n"
    "runs a compiled model file (.dlc) without compiling\n"
    "\n"
    "  --input NAME=FILE.safetensors  the input NAME from that file (its tensor called NAME,\n"
    "                                 or its only tensor); repeat for each input\n"
    "  --output FILE.safetensors      write the outputs there\n"
    "  --print                        print the outputs (and each row's argmax)\n"
    "  --device cpu:N|gpu:N           run there (a device of the kind the model was\n"
    "                                 compiled for; default: the one it was compiled for)\n"
    "  --benchmark N                  run N times after a warm-up and print latency\n"
    "                                 percentiles and throughput (random inputs where none\n"
    "                                 are given), and the first run's time\n"
    "  --warmup N                     with --benchmark, N untimed runs after the first\n"
    "                                 (default 2)\n"
    "  --help                         this text\n";

struct Options {
  std::string modelPath;
  std::vector<std::string> inputs;
  std::string outputPath;
  bool print = false;
  std::string device;
  int benchmarkRuns = 0;
  int warmupRuns = 2;
};

/// A count from `option`'s value, or a ValueError naming both.
int countOf(const char *option, const char *value, long least) {
  char *end = nullptr;
  long count = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || count < least || count > 100000000)
    throw ValueError(std::string(option) + " " + value + ": expected a count of runs");
  return int(count);
}

/// The command line, or a ValueError naming what does not parse.
Options parseOptions(int argc, char **argv) {
  enum { input = 1, output, print, device, benchmark, warmup, help };
  const option longOptions[] = {{"input", required_argument, nullptr, input},
                                {"output", required_argument, nullptr, output},
                                {"print", no_argument, nullptr, print},
                                {"device", required_argument, nullptr, device},
                                {"benchmark", required_argument, nullptr, benchmark},
                                {"warmup", required_argument, nullptr, warmup},
                                {"help", no_argument, nullptr, help},
                                {nullptr, 0, nullptr, 0}};
  Options o;
  opterr = 0; // the errors below name the option
  for (int c; (c = getopt_long_only(argc, argv, ":", longOptions, nullptr)) != -1;) {
    switch (c) {
    case input:
      o.inputs.push_back(optarg);
      break;
    case output:
      o.outputPath = optarg;
      break;
    case print:
      o.print = true;
      break;
    case device:
      o.device = optarg;
      break;
    case benchmark:
      o.benchmarkRuns = countOf("--benchmark", optarg, 1);
      break;
    case warmup:
      o.warmupRuns = countOf("--warmup", optarg, 0);
      break;
    case help:
      std::fputs(kUsage, stdout);
      std::exit(0);
    case ':':
      throw ValueError(std::string(argv[optind - 1]) + " needs a value\n" + kUsage);
    default:
      throw ValueError(std::string("unknown option ") + argv[optind - 1] + "\n" + kUsage);
    }
  }
  if (optind != argc - 1)
    throw ValueError(std::string(optind >= argc ? "no model file given"
                                                : "give one model file, got " +
                                                      std::to_string(argc - optind)) +
                     "\n" + kUsage);
  o.modelPath = argv[optind];
  return o;
}

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
  try {
    const Options o = parseOptions(argc, argv);
    // A model file holds no options: DLC_CUDA_GRAPHS=0 launches its kernels one by one.
    set_program_graphs(compile_options_from_environment().cuda_graphs);
    const std::string &deviceOption = o.device, &modelPath = o.modelPath,
                      &outputPath = o.outputPath;
    const bool printOutputs = o.print;
    const int benchmarkRuns = o.benchmarkRuns;
    std::optional<Device> device;
    if (!deviceOption.empty()) {
      try {
        device = parse_device(deviceOption);
      } catch (const ValueError &e) {
        throw ValueError("--device: " + std::string(e.what()));
      }
      if (!can_compute_on(*device))
        throw ValueError("--device " + deviceOption + ": " + device->str() +
                         " is not present in this process");
    }
    std::shared_ptr<const CompiledModel> model = CompiledModel::load(modelPath, device);
    std::map<std::string, std::string> files;
    for (const std::string &option : o.inputs) {
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
    if (!files.empty()) {
      std::string known;
      for (const ModelTensor &input : model->inputs())
        known += (known.empty() ? "" : ", ") + describe(input);
      throw ValueError("--input " + files.begin()->first +
                       ": the model has no such input; its inputs are " + known);
    }

    std::printf("dlc-run: %s: %s model on %s, inputs", modelPath.c_str(), model->target().c_str(),
                model->device().str().c_str());
    for (const ModelTensor &t : model->inputs())
      std::printf(" %s", describe(t).c_str());
    std::printf(", outputs");
    for (const ModelTensor &t : model->outputs())
      std::printf(" %s", describe(t).c_str());
    std::printf("\n");

    const auto firstStart = std::chrono::steady_clock::now();
    std::vector<Tensor> outputs = model->run(inputs);
    for (Tensor &out : outputs)
      out.wait_to_read();
    const double firstMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - firstStart)
            .count();
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
      for (int i = 0; i < o.warmupRuns; ++i)
        for (Tensor &out : model->run(inputs))
          out.wait_to_read();
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
                  "ms; %.1f runs/s, %.1f samples/s (batch %lld); first run %.3f ms (it "
                  "also prepares what reads only weights), then %d warm-up runs\n",
                  benchmarkRuns, percentile(0.5), percentile(0.9), percentile(0.99),
                  ms.front(), 1000.0 / mean, 1000.0 * double(batch) / mean, (long long)batch,
                  firstMs, o.warmupRuns);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
