//===- SerializeGpuKernels.cpp - the GPU kernels' PTX, through the kernel cache ---===//
//
// Serializing @dlc_gpu_kernels (NVVM to LLVM IR, libdevice linked, LLVM's NVPTX back
// end) is what a GPU compilation spends most on, and its PTX depends only on the module,
// its target and the toolchain. So this pass looks the module up in the kernel cache
// first (the same cache, format and checks as the host object code): on a hit it puts
// the cached PTX in a gpu.binary itself; on a miss upstream's serialization
// (gpu::transformGpuModulesToBinaries) makes it, and the PTX is stored.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/KernelCache/KernelCache.h"
#include "dlc/Conversion/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCSERIALIZEGPUKERNELS
#include "dlc/Conversion/Passes.h.inc"

namespace {

struct DLCSerializeGpuKernelsPass
    : impl::DLCSerializeGpuKernelsBase<DLCSerializeGpuKernelsPass> {
  using DLCSerializeGpuKernelsBase::DLCSerializeGpuKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    StringAttr name = StringAttr::get(context, DLCDialect::getGpuKernelsModuleName());
    auto kernels = SymbolTable::lookupNearestSymbolFrom<gpu::GPUModuleOp>(module, name);
    if (!kernels)
      return;
    ArrayAttr targets = kernels.getTargetsAttr();
    if (!targets || targets.size() != 1) {
      kernels.emitError("dlc-serialize-gpu-kernels: one target (nvvm-attach-target) expected");
      return signalPassFailure();
    }
    // The module's text holds its target, chip and optimisation level.
    std::string key =
        ::dlc::conversion::kernelCacheKey(kernels, "PTX; toolkit " + toolkit);
    const std::string &directory = cacheDir;
    auto &counters = ::dlc::conversion::detail::counters();
    if (!directory.empty())
      if (std::optional<std::vector<char>> ptx =
              ::dlc::conversion::detail::readCachedObject(directory, key)) {
        OpBuilder builder(kernels);
        auto object = gpu::ObjectAttr::get(
            context, targets[0], gpu::CompilationTarget::Assembly,
            StringAttr::get(context, StringRef(ptx->data(), ptx->size())), nullptr);
        builder.create<gpu::BinaryOp>(kernels.getLoc(), name, Attribute(),
                                      builder.getArrayAttr({object}));
        kernels.erase();
        ++counters.ptxLoaded;
        return;
      }
    gpu::TargetOptions options(toolkit, {}, {}, gpu::CompilationTarget::Assembly);
    if (failed(gpu::transformGpuModulesToBinaries(module, nullptr, options)))
      return signalPassFailure();
    ++counters.ptxCompiled;
    auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(module, name);
    auto object = binary && binary.getObjects().size() == 1
                      ? dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0])
                      : gpu::ObjectAttr();
    if (!object || directory.empty())
      return;
    StringRef ptx = object.getObject().getValue();
    // A cache that cannot be written costs speed, not correctness: go on without it.
    (void)::dlc::conversion::detail::writeCachedObject(directory, key,
                                                       std::vector<char>(ptx.begin(), ptx.end()));
  }
};

} // namespace
} // namespace mlir::dlc
