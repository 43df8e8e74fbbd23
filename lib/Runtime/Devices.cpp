//===- Devices.cpp - how many GPUs this process can use, GPU options ---------===//
#include "dlc/Config.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Gpu.h"

#if DLC_HAVE_CUDA
#include "CUDA/CudaEngine.h"
#include "CUDA/CudaOptions.h"
#include "dlc/Runtime/CUDA/CudaLibraries.h"
#endif

#include <atomic>
#include <cstdlib>
#include <string>

namespace dlc {

int num_gpus() {
#if DLC_HAVE_CUDA
  // The count cannot change within a process (CUDA reads CUDA_VISIBLE_DEVICES once), and
  // allocations ask for it: remember it once known.
  static std::atomic<int> known{-1};
  int count = known.load();
  if (count >= 0)
    return count;
  try {
    count = cuda::countDevices().count;
  } catch (const std::exception &e) {
    throw Error(std::string("num_gpus: ") + e.what());
  }
  known = count;
  return count;
#else
  return 0;
#endif
}

void set_gpu_tf32(bool enabled) {
#if DLC_HAVE_CUDA
  cuda::set_tf32(enabled);
#else
  (void)enabled;
#endif
}

bool gpu_tf32() {
#if DLC_HAVE_CUDA
  return cuda::tf32();
#else
  return false;
#endif
}

namespace {

bool enabledUnlessZero(const char *variable) {
  const char *value = std::getenv(variable);
  return !(value && std::string(value) == "0");
}

// Function-local: read correctly even from another file's static initializers.
std::atomic<bool> &eventWaits() {
  static std::atomic<bool> enabled{enabledUnlessZero("DLC_GPU_EVENT_WAITS")};
  return enabled;
}
std::atomic<bool> &copyStream() {
  static std::atomic<bool> enabled{enabledUnlessZero("DLC_GPU_COPY_STREAM")};
  return enabled;
}

} // namespace

void set_gpu_event_waits(bool enabled) { eventWaits() = enabled; }
bool gpu_event_waits() { return eventWaits().load(std::memory_order_relaxed); }
void set_gpu_copy_stream(bool enabled) { copyStream() = enabled; }
bool gpu_copy_stream() {
  return copyStream().load(std::memory_order_relaxed) && gpu_event_waits();
}

GpuMemoryInfo gpu_memory_info(Device device) {
  if (device.kind != DeviceKind::gpu || device.id < 0 || device.id >= num_gpus())
    throw UnsupportedError("gpu_memory_info(" + device.str() + "): this process sees " +
                           std::to_string(num_gpus()) + " GPUs");
#if DLC_HAVE_CUDA
  cuda::MemoryInfo info = cuda::memory_info(device.id);
  return {int64_t(info.free), int64_t(info.total)};
#else
  return {};
#endif
}

} // namespace dlc
