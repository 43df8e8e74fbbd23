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
#ifndef DLC_RUNTIME_ENGINE_ENGINE_H
#define DLC_RUNTIME_ENGINE_ENGINE_H

#include "dlc/Core/Device.h"
#include "dlc/Runtime/Engine/Allocator.h"
#include "dlc/Runtime/Engine/TaskWork.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <initializer_list>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
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
  /// The queue that runs the task and, on a GPU, the stream it is issued to (0 compute,
  /// 1 copy): a GPU task need not wait for earlier tasks of its own stream, which the
  /// stream already orders.
  const void *queue() const { return queue_; }
  int stream() const { return stream_; }
  void set_queue(const void *queue, int stream = 0) {
    queue_ = queue;
    stream_ = stream;
  }

  /// A GPU task's fence (an event recorded after its launches), set by the queue's worker
  /// when it has issued the task and dropped when the task is done. Work on another
  /// stream or GPU that must follow the task waits for the fence on the device instead
  /// of waiting for the task on the host.
  void set_fence(std::shared_ptr<void> fence);
  /// Blocks until the task has been issued to a GPU stream or is done; returns its fence
  /// while it is not done, else null (a host task never has one).
  std::shared_ptr<void> wait_issued() const;

private:
  const void *queue_ = nullptr;
  int stream_ = 0;
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_; // also signals set_fence
  std::shared_ptr<void> fence_;
  // Set once, after error_: done() and error() of a finished task need no lock (the
  // dependency checks of every enqueue call them).
  std::atomic<bool> done_{false};
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
  explicit Buffer(std::shared_ptr<Storage> storage)
      : shared_(std::move(storage)), id_(next_id()) {}
  /// Fresh memory of `bytes` on `device`, its Storage held inside the buffer: one object
  /// for both, where every eager op's output would otherwise take two.
  Buffer(Device device, size_t bytes);

  void *data() const { return storage().data(); }
  size_t bytes() const { return storage().bytes(); }
  Device device() const { return storage().device(); }
  bool is_region() const { return storage().is_region(); }

  /// Waits for the last write and rethrows its error, if any: what reading needs.
  void wait_to_read() const;
  /// Waits for the last write and every read since: what overwriting needs. Errors of
  /// earlier writers are not rethrown (the write replaces what they left).
  void wait_to_write() const;

  /// Names this buffer among all the process made (an address may be reused, this never).
  uint64_t id() const { return id_; }
  /// How many tasks have been queued to write it so far: work a compiled program derived
  /// from it (weights prepared from parameters) still holds while (id, version) stays.
  /// Writes through dlc's ops, copies and compiled programs count; writes through a raw
  /// pointer another library holds do not.
  uint64_t version() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return version_;
  }

private:
  friend struct detail::Registrar;
  static uint64_t next_id();
  const Storage &storage() const { return own_ ? *own_ : *shared_; }

  std::shared_ptr<Storage> shared_; ///< a storage others may hold too, or null
  std::optional<Storage> own_;      ///< else the buffer's own
  uint64_t id_;
  uint64_t version_ = 0;
  mutable std::mutex mutex_;
  TaskHandle writer_;
  std::vector<TaskHandle> readers_;
  // Finished readers are dropped when the list reaches this size, which then doubles
  // with what is left: a weight read by hundreds of queued ops costs O(1) per read.
  size_t prune_readers_at_ = 8;
};

/// The buffers a task reads or writes. Up to kInline of them are held inside the list,
/// where a std::vector would allocate for the one or two of every eager op.
class BufferList {
public:
  static constexpr size_t kInline = 4;

  BufferList() = default;
  BufferList(std::initializer_list<std::shared_ptr<Buffer>> buffers) {
    for (const std::shared_ptr<Buffer> &buffer : buffers)
      push_back(buffer);
  }
  /// For callers that gather their buffers in a vector.
  BufferList(std::vector<std::shared_ptr<Buffer>> buffers) {
    if (buffers.size() > kInline) {
      more_ = std::move(buffers);
      return;
    }
    for (std::shared_ptr<Buffer> &buffer : buffers)
      push_back(std::move(buffer));
  }
  BufferList(BufferList &&other) noexcept { take(other); }
  BufferList &operator=(BufferList &&other) noexcept {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }
  BufferList(const BufferList &) = delete;
  BufferList &operator=(const BufferList &) = delete;

  void push_back(std::shared_ptr<Buffer> buffer) {
    if (more_.empty() && size_ < kInline) {
      inline_[size_++] = std::move(buffer);
      return;
    }
    if (more_.empty()) { // the inline ones move out first: elements live in one place
      for (size_t i = 0; i < size_; ++i)
        more_.push_back(std::move(inline_[i]));
      size_ = 0;
    }
    more_.push_back(std::move(buffer));
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i)
      inline_[i].reset();
    more_.clear();
    size_ = 0;
  }
  size_t size() const { return more_.empty() ? size_ : more_.size(); }
  bool empty() const { return size() == 0; }
  const std::shared_ptr<Buffer> *begin() const { return more_.empty() ? inline_ : more_.data(); }
  const std::shared_ptr<Buffer> *end() const { return begin() + size(); }

private:
  void take(BufferList &other) {
    more_.swap(other.more_); // empty after clear(): other's empty more_ is ours
    size_ = std::exchange(other.size_, 0);
    for (size_t i = 0; i < size_; ++i)
      inline_[i] = std::move(other.inline_[i]);
  }

  std::shared_ptr<Buffer> inline_[kInline];
  size_t size_ = 0; ///< how many of inline_ are in use (none once more_ holds them all)
  std::vector<std::shared_ptr<Buffer>> more_; ///< all of them, once there are more than kInline
};

/// How the caller expects a task to run.
enum class TaskCost {
  /// Queued for the device's worker thread.
  queued,
  /// Tiny (an op on a few KiB): on a host device whose queue is empty and whose inputs
  /// are ready it runs at once on the calling thread, since handing it to the worker
  /// would cost more than the work. It is still a task: it is ordered with the others,
  /// and an error it ends with surfaces at the next wait, as a queued one's does.
  tiny,
};

/// Whether tiny tasks may run on the calling thread (TaskCost::tiny); on by default,
/// off with DLC_INLINE_TINY_TASKS=0 (every task then goes through its worker).
void set_inline_tiny_tasks(bool enabled);
bool inline_tiny_tasks_enabled();

/// Runs `work` on `device`'s queue after the last writers of `reads` and, for `writes`,
/// after their last writer and readers; the task keeps the buffers alive until `work`
/// has run. If a writer of `reads` failed, `work` is skipped and the task fails with
/// that error. Returns at once (a tiny task may have run by then, see TaskCost).
TaskHandle enqueue(Device device, BufferList &&reads, BufferList &&writes, TaskWork &&work,
                   TaskCost cost = TaskCost::queued);

/// Runs `work` on the communication queue, a worker of its own that no device's kernels
/// share, in the order of enqueueing, ordered with every other task through `reads` and
/// `writes` as enqueue() orders them. Sums that span the processes of a job run there:
/// one waiting for a peer process holds back no device's work (a bucket's sum overlaps
/// the rest of the backward), and every process issues them in its program's order.
TaskHandle enqueue_communication(BufferList &&reads, BufferList &&writes, TaskWork &&work);
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
/// finishes after such a peer has run ends with the peer's error too; on GPUs every rank
/// of the collective does (a rank finishes only when all have, with the first error any
/// met, also one known only once the GPU has run: its results are built from it).
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
/// Defaults: 1 per device when several host devices are in use, all the process's cores
/// (set_host_cores) when one is.
void set_device_threads(Device device, int threads);
/// The cores this process's host devices share: all of the machine's by default; fewer
/// where several processes of one job share a host (dist::init), so that one process with
/// one host device computes with the threads it would have had as one of several devices
/// in a single process.
void set_host_cores(int cores);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_ENGINE_H
