//===- OutlineKernels.cpp - host element-wise regions as kernel functions ------===//
//
// The regions dlc-plan-memory left to run as one step on a host device get their code
// generated: each becomes a function of the nested module @dlc_host_kernels, over 1-d
// f32 memrefs, so that what is compiled is a module of its own (lowered to the LLVM
// dialect by the rest of the pipeline, compiled once per program) and the function
// stays readable as dlc ops. The runtime splits the elements into chunks, so the
// function sees a chunk: a broadcast single element is read at index 0, everything
// else at the loop index.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToLinalg/DLCToLinalg.h"
#include "dlc/Conversion/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCOUTLINEKERNELS
#include "dlc/Conversion/Passes.h.inc"

namespace {

/// Whether `fused` runs as one generated step: an element-wise region on a host device
/// that the plan did not split into its ops.
bool runsAsGeneratedCode(FusedOp fused, DeviceAttr fallback) {
  if (fused->hasAttr(DLCDialect::getOpByOpAttrName()))
    return false;
  DeviceKind kind = stepDevice(fused, fallback).getKind();
  auto runs = [&](StringRef op) { return targetRuns(fused, op, kind); };
  return isHostKind(kind) && fusedExecution(fused, kind, runs) == FusedExecution::elementwise;
}

/// `fused` as `func.func @name(inputs..., outputs...)` on memref<?xf32> at the end of
/// `kernels`; failure (reported on the op without a scalar body) otherwise.
LogicalResult outline(FusedOp fused, ModuleOp kernels, StringRef name) {
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
    return unsupported->emitError()
           << "dlc-outline-kernels: " << unsupported->getName() << " on "
           << unsupported->getResult(0).getType() << " has no scalar body to generate";
  }
  fused->setAttr(DLCDialect::getKernelAttrName(),
                 SymbolRefAttr::get(kernels.getSymNameAttr(),
                                    {FlatSymbolRefAttr::get(function.getSymNameAttr())}));
  return success();
}

struct DLCOutlineKernelsPass : impl::DLCOutlineKernelsBase<DLCOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<FusedOp, std::string>> regions;
    for (auto function : module.getOps<func::FuncOp>()) {
      DeviceAttr fallback = functionDevice(function);
      size_t n = 0;
      function.walk([&](FusedOp fused) {
        if (runsAsGeneratedCode(fused, fallback))
          regions.push_back({fused, (function.getName() + "_region_" + Twine(n++)).str()});
      });
    }
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
    for (auto &[fused, function] : regions) {
      if (symbols.lookup(function)) {
        fused.emitError() << "dlc-outline-kernels: @" << name << " already has a @"
                          << function;
        return signalPassFailure();
      }
      if (failed(outline(fused, kernels, function)))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mlir::dlc
