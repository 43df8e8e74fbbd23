//===- dlc-compile.cpp - an exported block -> one compiled model file ----------===//
//
//   dlc-compile net.mlir net.safetensors -o net.dlc [--target cpu|cuda]
//   dlc-compile net.mlir net.safetensors --emit=mlir
//   dlc-compile model.onnx [--input-shape input=1x3x224x224] -o model.dlc
//   dlc-compile net.mlir net.safetensors --emit=onnx -o net.onnx
//
// Reads what HybridBlock::export_model writes (the traced module and the parameters),
// compiles the module's forward for the target with the pipeline hybridize uses, binds
// its argument "data" as the model's input and the others to the parameters of their
// names, and writes a `.dlc` file (docs/design/model-file.md) that dlc-run and libdlc run
// without the compiler. --emit=mlir prints the module after the pipeline instead. An ONNX
// model is imported and traced first (dlc-import-onnx's work, into a folder removed after).
// --emit=onnx writes the exported block as an ONNX file instead (dlc/Onnx/Export.h).
//
//===----------------------------------------------------------------------===//
#include "dlc/Core/Error.h"
#include "dlc/Hybridize/ModelCompiler.h"
#include "dlc/Frontend/SafeTensors.h"
#include "dlc/Onnx/Export.h"
#include "dlc/Onnx/Import.h"
#include "dlc/Runtime/Files/ModelFile.h"

#include "../common/CompileOptionFlags.h"

#include "llvm/Support/CommandLine.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

using namespace dlc;
namespace cl = llvm::cl;

namespace {

enum class Emit { model, mlir, onnx };

cl::OptionCategory compileOptions("dlc-compile options");
cl::list<std::string> sources(cl::Positional, cl::OneOrMore,
                              cl::desc("<prefix.mlir> <prefix.safetensors> | <model.onnx>"),
                              cl::cat(compileOptions));
cl::list<std::string> inputShapes("input-shape",
                                  cl::desc("ONNX models: the shape of an input the model "
                                           "leaves open"),
                                  cl::value_desc("name=1x3x224x224"), cl::cat(compileOptions));
cl::opt<std::string> outputPath("o", cl::desc("the model file to write"),
                                cl::value_desc("model.dlc"), cl::cat(compileOptions));
cl::opt<std::string> targetOption("target", cl::desc("cpu or cuda (default: cpu)"),
                                  cl::init("cpu"), cl::cat(compileOptions));
cl::opt<std::string> functionName("function", cl::desc("the exported function to compile"),
                                  cl::init("forward"), cl::cat(compileOptions));
cl::opt<Emit> emit("emit", cl::desc("what to write"), cl::init(Emit::model),
                   cl::values(clEnumValN(Emit::model, "model", "the .dlc model file (-o)"),
                              clEnumValN(Emit::mlir, "mlir",
                                         "the module after the pipeline, to stdout"),
                              clEnumValN(Emit::onnx, "onnx",
                                         "the exported block as an ONNX file (-o)")),
                   cl::cat(compileOptions));

namespace fs = std::filesystem;

/// A folder of this process's own, removed with everything in it when it goes.
struct TemporaryFolder {
  TemporaryFolder() {
    std::random_device random;
    path = fs::temp_directory_path() / ("dlc-compile-" + std::to_string(random()));
    fs::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  TemporaryFolder(const TemporaryFolder &) = delete;
  TemporaryFolder &operator=(const TemporaryFolder &) = delete;
  fs::path path;
};

std::string describe(const std::vector<ModelTensor> &tensors) {
  std::string text;
  for (const ModelTensor &t : tensors)
    text += " '" + t.name + "' " + dtype_name(t.dtype) + " " + shape_rules::str(t.shape);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&compileOptions, &tools::compileOptionFlags});
  cl::ParseCommandLineOptions(argc, argv,
                              "dlc-compile: compiles an exported block (export_model's .mlir "
                              "and .safetensors) into one model file (.dlc)\n");
  try {
    if (targetOption != "cpu" && targetOption != "cuda")
      throw ValueError("--target " + targetOption + ": expected cpu or cuda");
    if (emit != Emit::mlir && outputPath.empty())
      throw ValueError(emit == Emit::onnx
                           ? "give the ONNX file to write with -o model.onnx"
                           : "give the model file to write with -o model.dlc (or --emit=mlir "
                             "to print the optimized module)");
    std::string modulePath, weightsPath;
    std::optional<TemporaryFolder> imported;
    if (sources.size() == 1 && fs::path(sources[0]).extension() == ".onnx") {
      onnx::ImportOptions importOptions;
      for (const std::string &text : inputShapes)
        onnx::parse_input_shape(text, importOptions.input_shapes);
      std::shared_ptr<onnx::OnnxBlock> block = onnx::import(sources[0], importOptions);
      imported.emplace();
      std::string prefix = (imported->path / "model").string();
      onnx::export_traced(*block, prefix);
      modulePath = prefix + ".mlir";
      weightsPath = prefix + ".safetensors";
    } else if (sources.size() == 2) {
      modulePath = sources[0];
      weightsPath = sources[1];
    } else {
      throw ValueError("give an exported block (prefix.mlir prefix.safetensors) or one ONNX "
                       "model (model.onnx)");
    }
    if (emit == Emit::onnx) {
      if (imported)
        throw ValueError("--emit=onnx writes an exported block (prefix.mlir "
                         "prefix.safetensors) as ONNX; the input is ONNX already");
      std::ifstream in(modulePath, std::ios::binary);
      if (!in)
        throw Error("cannot read " + modulePath);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      safetensors::Reader weights(weightsPath);
      onnx::export_module(text, modulePath, [&](const std::string &name) {
        for (const safetensors::TensorInfo &info : weights.tensors())
          if (info.name == name)
            return weights.read(info);
        throw Error(weightsPath + " has no tensor '" + name + "', a parameter of " + modulePath);
      }, outputPath, functionName);
      std::printf("dlc-compile: wrote %s\n", outputPath.c_str());
      return 0;
    }
    CompiledExportedModel compiled = compile_exported_model(
        modulePath, weightsPath, targetOption == "cpu" ? DeviceKind::cpu : DeviceKind::gpu,
        functionName, tools::compileOptionsFromFlags());
    for (const std::string &warning : compiled.warnings)
      std::fprintf(stderr, "dlc-compile: warning: %s\n", warning.c_str());
    if (emit == Emit::mlir) {
      std::fputs(compiled.optimized_ir.c_str(), stdout);
      return 0;
    }
    write_model_file(outputPath, compiled.file);
    std::printf("dlc-compile: wrote %s: %s model, %zu steps, %zu weights, inputs%s, outputs%s\n",
                outputPath.c_str(), compiled.file.target.c_str(), compiled.steps,
                compiled.file.weights.size(), describe(compiled.file.inputs).c_str(),
                describe(compiled.file.outputs).c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-compile: %s\n", e.what());
    return 1;
  }
  return 0;
}
