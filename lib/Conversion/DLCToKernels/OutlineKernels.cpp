//===- OutlineKernels.cpp - host element-wise regions as kernel functions ------===//
//
// The regions dlc-plan-memory left to run as one step get their code generated, in a
// module of their own so that the function stays readable as dlc ops and the kernels
// are compiled together, once per program.
//
// Host devices: a function of the nested module @dlc_host_kernels over 1-d f32 memrefs
// (lowered to the LLVM dialect by the rest of the pipeline). The runtime splits the
// elements into chunks, so the function sees a chunk: a broadcast single element is
// read at index 0, everything else at the loop index.
//
// GPUs: a kernel of `gpu.module @dlc_gpu_kernels` (turned into PTX by the rest of the
// pipeline), one thread per element: bare pointers to the inputs and outputs, then the
// element count; thread `blockIdx.x * blockDim.x + threadIdx.x` computes its element
// if it is below the count.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToLinalg/DLCToLinalg.h"
#include "dlc/Conversion/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCOUTLINEKERNELS
#include "dlc/Conversion/Passes.h.inc"

namespace {

enum class KernelTarget { none, host, gpu };

/// Where `fused` runs as one generated step: an element-wise region that the plan did
/// not split into its ops, on a host device or on a GPU whose target runs regions.
KernelTarget generatedTarget(FusedOp fused, DeviceAttr fallback) {
  if (fused->hasAttr(DLCDialect::getOpByOpAttrName()))
    return KernelTarget::none;
  DeviceKind kind = stepDevice(fused, fallback).getKind();
  auto runs = [&](StringRef op) { return targetRuns(fused, op, kind); };
  if (fusedExecution(fused, kind, runs) != FusedExecution::elementwise)
    return KernelTarget::none;
  if (isHostKind(kind))
    return KernelTarget::host;
  return kind == DeviceKind::gpu ? KernelTarget::gpu : KernelTarget::none;
}

LogicalResult reportUnsupported(Operation *unsupported) {
  return unsupported->emitError()
         << "dlc-outline-kernels: " << unsupported->getName() << " on "
         << unsupported->getResult(0).getType() << " has no scalar body to generate";
}

void markKernel(FusedOp fused, StringAttr module, StringAttr function) {
  fused->setAttr(DLCDialect::getKernelAttrName(),
                 SymbolRefAttr::get(module, {FlatSymbolRefAttr::get(function)}));
}

/// Kernels by body: regions that compute the same thing (the same ops on the same
/// operand structure and broadcast pattern; a training step has one optimizer update
/// per parameter) share one kernel, so each is compiled once.
class SharedKernels {
public:
  /// The name of the kernel with `function`'s body: an earlier one (and `function` is
  /// erased), else `function`'s own.
  StringAttr share(Operation *function) {
    StringAttr name = SymbolTable::getSymbolName(function);
    std::string body;
    llvm::raw_string_ostream os(body);
    SymbolTable::setSymbolName(function, "kernel"); // the name does not make it differ
    function->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    SymbolTable::setSymbolName(function, name);
    auto [entry, added] = byBody_.try_emplace(os.str(), name);
    if (!added)
      function->erase();
    return entry->second;
  }

private:
  llvm::StringMap<StringAttr> byBody_;
};

/// `fused` as `func.func @name(inputs..., outputs...)` on memref<?xf32> at the end of
/// `kernels`; failure (reported on the op without a scalar body) otherwise.
LogicalResult outline(FusedOp fused, ModuleOp kernels, StringRef name, SharedKernels &shared) {
  MLIRContext *context = fused.getContext();
  Location loc = fused.getLoc();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(kernels.getBody());

  Type memref = MemRefType::get({ShapedType::kDynamic}, builder.getF32Type());
  size_t inputs = fused.getInputs().size(), outputs = fused->getNumResults();
  SmallVector<Type> arguments(inputs + outputs, memref);
  auto function =
      builder.create<func::FuncOp>(loc, name, builder.getFunctionType(arguments, {}));
  function->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), builder.getUnitAttr());
  Block *entry = function.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  SmallVector<bool> scalar = fusedScalarValues(fused); // the runtime's own split
  AffineMap point = builder.getDimIdentityMap();
  AffineMap first = AffineMap::get(1, 0, builder.getAffineConstantExpr(0));
  SmallVector<AffineMap> maps;
  for (size_t k = 0; k < inputs; ++k)
    maps.push_back(scalar[k] ? first : point);
  maps.append(outputs, point);
  Block &region = fused.getBody().front();
  Operation *unsupported = nullptr;
  builder.create<linalg::GenericOp>(
      loc, TypeRange{}, entry->getArguments().take_front(inputs),
      entry->getArguments().drop_front(inputs), maps,
      SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
      [&](OpBuilder &b, Location bodyLoc, ValueRange elements) {
        b.create<linalg::YieldOp>(bodyLoc,
                                  buildElementwiseBody(b, region, elements, unsupported));
      });
  builder.create<func::ReturnOp>(loc);
  if (unsupported) {
    function->erase();
    return reportUnsupported(unsupported);
  }
  markKernel(fused, kernels.getSymNameAttr(), shared.share(function));
  return success();
}

/// `fused` as `gpu.func @name(inputs..., outputs..., count) kernel` at the end of
/// `kernels`: one thread per element.
LogicalResult outlineGpu(FusedOp fused, gpu::GPUModuleOp kernels, StringRef name,
                         SharedKernels &shared) {
  MLIRContext *context = fused.getContext();
  Location loc = fused.getLoc();
  OpBuilder builder(context);
  builder.setInsertionPoint(kernels.getBody()->getTerminator());

  Type pointer = LLVM::LLVMPointerType::get(context), i64 = builder.getI64Type();
  Type f32 = builder.getF32Type();
  size_t inputs = fused.getInputs().size(), outputs = fused->getNumResults();
  SmallVector<Type> arguments(inputs + outputs, pointer);
  arguments.push_back(i64);
  auto function =
      builder.create<gpu::GPUFuncOp>(loc, name, builder.getFunctionType(arguments, {}));
  function->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  Block &entry = function.getBody().front();
  builder.setInsertionPointToStart(&entry);
  Value block = builder.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  Value width = builder.create<gpu::BlockDimOp>(loc, gpu::Dimension::x);
  Value thread = builder.create<gpu::ThreadIdOp>(loc, gpu::Dimension::x);
  Value index = builder.create<arith::AddIOp>(
      loc, builder.create<arith::MulIOp>(loc, block, width), thread);
  Value element = builder.create<arith::IndexCastOp>(loc, i64, index);
  Value inside = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, element,
                                               entry.getArguments().back());
  auto guard = builder.create<scf::IfOp>(loc, inside, /*withElseRegion=*/false);
  builder.setInsertionPointToStart(&guard.getThenRegion().front());

  SmallVector<bool> scalar = fusedScalarValues(fused);
  auto at = [&](Value base, bool single) -> Value {
    return single ? base
                  : builder.create<LLVM::GEPOp>(loc, pointer, f32, base, ValueRange{element});
  };
  SmallVector<Value> elements;
  for (size_t k = 0; k < inputs; ++k)
    elements.push_back(builder.create<LLVM::LoadOp>(loc, f32, at(entry.getArgument(k), scalar[k])));
  Operation *unsupported = nullptr;
  SmallVector<Value> results =
      buildElementwiseBody(builder, fused.getBody().front(), elements, unsupported);
  if (unsupported) {
    function->erase();
    return reportUnsupported(unsupported);
  }
  for (size_t k = 0; k < outputs; ++k)
    builder.create<LLVM::StoreOp>(loc, results[k], at(entry.getArgument(inputs + k), false));
  builder.setInsertionPointToEnd(&entry);
  builder.create<gpu::ReturnOp>(loc);
  markKernel(fused, kernels.getSymNameAttr(), shared.share(function));
  return success();
}

/// The GPU regions in `gpu.module @dlc_gpu_kernels`; the module becomes a GPU
/// container.
LogicalResult outlineGpuRegions(ModuleOp module,
                                MutableArrayRef<std::pair<FusedOp, std::string>> regions) {
  StringRef name = DLCDialect::getGpuKernelsModuleName();
  auto kernels = SymbolTable::lookupNearestSymbolFrom<gpu::GPUModuleOp>(
      module, StringAttr::get(module.getContext(), name));
  if (!kernels) {
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    kernels = builder.create<gpu::GPUModuleOp>(module.getLoc(), name);
  }
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
  SymbolTable symbols(kernels);
  SharedKernels shared;
  for (auto &[fused, function] : regions) {
    if (symbols.lookup(function))
      return fused.emitError() << "dlc-outline-kernels: @" << name << " already has a @"
                               << function;
    if (failed(outlineGpu(fused, kernels, function, shared)))
      return failure();
  }
  return success();
}

struct DLCOutlineKernelsPass : impl::DLCOutlineKernelsBase<DLCOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<FusedOp, std::string>> regions, gpuRegions;
    for (auto function : module.getOps<func::FuncOp>()) {
      DeviceAttr fallback = functionDevice(function);
      size_t n = 0;
      function.walk([&](FusedOp fused) {
        KernelTarget target = generatedTarget(fused, fallback);
        if (target == KernelTarget::none)
          return;
        std::string name = (function.getName() + "_region_" + Twine(n++)).str();
        (target == KernelTarget::host ? regions : gpuRegions).push_back({fused, name});
      });
    }
    if (!gpuRegions.empty() && failed(outlineGpuRegions(module, gpuRegions)))
      return signalPassFailure();
    if (regions.empty())
      return;
    StringRef name = DLCDialect::getHostKernelsModuleName();
    auto kernels = SymbolTable::lookupNearestSymbolFrom<ModuleOp>(
        module, StringAttr::get(module.getContext(), name));
    if (!kernels) {
      OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
      kernels = builder.create<ModuleOp>(module.getLoc(), name);
    }
    SymbolTable symbols(kernels);
    SharedKernels shared;
    for (auto &[fused, function] : regions) {
      if (symbols.lookup(function)) {
        fused.emitError() << "dlc-outline-kernels: @" << name << " already has a @"
                          << function;
        return signalPassFailure();
      }
      if (failed(outline(fused, kernels, function, shared)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::dlc
