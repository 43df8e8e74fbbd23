//===- Kernel.cpp - the kernel table ------------------------------------------===//
#include "dlc/Runtime/Engine/Kernel.h"

#include "../CPU/CpuKernels.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace dlc {

namespace {

struct KernelTable {
  std::mutex mutex;
  std::map<std::pair<std::string, DeviceKind>, KernelEntry> entries;
};

KernelTable &table() {
  static KernelTable *instance = new KernelTable;
  return *instance;
}

std::atomic<bool> referenceOnly{false};

} // namespace

// Registration is explicit (not static initializers), so that linking the runtime as a
// static library cannot drop a kernel file. Each backend registers its kernels when it is
// first asked for: the host's at once, a GPU backend's when it is loaded, which is when a
// GPU is first asked for (DeviceBackends.cpp).
void register_builtin_kernels() { device_backend(DeviceKind::cpu); }

void register_kernel(const std::string &dialectOp, DeviceKind kind, KernelEntry entry) {
  if (!entry.reference)
    entry.reference = entry.fast;
  if (!entry.fast)
    entry.fast = entry.reference;
  KernelTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries[{dialectOp, kind}] = entry;
}

const KernelEntry *find_kernel(const std::string &dialectOp, Device device) {
  device_backend(device.is_host() ? DeviceKind::cpu : device.kind);
  // Pinned and shared host memory is computed on by the CPU kernels.
  DeviceKind kind = device.is_host() ? DeviceKind::cpu : device.kind;
  KernelTable &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.entries.find({dialectOp, kind});
  return it == t.entries.end() ? nullptr : &it->second;
}

bool can_compute_on(Device device) {
  if (!find_kernel(ops::add, device))
    return false;
  return device.id >= 0 && device.id < (device.is_host() ? kMaxHostDevices : num_gpus());
}

void use_reference_kernels(bool enabled) { referenceOnly = enabled; }
bool reference_kernels_enabled() { return referenceOnly; }

namespace {
/// The layout blocked layouts take when on: DLC_BLOCKED_LAYOUTS's, else the CPU's.
Layout blockedWhenOn() {
  const char *flag = std::getenv("DLC_BLOCKED_LAYOUTS");
  const std::string named = flag ? flag : "";
  if (named == layout_name(Layout::nChw16c))
    return Layout::nChw16c;
  if (named == layout_name(Layout::nChw8c))
    return Layout::nChw8c;
  return cpu_kernels::onednn::preferred_blocked_layout();
}

std::atomic<Layout> chosenLayout{blockedWhenOn()};
std::atomic<bool> blockedLayouts{[] {
  const char *flag = std::getenv("DLC_BLOCKED_LAYOUTS");
  return !(flag && std::string(flag) == "0") && chosenLayout.load() != Layout::plain;
}()};
} // namespace

void use_blocked_layouts(bool enabled) {
  // On a CPU without blocked kernels, turning them on takes AVX2's width (tests run the
  // path everywhere; oneDNN then runs its reference loops).
  if (enabled && chosenLayout.load() == Layout::plain)
    chosenLayout = Layout::nChw8c;
  blockedLayouts = enabled;
}
bool blocked_layouts_enabled() { return blockedLayouts; }
Layout blocked_layout() { return blockedLayouts ? chosenLayout.load() : Layout::plain; }
void use_blocked_layout(Layout layout) {
  if (layout != Layout::plain)
    chosenLayout = layout;
  blockedLayouts = layout != Layout::plain;
}

} // namespace dlc
