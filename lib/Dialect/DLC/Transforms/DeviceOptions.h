//===- DeviceOptions.h - devices written in pass options (internal) -----------===//
#ifndef DLC_LIB_DIALECT_DLC_TRANSFORMS_DEVICEOPTIONS_H
#define DLC_LIB_DIALECT_DLC_TRANSFORMS_DEVICEOPTIONS_H

#include "dlc/Dialect/DLC/IR/DLCDialect.h"

namespace mlir::dlc {

/// "cpu:0" / "gpu:1" as a device attribute, or null.
inline DeviceAttr parseDeviceOption(MLIRContext *context, llvm::StringRef text) {
  auto [kind, ordinal] = text.trim().split(':');
  std::optional<DeviceKind> parsed = symbolizeDeviceKind(kind);
  int64_t id = 0;
  if (!parsed || ordinal.getAsInteger(10, id) || id < 0)
    return nullptr;
  return DeviceAttr::get(context, *parsed, id);
}

} // namespace mlir::dlc

#endif // DLC_LIB_DIALECT_DLC_TRANSFORMS_DEVICEOPTIONS_H
