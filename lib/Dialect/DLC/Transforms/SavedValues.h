//===- SavedValues.h - values a forward returns for its backward --------------===//
//
// A hybridized block's backward reads forward values as arguments marked
// `dlc.saved_from = [@forward, N]`: result N of the forward, marked `dlc.saved`. Passes
// that change what a gradient reads (dlc-keep-pool-indices, dlc-fuse-norm-activation)
// find a saved argument's forward value and save another one through these.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_DIALECT_DLC_TRANSFORMS_SAVEDVALUES_H
#define DLC_LIB_DIALECT_DLC_TRANSFORMS_SAVEDVALUES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>

namespace mlir::dlc {

/// Where a saved argument comes from: `producer`'s result `result`, `value` in it.
struct SavedSource {
  func::FuncOp producer;
  unsigned result;
  Value value;
};

/// The forward value `argument` of `function` is saved from; none where it is no saved
/// argument or its producer is not a one-block function of `module` returning it.
std::optional<SavedSource> savedSource(ModuleOp module, func::FuncOp function,
                                       BlockArgument argument);

/// The number of `producer`'s result that is `value`, added (marked `dlc.saved`) if it is
/// none yet: after the other results, before those that write arguments back
/// (`dlc.updates`), which the program does not count as results.
unsigned returnedResult(func::FuncOp producer, Value value);

/// `function`'s argument saved from `producer`'s result `result`, added as a new last
/// argument (on `like`'s device, named "saved.N") if there is none yet.
Value savedArgument(func::FuncOp function, BlockArgument like, func::FuncOp producer,
                    unsigned result);

} // namespace mlir::dlc

#endif // DLC_LIB_DIALECT_DLC_TRANSFORMS_SAVEDVALUES_H
