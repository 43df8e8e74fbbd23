//===- Pipelines.cpp - the named pipelines of dlc-opt and hybridize() ---------===//
#include "dlc/Conversion/Pipelines.h"

#include "dlc/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::dlc {

void buildHostKernelsToLLVM(OpPassManager &pm) {
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertMathToLibmPass()); // tanh, erf, exp, ... as libm calls
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createDLCPackKernelEntries());
}

void buildDLCCompilerPipeline(OpPassManager &pm, PipelineTarget target,
                              const CompilerPipelineOptions &options) {
  buildDLCPipeline(pm, target, options.fuse, options.blockedLayouts);
  if (!options.generateKernels)
    return;
  pm.addPass(createDLCOutlineKernels());
  // Nested modules of the program's module: @dlc_host_kernels is the only one.
  buildHostKernelsToLLVM(pm.nest<ModuleOp>());
}

namespace {
// `--dlc-pipeline=cpu` reads as the pipeline `dlc-pipeline` with the flag option `cpu`.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<bool> cpu{*this, "cpu", llvm::cl::desc("the CPU pipeline")};
  Option<bool> cuda{*this, "cuda", llvm::cl::desc("the CUDA pipeline")};
  Option<bool> blockedLayouts{*this, "blocked-layouts",
                              llvm::cl::desc("assign oneDNN's blocked layouts (default on)"),
                              llvm::cl::init(true)};
  Option<bool> generateKernels{
      *this, "generate-kernels",
      llvm::cl::desc("generate the host element-wise regions' code (default on)"),
      llvm::cl::init(true)};
};
} // namespace

void registerDLCPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "dlc-pipeline",
      "hybridize()'s pipeline: --dlc-pipeline=cpu or --dlc-pipeline=cuda (canonicalize, "
      "dlc-place-devices, dlc-fuse, dlc-assign-layouts unless blocked-layouts=false, "
      "dlc-order-steps, dlc-plan-memory, then unless generate-kernels=false "
      "dlc-outline-kernels and @dlc_host_kernels lowered to the LLVM dialect)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        CompilerPipelineOptions compiler;
        compiler.blockedLayouts = options.blockedLayouts;
        compiler.generateKernels = options.generateKernels;
        buildDLCCompilerPipeline(
            pm, options.cuda ? PipelineTarget::cuda : PipelineTarget::cpu, compiler);
      });
}

} // namespace mlir::dlc
