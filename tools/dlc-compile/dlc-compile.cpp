//===- dlc-compile.cpp - an exported block -> one compiled model file ----------===//
//
//   dlc-compile net.mlir net.safetensors -o net.dlc [--target cpu|cuda]
//   dlc-compile net.mlir net.safetensors --emit=mlir
//
// Reads what HybridBlock::export_model writes (the traced module and the parameters),
// compiles the module's forward for the target with the pipeline hybridize uses, binds
// its argument "data" as the model's input and the others to the parameters of their
// names, and writes a `.dlc` file (docs/design/model-file.md) that dlc-run and libdlc run
// without the compiler. --emit=mlir prints the module after the pipeline instead.
//
//===----------------------------------------------------------------------===//
#include "dlc/Core/Error.h"
#include "dlc/Hybridize/ModelCompiler.h"
#include "dlc/Runtime/Files/ModelFile.h"

#include "../common/CompileOptionFlags.h"

#include "llvm/Support/CommandLine.h"

#include <cstdio>

using namespace dlc;
namespace cl = llvm::cl;

namespace {

enum class Emit { model, mlir };

cl::OptionCategory compileOptions("dlc-compile options");
cl::opt<std::string> modulePath(cl::Positional, cl::desc("<prefix.mlir>"), cl::Required,
                                cl::cat(compileOptions));
cl::opt<std::string> weightsPath(cl::Positional, cl::desc("<prefix.safetensors>"), cl::Required,
                                 cl::cat(compileOptions));
cl::opt<std::string> outputPath("o", cl::desc("the model file to write"),
                                cl::value_desc("model.dlc"), cl::cat(compileOptions));
cl::opt<std::string> targetOption("target", cl::desc("cpu or cuda (default: cpu)"),
                                  cl::init("cpu"), cl::cat(compileOptions));
cl::opt<std::string> functionName("function", cl::desc("the exported function to compile"),
                                  cl::init("forward"), cl::cat(compileOptions));
cl::opt<Emit> emit("emit", cl::desc("what to write"), cl::init(Emit::model),
                   cl::values(clEnumValN(Emit::model, "model", "the .dlc model file (-o)"),
                              clEnumValN(Emit::mlir, "mlir",
                                         "the module after the pipeline, to stdout")),
                   cl::cat(compileOptions));

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
    if (emit == Emit::model && outputPath.empty())
      throw ValueError("give the model file to write with -o model.dlc (or --emit=mlir to "
                       "print the optimized module)");
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
