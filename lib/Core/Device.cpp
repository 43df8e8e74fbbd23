//===- Device.cpp - device names and the per-thread default-device scope -----===//
#include "dlc/Core/Device.h"

namespace dlc {

namespace {
const char *kindName(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::cpu:
    return "cpu";
  case DeviceKind::gpu:
    return "gpu";
  case DeviceKind::cpu_pinned:
    return "cpu_pinned";
  case DeviceKind::cpu_shared:
    return "cpu_shared";
  }
  return "unknown";
}

thread_local Device currentDevice = Device{DeviceKind::cpu, 0};
} // namespace

std::string Device::str() const {
  return std::string(kindName(kind)) + "(" + std::to_string(id) + ")";
}

std::ostream &operator<<(std::ostream &os, const Device &device) { return os << device.str(); }

Device cpu(int id) { return {DeviceKind::cpu, id}; }
Device gpu(int id) { return {DeviceKind::gpu, id}; }
Device cpu_pinned(int id) { return {DeviceKind::cpu_pinned, id}; }
Device cpu_shared(int id) { return {DeviceKind::cpu_shared, id}; }

Device current_device() { return currentDevice; }

DeviceScope::DeviceScope(Device device) : previous_(currentDevice) { currentDevice = device; }
DeviceScope::~DeviceScope() { currentDevice = previous_; }

} // namespace dlc
