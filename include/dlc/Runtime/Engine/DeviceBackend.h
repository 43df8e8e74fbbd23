//===- DeviceBackend.h - what the runtime asks of a kind of device ------------===//
//
// One interface per device kind, registered at start-up the way IREE registers its HAL
// drivers: the engine (queues, fences), the allocator, copies, collectives and the
// device count reach a device only through it, so no runtime source names CUDA. The host
// (cpu) backend computes in the calling worker and returns at once; an accelerator
// backend (cuda) launches work on streams and reports each task's completion through a
// fence that the queue's completion thread waits for.
//
// Which backends a build has is decided where it is configured: CMake writes the list
// (DeviceBackends.inc in the build, from DLC_DEVICE_BACKENDS) and register_device_backends() calls
// each one's `register_<name>_backend()`.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_DEVICEBACKEND_H
#define DLC_RUNTIME_ENGINE_DEVICEBACKEND_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlc {

class ProcessGroup;

/// One task a backend issued: its fence (an event after its launches) and the host
/// checks to run once the fence has passed.
struct IssuedWork {
  std::shared_ptr<void> fence;
  std::vector<std::function<void()>> checks;
  std::string op; ///< the last op the task ran, for messages
};

struct DeviceMemoryInfo {
  size_t free = 0, total = 0;
};

/// The streams of an asynchronous backend's queue: kernels go to the compute stream,
/// copies between host memory and the device may go to the copy stream.
enum DeviceStream : int { kComputeStream = 0, kCopyStream = 1 };

class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;
  /// "cpu", "cuda": for messages.
  virtual const char *name() const = 0;
  /// Registers the backend's kernels in the kernel table (entries only: nothing runs).
  virtual void register_kernels() = 0;

  // --- devices --------------------------------------------------------------------
  /// Devices of this kind the process sees (-1: as many as asked for, the host's).
  virtual int device_count() = 0;
  virtual DeviceMemoryInfo memory_info(int ordinal) = 0;

  // --- memory ---------------------------------------------------------------------
  /// A block of `bytes` on device `ordinal`; null when the device is out of memory.
  virtual void *allocate(int ordinal, size_t bytes) = 0;
  virtual void release(int ordinal, void *data) = 0;
  /// Host memory this backend's copies are fastest from (page-locked); null when it
  /// cannot give any (no driver, no device).
  virtual void *allocate_pinned(size_t bytes) { return nullptr; }
  virtual void release_pinned(void *data) {}
  /// Copies `bytes` in the current task's order: host memory on either side, or two
  /// devices of this kind.
  virtual void copy_async(void *target, Device to, const void *source, Device from,
                          size_t bytes) = 0;

  // --- queues (asynchronous backends) ----------------------------------------------
  /// Whether tasks finish when their fence passes (true) or when their work returns.
  virtual bool asynchronous() const { return false; }
  /// Binds device `ordinal` to the calling thread (its queue's worker).
  virtual void start_worker(int ordinal) {}
  /// Before a task: its waits and launches go to `stream`.
  virtual void begin_task(int ordinal, int stream) {}
  /// Makes the current task's stream wait, on the device, for `fence`.
  virtual void wait_on_device(int ordinal, const std::shared_ptr<void> &fence) {}
  /// After a task's work returned: records its fence.
  virtual IssuedWork issue(int ordinal) { return {}; }
  /// After a task's work threw: waits for what it launched and drops what it left.
  virtual void abandon_issue(int ordinal) {}
  /// On the completion thread: waits for the fence and runs the checks; the task's
  /// error or null.
  virtual std::exception_ptr complete(int ordinal, IssuedWork &work) { return nullptr; }
  /// Waits for what this thread's queue launched, when it is a worker of this backend.
  virtual void synchronize_if_worker() {}

  // --- collectives ----------------------------------------------------------------
  /// The communicators of `ordinals` (rank order), cached; created on the enqueueing
  /// thread, before any rank is queued. With `processes`, the ranks span the job: every
  /// process passes as many devices, and process p's k-th device is rank
  /// p * ordinals.size() + k (the creation is itself a collective over `processes`).
  virtual std::shared_ptr<void> communicators(const std::vector<int> &ordinals,
                                              ProcessGroup *processes);
  /// Throws DTypeError when this backend's all-reduce cannot add `dtype`.
  virtual void check_all_reduce_dtype(DType dtype);
  /// Rank `rank`'s part of an all-reduce over `communicators`, in the current task.
  virtual void all_reduce(const std::shared_ptr<void> &communicators, size_t rank,
                          const void *input, void *output, size_t count, DType dtype,
                          bool mean);

  // --- settings -------------------------------------------------------------------
  virtual void set_tf32(bool enabled) {}
  virtual bool tf32() { return false; }
};

/// Makes `backend` the one of `kind` (it lives for the process).
void register_device_backend(DeviceKind kind, DeviceBackend &backend);
/// The backend of `kind`, or null when this build has none or it cannot be loaded. The
/// host's is registered on first use; the accelerator backends the build lists
/// (DLC_DEVICE_BACKENDS) are shared libraries (libdlc_cuda.so) loaded the first time a
/// GPU is asked for, so that a program that only uses the host never opens them nor the
/// libraries they link (cudart, cuDNN, cuBLAS, NCCL).
DeviceBackend *device_backend(DeviceKind kind);
/// Why the backend of `kind` could not be loaded ("" when it was, or when the build has
/// none). Asking loads it.
std::string device_backend_problem(DeviceKind kind);
/// The backend of `device`'s kind; throws UnsupportedError naming `what` and the device
/// when this build has none.
DeviceBackend &backend_for(Device device, const std::string &what);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_DEVICEBACKEND_H
