//===- Passes.h - conversions out of the dlc dialect ---------------------------===//
#ifndef DLC_CONVERSION_PASSES_H
#define DLC_CONVERSION_PASSES_H

#include "dlc/Dialect/DLC/IR/DLCDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dlc {

#define GEN_PASS_DECL
#include "dlc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dlc/Conversion/Passes.h.inc"

} // namespace mlir::dlc

#endif // DLC_CONVERSION_PASSES_H
