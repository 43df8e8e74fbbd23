//===- CompilerInternal.h - the compiler's steps (internal) ------------------===//
#ifndef DLC_LIB_COMPILER_COMPILERINTERNAL_H
#define DLC_LIB_COMPILER_COMPILERINTERNAL_H

#include "dlc/Compiler/Graph.h"
#include "dlc/Dialect/DLC/Transforms/Passes.h"
#include "dlc/Runtime/Program/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>
#include <vector>

namespace dlc::compiler {

/// One `func.func` per graph, named after it, in a new module. Arguments carry
/// `dlc.name` and `dlc.device`, ops `dlc.device` and a location naming the traced op;
/// updated state is returned after the results, marked `dlc.updates = <argument>`.
/// The module's `dlc.targets` list what this build's kernel table runs, and, for a GPU
/// whose backend launches generated kernels, element-wise regions whole when
/// `generatedKernels`. On failure returns null and sets `error`.
mlir::OwningOpRef<mlir::ModuleOp> emitModule(mlir::MLIRContext &context,
                                             const std::vector<const Graph *> &graphs,
                                             std::string &error, bool generatedKernels);

/// The module attribute `dlc.targets` for this build (see emitModule).
mlir::ArrayAttr describeTargets(mlir::MLIRContext &context, bool generatedKernels);

/// dlc-choose-conv-algorithms's timer: the runtime's host kernels on random inputs,
/// each shape once per process.
mlir::dlc::ConvAlgorithmTimer hostConvTimer();

} // namespace dlc::compiler

#endif // DLC_LIB_COMPILER_COMPILERINTERNAL_H
