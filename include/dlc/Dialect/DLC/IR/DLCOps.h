//===- DLCOps.h - operations of the dlc dialect ------------------------------===//
#ifndef DLC_DIALECT_DLC_IR_DLCOPS_H
#define DLC_DIALECT_DLC_IR_DLCOPS_H

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCTraits.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dlc/Dialect/DLC/IR/DLCInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dlc/Dialect/DLC/IR/DLCOps.h.inc"

#endif // DLC_DIALECT_DLC_IR_DLCOPS_H
