//===- CudaEngine.h - the CUDA side's queues, memory, copies, collectives (internal) ===//
//
// What CudaBackend.cpp adapts to the runtime's DeviceBackend interface. No CUDA types
// here.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDAENGINE_H
#define DLC_LIB_RUNTIME_CUDA_CUDAENGINE_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <memory>
#include <vector>

namespace dlc::cuda {

// --- queues ------------------------------------------------------------------------

/// Binds GPU `ordinal`'s context to the calling thread (the device's queue worker).
void start_worker(int ordinal);

/// A GPU queue's streams (DeviceStream): kernels, collectives and copies within the GPU
/// go to the compute stream; copies between host memory and the GPU may go to the copy
/// stream.
using dlc::kComputeStream;
using dlc::kCopyStream;

/// Called by the worker before a task: the task's waits and launches go to `stream`.
void begin_task(int ordinal, int stream);
/// Makes the current task's stream wait, on the device, for `fence` (an IssuedTask's
/// fence from any GPU); the worker goes on at once.
void wait_on_device(int ordinal, const std::shared_ptr<void> &fence);

/// What the worker hands to the completion thread after issuing one task: the fence is
/// an event recorded on the task's stream after its launches; it returns to its
/// context's pool when the last holder lets go (the task's state holds it until done,
/// so a stream that waits for it never waits for a later record).
using IssuedTask = dlc::IssuedWork;
/// Called by the worker after a task's work returned: records its fence and makes the
/// compute stream current again.
IssuedTask issue(int ordinal);
/// Called by the worker after a task's work threw: waits for what it launched, then
/// drops what it left behind (memory it deferred may then be reused).
void abandon_issue(int ordinal);
/// Called by the completion thread: waits for the fence, runs the checks; returns the
/// task's error (an asynchronous CUDA error or a failed check), or null.
std::exception_ptr complete(int ordinal, IssuedTask &task);

// --- memory ------------------------------------------------------------------------

/// cudaMalloc on GPU `ordinal`; null when the device is out of memory. Other CUDA
/// errors (no such device, no driver) throw.
void *device_malloc(int ordinal, size_t bytes);
void device_free(int ordinal, void *data);
/// Page-locked host memory (cudaHostAlloc, portable and mapped); null when CUDA cannot
/// provide it (no driver or no GPU).
void *pinned_malloc(size_t bytes);
void pinned_free(void *data);

struct MemoryInfo {
  size_t free = 0, total = 0;
};
MemoryInfo memory_info(int ordinal);

/// Copies `bytes` from `source` on `from` to `target` on `to` on the current worker's
/// stream (host memory on either side, or two GPUs: peer to peer when the GPUs can reach
/// each other, staged through the host otherwise).
void copy_async(void *target, Device to, const void *source, Device from, size_t bytes);

// --- collectives -------------------------------------------------------------------

/// The NCCL communicators of one list of GPUs (one rank per GPU), shared by the ranks of
/// the collectives that use them (Collectives.cpp).
class CommunicatorSet;

/// The communicator set of `devices` (ordinals, in rank order): cached, created on first
/// use. Called by the thread that enqueues a collective, before any rank is queued, so no
/// queue worker creates communicators while its peers' kernels wait. With `processes` the
/// set spans the job (ncclCommInitRank, the id broadcast from process 0 over the group's
/// control channel): every process calls this with as many devices, in the same order
/// of collectives.
std::shared_ptr<CommunicatorSet> communicators(const std::vector<int> &devices,
                                               ProcessGroup *processes);

/// Throws DTypeError naming `dtype` when NCCL cannot add it: checked before enqueueing,
/// since a rank that fails before its NCCL call would leave its peers waiting.
void check_all_reduce_dtype(DType dtype);

/// Rank `rank`'s part of an all-reduce over `set`: sums (or averages) `count` elements of
/// `input` across the ranks into `output`, on the current worker's stream. Every GPU of
/// the set makes the same call from its own queue; every rank gets the same bits. When a
/// rank's call fails the set's communicators are aborted (the peers' kernels then end
/// with an error instead of waiting) and the set is dropped from the cache; a later rank
/// of a broken set fails without calling NCCL.
void all_reduce(const std::shared_ptr<CommunicatorSet> &set, size_t rank, const void *input,
                void *output, size_t count, DType dtype, bool mean);

/// Registers the CUDA graphs that compiled programs run as (TaskGraphs.cpp).
void register_task_graphs_backend();

/// Waits for the work this thread's GPU queue launched so far, when the thread is a GPU
/// queue's worker (else returns at once): DLC_PROFILE times GPU kernels with it.
void synchronize_if_gpu_worker();

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDAENGINE_H
