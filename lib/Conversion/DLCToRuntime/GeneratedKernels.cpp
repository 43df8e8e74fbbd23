//===- GeneratedKernels.cpp - a fused element-wise region as native CPU code ----===//
//
// A program's regions become one module of their own, a function each over 1-d memrefs
// (the region's inputs, then its outputs; a single-element input read at index 0) whose
// body is a linalg.generic built from the ops' scalar bodies: one compilation and one
// loaded object per program, not per region. Upstream passes lower it to loops
// and to the LLVM dialect (math functions without an LLVM intrinsic become libm calls,
// which the loaded code resolves in this process), and MLIR's ExecutionEngine
// translates, optimises and loads it. The runtime calls it on chunks of the elements,
// spread over the device's threads as the interpreted region's chunks are.
//
//===----------------------------------------------------------------------===//
#include "LoweringSupport.h"

#include "dlc/Conversion/DLCToLinalg/DLCToLinalg.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <mutex>

namespace dlc::conversion::detail {

using namespace mlir;
using namespace mlir::dlc;

namespace {

std::string entryName(size_t region) { return "dlc_region_" + std::to_string(region); }

/// `fused` as `func.func @<name>(inputs..., outputs...)` on memref<?xf32>, at the end of
/// `module`; false, with `error`, when an op has no scalar body.
bool addKernelFunction(ModuleOp module, FusedOp fused, StringRef name, std::string &error) {
  MLIRContext *context = fused.getContext();
  Location loc = fused.getLoc();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());

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
    llvm::raw_string_ostream os(error);
    os << unsupported->getName() << " at " << unsupported->getLoc()
       << " has no scalar body for code generation";
    return false;
  }
  return true;
}

void addLoweringToLLVM(PassManager &pm) {
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertMathToLibmPass()); // tanh, erf, exp, ... as libm calls
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

} // namespace

std::vector<std::shared_ptr<const GeneratedKernel>>
generateElementwiseKernels(ArrayRef<FusedOp> regions, std::string &error) {
  if (regions.empty())
    return {};
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  FusedOp first = regions.front();
  MLIRContext *context = first.getContext();
  context->loadDialect<arith::ArithDialect, cf::ControlFlowDialect, func::FuncDialect,
                       LLVM::LLVMDialect, linalg::LinalgDialect, math::MathDialect,
                       memref::MemRefDialect, scf::SCFDialect>();
  // Once per context: MLIR 19 appends a registry's extensions again on every call.
  if (!context->getLoadedDialect<LLVM::LLVMDialect>()
           ->getRegisteredInterface<LLVMTranslationDialectInterface>()) {
    registerBuiltinDialectTranslation(*context);
    registerLLVMDialectTranslation(*context);
  }

  std::string diagnostics;
  ScopedDiagnosticHandler collect(context, [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream(diagnostics) << diagnostic << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = ModuleOp::create(first.getLoc());
  for (size_t k = 0; k < regions.size(); ++k)
    if (!addKernelFunction(*module, regions[k], entryName(k), error))
      return {};
  PassManager pm(context);
  addLoweringToLLVM(pm);
  if (failed(pm.run(*module))) {
    error = "generating the kernels of the fused regions: " + diagnostics;
    return {};
  }
  // The options hold a function_ref: the transformer itself must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0, nullptr);
  ExecutionEngineOptions options;
  options.transformer = optimize;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(*module, options);
  if (!engine) {
    error = "loading the kernels of the fused regions: " + llvm::toString(engine.takeError());
    return {};
  }
  std::shared_ptr<const ExecutionEngine> owner(std::move(*engine));
  std::vector<std::shared_ptr<const GeneratedKernel>> kernels;
  for (size_t k = 0; k < regions.size(); ++k) {
    llvm::Expected<void (*)(void **)> entry =
        owner->lookupPacked("_mlir_ciface_" + entryName(k));
    if (!entry) {
      error = "a generated kernel has no entry: " + llvm::toString(entry.takeError());
      return {};
    }
    auto kernel = std::make_shared<GeneratedKernel>();
    kernel->entry = *entry;
    kernel->owner = owner;
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

} // namespace dlc::conversion::detail
