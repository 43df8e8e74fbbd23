//===- Compiler.cpp - verify, run the pipeline, lower --------------------------===//
#include "dlc/Compiler/Compiler.h"

#include "CompilerInternal.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace dlc::compiler {

using namespace mlir;

namespace {
/// DLC_DISABLE_FUSION=1 compiles without dlc-fuse (to measure what fusion saves).
bool fusionEnabled() {
  const char *flag = std::getenv("DLC_DISABLE_FUSION");
  return !flag || !*flag || std::string(flag) == "0";
}

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}
} // namespace

std::string compile(const std::vector<const Graph *> &graphs, CompiledModule &out) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<mlir::dlc::DLCDialect, func::FuncDialect>();

  std::string diagnostics;
  ScopedDiagnosticHandler collect(&context, [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream os(diagnostics);
    os << diagnostic.getLocation() << ": " << diagnostic << "\n";
    for (Diagnostic &note : diagnostic.getNotes())
      os << "  note: " << note << "\n";
    return success();
  });

  std::string error;
  OwningOpRef<ModuleOp> module = emitModule(context, graphs, error);
  if (!module)
    return error;
  out.traced_ir = print(*module);
  if (failed(verify(*module)))
    return "hybridize: the traced module does not verify:\n" + diagnostics;

  PassManager pipeline(&context);
  bool onGpu = !graphs.empty() && graphs.front()->device.kind == DeviceKind::gpu;
  mlir::dlc::buildDLCPipeline(pipeline,
                              onGpu ? mlir::dlc::PipelineTarget::cuda
                                    : mlir::dlc::PipelineTarget::cpu,
                              fusionEnabled());
  if (failed(pipeline.run(*module)))
    return "hybridize: the pipeline failed:\n" + diagnostics;
  out.ir = print(*module);

  out.programs.clear();
  for (const Graph *graph : graphs) {
    auto function = module->lookupSymbol<func::FuncOp>(graph->name);
    std::shared_ptr<Program> program =
        function ? lowerToProgram(function, graph->device, error) : nullptr;
    if (!program)
      return function ? error : "hybridize: function @" + graph->name + " vanished";
    out.programs.push_back(std::move(program));
  }
  return "";
}

std::string compile_data_parallel(const Graph &step, const std::vector<Device> &devices,
                                  CompiledDataParallel &out, bool syncBatchNorm) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<mlir::dlc::DLCDialect, func::FuncDialect>();
  std::string diagnostics;
  ScopedDiagnosticHandler collect(&context, [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream os(diagnostics);
    os << diagnostic.getLocation() << ": " << diagnostic << "\n";
    return success();
  });
  std::string error;
  OwningOpRef<ModuleOp> module = emitModule(context, {&step}, error);
  if (!module)
    return error;
  out.traced_ir = print(*module);
  if (failed(verify(*module)))
    return "training step: the traced module does not verify:\n" + diagnostics;

  PassManager pipeline(&context);
  if (devices.size() > 1) {
    static std::once_flag registered;
    std::call_once(registered, [] { mlir::dlc::registerDLCPasses(); });
    std::string list;
    for (Device device : devices) {
      std::string text = device.str(); // "cpu(1)" -> "cpu:1"
      std::replace(text.begin(), text.end(), '(', ':');
      text.erase(std::remove(text.begin(), text.end(), ')'), text.end());
      list += (list.empty() ? "" : ",") + text;
    }
    std::string options = "devices=" + list + (syncBatchNorm ? " sync-batch-norm=true" : "");
    if (failed(parsePassPipeline("dlc-shard-data-parallel{" + options + "}", pipeline)))
      return "training step: cannot build the sharding pass for devices " + list;
  }
  mlir::dlc::buildDLCPipeline(pipeline,
                              devices.front().kind == DeviceKind::gpu
                                  ? mlir::dlc::PipelineTarget::cuda
                                  : mlir::dlc::PipelineTarget::cpu,
                              fusionEnabled());
  if (failed(pipeline.run(*module)))
    return "training step: the pipeline failed:\n" + diagnostics;
  out.ir = print(*module);
  auto function = module->lookupSymbol<func::FuncOp>(step.name);
  out.program = function ? lowerToShardedProgram(function, error) : nullptr;
  if (!out.program)
    return function ? error : "training step: function @" + step.name + " vanished";
  return "";
}

} // namespace dlc::compiler
