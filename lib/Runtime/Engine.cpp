//===- Engine.cpp - per-device worker threads and buffer ordering -------------===//
#include "dlc/Runtime/Engine.h"


#include <algorithm>
#include <cstdlib>
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
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_; });
}

bool TaskState::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::exception_ptr TaskState::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void TaskState::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  finished_.notify_all();
}

//===----------------------------------------------------------------------===//
// Queues
//===----------------------------------------------------------------------===//

namespace {

struct Task {
  std::function<void()> work;
  std::vector<TaskHandle> inputs;     // wait, and fail with their error
  std::vector<TaskHandle> orderAfter; // wait only
  TaskHandle state;
};

class DeviceQueue {
public:
  explicit DeviceQueue(Device device) : device_(device), worker_([this] { serve(); }) {}

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

private:
  void serve() {
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
      std::exception_ptr error = run(task);
      // Release what the work captured (its buffers) before anyone can see the queue
      // idle: memory statistics and waiters then see the memory freed.
      task.work = nullptr;
      task.inputs.clear();
      task.orderAfter.clear();
      task.state->finish(error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error && !firstError_)
          firstError_ = error;
        --pending_;
        if (pending_ == 0)
          idle_.notify_all();
      }
    }
  }

  static std::exception_ptr run(Task &task) {
    for (const TaskHandle &dependency : task.orderAfter)
      dependency->wait();
    for (const TaskHandle &input : task.inputs) {
      input->wait();
      if (std::exception_ptr error = input->error())
        return error; // an input is poisoned: so is everything computed from it
    }
    try {
      task.work();
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  Device device_;
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
struct DrainAtThreadExit {
  ~DrainAtThreadExit() {
    QueueRegistry &r = registry();
    std::vector<DeviceQueue *> queues;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      for (auto &entry : r.queues)
        queues.push_back(entry.second);
    }
    for (DeviceQueue *queue : queues)
      queue->waitIdle();
  }
};

std::vector<DeviceQueue *> allQueues() {
  QueueRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<DeviceQueue *> queues;
  for (auto &entry : r.queues)
    queues.push_back(entry.second);
  return queues;
}

DeviceQueue &queueFor(Device device) {
  QueueRegistry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  DeviceQueue *&queue = r.queues[device];
  if (!queue) {
    queue = new DeviceQueue(device);
    // Several host devices share the cores: one thread each, unless set otherwise.
    int hostQueues = 0;
    for (auto &entry : r.queues)
      hostQueues += entry.first.is_host();
    if (device.is_host()) {
      int cores = int(std::max(1u, std::thread::hardware_concurrency()));
      for (auto &entry : r.queues)
        if (entry.first.is_host())
          entry.second->setThreads(hostQueues > 1 ? 1 : cores);
    }
  }
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

TaskHandle enqueue(Device device, const std::vector<std::shared_ptr<Buffer>> &reads,
                   const std::vector<std::shared_ptr<Buffer>> &writes,
                   std::function<void()> work) {
  Task task;
  task.state = std::make_shared<TaskState>();
  // The buffers stay alive until the work has run.
  task.work = [work = std::move(work), reads, writes] { work(); };
  for (const auto &buffer : reads) {
    std::lock_guard<std::mutex> lock(buffer->mutex_);
    if (buffer->writer_)
      task.inputs.push_back(buffer->writer_);
    pruneFinished(buffer->readers_);
    buffer->readers_.push_back(task.state);
  }
  for (const auto &buffer : writes) {
    std::lock_guard<std::mutex> lock(buffer->mutex_);
    if (buffer->writer_)
      task.orderAfter.push_back(buffer->writer_);
    for (const TaskHandle &reader : buffer->readers_)
      if (reader != task.state)
        task.orderAfter.push_back(reader);
    buffer->readers_.clear();
    buffer->writer_ = task.state;
  }
  TaskHandle state = task.state;
  thread_local DrainAtThreadExit drainAtExit;
  (void)drainAtExit;
  queueFor(device).push(std::move(task));
  return state;
}

void waitall() {
  std::vector<DeviceQueue *> queues = allQueues();
  for (DeviceQueue *queue : queues)
    queue->waitIdle();
  for (DeviceQueue *queue : queues)
    if (std::exception_ptr error = queue->takeFirstError())
      std::rethrow_exception(error);
}

void wait_for_device(Device device) { queueFor(device).waitIdle(); }



void set_device_threads(Device device, int threads) { queueFor(device).setThreads(threads); }

} // namespace dlc
