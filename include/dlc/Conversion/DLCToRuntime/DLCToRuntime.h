//===- DLCToRuntime.h - planned dlc functions as runtime programs --------------===//
//
// The last step of compilation: a `func.func` that has been through the pipeline (its
// devices placed, its layouts assigned and its memory planned by dlc-plan-memory) becomes
// the runtime's executable form. The lowering decides nothing: each op becomes the step
// that calls its kernel, and each value's place is read from `dlc.storage` and
// `dlc.arenas`. A function without a plan is an error naming the pass to run.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H
#define DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Program.h"
#include "dlc/Runtime/ShardedProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <string>

namespace dlc::conversion {

/// The program of a planned `function` whose ops all run on `device`: one step per op
/// (views are aliases, op-by-op regions their body's steps), and a copy into the result
/// buffer for each returned value the plan left elsewhere. On failure returns null and
/// sets `error`; never throws.
std::shared_ptr<Program> lowerToProgram(mlir::func::FuncOp function, Device device,
                                        std::string &error);

/// The program of a planned `function` whose ops run on several devices (e.g. the
/// output of dlc-shard-data-parallel): one step per op on its device, `dlc.copy` and
/// `dlc.all_reduce` as transfers and collectives, in the order dlc-order-steps left.
/// On failure returns null and sets `error`; never throws.
std::shared_ptr<ShardedProgram> lowerToShardedProgram(mlir::func::FuncOp function,
                                                      std::string &error);

} // namespace dlc::conversion

#endif // DLC_CONVERSION_DLCTORUNTIME_DLCTORUNTIME_H
