//===- Pipelines.h - hybridize()'s whole pipeline, code generation included ----===//
#ifndef DLC_CONVERSION_PIPELINES_H
#define DLC_CONVERSION_PIPELINES_H

#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::dlc {

/// The dialect pipeline's options (fuse, poolIndices, blockedLayout, prepareParameters,
/// convAlgorithms and its timer), then code generation's.
struct CompilerPipelineOptions : DLCPipelineOptions {
  /// dlc-outline-kernels and the lowering of @dlc_host_kernels to the LLVM dialect
  /// (off: element-wise regions run through their interpreted sub-kernels).
  bool generateKernels = true;
  /// The GPU architecture the PTX of @dlc_gpu_kernels is for (the cuda pipeline).
  std::string gpuChip = "sm_90";
  /// The CUDA toolkit whose libdevice the PTX links (empty: MLIR's own search).
  /// The compiler passes CompileOptions::cuda_toolkit; nothing here reads the
  /// environment.
  std::string cudaToolkit;
  /// The kernel cache directory dlc-serialize-gpu-kernels reads and writes ("": none).
  std::string cacheDir;
  /// dlc-host-build-gpu-kernels: the GPU kernels also built for the host, for GPUs that
  /// are emulated on the CPU.
  bool hostBuildGpuKernels = false;
};

/// The dialect's pipeline (buildDLCPipeline: canonicalize, place, fuse, lay out, order,
/// plan memory), then code generation: the host element-wise regions outlined into
/// @dlc_host_kernels, which upstream passes lower to loops and to the LLVM dialect
/// (math without an LLVM intrinsic as libm calls) and dlc-pack-kernel-entries gives
/// its runtime entries. On `cuda` the GPU regions' kernels (`gpu.module
/// @dlc_gpu_kernels`) are lowered to NVVM and become a `gpu.binary` holding PTX for
/// `gpuChip` (libdevice from the CUDA toolkit for the math functions). The function
/// stays in the dlc dialect: its ops are the steps the runtime program calls. The
/// context needs registerCodeGenerationInterfaces.
void buildDLCCompilerPipeline(OpPassManager &pm, PipelineTarget target,
                              const CompilerPipelineOptions &options = {});

/// The passes that take a kernel module (func.func on memrefs, linalg) to the LLVM
/// dialect with packed entries; `pm` runs on the kernel module itself.
void buildHostKernelsToLLVM(OpPassManager &pm);

/// The interfaces code generation needs beyond the dialects' own: translation of the
/// builtin, LLVM and NVVM dialects to LLVM IR, and the NVVM target's serialization.
void registerCodeGenerationInterfaces(DialectRegistry &registry);

/// Registers `--dlc-pipeline=cpu|cuda[,blocked-layouts=0][,blocked-layout=nChw8c]
/// [,prepare-parameters=0][,pool-indices=0][,generate-kernels=0][,cuda-toolkit=DIR][,cache-dir=DIR]`; `cuda-toolkit` defaults to
/// `cudaToolkit`, which the tool registering it chose (dlc-opt: the environment's, as
/// CompileOptions reads it); no cache unless one is named.
void registerDLCPipelines(const std::string &cudaToolkit);

} // namespace mlir::dlc

#endif // DLC_CONVERSION_PIPELINES_H
