//===- Outline.h - ops into a dlc.fused region, for the fusion passes ---------===//
#ifndef DLC_LIB_DIALECT_DLC_TRANSFORMS_OUTLINE_H
#define DLC_LIB_DIALECT_DLC_TRANSFORMS_OUTLINE_H

#include "dlc/Dialect/DLC/IR/DLCOps.h"

namespace mlir::dlc {

/// Replaces `ops` (in program order, all in one block) by a dlc.fused of `kind` placed
/// where the last of them was, on the first one's device. Its operands are the values
/// the ops read from outside, its results those read outside (in op order).
FusedOp outline(ArrayRef<Operation *> ops, StringRef kind);

/// The same, yielding `outputs` (results of `ops`, each used outside them or not) in
/// that order: a region whose kernel writes results in a fixed order.
FusedOp outline(ArrayRef<Operation *> ops, StringRef kind, ArrayRef<Value> outputs);

} // namespace mlir::dlc

#endif // DLC_LIB_DIALECT_DLC_TRANSFORMS_OUTLINE_H
