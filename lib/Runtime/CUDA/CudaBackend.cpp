//===- CudaBackend.cpp - the CUDA backend behind the runtime's interface ------===//
//
// Adapts the CUDA side's functions (CudaEngine.h: streams, fences, cudaMalloc, copies,
// NCCL) to DeviceBackend, and registers it for gpu devices. The runtime's sources call
// only the interface; this file and the ones it calls are all that know CUDA. They are
// built into libdlc_cuda.so, which the runtime opens the first time a GPU is asked for
// and enters through dlc_register_cuda_backend (DeviceBackends.cpp).
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include "CudaEngine.h"
#include "CudaKernels.h"
#include "CudaOptions.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/CUDA/CudaLibraries.h"

#include <atomic>

namespace dlc {

namespace {

class CudaBackend final : public DeviceBackend {
public:
  const char *name() const override { return "cuda"; }
  void register_kernels() override {
    cuda::register_cuda_kernels(); // table entries only: no CUDA call until one runs
    cuda::register_task_graphs_backend();
  }

  int device_count() override {
    // The count cannot change within a process (CUDA reads CUDA_VISIBLE_DEVICES once),
    // and allocations ask for it: remember it once known.
    int count = known_.load();
    if (count >= 0)
      return count;
    try {
      count = cuda::countDevices().count;
    } catch (const std::exception &e) {
      throw Error(std::string("num_gpus: ") + e.what());
    }
    known_ = count;
    return count;
  }
  DeviceMemoryInfo memory_info(int ordinal) override {
    cuda::MemoryInfo info = cuda::memory_info(ordinal);
    return {info.free, info.total};
  }

  void *allocate(int ordinal, size_t bytes) override { return cuda::device_malloc(ordinal, bytes); }
  void release(int ordinal, void *data) override { cuda::device_free(ordinal, data); }
  void *allocate_pinned(size_t bytes) override { return cuda::pinned_malloc(bytes); }
  void release_pinned(void *data) override { cuda::pinned_free(data); }
  void copy_async(void *target, Device to, const void *source, Device from,
                  size_t bytes) override {
    cuda::copy_async(target, to, source, from, bytes);
  }

  bool asynchronous() const override { return true; }
  void start_worker(int ordinal) override { cuda::start_worker(ordinal); }
  void begin_task(int ordinal, int stream) override { cuda::begin_task(ordinal, stream); }
  void wait_on_device(int ordinal, const std::shared_ptr<void> &fence) override {
    cuda::wait_on_device(ordinal, fence);
  }
  IssuedWork issue(int ordinal) override { return cuda::issue(ordinal); }
  void abandon_issue(int ordinal) override { cuda::abandon_issue(ordinal); }
  std::exception_ptr complete(int ordinal, IssuedWork &work) override {
    return cuda::complete(ordinal, work);
  }
  void synchronize_if_worker() override { cuda::synchronize_if_gpu_worker(); }

  std::shared_ptr<void> communicators(const std::vector<int> &ordinals,
                                      ProcessGroup *processes) override {
    return cuda::communicators(ordinals, processes);
  }
  void check_all_reduce_dtype(DType dtype) override { cuda::check_all_reduce_dtype(dtype); }
  void all_reduce(const std::shared_ptr<void> &set, size_t rank, const void *input,
                  void *output, size_t count, DType dtype, bool mean) override {
    cuda::all_reduce(std::static_pointer_cast<cuda::CommunicatorSet>(set), rank, input, output,
                     count, dtype, mean);
  }

  void set_tf32(bool enabled) override { cuda::set_tf32(enabled); }
  bool tf32() override { return cuda::tf32(); }

private:
  std::atomic<int> known_{-1};
};

} // namespace

void register_cuda_backend() {
  static CudaBackend backend;
  register_device_backend(DeviceKind::gpu, backend);
}

} // namespace dlc

/// The entry the runtime's loader looks up (in the program when the backend is linked
/// into it, as on emulated GPUs; else in libdlc_cuda.so).
extern "C" __attribute__((visibility("default"))) void dlc_register_cuda_backend() {
  dlc::register_cuda_backend();
}
