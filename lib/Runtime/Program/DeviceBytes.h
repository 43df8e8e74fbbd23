//===- DeviceBytes.h - memmove on any device (internal) ----------------------===//
#ifndef DLC_LIB_RUNTIME_PROGRAM_DEVICEBYTES_H
#define DLC_LIB_RUNTIME_PROGRAM_DEVICEBYTES_H

#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"

#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <cstring>

namespace dlc {

/// memmove within one device, from inside a task on that device's queue: in stream order
/// on a GPU, a plain memmove on the host. (The host cannot touch cudaMalloc memory.)
inline void move_bytes(Device device, void *target, const void *source, size_t bytes) {
  if (target == source || bytes == 0)
    return;
  if (device.is_host()) {
    std::memmove(target, source, bytes);
    return;
  }
  backend_for(device, "moving bytes").copy_async(target, device, source, device, bytes);
}

/// Copies `bytes` from pinned host memory to `device`, from inside a task on the
/// device's queue: in stream order (the source must stay until the task has finished).
inline void upload_bytes(Device device, void *target, const void *pinnedSource, size_t bytes) {
  if (bytes == 0)
    return;
  if (device.is_host()) {
    std::memcpy(target, pinnedSource, bytes);
    return;
  }
  backend_for(device, "copying bytes").copy_async(target, device, pinnedSource, cpu_pinned(0),
                                                  bytes);
}

} // namespace dlc

#endif // DLC_LIB_RUNTIME_PROGRAM_DEVICEBYTES_H
