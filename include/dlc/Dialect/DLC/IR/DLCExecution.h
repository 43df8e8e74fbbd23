//===- DLCExecution.h - how the runtime will execute dlc ops -----------------===//
//
// Facts about an op's execution that both the passes deciding a program's shape (layout
// assignment) and the lowering into runtime steps must agree on: the attributes its
// kernels read, and whether a dlc.fused region runs as one kernel step. Written once
// here so that a pass and the lowering cannot decide differently.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECT_DLC_IR_DLCEXECUTION_H
#define DLC_DIALECT_DLC_IR_DLCEXECUTION_H

#include "dlc/Core/Attrs.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace mlir::dlc {

/// The attributes `op`'s kernels read, by the eager names; discardable `dlc.*` ones and
/// devices left out. False, with `error` naming the op and the attribute, for an
/// attribute the runtime cannot read.
bool readKernelAttrs(Operation *op, ::dlc::Attrs &attrs, std::string &error);

/// How a dlc.fused region runs.
enum class FusedExecution {
  library_epilogue, ///< conv2d_relu / dense_relu: the library kernel with a ReLU epilogue
  elementwise,      ///< float32 element-wise chain, chunk by chunk (host devices)
  op_by_op,         ///< no fused kernel: the body's ops one by one
};

/// How `fused` runs on a device of `kind`, given which ops that kind has kernels for.
FusedExecution fusedExecution(FusedOp fused, DeviceKind kind,
                              llvm::function_ref<bool(StringRef op)> hasKernel);

/// For an elementwise region: elements per non-scalar value (its results' size).
int64_t fusedElements(FusedOp fused);

/// For an elementwise region: per block argument and per body result, in order (the
/// runtime's local values), whether it is a broadcast single element.
SmallVector<bool> fusedScalarValues(FusedOp fused);

/// The layout of `value` as dlc-assign-layouts recorded it: a dlc.to_layout's target,
/// its producer's `dlc.layouts` entry, or a function argument's `dlc.layout`; plain when
/// none says.
Layout valueLayout(Value value);

/// Whether the runtime runs `op` as views of its operand's storage, with no step:
/// reshapes, and splits along the first axis (whose parts are consecutive).
bool isViewOp(Operation *op);

/// Whether the module's `dlc.targets` says devices of `kind` run `op` (everything, when
/// it has none). Host memory kinds compute with the cpu's kernels.
bool targetRuns(Operation *scope, StringRef op, DeviceKind kind);

/// Whether devices of `kind` keep their tensors in host memory (cpu, pinned, shared).
bool isHostKind(DeviceKind kind);

} // namespace mlir::dlc

#endif // DLC_DIALECT_DLC_IR_DLCEXECUTION_H
