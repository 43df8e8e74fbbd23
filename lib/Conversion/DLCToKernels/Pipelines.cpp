//===- Pipelines.cpp - the named pipelines of dlc-opt and hybridize() ---------===//
#include "dlc/Conversion/Pipelines.h"

#include "dlc/Config.h"
#include "dlc/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

namespace mlir::dlc {

void buildHostKernelsToLLVM(OpPassManager &pm) {
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createDLCApproximateMath()); // vectorizable tanh, erf, exp, log, ...
  // LLVM intrinsics first (fma, floor, sqrt, ...: instructions, which vectorize), then
  // libm calls for the functions left without one.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createDLCPackKernelEntries());
}

void buildDLCCompilerPipeline(OpPassManager &pm, PipelineTarget target,
                              const CompilerPipelineOptions &options) {
  buildDLCPipeline(pm, target, options);
  if (!options.generateKernels)
    return;
  pm.addPass(createDLCOutlineKernels());
  if (options.hostBuildGpuKernels)
    pm.addPass(createDLCHostBuildGpuKernels());
  // Nested modules of the program's module: @dlc_host_kernels and, when the GPU kernels
  // are emulated, @dlc_gpu_kernels_on_host.
  buildHostKernelsToLLVM(pm.nest<ModuleOp>());
  if (target != PipelineTarget::cuda)
    return;
  GpuNVVMAttachTargetOptions nvvm;
  nvvm.moduleMatcher = DLCDialect::getGpuKernelsModuleName().str();
  nvvm.chip = options.gpuChip;
  nvvm.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(nvvm));
  OpPassManager &gpu = pm.nest<gpu::GPUModuleOp>();
  gpu.addPass(createConvertSCFToCFPass());
  gpu.addPass(createConvertGpuOpsToNVVMOps());
  gpu.addPass(createReconcileUnrealizedCastsPass());
  // PTX (the driver compiles it for the GPU it loads on), from the kernel cache when the
  // same module was serialized before.
  DLCSerializeGpuKernelsOptions serialize;
  serialize.toolkit = options.cudaToolkit;
  serialize.cacheDir = options.cacheDir;
  pm.addPass(createDLCSerializeGpuKernels(serialize));
}

void registerCodeGenerationInterfaces(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

namespace {
/// The toolkit `cuda-toolkit` defaults to: what the tool registering the pipeline passed.
std::string &defaultCudaToolkit() {
  static std::string toolkit = DLC_CUDA_TOOLKIT_ROOT;
  return toolkit;
}

// `--dlc-pipeline=cpu` reads as the pipeline `dlc-pipeline` with the flag option `cpu`.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<bool> cpu{*this, "cpu", llvm::cl::desc("the CPU pipeline")};
  Option<bool> cuda{*this, "cuda", llvm::cl::desc("the CUDA pipeline")};
  Option<bool> blockedLayouts{*this, "blocked-layouts",
                              llvm::cl::desc("assign oneDNN's blocked layouts (default on)"),
                              llvm::cl::init(true)};
  Option<std::string> blockedLayout{
      *this, "blocked-layout",
      llvm::cl::desc("the blocked layout: nChw16c (default, AVX-512) or nChw8c (AVX2)"),
      llvm::cl::init("nChw16c")};
  Option<bool> prepareParameters{
      *this, "prepare-parameters",
      llvm::cl::desc("dlc-hoist-parameter-work: parameter-only work kept between runs "
                     "(default on)"),
      llvm::cl::init(true)};
  Option<bool> poolIndices{
      *this, "pool-indices",
      llvm::cl::desc("dlc-keep-pool-indices: max pooling's gradient from the forward's "
                     "indices (default on)"),
      llvm::cl::init(true)};
  Option<bool> normActivation{
      *this, "norm-activation",
      llvm::cl::desc("dlc-fuse-norm-activation: a training batch norm and its ReLU or "
                     "ReLU6 as one step each way (default on)"),
      llvm::cl::init(true)};
  Option<bool> groupUpdates{
      *this, "group-updates",
      llvm::cl::desc("dlc-group-updates: a training step's small parameter updates of one "
                     "formula as one step (default on)"),
      llvm::cl::init(true)};
  Option<int64_t> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("dlc-remat's budget: the most bytes a device's values may hold at once "
                     "(0, the default: the pass left out)"),
      llvm::cl::init(0)};
  Option<std::string> convAlgorithms{
      *this, "conv-algorithms",
      llvm::cl::desc("dlc-choose-conv-algorithms: auto (default: Winograd for large enough "
                     "convolutions whose weights stay prepared or that have 32 output "
                     "tiles), timed (without the runtime's kernels, as in dlc-opt, "
                     "every convolution stays direct), winograd or direct"),
      llvm::cl::init("auto")};
  Option<bool> generateKernels{
      *this, "generate-kernels",
      llvm::cl::desc("generate the host element-wise regions' code (default on)"),
      llvm::cl::init(true)};
  Option<bool> hostBuildGpuKernels{
      *this, "host-build-gpu-kernels",
      llvm::cl::desc("also build the GPU kernels for the host (emulated GPUs)"),
      llvm::cl::init(false)};
  Option<std::string> gpuChip{*this, "gpu-chip",
                              llvm::cl::desc("the GPU architecture of the PTX (default sm_90)"),
                              llvm::cl::init("sm_90")};
  Option<std::string> cudaToolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("the CUDA toolkit whose libdevice the PTX links (default: the tool's, "
                     "from its environment)"),
      llvm::cl::init(defaultCudaToolkit())};
  Option<std::string> cacheDir{
      *this, "cache-dir", llvm::cl::desc("the kernel cache directory of the PTX (default: none)"),
      llvm::cl::init("")};
};
} // namespace

void registerDLCPipelines(const std::string &cudaToolkit) {
  defaultCudaToolkit() = cudaToolkit;
  PassPipelineRegistration<PipelineOptions>(
      "dlc-pipeline",
      "hybridize()'s pipeline: --dlc-pipeline=cpu or --dlc-pipeline=cuda (canonicalize, "
      "dlc-place-devices, dlc-fuse-norm-activation unless norm-activation=false, dlc-fuse, "
      "dlc-keep-pool-indices unless pool-indices=false, "
      "dlc-drop-unread-saved, dlc-fuse-conv-pool unless pool-indices=false, "
      "dlc-group-updates unless group-updates=false, "
      "dlc-assign-layouts unless blocked-layouts=false, "
      "dlc-hoist-parameter-work unless prepare-parameters=false, dlc-choose-conv-algorithms (conv-algorithms=auto|timed|winograd|direct), dlc-order-steps, dlc-remat with memory-budget=N, dlc-plan-memory, then unless generate-kernels=false "
      "dlc-outline-kernels, @dlc_host_kernels lowered to the LLVM dialect and, on cuda, "
      "@dlc_gpu_kernels to PTX for gpu-chip)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        CompilerPipelineOptions compiler;
        // dlc-assign-layouts reports a name that is no blocked layout.
        compiler.blockedLayout = options.blockedLayouts ? options.blockedLayout.getValue() : "";
        compiler.generateKernels = options.generateKernels;
        compiler.prepareParameters = options.prepareParameters;
        compiler.poolIndices = options.poolIndices;
        compiler.normActivation = options.normActivation;
        compiler.groupUpdates = options.groupUpdates;
        compiler.memoryBudget = options.memoryBudget;
        compiler.convAlgorithms = options.convAlgorithms;
        compiler.gpuChip = options.gpuChip;
        compiler.hostBuildGpuKernels = options.hostBuildGpuKernels;
        compiler.cudaToolkit = options.cudaToolkit;
        compiler.cacheDir = options.cacheDir;
        buildDLCCompilerPipeline(
            pm, options.cuda ? PipelineTarget::cuda : PipelineTarget::cpu, compiler);
      });
}

} // namespace mlir::dlc
