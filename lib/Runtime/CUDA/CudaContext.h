//===- CudaContext.h - per-GPU streams, library handles, checks (internal) ---===//
//
// Each GPU has one context: its compute stream and copy stream, lazily created cuDNN and
// cuBLAS handles bound to the compute stream, a workspace, and a pool of events. The device's queue worker
// binds the context to its thread, so a kernel finds its stream with current_context().
// Kernels run in stream order: a task is issued (launched) by the worker and completed
// when its fence (an event recorded after it) has passed, see Engine.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDACONTEXT_H
#define DLC_LIB_RUNTIME_CUDA_CUDACONTEXT_H

#include "dlc/Runtime/Engine/Allocator.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlc::cuda {

/// Throws dlc::Error naming the failed call, the device and the op being run (see
/// OpScope); allocation failures throw OutOfMemoryError.
void check(cudaError_t status, const char *call);
void check(cudnnStatus_t status, const char *call);
void check(cublasStatus_t status, const char *call);
/// Checks the last launch (cudaGetLastError) of `kernel`.
void check_launch(const char *kernel);

/// Names the op a kernel adapter runs, for error messages of the checks inside it and
/// of the task's fence.
class OpScope {
public:
  explicit OpScope(const char *op);
  ~OpScope();
  OpScope(const OpScope &) = delete;
  OpScope &operator=(const OpScope &) = delete;

private:
  const char *previous_;
};
/// The op of the innermost OpScope of this thread, or "" when none.
const char *current_op();

class DeviceContext {
public:
  explicit DeviceContext(int ordinal);
  DeviceContext(const DeviceContext &) = delete;
  DeviceContext &operator=(const DeviceContext &) = delete;

  int ordinal() const { return ordinal_; }
  Device device() const { return gpu(ordinal_); }
  /// The stream the current task's launches go to: the compute stream, or the copy
  /// stream for a copy the engine put there (use_stream). Only the worker changes it.
  cudaStream_t stream() const { return active_; }
  bool on_compute_stream() const { return active_ == stream_; }
  /// Makes the compute stream (kComputeStream) or the copy stream (kCopyStream, created
  /// on first use) current for the next task.
  void use_stream(int kind);
  /// Library handles bound to the compute stream, created on first use.
  cudnnHandle_t cudnn();
  cublasHandle_t cublas();
  /// At least `bytes` of device memory for one kernel's scratch space, on the compute
  /// stream. Valid until the next call; reusing it is safe because the kernels that use it
  /// run in the compute stream's order. When it grows, the old block returns to the
  /// allocator's cache only once the current task's fence has passed: the copy stream,
  /// which that order does not cover, could otherwise be handed memory a queued kernel
  /// still uses.
  void *workspace(size_t bytes);
  /// A second such buffer, for an adapter's own temporaries around kernels that use the
  /// workspace (the float32 copies of a bfloat16 batch norm); same rules.
  void *scratch(size_t bytes);
  /// The workspace and scratch blocks as they are now (a recorded graph keeps them).
  std::vector<std::shared_ptr<Storage>> scratch_buffers() const { return {workspace_, scratch_}; }

  /// An event recorded on stream() now, from the pool.
  cudaEvent_t record_fence();
  /// Waits for both streams, ignoring their errors (a task whose fence could not be
  /// recorded).
  void synchronize_streams();
  /// Returns an event to the pool (the fence's owner lets go of it).
  void recycle(cudaEvent_t event);
  /// Blocks until `fence` has passed; throws the asynchronous error of the stream, if
  /// any, naming `op`.
  void wait_fence(cudaEvent_t fence, const std::string &op);

  /// Checks to run on the host once the current task's work has finished on the device
  /// (errors that kernels report through flags in pinned memory: bad labels, integer
  /// division by zero). The engine takes them after each task.
  void after_completion(std::function<void()> check);
  std::vector<std::function<void()>> take_completion_checks();

private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;     // compute
  cudaStream_t copyStream_ = nullptr; // host <-> GPU copies
  cudaStream_t active_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<Storage> workspace_, scratch_;
  std::mutex eventsMutex_;
  std::vector<cudaEvent_t> freeEvents_;
  std::vector<std::function<void()>> checks_;
};

/// The context of GPU `ordinal` (created on first use, never destroyed: worker threads
/// may still use it while static objects are torn down).
DeviceContext &context(int ordinal);
/// Makes GPU `ordinal` current on this thread and binds its context (queue workers).
void bind_worker_thread(int ordinal);
/// The context bound to this thread; throws when the thread is not a GPU queue worker.
DeviceContext &current_context();

/// Sets this thread's current CUDA device for the guard's life (allocations and frees
/// happen on user threads).
class DeviceGuard {
public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous_ = -1;
};

/// An int in pinned host memory that kernels set to report an error, read on the host
/// once the task has finished (see DeviceContext::after_completion).
class ErrorFlag {
public:
  ErrorFlag();
  int *device_pointer() const { return static_cast<int *>(storage_->data()); }
  /// The value kernels set (0: no error), cleared for the next run: a replayed CUDA
  /// graph reuses the flag, and each bad run is reported once.
  int take() {
    volatile int *flag = static_cast<volatile int *>(storage_->data());
    int value = *flag;
    *flag = 0;
    return value;
  }

private:
  std::shared_ptr<Storage> storage_;
};

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDACONTEXT_H
