//===- Engine.h - per-device asynchronous queues and buffer ordering --------===//
//
// Each device has one in-order queue served by its own worker thread; a GPU's worker
// issues work to the GPU's stream and a second thread completes tasks as their fences
// pass. Ops are enqueued and return at once; a buffer remembers the task that last
// wrote it and the tasks that read it since, so that a task on another queue (a copy
// between devices) or a later write waits for exactly what it must, as MXNet's engine
// does with its variables. A failed task poisons what it writes: readers fail with the
// same error, and the error surfaces when the tensor is next synchronized.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_H
#define DLC_RUNTIME_ENGINE_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Allocator.h"

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlc {

/// Completion of one queued task: done or not, and the error it ended with.
class TaskState {
public:
  /// Blocks until the task has run (or been skipped because an input failed).
  void wait() const;
  bool done() const;
  /// The error the task ended with, or null; meaningful once done.
  std::exception_ptr error() const;
  void finish(std::exception_ptr error);
  /// The queue that runs the task: a GPU queue need not wait for its own earlier tasks,
  /// which its stream already orders.
  const void *queue() const { return queue_; }
  void set_queue(const void *queue) { queue_ = queue; }

private:
  const void *queue_ = nullptr;
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  bool done_ = false;
  std::exception_ptr error_;
};
using TaskHandle = std::shared_ptr<TaskState>;

class Buffer;
namespace detail {
/// Records a task's accesses to buffers (Engine.cpp).
struct Registrar;
} // namespace detail

/// Memory of one or more tensors (views share it), with the tasks that order access to it.
class Buffer {
public:
  explicit Buffer(std::shared_ptr<Storage> storage) : storage_(std::move(storage)) {}

  void *data() const { return storage_->data(); }
  size_t bytes() const { return storage_->bytes(); }
  Device device() const { return storage_->device(); }

  /// Waits for the last write and rethrows its error, if any: what reading needs.
  void wait_to_read() const;
  /// Waits for the last write and every read since: what overwriting needs. Errors of
  /// earlier writers are not rethrown (the write replaces what they left).
  void wait_to_write() const;

private:
  friend struct detail::Registrar;
  std::shared_ptr<Storage> storage_;
  mutable std::mutex mutex_;
  TaskHandle writer_;
  std::vector<TaskHandle> readers_;
};

/// Runs `work` on `device`'s queue after the last writers of `reads` and, for `writes`,
/// after their last writer and readers. If a writer of `reads` failed, `work` is skipped
/// and the task fails with that error. Returns at once.
TaskHandle enqueue(Device device, const std::vector<std::shared_ptr<Buffer>> &reads,
                   const std::vector<std::shared_ptr<Buffer>> &writes, std::function<void()> work);

/// One rank of a collective: its device (one rank per device), buffers and work.
struct CollectiveRank {
  Device device;
  std::vector<std::shared_ptr<Buffer>> reads, writes;
  std::function<void()> work;
};

/// Enqueues the ranks of one collective (an all-reduce) as one step on every queue
/// involved: no other task and no other collective lands between them, so every device
/// meets collectives in the same order (NCCL's rule) and no rank waits behind work that
/// itself waits for a peer. Every rank's work runs even when one of its inputs failed,
/// since its peers wait for it, and the rank then ends with that error. A rank that
/// finishes after such a peer has run ends with the peer's error too: on GPUs that is
/// every rank of a collective (none completes before all have launched), whose results
/// are built from the failed input.
std::vector<TaskHandle> enqueue_collective(std::vector<CollectiveRank> ranks);

/// Waits until every queue is idle, then rethrows the first error any task has ended with
/// since the previous waitall (MXNet's `npx.waitall()`).
void waitall();

/// Waits until `device`'s queue is idle; does not rethrow.
void wait_for_device(Device device);

/// Copies `bytes` from `source` (inside `from`) to `target` (inside `to`) after the
/// writers of `from` and the users of `to`. A copy that touches a GPU runs on that GPU's
/// queue (the target's when both are GPUs), so it is ordered with the GPU's kernels;
/// host-to-host copies run on the target's queue.
TaskHandle enqueue_copy(const std::shared_ptr<Buffer> &from, const void *source,
                        const std::shared_ptr<Buffer> &to, void *target, size_t bytes);

/// Sets how many threads a kernel on `device`'s worker may use (OpenMP team of oneDNN).
/// Defaults: 1 per device when several host devices are in use, all cores when one is.
void set_device_threads(Device device, int threads);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_H
