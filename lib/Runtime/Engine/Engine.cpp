//===- Engine.cpp - per-device worker threads and buffer ordering -------------===//
#include "dlc/Runtime/Engine/Engine.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Gpu.h"

#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>
#include <unordered_map>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dlc {

//===----------------------------------------------------------------------===//
// TaskState
//===----------------------------------------------------------------------===//

void TaskState::wait() const {
  if (done_.load(std::memory_order_acquire))
    return;
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_.load(std::memory_order_relaxed); });
}

bool TaskState::done() const { return done_.load(std::memory_order_acquire); }

std::exception_ptr TaskState::error() const {
  if (done_.load(std::memory_order_acquire))
    return error_; // written before done_, and never again
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void TaskState::finish(std::exception_ptr error) {
  std::shared_ptr<void> fence;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::move(error);
    fence = std::move(fence_); // released outside the lock: it returns to an event pool
    done_.store(true, std::memory_order_release);
  }
  finished_.notify_all();
}

void TaskState::set_fence(std::shared_ptr<void> fence) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.load(std::memory_order_relaxed))
      return;
    fence_ = std::move(fence);
  }
  finished_.notify_all();
}

std::shared_ptr<void> TaskState::wait_issued() const {
  if (done_.load(std::memory_order_acquire))
    return nullptr;
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return fence_ || done_.load(std::memory_order_relaxed); });
  return done_.load(std::memory_order_relaxed) ? nullptr : fence_;
}

//===----------------------------------------------------------------------===//
// Queues
//===----------------------------------------------------------------------===//

namespace {

/// Gives the calling thread a one-thread OpenMP team while it lives, then restores its
/// own setting.
class OneOpenMPThread {
public:
#ifdef _OPENMP
  OneOpenMPThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMPThread() { omp_set_num_threads(saved_); }

private:
  int saved_;
#endif
};

/// The first error any rank of one collective met: every rank ends with it.
struct GroupError {
  std::mutex mutex;
  std::condition_variable allArrived;
  std::exception_ptr error;
  size_t ranks = 0, arrived = 0;

  void record(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error)
      error = std::move(e);
  }
  std::exception_ptr get() {
    std::lock_guard<std::mutex> lock(mutex);
    return error;
  }
  /// A rank finishes with `e` (null when it succeeded). With `waitForPeers` (a GPU rank's
  /// completion thread) it first waits until every rank has finished, so that an error
  /// one GPU learns only at completion (an input that failed on the device, a failed
  /// NCCL call) reaches every rank; then returns the group's error. Without, the group's
  /// error so far (host ranks record their inputs' errors before they run).
  std::exception_ptr arrive(std::exception_ptr e, bool waitForPeers) {
    std::unique_lock<std::mutex> lock(mutex);
    if (e && !error)
      error = e;
    ++arrived;
    allArrived.notify_all();
    if (waitForPeers)
      allArrived.wait(lock, [&] { return arrived >= ranks; });
    return error;
  }
};

struct Task {
  TaskWork work;
  BufferList reads, writes; // kept alive until the work has run
  bool alwaysRun = false; // a collective rank: runs even when an input failed
  std::shared_ptr<GroupError> group; // a collective rank: shared with its peers
  std::vector<TaskHandle> inputs;     // wait, and fail with their error
  std::vector<TaskHandle> orderAfter; // wait only
  TaskHandle state;
  int stream = 0; // on a GPU: the compute stream (0) or the copy stream (1)
};

class DeviceQueue {
public:
  explicit DeviceQueue(Device device)
      : device_(device), backend_(device_backend(device.kind)),
        async_(backend_ && backend_->asynchronous()), worker_([this] { serve(); }) {
    if (async_)
      completer_ = std::thread([this] { complete(); });
  }

  void push(Task task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
      ++pending_;
    }
    wake_.notify_one();
  }

  void waitIdle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

  std::exception_ptr takeFirstError() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(firstError_, nullptr);
  }

  void setThreads(int threads) {
    std::lock_guard<std::mutex> lock(mutex_);
    threads_ = threads;
  }

  std::mutex &enqueueMutex() { return enqueueMutex_; }

  /// Claims the queue for running `task` on the calling thread: only a host queue with
  /// nothing queued or running, for a task whose dependencies have all finished, so it
  /// overtakes nothing. The caller holds enqueueMutex(); once claimed, the queue counts
  /// the task as pending (a wait covers it). Tasks other threads enqueue meanwhile may run
  /// on the worker at the same time; those that touch its buffers wait for it.
  bool claimForInline(const Task &task) {
    if (async_)
      return false;
    for (const TaskHandle &dependency : task.orderAfter)
      if (!dependency->done())
        return false;
    for (const TaskHandle &input : task.inputs)
      if (!input->done())
        return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_ != 0)
      return false;
    ++pending_;
    return true;
  }

  /// Runs a claimed task on the calling thread. Its kernels get a one-thread OpenMP team,
  /// as tiny work needs: a larger one would start a second thread pool for this thread.
  void runInline(Task &task) {
    std::exception_ptr error;
    {
      OneOpenMPThread single;
      error = run(task);
    }
    finish(task, error);
  }

private:
  void serve() {
    std::exception_ptr startError;
    if (async_) {
      try {
        backend_->start_worker(device_.id);
      } catch (...) {
        startError = std::current_exception(); // every task of this queue fails with it
      }
    }
    int appliedThreads = 0;
    for (;;) {
      Task task;
      int threads;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !tasks_.empty(); });
        task = std::move(tasks_.front());
        tasks_.pop_front();
        threads = threads_;
      }
      if (threads > 0 && threads != appliedThreads) {
#ifdef _OPENMP
        omp_set_num_threads(threads); // per thread: sizes this worker's OpenMP team only
#endif
        appliedThreads = threads;
      }
      if (async_) {
        if (startError) {
          waitOnHost(task);
          finish(task, startError);
          continue;
        }
        // Whatever the work launched before it returned or threw is on the stream: the
        // task finishes, and releases what it captured, only once its fence has passed.
        std::exception_ptr error;
        try {
          backend_->begin_task(device_.id, task.stream);
          error = run(task);
        } catch (...) {
          waitOnHost(task);
          error = std::current_exception();
        }
        IssuedWork issued;
        try {
          issued = backend_->issue(device_.id);
        } catch (...) {
          if (!error)
            error = std::current_exception();
          backend_->abandon_issue(device_.id);
          finish(task, error);
          continue;
        }
        task.state->set_fence(issued.fence);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          inFlight_.push_back(InFlight{std::move(issued), std::move(task), error});
        }
        landed_.notify_one();
        continue;
      }
      finish(task, run(task));
    }
  }

  /// Marks `task` done with `error` and releases what its work captured (its buffers)
  /// before anyone can see the queue idle: memory statistics and waiters then see the
  /// memory freed. `waitForPeers`: see GroupError::arrive.
  void finish(Task &task, std::exception_ptr error, bool waitForPeers = false) {
    // A collective rank ends with its peers' errors too (it summed their data). No
    // deadlock in waiting: a peer's completion thread reaches its rank after tasks
    // registered before the collective only, and collectives are queued in one order.
    if (task.group)
      error = task.group->arrive(error, waitForPeers);
    task.work = nullptr;
    task.reads.clear();
    task.writes.clear();
    task.inputs.clear();
    task.orderAfter.clear();
    task.state->finish(error);
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !firstError_)
      firstError_ = error;
    --pending_;
    if (pending_ == 0)
      idle_.notify_all();
  }

  /// Whether `dependency` was issued earlier to the stream `task` goes to, which orders
  /// it before anything issued later without a wait.
  bool orderedByStream(const TaskHandle &dependency, const Task &task) const {
    return async_ && dependency->queue() == this && dependency->stream() == task.stream;
  }

  /// Makes `task` follow `dependency`, which its stream does not order. On a GPU the
  /// task's stream waits for the dependency's fence on the device once the dependency has
  /// been issued (an earlier task of this GPU's other stream, or of another GPU), and the
  /// worker goes on; otherwise (a host task, event waits off, or another queue's task that
  /// a collective rank follows: the rank must know its inputs' errors before it launches)
  /// the worker waits on the host.
  void follow(const TaskHandle &dependency, const Task &task) {
    // A rank waits on the host for other queues' work; this queue's own work cannot
    // report an error before it launches anyway (it was issued, not finished).
    bool hostWait = task.group && dependency->queue() != this;
    if (async_ && !hostWait && gpu_event_waits()) {
      if (std::shared_ptr<void> fence = dependency->wait_issued())
        backend_->wait_on_device(device_.id, fence);
      return;
    }
    dependency->wait();
  }

  /// Waits on the host for everything `task` follows: a task that fails before following
  /// its dependencies on the device still finishes after them, so that a later task that
  /// follows only it is ordered after them too.
  static void waitOnHost(const Task &task) {
    for (const TaskHandle &dependency : task.orderAfter)
      dependency->wait();
    for (const TaskHandle &input : task.inputs)
      input->wait();
  }

  std::exception_ptr run(Task &task) {
    std::exception_ptr inputError;
    try {
      for (const TaskHandle &dependency : task.orderAfter)
        if (!orderedByStream(dependency, task))
          follow(dependency, task);
      for (const TaskHandle &input : task.inputs) {
        if (!orderedByStream(input, task))
          follow(input, task);
        // Failed already (when it was issued, or on the host): known now. Failing later
        // on a device: the completion thread passes that error on to this task. A task
        // that runs anyway (a collective rank) still follows every input.
        if (!inputError && input->done())
          inputError = input->error();
        if (inputError && !task.alwaysRun)
          break;
      }
    } catch (...) {
      waitOnHost(task); // a failed device-side wait: later tasks still order after these
      return std::current_exception();
    }
    // An input is poisoned: so is everything computed from it. A collective still takes
    // part (its peers would wait for it forever) and fails afterwards, with its peers:
    // the error is recorded before the work launches, so before any rank can finish.
    if (inputError && task.group)
      task.group->record(inputError);
    if (inputError && !task.alwaysRun)
      return inputError;
    try {
      task.work();
    } catch (...) {
      return std::current_exception();
    }
    return inputError;
  }

  struct InFlight {
    IssuedWork issued;
    Task task;
    std::exception_ptr error; // known when it was issued
  };

  /// An asynchronous queue's completion thread: finishes issued tasks in order as their
  /// fences pass.
  void complete() {
    for (;;) {
      InFlight flight;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        landed_.wait(lock, [&] { return !inFlight_.empty(); });
        flight = std::move(inFlight_.front());
        inFlight_.pop_front();
      }
      std::exception_ptr completion = backend_->complete(device_.id, flight.issued);
      std::exception_ptr error = flight.error ? flight.error : completion;
      // Tasks issued after an input ran before its failure was known. An input of this
      // queue was issued earlier, so it is finished by now; one of another queue has
      // passed its fence (this task waited for it on the device) but its own completion
      // thread may not have taken it yet: its error is waited for here.
      for (const TaskHandle &input : flight.task.inputs) {
        if (error)
          break;
        if (input->queue() != this)
          input->wait();
        if (input->done() && input->error())
          error = input->error();
      }
      // What the checks keep (a replaced workspace, error flags) and the fence go before
      // the task is seen finished: a wait then sees the memory released.
      flight.issued = {};
      finish(flight.task, error, /*waitForPeers=*/true);
    }
  }

  std::deque<InFlight> inFlight_;
  std::condition_variable landed_;
  std::thread completer_;

  Device device_;
  DeviceBackend *backend_; ///< null for a kind this build has no backend for
  bool async_;             ///< tasks finish when their fence passes (a GPU's)
  std::mutex enqueueMutex_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Task> tasks_;
  int64_t pending_ = 0;
  int threads_ = 0;
  std::exception_ptr firstError_;
  std::thread worker_;
};

struct QueueRegistry {
  std::mutex mutex;
  std::unordered_map<Device, DeviceQueue *> queues;
  /// Queues of no device (the communication queue): waited for like the others, but
  /// taking no share of the host's cores.
  std::vector<DeviceQueue *> apart;
};

// Queues live for the whole process: their worker threads may still be running while
// static objects are destroyed. At exit, queued work is drained first.
QueueRegistry &registry() {
  static QueueRegistry *instance = new QueueRegistry;
  return *instance;
}

/// Waits for every queue to go idle when the thread that owns it ends. Each thread that
/// enqueues work owns one; for the main thread this runs when main returns, before any
/// exit handler or static destructor (C++ destroys a thread's thread_local objects
/// first). Queued work must not outlive the libraries it calls: oneDNN, for one, sets up
/// static state lazily and tears it down at exit.
std::vector<DeviceQueue *> allQueues() {
  QueueRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<DeviceQueue *> queues = r.apart;
  for (auto &entry : r.queues)
    queues.push_back(entry.second);
  return queues;
}

struct DrainAtThreadExit {
  ~DrainAtThreadExit() {
    for (DeviceQueue *queue : allQueues())
      queue->waitIdle();
  }
};

/// 0: the machine's.
std::atomic<int> hostCores{0};

/// Several host devices share the cores: one thread each, unless set otherwise. The
/// caller holds r.mutex.
void shareHostCores(QueueRegistry &r) {
  int hostQueues = 0;
  for (auto &entry : r.queues)
    hostQueues += entry.first.is_host();
  int cores = hostCores.load();
  if (cores <= 0)
    cores = int(std::max(1u, std::thread::hardware_concurrency()));
  for (auto &entry : r.queues)
    if (entry.first.is_host())
      entry.second->setThreads(hostQueues > 1 ? 1 : cores);
}

DeviceQueue &queueFor(Device device) {
  // Queues are never destroyed: a thread may remember the one it used last.
  thread_local Device lastDevice;
  thread_local DeviceQueue *lastQueue = nullptr;
  if (lastQueue && lastDevice == device)
    return *lastQueue;
  QueueRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  DeviceQueue *&queue = r.queues[device];
  if (!queue) {
    queue = new DeviceQueue(device);
    if (device.is_host())
      shareHostCores(r);
  }
  lastDevice = device;
  lastQueue = queue;
  return *queue;
}

/// The communication queue (enqueue_communication): a host queue of one thread.
DeviceQueue &communicationQueue() {
  static DeviceQueue *queue = [] {
    auto *made = new DeviceQueue(cpu());
    made->setThreads(1);
    QueueRegistry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.apart.push_back(made);
    return made;
  }();
  return *queue;
}

void pruneFinished(std::vector<TaskHandle> &tasks) {
  tasks.erase(std::remove_if(tasks.begin(), tasks.end(),
                             [](const TaskHandle &t) { return t->done(); }),
              tasks.end());
}

} // namespace

//===----------------------------------------------------------------------===//
// Buffers and the public entry points
//===----------------------------------------------------------------------===//

uint64_t Buffer::next_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Buffer::Buffer(Device device, size_t bytes) : id_(next_id()) {
  MemoryBlock block = allocate_block(device, bytes);
  own_.emplace(block.data, block.bytes, device); // gives the block back when destroyed
}

void Buffer::wait_to_read() const {
  TaskHandle writer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    writer = writer_;
  }
  if (!writer)
    return;
  writer->wait();
  if (std::exception_ptr error = writer->error())
    std::rethrow_exception(error);
}

void Buffer::wait_to_write() const {
  std::vector<TaskHandle> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending = readers_;
    if (writer_)
      pending.push_back(writer_);
  }
  for (const TaskHandle &task : pending)
    task->wait();
}

namespace detail {

struct Registrar {
  /// Makes `task` wait for the last writers of `reads` and, for `writes`, for their last
  /// writer and readers; then records it as their reader and writer.
  static void track(Task &task) {
    // One registration at a time: two threads registering tasks that each read what the
    // other writes would otherwise each order after the other (a cycle: both wait
    // forever). Uncontended, as it nearly always is, this costs a lock and an unlock.
    static std::mutex *registering = new std::mutex;
    std::lock_guard<std::mutex> serial(*registering);
    // A writer that finished without an error has nothing to wait for or pass on: most
    // tensors an op reads were written long ago.
    auto pending = [](const TaskHandle &t) { return t && !(t->done() && !t->error()); };
    for (const auto &buffer : task.reads) {
      std::lock_guard<std::mutex> lock(buffer->mutex_);
      if (pending(buffer->writer_))
        task.inputs.push_back(buffer->writer_);
      if (buffer->readers_.size() >= buffer->prune_readers_at_) {
        pruneFinished(buffer->readers_);
        buffer->prune_readers_at_ = std::max<size_t>(8, 2 * buffer->readers_.size());
      }
      buffer->readers_.push_back(task.state);
    }
    for (const auto &buffer : task.writes) {
      std::lock_guard<std::mutex> lock(buffer->mutex_);
      if (buffer->writer_ && !buffer->writer_->done())
        task.orderAfter.push_back(buffer->writer_);
      for (const TaskHandle &reader : buffer->readers_)
        if (reader != task.state && !reader->done())
          task.orderAfter.push_back(reader);
      buffer->readers_.clear();
      buffer->prune_readers_at_ = 8;
      buffer->writer_ = task.state;
      ++buffer->version_;
    }
  }
};

} // namespace detail

namespace {

std::atomic<bool> inlineTinyTasks{[] {
  const char *flag = std::getenv("DLC_INLINE_TINY_TASKS");
  return !(flag && std::string(flag) == "0");
}()};

/// Makes a task of `work` on `queue`, ordered after what it must follow.
Task makeTask(DeviceQueue &queue, BufferList &&reads, BufferList &&writes, TaskWork &&work,
              std::shared_ptr<GroupError> group, int stream = 0) {
  Task task;
  task.alwaysRun = group != nullptr;
  task.group = std::move(group);
  task.stream = stream;
  task.state = std::make_shared<TaskState>();
  task.state->set_queue(&queue, stream);
  task.work = std::move(work);
  task.reads = std::move(reads);
  task.writes = std::move(writes);
  return task;
}

/// Pushes a registered task; the caller holds queue.enqueueMutex(), so a task another
/// thread finds as a writer on this queue is already in it, ahead of the finder (a GPU
/// queue relies on that order instead of waiting).
TaskHandle pushLocked(DeviceQueue &queue, Task task) {
  TaskHandle state = task.state;
  thread_local DrainAtThreadExit drainAtExit;
  (void)drainAtExit;
  queue.push(std::move(task));
  return state;
}

TaskHandle enqueueLocked(DeviceQueue &queue, Task task) {
  detail::Registrar::track(task);
  return pushLocked(queue, std::move(task));
}

} // namespace

void set_inline_tiny_tasks(bool enabled) { inlineTinyTasks = enabled; }
bool inline_tiny_tasks_enabled() { return inlineTinyTasks.load(std::memory_order_relaxed); }

TaskHandle enqueue(Device device, BufferList &&reads, BufferList &&writes, TaskWork &&work,
                   TaskCost cost) {
  DeviceQueue &queue = queueFor(device);
  Task task = makeTask(queue, std::move(reads), std::move(writes), std::move(work), nullptr);
  {
    std::lock_guard<std::mutex> ordered(queue.enqueueMutex());
    if (cost != TaskCost::tiny || !device.is_host() || !inline_tiny_tasks_enabled())
      return enqueueLocked(queue, std::move(task));
    detail::Registrar::track(task);
    if (!queue.claimForInline(task))
      return pushLocked(queue, std::move(task));
  }
  // Claimed: registered on its buffers, so later tasks order after it, and run outside
  // the enqueue lock (other threads may enqueue meanwhile; their tasks wait for it).
  TaskHandle state = task.state;
  queue.runInline(task);
  return state;
}

TaskHandle enqueue_communication(BufferList &&reads, BufferList &&writes, TaskWork &&work) {
  DeviceQueue &queue = communicationQueue();
  Task task = makeTask(queue, std::move(reads), std::move(writes), std::move(work), nullptr);
  std::lock_guard<std::mutex> ordered(queue.enqueueMutex());
  return enqueueLocked(queue, std::move(task));
}

std::vector<TaskHandle> enqueue_collective(std::vector<CollectiveRank> ranks) {
  // One collective at a time, holding every involved queue's enqueue lock (taken in one
  // global order, so two collectives never deadlock on them) while its ranks go in.
  static std::mutex *collectives = new std::mutex;
  std::lock_guard<std::mutex> serial(*collectives);
  std::vector<DeviceQueue *> queues;
  for (const CollectiveRank &rank : ranks)
    queues.push_back(&queueFor(rank.device));
  std::vector<DeviceQueue *> lockOrder = queues;
  std::sort(lockOrder.begin(), lockOrder.end(), std::less<DeviceQueue *>());
  lockOrder.erase(std::unique(lockOrder.begin(), lockOrder.end()), lockOrder.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (DeviceQueue *queue : lockOrder)
    locks.emplace_back(queue->enqueueMutex());
  auto group = std::make_shared<GroupError>();
  group->ranks = ranks.size();
  std::vector<TaskHandle> tasks;
  for (size_t i = 0; i < ranks.size(); ++i)
    tasks.push_back(enqueueLocked(*queues[i], makeTask(*queues[i], std::move(ranks[i].reads),
                                                       std::move(ranks[i].writes),
                                                       std::move(ranks[i].work), group)));
  return tasks;
}

void waitall() {
  std::vector<DeviceQueue *> queues = allQueues();
  for (DeviceQueue *queue : queues)
    queue->waitIdle();
  // Every queue's error is taken, the first rethrown: an error several queues met (a
  // failed collective) is reported once, not again at the next waitall.
  std::exception_ptr first;
  for (DeviceQueue *queue : queues)
    if (std::exception_ptr error = queue->takeFirstError(); error && !first)
      first = error;
  if (first)
    std::rethrow_exception(first);
}

void wait_for_device(Device device) { queueFor(device).waitIdle(); }

TaskHandle enqueue_copy(const std::shared_ptr<Buffer> &from, const void *source,
                        const std::shared_ptr<Buffer> &to, void *target, size_t bytes) {
  Device fromDevice = from->device(), toDevice = to->device();
  if (fromDevice.is_host() && toDevice.is_host())
    return enqueue(toDevice, {from}, {to},
                   [target, source, bytes] { std::memcpy(target, source, bytes); });
  Device runner = toDevice.is_host() ? fromDevice : toDevice;
  DeviceBackend &backend = backend_for(runner, "copyto(): copies between " + fromDevice.str() +
                                                   " and " + toDevice.str());
  // Between host memory and a GPU: on the copy stream, beside the kernels, unless the
  // GPU side is a region of a compiled program's arena, whose memory other regions reuse
  // in the compute stream's order without a buffer dependency to follow.
  const std::shared_ptr<Buffer> &gpuSide = toDevice.is_host() ? from : to;
  bool copyStream = (fromDevice.is_host() || toDevice.is_host()) && gpu_copy_stream() &&
                    !gpuSide->is_region();
  DeviceQueue &queue = queueFor(runner);
  Task task = makeTask(queue, {from}, {to},
                       [&backend, target, toDevice, source, fromDevice, bytes] {
                         backend.copy_async(target, toDevice, source, fromDevice, bytes);
                       },
                       nullptr, copyStream ? kCopyStream : kComputeStream);
  std::lock_guard<std::mutex> ordered(queue.enqueueMutex());
  return enqueueLocked(queue, std::move(task));
}

void set_device_threads(Device device, int threads) { queueFor(device).setThreads(threads); }

void set_host_cores(int cores) {
  hostCores = cores;
  QueueRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  shareHostCores(r);
}

} // namespace dlc
