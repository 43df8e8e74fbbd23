//===- DeviceBytes.h - memmove on any device (internal) ----------------------===//
#ifndef DLC_LIB_RUNTIME_DEVICEBYTES_H
#define DLC_LIB_RUNTIME_DEVICEBYTES_H

#include "dlc/Config.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"

#if DLC_HAVE_CUDA
#include "CUDA/CudaEngine.h"
#endif

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
#if DLC_HAVE_CUDA
  cuda::copy_async(target, device, source, device, bytes);
#else
  throw UnsupportedError("moving bytes on " + device.str() + " needs dlc built with CUDA");
#endif
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
#if DLC_HAVE_CUDA
  cuda::copy_async(target, device, pinnedSource, cpu_pinned(0), bytes);
#else
  throw UnsupportedError("copying bytes to " + device.str() + " needs dlc built with CUDA");
#endif
}

} // namespace dlc

#endif // DLC_LIB_RUNTIME_DEVICEBYTES_H
