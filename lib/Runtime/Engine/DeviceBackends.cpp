//===- DeviceBackends.cpp - the backend registry and the host backend --------===//
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include "../CPU/CpuKernels.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Allocator.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Program/Program.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

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

/// What a backend library calls in the runtime that opened it, kept in every program
/// that links the runtime: a static link keeps only what the program itself calls, and a
/// program that never ran a Program (say) would lack register_generated_kernel_launcher
/// when libdlc_cuda.so asks for it. test/tools/dlc-run/opens-the-cuda-backend.test
/// checks that this list is what the library calls.
[[gnu::used]] void *const kRuntimeCallsOfBackends[] = {
    reinterpret_cast<void *>(&allocate),
    reinterpret_cast<void *>(&find_kernel),
    reinterpret_cast<void *>(&register_device_backend),
    reinterpret_cast<void *>(&register_generated_kernel_launcher),
    reinterpret_cast<void *>(&register_kernel),
    reinterpret_cast<void *>(&register_task_graphs),
};

/// Registers the host backend, once.
void registerHost() {
  static std::once_flag once;
  std::call_once(once, [] {
    static HostBackend host;
    register_device_backend(DeviceKind::cpu, host);
    host.register_kernels();
  });
}

/// Why the accelerator backends this build lists could not be loaded ("" when they were,
/// or when the build lists none).
std::string &loadProblem() {
  static std::string *problem = new std::string;
  return *problem;
}

/// The directory holding the code of this function: the program, libdlc or the Python
/// module, whichever the runtime is linked into.
std::string runtimeDirectory(bool &isMainProgram) {
  Dl_info info{};
  isMainProgram = false;
  if (!dladdr(reinterpret_cast<void *>(&runtimeDirectory), &info) || !info.dli_fname)
    return "";
  void *main = dlopen(nullptr, RTLD_LAZY);
  void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  isMainProgram = !self || self == main;
  if (self)
    dlclose(self);
  if (main)
    dlclose(main);
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Loads the backend `name` and calls its entry, `dlc_register_<name>_backend`: linked
/// into the program (the emulated GPUs' programs link the backend's objects), else from
/// its shared library libdlc_<name>.so, looked for beside the runtime's code, in ../lib
/// from there, in the build's and the installation's library directories, then where
/// the dynamic loader looks. The backend calls back into the runtime (it registers its
/// kernels and itself), so the module holding the runtime is first made global: a Python
/// module is loaded local. "" or why it could not be loaded.
std::string loadBackend(const std::string &name) {
  const std::string entry = "dlc_register_" + name + "_backend";
  using Entry = void (*)();
  if (auto linked = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, entry.c_str()))) {
    linked();
    return "";
  }
  bool isMainProgram = false;
  const std::string here = runtimeDirectory(isMainProgram);
  if (!isMainProgram) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&loadBackend), &info) && info.dli_fname)
      dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL); // kept: the process's
  }
  const std::string file = "libdlc_" + name + ".so";
  std::vector<std::string> candidates;
  for (const std::string &dir : {here, here + "/../lib", std::string(DLC_BUILD_LIBRARY_DIR),
                                 std::string(DLC_INSTALL_LIBRARY_DIR)})
    if (!dir.empty())
      candidates.push_back(dir + "/" + file);
  candidates.push_back(file);
  std::string why;
  for (const std::string &candidate : candidates) {
    void *library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *error = dlerror();
      // A file that is there but does not load says why; one that is absent says little.
      if (why.empty() || (error && !std::strstr(error, "No such file")))
        why = error ? error : "cannot be opened";
      continue;
    }
    if (auto registerIt = reinterpret_cast<Entry>(dlsym(library, entry.c_str()))) {
      registerIt(); // the library stays loaded for the process
      return "";
    }
    why = candidate + " has no " + entry;
    dlclose(library);
  }
  return "the " + name + " backend (" + file + ") could not be loaded: " + why;
}

/// Loads every accelerator backend this build lists (CMake's DLC_DEVICE_BACKENDS), once,
/// the first time one is asked for: a program that only uses the host never opens them
/// (nor the CUDA libraries they link).
void loadAccelerators() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerHost();
    std::string problems;
#define DLC_DEVICE_BACKEND(name)                                                               \
  if (std::string problem = loadBackend(#name); !problem.empty())                              \
    problems += (problems.empty() ? "" : "; ") + problem;
#include "DeviceBackends.inc"
#undef DLC_DEVICE_BACKEND
    loadProblem() = problems;
    if (DeviceBackend *gpu = registry().gpu.load(std::memory_order_acquire))
      gpu->register_kernels();
  });
}

} // namespace

void register_device_backend(DeviceKind kind, DeviceBackend &backend) {
  Registry &r = registry();
  (kind == DeviceKind::gpu ? r.gpu : r.host).store(&backend, std::memory_order_release);
}

DeviceBackend *device_backend(DeviceKind kind) {
  Registry &r = registry();
  if (kind == DeviceKind::gpu) {
    loadAccelerators(); // once; later calls only check the flag
    return r.gpu.load(std::memory_order_acquire);
  }
  registerHost();
  return r.host.load(std::memory_order_acquire);
}

DeviceBackend &backend_for(Device device, const std::string &what) {
  if (DeviceBackend *backend = device_backend(device.kind))
    return *backend;
  if (device.kind == DeviceKind::gpu && !loadProblem().empty())
    throw UnsupportedError(what + " on " + device.str() + ": " + loadProblem());
  throw UnsupportedError(what + " on " + device.str() +
                         ": dlc was built without a backend for it (the CUDA backend: see "
                         "DLC_ENABLE_CUDA)");
}

std::string device_backend_problem(DeviceKind kind) {
  if (kind == DeviceKind::gpu) {
    loadAccelerators();
    return loadProblem();
  }
  return "";
}

} // namespace dlc
