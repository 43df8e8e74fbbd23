//===- Devices.cpp - how many GPUs this process can use, GPU options ---------===//
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Gpu.h"

#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace dlc {

int num_gpus() {
  DeviceBackend *gpus = device_backend(DeviceKind::gpu);
  return gpus ? gpus->device_count() : 0;
}

void set_gpu_tf32(bool enabled) {
  if (DeviceBackend *gpus = device_backend(DeviceKind::gpu))
    gpus->set_tf32(enabled);
}

bool gpu_tf32() {
  DeviceBackend *gpus = device_backend(DeviceKind::gpu);
  return gpus && gpus->tf32();
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
  DeviceMemoryInfo info = device_backend(DeviceKind::gpu)->memory_info(device.id);
  return {int64_t(info.free), int64_t(info.total)};
}

} // namespace dlc
