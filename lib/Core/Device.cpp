//===- Device.cpp - device names and the per-thread default-device scope -----===//
#include "dlc/Core/Device.h"

#include "dlc/Core/Error.h"

#include <algorithm>
#include <limits>

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

Device parse_device(const std::string &text) {
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  std::string number = colon == std::string::npos ? "0" : text.substr(colon + 1);
  bool digits = !number.empty() && number.size() <= 10 &&
                std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
  long long id = digits ? std::stoll(number) : -1;
  if ((kind != "cpu" && kind != "gpu") || !digits || id > std::numeric_limits<int>::max())
    throw ValueError("'" + text + "' is not cpu:N or gpu:N with N from 0 to " +
                     std::to_string(std::numeric_limits<int>::max()));
  return kind == "cpu" ? cpu(int(id)) : gpu(int(id));
}

Device cpu(int id) { return {DeviceKind::cpu, id}; }
Device gpu(int id) { return {DeviceKind::gpu, id}; }
Device cpu_pinned(int id) { return {DeviceKind::cpu_pinned, id}; }
Device cpu_shared(int id) { return {DeviceKind::cpu_shared, id}; }

Device current_device() { return currentDevice; }

DeviceScope::DeviceScope(Device device) : previous_(currentDevice) { currentDevice = device; }
DeviceScope::~DeviceScope() { currentDevice = previous_; }

} // namespace dlc
