//===- HostBuildGpuKernels.cpp - GPU kernels compiled for the CPU, for emulation ---===//
//
// The emulated GPUs (the tests' CUDA emulator) cannot run PTX, but they can run the
// same kernel compiled for the host: every kernel of @dlc_gpu_kernels is cloned into a
// function of the builtin module @dlc_gpu_kernels_on_host, its body inside two loops,
// blocks outside and threads inside, with the thread's coordinates the loops' indices.
// That module is then lowered and loaded like the host kernels. What the clone cannot
// show is what the emulator cannot either: races between threads, and the GPU's own
// math functions (libdevice there, libm here).
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCHOSTBUILDGPUKERNELS
#include "dlc/Conversion/Passes.h.inc"

namespace {

/// `kernel` as `func.func @<same name>(params..., grid: index, block: index)` at the
/// end of `host`; failure for a kernel using what the loops do not provide.
LogicalResult cloneForHost(gpu::GPUFuncOp kernel, ModuleOp host) {
  Location loc = kernel.getLoc();
  OpBuilder builder = OpBuilder::atBlockEnd(host.getBody());
  SmallVector<Type> parameters(kernel.getArgumentTypes());
  parameters.append({builder.getIndexType(), builder.getIndexType()});
  auto function = builder.create<func::FuncOp>(loc, kernel.getName(),
                                               builder.getFunctionType(parameters, {}));
  function->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), builder.getUnitAttr());
  Block *entry = function.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  Value grid = entry->getArgument(parameters.size() - 2);
  Value width = entry->getArgument(parameters.size() - 1);
  Value zero = builder.create<arith::ConstantIndexOp>(loc, 0);
  Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
  auto blocks = builder.create<scf::ForOp>(loc, zero, grid, one);
  builder.setInsertionPointToStart(blocks.getBody());
  auto threads = builder.create<scf::ForOp>(loc, zero, width, one);
  builder.setInsertionPointToStart(threads.getBody());

  if (!kernel.getBody().hasOneBlock())
    return kernel.emitError("dlc-host-build-gpu-kernels: a kernel of one block is expected");
  IRMapping mapping;
  for (auto [from, to] : llvm::zip(kernel.getArguments(), entry->getArguments()))
    mapping.map(from, to);
  for (Operation &op : kernel.getBody().front()) {
    if (isa<gpu::ReturnOp>(op))
      continue;
    auto coordinate = [&](gpu::Dimension dimension, Value value) -> LogicalResult {
      if (dimension != gpu::Dimension::x)
        return op.emitError("dlc-host-build-gpu-kernels: only the x dimension is emulated");
      mapping.map(op.getResult(0), value);
      return success();
    };
    LogicalResult mapped = success();
    if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      mapped = coordinate(id.getDimension(), blocks.getInductionVar());
    else if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
      mapped = coordinate(id.getDimension(), threads.getInductionVar());
    else if (auto size = dyn_cast<gpu::BlockDimOp>(op))
      mapped = coordinate(size.getDimension(), width);
    else if (auto size = dyn_cast<gpu::GridDimOp>(op))
      mapped = coordinate(size.getDimension(), grid);
    else if (op.getDialect() && isa<gpu::GPUDialect>(op.getDialect()))
      return op.emitError("dlc-host-build-gpu-kernels: ")
             << op.getName() << " has no host equivalent";
    else
      builder.clone(op, mapping);
    if (failed(mapped))
      return failure();
  }
  builder.setInsertionPointToEnd(entry);
  builder.create<func::ReturnOp>(loc);
  return success();
}

struct DLCHostBuildGpuKernelsPass
    : impl::DLCHostBuildGpuKernelsBase<DLCHostBuildGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    auto kernels = SymbolTable::lookupNearestSymbolFrom<gpu::GPUModuleOp>(
        module, StringAttr::get(context, DLCDialect::getGpuKernelsModuleName()));
    if (!kernels)
      return;
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto host = builder.create<ModuleOp>(module.getLoc(),
                                         DLCDialect::getGpuKernelsOnHostModuleName());
    for (auto kernel : kernels.getOps<gpu::GPUFuncOp>())
      if (kernel.isKernel() && failed(cloneForHost(kernel, host)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dlc
