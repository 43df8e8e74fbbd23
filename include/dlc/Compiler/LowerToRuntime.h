//===- LowerToRuntime.h - a func.func of the dlc dialect as a runtime Program -===//
#ifndef DLC_COMPILER_LOWERTORUNTIME_H
#define DLC_COMPILER_LOWERTORUNTIME_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Program.h"
#include "dlc/Runtime/ShardedProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <string>

namespace dlc::compiler {

/// The program of `function` on `device`: one step per op calling the kernel table's
/// kernels (views become aliases), results that are arguments or views copied into their
/// own storage, then a memory plan. `ids`, when given, receives each MLIR value's
/// program value. On failure returns null and sets `error`.
std::shared_ptr<Program> lowerToProgram(mlir::func::FuncOp function, Device device,
                                        std::string &error,
                                        llvm::DenseMap<mlir::Value, int> *ids = nullptr);

/// The program of a function whose ops run on several devices (placed, e.g. the output
/// of dlc-shard-data-parallel): one step per op on its `dlc.device`, `dlc.copy` and
/// `dlc.all_reduce` as transfers and collectives, reshapes and batch splits as views.
/// On failure returns null and sets `error`.
std::shared_ptr<ShardedProgram> lowerToShardedProgram(mlir::func::FuncOp function,
                                                      std::string &error);

/// The device of `function`: its first argument's `dlc.device`, else `fallback`.
Device functionDevice(mlir::func::FuncOp function, Device fallback);

} // namespace dlc::compiler

#endif // DLC_COMPILER_LOWERTORUNTIME_H
