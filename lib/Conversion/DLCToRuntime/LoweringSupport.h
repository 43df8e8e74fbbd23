//===- LoweringSupport.h - shared by the lowerings to runtime programs (internal) -===//
#ifndef DLC_LIB_CONVERSION_DLCTORUNTIME_LOWERINGSUPPORT_H
#define DLC_LIB_CONVERSION_DLCTORUNTIME_LOWERINGSUPPORT_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/DType.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Runtime/Program/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <memory>
#include <optional>
#include <vector>
#include <string>

namespace dlc::conversion::detail {

/// The shape and dtype of `value`; false, with `error` naming `function` and the type,
/// for a value the runtime has no tensors for.
bool lowerableTensor(mlir::Value value, const std::string &function, Shape &shape,
                     DType &dtype, std::string &error);
/// "dlc.conv2d at loc(...)", for messages.
std::string describe(mlir::Operation *op);
/// The runtime device of a dialect device.
Device runtimeDevice(mlir::dlc::DeviceAttr device);

/// Where dlc-plan-memory placed `value`: its defining op's `dlc.storage` entry, or the
/// caller's argument buffer for a function argument. False, with `error`, when the
/// function has not been planned.
bool storageOf(mlir::Value value, mlir::dlc::StorageAttr &storage, std::string &error);
/// The function's `dlc.arenas`; false, with `error`, when it has not been planned.
bool arenasOf(mlir::func::FuncOp function, mlir::ArrayAttr &arenas, std::string &error);

/// The step of a plain op on `device`: its kernels and the attributes they read, a
/// fresh seed for random ops (inputs, outputs and places are the caller's). False,
/// with `error`, when `device` has no kernel for it.
bool kernelStep(mlir::Operation *op, Device device, ProgramStep &step, std::string &error);

/// The single step of a dlc.fused region that runs as one (dlc-plan-memory did not mark
/// it `dlc.op_by_op`) on `device`: a library kernel with a ReLU epilogue, or a float32
/// element-wise chain, whose body is also left in `chain` (for its generated code);
/// `error` set when `device` has no such kernel or an attribute cannot be read.
std::optional<ProgramStep> fusedStep(mlir::dlc::FusedOp fused, Device device,
                                     std::shared_ptr<FusedElementwise> &chain,
                                     std::string &error);

/// The native code of `functions` (each lowered with a packed entry, `<name>_packed`)
/// of the kernel module `kernels`, which must be in the LLVM dialect: object code for
/// this CPU, compiled by LLVM (O2) or read from the kernel cache in `cacheDirectory`
/// ("": none), linked into the process once per module. Empty, with `error`, when a
/// stage fails. Never throws.
std::vector<std::shared_ptr<const GeneratedKernel>>
loadHostKernels(mlir::ModuleOp kernels, llvm::ArrayRef<std::string> functions,
                const std::string &cacheDirectory, std::string &error);

} // namespace dlc::conversion::detail

#endif // DLC_LIB_CONVERSION_DLCTORUNTIME_LOWERINGSUPPORT_H
