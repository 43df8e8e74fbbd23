//===- GeneratedLaunch.cpp - the compiler's PTX, loaded and launched ----------===//
//
// Generated kernels reach the runtime as PTX. The CUDA driver API loads it
// (cuModuleLoadData compiles it for the GPU at hand) and launches its entries
// (cuLaunchKernel) on the task's stream. libcuda is opened with dlopen on the first
// launch, so a machine without a GPU driver never needs it; a program's PTX is loaded
// once per GPU and kept for the process's life.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"

#include "dlc/Runtime/Program/Program.h"

#include <cuda.h>
#include <dlfcn.h>

#include <map>
#include <mutex>

namespace dlc::cuda {

namespace {

/// The driver entry points dlc uses, from libcuda.so.1.
struct Driver {
  CUresult (*moduleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, CUstream, void **, void **) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
};

const Driver &driver() {
  static Driver loaded;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      failure = std::string("cannot open the CUDA driver (libcuda.so.1): ") + dlerror();
      return;
    }
    auto symbol = [&](const char *name) {
      void *address = dlsym(library, name);
      if (!address)
        failure = std::string("the CUDA driver has no ") + name;
      return address;
    };
    loaded.moduleLoadData = reinterpret_cast<decltype(loaded.moduleLoadData)>(symbol("cuModuleLoadData"));
    loaded.moduleGetFunction =
        reinterpret_cast<decltype(loaded.moduleGetFunction)>(symbol("cuModuleGetFunction"));
    loaded.launchKernel = reinterpret_cast<decltype(loaded.launchKernel)>(symbol("cuLaunchKernel"));
    loaded.getErrorString =
        reinterpret_cast<decltype(loaded.getErrorString)>(symbol("cuGetErrorString"));
  });
  if (!failure.empty())
    throw UnsupportedError("generated GPU kernels: " + failure);
  return loaded;
}

void check(CUresult result, const std::string &what) {
  if (result == CUDA_SUCCESS)
    return;
  const char *message = nullptr;
  driver().getErrorString(result, &message);
  throw Error(what + ": " + (message ? message : "CUDA driver error " + std::to_string(int(result))));
}

/// The entry `name` of `ptx` on GPU `device` (its primary context is current on the
/// queue worker), loading the PTX on first use.
CUfunction function(const std::shared_ptr<const std::string> &ptx, const std::string &name,
                    int device) {
  static std::mutex mutex;
  // Keyed by the PTX's storage, which the map keeps alive: loaded once per program.
  static std::map<std::pair<std::shared_ptr<const std::string>, int>, CUmodule> modules;
  static std::map<std::tuple<CUmodule, std::string>, CUfunction> functions;
  std::lock_guard<std::mutex> lock(mutex);
  CUmodule &module = modules[{ptx, device}];
  if (!module)
    check(driver().moduleLoadData(&module, ptx->c_str()),
          "loading the generated PTX on gpu(" + std::to_string(device) + ")");
  CUfunction &entry = functions[{module, name}];
  if (!entry)
    check(driver().moduleGetFunction(&entry, module, name.c_str()),
          "the generated PTX has no kernel " + name);
  return entry;
}

void launch(const GeneratedGpuKernel &kernel, int device, const std::vector<char *> &pointers,
            int64_t elements) {
  CUfunction entry = function(kernel.ptx, kernel.name, device);
  std::vector<void *> parameters;
  std::vector<char *> values(pointers);
  for (char *&pointer : values)
    parameters.push_back(&pointer);
  parameters.push_back(&elements);
  unsigned blocks = unsigned((std::max<int64_t>(elements, 1) + kThreads - 1) / kThreads);
  check(driver().launchKernel(entry, blocks, 1, 1, kThreads, 1, 1, 0,
                              reinterpret_cast<CUstream>(current_context().stream()),
                              parameters.data(), nullptr),
        "launching the generated kernel " + kernel.name + " on gpu(" + std::to_string(device) +
            ")");
}

} // namespace

void register_generated_launch() {
  GeneratedKernelLauncher launcher;
  launcher.launch = launch;
  launcher.needs_host_build = false;
  register_generated_kernel_launcher(DeviceKind::gpu, launcher);
}

} // namespace dlc::cuda
