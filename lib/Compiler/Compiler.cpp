//===- Compiler.cpp - verify, run the pipeline, lower --------------------------===//
#include "dlc/Compiler/Compiler.h"

#include "CompilerInternal.h"

#include "dlc/Compiler/UntrustedInput/UntrustedInput.h"
#include "dlc/Conversion/DLCToOnnx/DLCToOnnx.h"
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"
#include "dlc/Conversion/Pipelines.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <mutex>

namespace dlc::compiler {

using namespace mlir;

namespace {
/// Whether generated GPU code can be made: kernels generated, and a toolkit with
/// libdevice to link the PTX's math against.
bool gpuKernelsGenerated(const CompileOptions &options) {
  return options.generated_kernels && !options.cuda_toolkit.empty();
}

/// `lowerToProgram`, timed when the options ask.
std::shared_ptr<Program> lowerTimed(func::FuncOp function, const CompileOptions &options,
                                    std::string &error) {
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Program> program = conversion::lowerToProgram(function, options, error);
  if (options.timing)
    llvm::errs() << "dlc compile timing: lowering @" << function.getName()
                 << " to its runtime program (kernels loaded) took "
                 << llvm::format("%.1f", std::chrono::duration<double, std::milli>(
                                             std::chrono::steady_clock::now() - start)
                                             .count())
                 << " ms\n";
  return program;
}

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}
} // namespace

namespace {

/// One compilation: a context whose diagnostics are collected into a string (the
/// compiler runs without exceptions), and the module being compiled.
class Compilation {
public:
  Compilation() : collect_(&context_, [this](Diagnostic &diagnostic) {
      llvm::raw_string_ostream os(diagnostics_);
      os << diagnostic.getLocation() << ": " << diagnostic << "\n";
      for (Diagnostic &note : diagnostic.getNotes())
        os << "  note: " << note << "\n";
      return success();
    }) {
    context_.loadDialect<mlir::dlc::DLCDialect, func::FuncDialect>();
    DialectRegistry codeGeneration;
    mlir::dlc::registerCodeGenerationInterfaces(codeGeneration);
    context_.appendDialectRegistry(codeGeneration);
  }

  /// Emits `graphs` and verifies them; "" or the error, after `what`.
  std::string emit(const std::vector<const Graph *> &graphs, const std::string &what,
                   const CompileOptions &options, std::string &tracedIr) {
    std::string error;
    // GPU regions are generated only where PTX can be made: a toolkit with libdevice.
    module_ = emitModule(context_, graphs, error, gpuKernelsGenerated(options));
    if (!module_)
      return error;
    tracedIr = print(*module_);
    if (failed(verify(*module_)))
      return what + ": the traced module does not verify:\n" + diagnostics_;
    return "";
  }

  /// Parses an exported module, keeps only `function`, puts it whole on device 0 of
  /// `target` and verifies it; "" or the error.
  std::string parseExported(const std::string &input, const std::string &source,
                            const std::string &function, DeviceKind target,
                            const CompileOptions &options) {
    // Untrusted input (dlc/Compiler/UntrustedInput/UntrustedInput.h): bytecode is read in a child
    // process, and text is parsed here only when its nesting cannot overflow the stack.
    std::string text = input;
    if (isBytecode(llvm::MemoryBufferRef(input, source))) {
      std::string why;
      if (!::dlc::untrusted::bytecodeToText(input, source, context_, text, why))
        return source + ": " + why;
    }
    if (std::optional<std::string> problem = ::dlc::untrusted::textNestingProblem(text))
      return source + ": " + *problem;
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, source), llvm::SMLoc());
    ParserConfig config(&context_);
    module_ = parseSourceFile<ModuleOp>(sources, config);
    if (!module_)
      return source + " does not parse as a dlc module:\n" + diagnostics_;
    func::FuncOp kept = module_->lookupSymbol<func::FuncOp>(function);
    if (!kept)
      return source + " has no function @" + function;
    if (kept.isExternal())
      return source + ": @" + function + " is a declaration: it has no body to compile";
    for (func::FuncOp other : llvm::make_early_inc_range(module_->getOps<func::FuncOp>()))
      if (other != kept)
        other.erase();
    for (unsigned k = 0; k < kept.getNumResults(); ++k)
      if (kept.getResultAttr(k, mlir::dlc::DLCDialect::getUpdatesAttrName()))
        return source + ": @" + function + " updates its arguments (result " +
               std::to_string(k) + "): it was traced while training; export the block after "
               "a call outside autograd.record()";
    // Every device the trace named becomes the target's first: a model runs on one device.
    AttrTypeReplacer onTarget;
    auto targetDevice =
        mlir::dlc::DeviceAttr::get(&context_, mlir::dlc::DeviceKind(uint32_t(target)), 0);
    onTarget.addReplacement([&](mlir::dlc::DeviceAttr) -> Attribute { return targetDevice; });
    onTarget.recursivelyReplaceElementsIn(*module_, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false, /*replaceTypes=*/true);
    (*module_)->setAttr(mlir::dlc::DLCDialect::getTargetsAttrName(),
                        describeTargets(context_, gpuKernelsGenerated(options)));
    if (failed(verify(*module_)))
      return source + ": @" + function + " does not verify:\n" + diagnostics_;
    return "";
  }

  /// An empty pass manager on this compilation's context.
  PassManager passes() { return PassManager(&context_); }

  /// Runs `pipeline` (after the hybridize pipeline for `device`'s kind is added).
  std::string run(PassManager &pipeline, Device device, const CompileOptions &options,
                  const std::string &what, std::string &ir) {
    mlir::dlc::CompilerPipelineOptions pipelineOptions;
    pipelineOptions.fuse = options.fuse;
    pipelineOptions.prepareParameters = options.prepare_parameters;
    pipelineOptions.poolIndices = options.pool_indices;
    pipelineOptions.normActivation = options.norm_activation;
    pipelineOptions.groupUpdates = options.group_updates;
    pipelineOptions.memoryBudget = options.memory_budget;
    pipelineOptions.convAlgorithms = options.conv_algorithms;
    pipelineOptions.convTimer = hostConvTimer();
    Layout blocked = options.blocked_layout.value_or(Layout::plain);
    pipelineOptions.blockedLayout = blocked == Layout::plain ? "" : layout_name(blocked);
    pipelineOptions.generateKernels = options.generated_kernels;
    pipelineOptions.gpuChip = options.gpu_chip;
    pipelineOptions.cudaToolkit = options.cuda_toolkit;
    pipelineOptions.cacheDir = options.cache_dir;
    const GeneratedKernelLauncher *gpu = generated_kernel_launcher(DeviceKind::gpu);
    pipelineOptions.hostBuildGpuKernels = gpu && gpu->needs_host_build;
    if (options.timing) {
      llvm::errs() << "dlc compile timing: " << what << " compiled with " << options.str() << "\n";
      pipeline.enableTiming(); // reported when the pass manager goes
    }
    mlir::dlc::buildDLCCompilerPipeline(pipeline,
                                        device.kind == DeviceKind::gpu
                                            ? mlir::dlc::PipelineTarget::cuda
                                            : mlir::dlc::PipelineTarget::cpu,
                                        pipelineOptions);
    if (failed(pipeline.run(*module_)))
      return what + ": the pipeline failed:\n" + diagnostics_;
    reportMissedBudgets(what);
    ir = print(*module_);
    return "";
  }

  /// A memory budget dlc-remat could not reach is said on stderr: the compile still
  /// succeeds, with as little memory as recomputing allowed.
  void reportMissedBudgets(const std::string &what) {
    module_->walk([&](func::FuncOp function) {
      auto remat = function->getAttrOfType<DictionaryAttr>(
          mlir::dlc::DLCDialect::getRematAttrName());
      if (!remat)
        return;
      auto number = [&](StringRef key) { return cast<IntegerAttr>(remat.get(key)).getInt(); };
      if (number("peak_after") > number("budget"))
        std::fprintf(stderr,
                     "dlc: %s: @%s holds %lld bytes at once, over the memory budget of %lld "
                     "(%lld without computing activations again)\n",
                     what.c_str(), function.getName().str().c_str(),
                     (long long)number("peak_after"), (long long)number("budget"),
                     (long long)number("peak_before"));
    });
  }

  func::FuncOp function(const std::string &name) {
    return module_->lookupSymbol<func::FuncOp>(name);
  }

private:
  MLIRContext context_{MLIRContext::Threading::DISABLED};
  std::string diagnostics_;
  ScopedDiagnosticHandler collect_;
  OwningOpRef<ModuleOp> module_;
};

} // namespace

std::string compile(const std::vector<const Graph *> &graphs, CompiledModule &out,
                    const CompileOptions &options) {
  if (graphs.empty())
    return "hybridize: nothing to compile";
  Compilation compilation;
  std::string error = compilation.emit(graphs, "hybridize", options, out.traced_ir);
  if (!error.empty())
    return error;
  PassManager pipeline = compilation.passes();
  error = compilation.run(pipeline, graphs.front()->device, options, "hybridize", out.ir);
  if (!error.empty())
    return error;
  out.programs.clear();
  out.saved_results.clear();
  for (const Graph *graph : graphs) {
    func::FuncOp function = compilation.function(graph->name);
    std::shared_ptr<Program> program = function ? lowerTimed(function, options, error) : nullptr;
    if (!program)
      return function ? error : "hybridize: function @" + graph->name + " vanished";
    out.programs.push_back(std::move(program));
    std::vector<int> saved;
    for (unsigned i = 0; i < function.getNumArguments(); ++i) {
      auto source = function.getArgAttrOfType<ArrayAttr>(
          i, mlir::dlc::DLCDialect::getSavedFromAttrName());
      auto result = source && source.size() == 2 ? dyn_cast<IntegerAttr>(source[1]) : nullptr;
      saved.push_back(result ? int(result.getInt()) : -1);
    }
    out.saved_results.push_back(std::move(saved));
  }
  return "";
}

std::string compile_exported(const std::string &text, const std::string &source,
                             const std::string &function, DeviceKind target, CompiledExport &out,
                             const CompileOptions &options) {
  Compilation compilation;
  std::string error = compilation.parseExported(text, source, function, target, options);
  if (!error.empty())
    return error;
  PassManager pipeline = compilation.passes();
  error = compilation.run(pipeline, Device{target, 0}, options, source, out.ir);
  if (!error.empty())
    return error;
  func::FuncOp lowered = compilation.function(function);
  out.program = lowered ? lowerTimed(lowered, options, error) : nullptr;
  if (!out.program)
    return lowered ? error : source + ": function @" + function + " vanished";
  out.argument_names.clear();
  for (unsigned i = 0; i < lowered.getNumArguments(); ++i) {
    auto name = lowered.getArgAttrOfType<StringAttr>(i, mlir::dlc::DLCDialect::getNameAttrName());
    out.argument_names.push_back(name ? name.str() : "arg" + std::to_string(i));
  }
  return "";
}

std::string translate_exported_to_onnx(const std::string &text, const std::string &source,
                                       const std::string &function, mlir::dlc::OnnxGraph &out) {
  Compilation compilation;
  std::string error =
      compilation.parseExported(text, source, function, DeviceKind::cpu, CompileOptions());
  if (!error.empty())
    return error;
  func::FuncOp kept = compilation.function(function);
  if (!kept)
    return source + ": function @" + function + " vanished";
  error = mlir::dlc::translateToOnnx(kept, out);
  return error.empty() ? "" : source + ": " + error;
}

std::string compile_data_parallel(const Graph &step, const std::vector<Device> &devices,
                                  CompiledDataParallel &out, bool syncBatchNorm,
                                  const CompileOptions &options, int processes) {
  Compilation compilation;
  std::string error = compilation.emit({&step}, "training step", options, out.traced_ir);
  if (!error.empty())
    return error;
  PassManager pipeline = compilation.passes();
  if (devices.size() > 1 || processes > 1) {
    static std::once_flag registered;
    std::call_once(registered, [] { mlir::dlc::registerDLCPasses(); });
    // The devices in the dialect's spelling, which the pass option parses.
    std::string list;
    for (Device device : devices)
      list += (list.empty() ? "" : ",") +
              mlir::dlc::stringifyDeviceKind(mlir::dlc::DeviceKind(int32_t(device.kind))).str() +
              ":" + std::to_string(device.id);
    std::string options = "devices=" + list + (syncBatchNorm ? " sync-batch-norm=true" : "") +
                          (processes > 1 ? " processes=" + std::to_string(processes) : "");
    if (failed(parsePassPipeline("dlc-shard-data-parallel{" + options + "}", pipeline)))
      return "training step: cannot build the sharding pass for devices " + list;
  }
  error = compilation.run(pipeline, devices.front(), options, "training step", out.ir);
  if (!error.empty())
    return error;
  func::FuncOp function = compilation.function(step.name);
  out.program = function ? lowerTimed(function, options, error) : nullptr;
  if (!out.program)
    return function ? error : "training step: function @" + step.name + " vanished";
  return "";
}

} // namespace dlc::compiler
