//===- LoweringSupport.h - shared by the lowerings to runtime programs (internal) -===//
#ifndef DLC_LIB_COMPILER_LOWERINGSUPPORT_H
#define DLC_LIB_COMPILER_LOWERINGSUPPORT_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Attrs.h"
#include "dlc/Runtime/Program.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include <optional>

#include "mlir/IR/Operation.h"

#include <string>

namespace dlc::compiler::detail {

/// The dtype of a tensor element type; false for types the runtime has no dtype for.
bool toDType(mlir::Type element, DType &dtype);
/// The shape and dtype of `value`, a ranked tensor of a dtype the runtime has and of
/// fewer than 2^63 bytes; false, with `error` naming `function` and the type, otherwise.
bool lowerableTensor(mlir::Value value, const std::string &function, Shape &shape,
                     DType &dtype, std::string &error);
/// "dlc.conv2d at loc(...)", for messages.
std::string describe(mlir::Operation *op);

/// The step of a plain op on `device`: its kernels, the attributes they read, a fresh
/// seed for random ops, in-place reuse for element-wise ones (inputs and outputs are the
/// caller's). False, with `error`, when `device` has no kernel for it.
bool kernelStep(mlir::Operation *op, Device device, ProgramStep &step, std::string &error);

/// Whether `op` may write its output over a same-shaped input that dies with it.
bool isInPlaceElementwise(mlir::Operation *op);

/// The single step of a dlc.fused region on `device`, if the runtime has a fused kernel
/// for it (ReLU epilogues, float32 element-wise chains); nothing when the region must run
/// op by op; `error` set when it is malformed.
std::optional<ProgramStep> fusedStep(mlir::dlc::FusedOp fused, Device device,
                                     std::string &error);

} // namespace dlc::compiler::detail

#endif // DLC_LIB_COMPILER_LOWERINGSUPPORT_H
