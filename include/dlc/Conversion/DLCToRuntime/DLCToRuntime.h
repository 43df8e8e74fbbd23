//===- DLCToRuntime.h - planned dlc functions as runtime programs --------------===//
//
// The last step of compilation: a `func.func` that has been through the pipeline (its
// devices placed, its layouts assigned, its steps ordered and its memory planned by
// dlc-plan-memory) becomes the runtime's executable form, a Program. The lowering
// decides nothing: each op becomes the step that calls its kernel, and each value's
// place is read from `dlc.storage` and `dlc.arenas`. A function without a plan is an
// error naming the pass to run.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H
#define DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Program/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "dlc/Core/CompileOptions.h"
#include <memory>

#include <string>

namespace dlc::conversion {

/// The program of a planned `function`: one step per op on its device (views are
/// aliases, op-by-op regions their body's steps, `dlc.copy` a transfer to its target,
/// `dlc.all_reduce` a collective over its devices, a region with a `dlc.kernel` its
/// generated code, loaded from the kernel module beside the function), in the IR's
/// order, and a copy into the result buffer for each returned value the plan left
/// elsewhere. A function on one device is the one-device case: the same steps, run as
/// one task. Of `options`, the kernel cache directory (generated code is read from and
/// kept there) and whether GPU runs may replay as CUDA graphs apply here. On failure
/// returns null and sets `error`; never throws.
std::shared_ptr<Program> lowerToProgram(mlir::func::FuncOp function, const CompileOptions &options,
                                        std::string &error);

} // namespace dlc::conversion

#endif // DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H
