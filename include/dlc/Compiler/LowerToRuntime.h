//===- LowerToRuntime.h - a func.func of the dlc dialect as a runtime Program -===//
#ifndef DLC_COMPILER_LOWERTORUNTIME_H
#define DLC_COMPILER_LOWERTORUNTIME_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Program.h"

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

/// The device of `function`: its first argument's `dlc.device`, else `fallback`.
Device functionDevice(mlir::func::FuncOp function, Device fallback);

} // namespace dlc::compiler

#endif // DLC_COMPILER_LOWERTORUNTIME_H
