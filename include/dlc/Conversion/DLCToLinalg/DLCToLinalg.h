//===- DLCToLinalg.h - element-wise regions as linalg -------------------------===//
#ifndef DLC_CONVERSION_DLCTOLINALG_DLCTOLINALG_H
#define DLC_CONVERSION_DLCTOLINALG_DLCTOLINALG_H

#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"


namespace mlir::dlc {

/// The body of an element-wise `region` on one element: each op's scalar body, from
/// `scalars` (one per region argument); returns the yielded scalars. The first op that
/// has no scalar body for its element type is left in `unsupported` (the values are then
/// placeholders).
SmallVector<Value> buildElementwiseBody(OpBuilder &builder, Block &region, ValueRange scalars,
                                        Operation *&unsupported);

} // namespace mlir::dlc

#endif // DLC_CONVERSION_DLCTOLINALG_DLCTOLINALG_H
