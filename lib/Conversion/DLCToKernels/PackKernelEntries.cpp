//===- PackKernelEntries.cpp - one calling convention for every kernel ---------===//
//
// A lowered kernel's C interface takes one pointer per memref argument (and scalars as
// they are), so its signature depends on the region's arity. The packed entry takes
// them all through one array (entry k points at argument k), which the runtime can call
// without a case per arity and without MLIR: `void entry(void **arguments)`.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCPACKKERNELENTRIES
#include "dlc/Conversion/Passes.h.inc"

namespace {

constexpr StringLiteral cInterfacePrefix = "_mlir_ciface_";

/// `@<name>_packed(%arguments)` calling `target`: argument k is loaded, with its type,
/// from where `arguments[k]` points.
LogicalResult addPackedEntry(LLVM::LLVMFuncOp target, OpBuilder &builder) {
  Location loc = target.getLoc();
  LLVM::LLVMFunctionType type = target.getFunctionType();
  auto pointer = LLVM::LLVMPointerType::get(builder.getContext());
  for (Type parameter : type.getParams())
    if (!isa<LLVM::LLVMPointerType, IntegerType, FloatType>(parameter))
      return target.emitError() << "dlc-pack-kernel-entries: parameter of type " << parameter
                                << " is not a pointer or a scalar";
  if (!isa<LLVM::LLVMVoidType>(type.getReturnType()))
    return target.emitError() << "dlc-pack-kernel-entries: a kernel returns nothing, got "
                              << type.getReturnType();
  std::string name =
      (target.getName().drop_front(cInterfacePrefix.size()) + "_packed").str();
  auto entryType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(builder.getContext()),
                                               {pointer});
  auto entry = builder.create<LLVM::LLVMFuncOp>(loc, name, entryType);
  Block *body = entry.addEntryBlock(builder);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(body);
  SmallVector<Value> arguments;
  for (unsigned k = 0; k < type.getNumParams(); ++k) {
    Value slot = builder.create<LLVM::GEPOp>(loc, pointer, pointer, body->getArgument(0),
                                             ArrayRef<LLVM::GEPArg>{int32_t(k)});
    Value argument = builder.create<LLVM::LoadOp>(loc, pointer, slot);
    arguments.push_back(builder.create<LLVM::LoadOp>(loc, type.getParamType(k), argument));
  }
  builder.create<LLVM::CallOp>(loc, target, arguments);
  builder.create<LLVM::ReturnOp>(loc, ValueRange{});
  return success();
}

struct DLCPackKernelEntriesPass : impl::DLCPackKernelEntriesBase<DLCPackKernelEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::LLVMFuncOp> interfaces;
    for (auto function : module.getOps<LLVM::LLVMFuncOp>())
      if (function.getName().starts_with(cInterfacePrefix) && !function.isExternal())
        interfaces.push_back(function);
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    for (LLVM::LLVMFuncOp function : interfaces)
      if (failed(addPackedEntry(function, builder)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dlc
