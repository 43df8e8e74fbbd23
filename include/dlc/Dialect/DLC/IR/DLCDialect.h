//===- DLCDialect.h - the dlc dialect, its attributes and enums -----------===//
#ifndef DLC_DIALECT_DLC_IR_DLCDIALECT_H
#define DLC_DIALECT_DLC_IR_DLCDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dlc/Dialect/DLC/IR/DLCOpsDialect.h.inc"
#include "dlc/Dialect/DLC/IR/DLCEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dlc/Dialect/DLC/IR/DLCAttrs.h.inc"

#endif // DLC_DIALECT_DLC_IR_DLCDIALECT_H
