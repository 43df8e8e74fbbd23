//===- DeviceBackends.cpp - the backend registry and the host backend --------===//
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include "../CPU/CpuKernels.h"
#include "dlc/Core/Error.h"

#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>

// The backends this build has, as CMake listed them (DLC_DEVICE_BACKENDS): each defines
// `void register_<name>_backend()`.
#define DLC_DEVICE_BACKEND(name) void register_##name##_backend();
namespace dlc {
#include "DeviceBackends.inc"
} // namespace dlc
#undef DLC_DEVICE_BACKEND

namespace dlc {

std::shared_ptr<void> DeviceBackend::communicators(const std::vector<int> &, ProcessGroup *) {
  throw UnsupportedError(std::string("all_reduce: the ") + name() +
                         " backend has no collectives");
}
void DeviceBackend::check_all_reduce_dtype(DType) {
  throw UnsupportedError(std::string("all_reduce: the ") + name() +
                         " backend has no collectives");
}
void DeviceBackend::all_reduce(const std::shared_ptr<void> &, size_t, const void *, void *,
                               size_t, DType, bool) {
  throw UnsupportedError(std::string("all_reduce: the ") + name() +
                         " backend has no collectives");
}

namespace {

/// The host: memory from the C library, copies with memcpy, work that is done when it
/// returns. It serves cpu, cpu_pinned and cpu_shared devices (pinned memory itself comes
/// from an accelerator backend, when there is one).
class HostBackend final : public DeviceBackend {
public:
  const char *name() const override { return "cpu"; }
  void register_kernels() override { cpu_kernels::register_cpu_kernels(); }
  int device_count() override { return -1; }
  DeviceMemoryInfo memory_info(int) override { return {}; }
  void *allocate(int, size_t bytes) override { return std::aligned_alloc(64, bytes); }
  void release(int, void *data) override { std::free(data); }
  void copy_async(void *target, Device, const void *source, Device, size_t bytes) override {
    std::memcpy(target, source, bytes);
  }
};

/// Written at start-up (and by tests that swap a backend), read on per-operation paths
/// (allocation, copies, device counts): atomics, so that a read takes no lock.
struct Registry {
  std::atomic<DeviceBackend *> host{nullptr}, gpu{nullptr};
};

Registry &registry() {
  static Registry *instance = new Registry; // used until the process ends
  return *instance;
}

/// Registers the host backend and every backend this build lists, once.
void registerAll() {
  static std::once_flag once;
  std::call_once(once, [] {
    static HostBackend host;
    register_device_backend(DeviceKind::cpu, host);
#define DLC_DEVICE_BACKEND(name) register_##name##_backend();
#include "DeviceBackends.inc"
#undef DLC_DEVICE_BACKEND
  });
}

} // namespace

void register_device_backend(DeviceKind kind, DeviceBackend &backend) {
  Registry &r = registry();
  (kind == DeviceKind::gpu ? r.gpu : r.host).store(&backend, std::memory_order_release);
}

DeviceBackend *device_backend(DeviceKind kind) {
  registerAll();
  Registry &r = registry();
  return (kind == DeviceKind::gpu ? r.gpu : r.host).load(std::memory_order_acquire);
}

DeviceBackend &backend_for(Device device, const std::string &what) {
  if (DeviceBackend *backend = device_backend(device.kind))
    return *backend;
  throw UnsupportedError(what + " on " + device.str() +
                         ": dlc was built without a backend for it (the CUDA backend: see "
                         "DLC_ENABLE_CUDA)");
}

} // namespace dlc
