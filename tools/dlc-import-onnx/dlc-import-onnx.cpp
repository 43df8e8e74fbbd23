//===- dlc-import-onnx.cpp - an ONNX model -> the dlc dialect and its weights --===//
//
//   dlc-import-onnx model.onnx -o model.mlir [--weights model.safetensors]
//                   [--input-shape input=1x3x224x224 ...]
//   dlc-import-onnx --supported-ops      (the markdown table of docs/onnx.md)
//
// Imports the model as a block (dlc/Onnx/Import.h), traces it on zero inputs of its
// declared shapes and writes what HybridBlock::export_model writes: the module
// (`dlc-opt` reads it) and the parameters, which dlc-compile turns into a model file.
// Nothing is written when the model cannot be imported.
//
//===----------------------------------------------------------------------===//
#include "dlc/Onnx/Import.h"

#include "llvm/Support/CommandLine.h"

#include <cstdio>
#include <filesystem>

using namespace dlc;
namespace cl = llvm::cl;
namespace fs = std::filesystem;

namespace {

cl::OptionCategory importOptions("dlc-import-onnx options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"), cl::cat(importOptions));
cl::opt<std::string> outputPath("o", cl::desc("the module to write"),
                                cl::value_desc("model.mlir"), cl::cat(importOptions));
cl::opt<std::string> weightsPath("weights",
                                 cl::desc("the parameters to write (default: the module's "
                                          "name with .safetensors)"),
                                 cl::value_desc("model.safetensors"), cl::cat(importOptions));
cl::list<std::string> inputShapes("input-shape",
                                  cl::desc("the shape of an input the model leaves open"),
                                  cl::value_desc("name=1x3x224x224"), cl::cat(importOptions));
cl::opt<bool> supportedOps("supported-ops",
                           cl::desc("print the table of the ONNX ops dlc imports (markdown)"),
                           cl::cat(importOptions));

void printSupportedOps() {
  std::printf("# ONNX ops dlc imports\n\n"
              "Generated from the importer's table (`dlc-import-onnx --supported-ops`, "
              "`ninja -C build dlc-update-docs`); docs/onnx.md explains. Opsets %lld to "
              "%lld of ONNX's own domain (and older files whose ops have not changed "
              "definition since %lld); an attribute not listed for an op is refused by "
              "name when the model is imported.\n\n",
              static_cast<long long>(onnx::kOldestOpset), static_cast<long long>(onnx::kNewestOpset),
              static_cast<long long>(onnx::kOldestOpset));
  std::printf("| ONNX op | from opset | attributes read | not covered |\n");
  std::printf("|---|---|---|---|\n");
  for (const onnx::SupportedOp &op : onnx::supported_ops()) {
    std::string attributes;
    for (const std::string &a : op.attributes)
      attributes += (attributes.empty() ? "" : ", ") + a;
    std::printf("| %s | %lld | %s | %s |\n", op.type.c_str(), static_cast<long long>(op.since),
                attributes.empty() ? "-" : attributes.c_str(),
                op.note.empty() ? "" : op.note.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&importOptions});
  cl::ParseCommandLineOptions(argc, argv,
                              "dlc-import-onnx: imports an ONNX model into the dlc dialect "
                              "(.mlir) and its weights (.safetensors)\n");
  try {
    if (supportedOps) {
      printSupportedOps();
      return 0;
    }
    if (modelPath.empty())
      throw ValueError("give the ONNX model to import (dlc-import-onnx model.onnx -o model.mlir)");
    if (outputPath.empty() || fs::path(outputPath.getValue()).extension() != ".mlir")
      throw ValueError("give the module to write with -o NAME.mlir");
    onnx::ImportOptions options;
    for (const std::string &text : inputShapes)
      onnx::parse_input_shape(text, options.input_shapes);
    std::shared_ptr<onnx::OnnxBlock> block = onnx::import(modelPath, options);
    std::string prefix = fs::path(outputPath.getValue()).replace_extension().string();
    onnx::export_traced(*block, prefix);
    std::string weights = prefix + ".safetensors";
    if (!weightsPath.empty() && fs::path(weightsPath.getValue()) != fs::path(weights)) {
      fs::rename(weights, weightsPath.getValue());
      weights = weightsPath;
    }
    std::printf("dlc-import-onnx: wrote %s and %s (%s)\n", outputPath.c_str(), weights.c_str(),
                block->str().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-import-onnx: %s\n", e.what());
    return 1;
  }
  return 0;
}
