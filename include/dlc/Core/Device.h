//===- Device.h - devices, the default-device scope, GPU count ---------------===//
#ifndef DLC_CORE_DEVICE_H
#define DLC_CORE_DEVICE_H

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace dlc {

/// Kinds of device. The values are MXNet's device type ids (and the dialect's
/// `#dlc.device` kinds), so logs and files read the same in both systems.
enum class DeviceKind : int32_t { cpu = 1, gpu = 2, cpu_pinned = 3, cpu_shared = 5 };

/// A device: a kind and an ordinal. Two `cpu(i)` devices are distinct devices, each with
/// its own queue and allocator, so data-parallel code runs on CPUs as it does on GPUs.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int id = 0;

  /// "cpu(0)", "gpu(1)", "cpu_pinned(0)".
  std::string str() const;
  /// Whether the memory is host memory (cpu, cpu_pinned, cpu_shared).
  bool is_host() const { return kind != DeviceKind::gpu; }
  bool operator==(const Device &other) const { return kind == other.kind && id == other.id; }
  bool operator!=(const Device &other) const { return !(*this == other); }
  bool operator<(const Device &other) const {
    return kind != other.kind ? kind < other.kind : id < other.id;
  }
};

std::ostream &operator<<(std::ostream &os, const Device &device);

/// Host devices are cpu(0) .. cpu(kMaxHostDevices - 1) (likewise cpu_pinned, cpu_shared):
/// each is a queue with its own worker thread that lives as long as the process, so an
/// id is a resource, and one past this is far more likely a typo than a plan.
constexpr int kMaxHostDevices = 64;

Device cpu(int id = 0);
Device gpu(int id = 0);
Device cpu_pinned(int id = 0);
Device cpu_shared(int id = 0);

/// A device as the tools spell it: "cpu:N" or "gpu:N" ("cpu", "gpu" for N = 0), N
/// decimal digits that fit an int. Throws ValueError naming `text` otherwise (a number
/// past an int was taken modulo 2^32: cpu:99999999999 became cpu(1215752191)).
Device parse_device(const std::string &text);

/// GPUs this process can use: 0 when dlc was built without CUDA, the driver is missing or
/// there is no GPU; other CUDA errors throw dlc::Error.
int num_gpus();

/// The current default device of this thread: the innermost live DeviceScope, else cpu(0).
Device current_device();

/// Makes `device` the default device of this thread while it lives, like MXNet's
/// `with mx.gpu(2):`. Scopes nest; each thread has its own stack.
class DeviceScope {
public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

private:
  Device previous_;
};

} // namespace dlc

template <> struct std::hash<dlc::Device> {
  size_t operator()(const dlc::Device &d) const noexcept {
    return std::hash<int64_t>()((int64_t(d.kind) << 32) | uint32_t(d.id));
  }
};

#endif // DLC_CORE_DEVICE_H
