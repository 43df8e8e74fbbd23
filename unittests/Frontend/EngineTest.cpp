//===- EngineTest.cpp - queues, errors surfacing, allocator ------------------===//
#include "dlc/dlc.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <chrono>
#include <thread>

using namespace dlc;

TEST(Engine, KernelErrorSurfacesAtTheNextRead) {
  Tensor a = np::ones({4}, DType::i32);
  Tensor zero = np::zeros({4}, DType::i32);
  Tensor broken = a / zero; // returns at once; the kernel fails on the worker
  Tensor downstream = broken + a;
  try {
    downstream.wait_to_read();
    FAIL() << "expected the kernel's error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("integer division by zero"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(broken.to_vector<int>(), Error);
  EXPECT_THROW(waitall(), Error);
  EXPECT_NO_THROW(waitall()) << "waitall reports an error once";
  // The queue keeps working after a failure.
  EXPECT_EQ((a + a).to_vector<int>(), std::vector<int>(4, 2));
  // Overwriting a failed tensor replaces the error.
  np::ones({4}, DType::i32).copyto(broken);
  EXPECT_EQ(broken.to_vector<int>(), std::vector<int>(4, 1));
}

TEST(Engine, CopiesOrderThemselvesAcrossQueues) {
  // A long chain on cpu(0), copied to cpu(1) while it may still be running.
  Tensor x = np::zeros({1 << 16}, cpu(0));
  for (int i = 0; i < 50; ++i)
    x = x + 1.0;
  Tensor y = x.copyto(cpu(1));
  Tensor z = y * 2.0;
  std::vector<float> values = z.to_vector<float>();
  EXPECT_EQ(values.front(), 100.f);
  EXPECT_EQ(values.back(), 100.f);
  // A later write to the source must not overtake the pending copy's read.
  Tensor source = np::full({1 << 16}, 5.0, DType::f32, cpu(2));
  Tensor copied = source.copyto(cpu(3));
  np::full({1 << 16}, 9.0, DType::f32, cpu(2)).copyto(source);
  EXPECT_EQ(copied.to_vector<float>().back(), 5.f);
  EXPECT_EQ(source.to_vector<float>().back(), 9.f);
}

// A collective's ranks: every rank's work runs, also the one whose input failed (its
// peers would wait for it), and that rank ends with the input's error; ranks queue in one
// step, in the same order on every queue.
TEST(Engine, CollectiveRanksRunEvenWhenAnInputFailed) {
  Tensor zero = np::zeros({4}, DType::i32, cpu(0));
  Tensor failed = np::ones({4}, DType::i32, cpu(0)) / zero; // fails on the worker
  Tensor fine = np::ones({4}, DType::i32, cpu(1));
  std::atomic<int> ran{0};
  std::vector<CollectiveRank> ranks;
  for (const Tensor &input : {failed, fine})
    ranks.push_back({input.device(), {input.buffer()}, {}, [&ran] { ++ran; }});
  std::vector<TaskHandle> tasks = enqueue_collective(std::move(ranks));
  ASSERT_EQ(tasks.size(), 2u);
  for (const TaskHandle &task : tasks)
    task->wait();
  EXPECT_EQ(ran.load(), 2);
  ASSERT_TRUE(tasks[0]->error());
  EXPECT_THROW(std::rethrow_exception(tasks[0]->error()), Error);
  EXPECT_THROW(waitall(), Error);
  EXPECT_NO_THROW(waitall());
}

namespace {
/// A task that holds `device`'s worker until open() is called.
struct Gate {
  std::atomic<bool> opened{false};
  explicit Gate(Device device) {
    enqueue(device, {}, {}, [this] {
      while (!opened)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
  }
  void open() { opened = true; }
};
} // namespace

// A tiny task on an idle host queue runs on the calling thread before enqueue returns;
// behind queued work it waits its turn on the worker, in order.
TEST(Engine, TinyTaskRunsOnTheCallerOnlyWhenTheQueueIsIdle) {
  waitall();
  bool wasInline = inline_tiny_tasks_enabled();
  set_inline_tiny_tasks(true);
  Tensor target = np::zeros({4});
  std::thread::id ranOn;
  TaskHandle task = enqueue(cpu(0), {}, {target.buffer()},
                            [&] { ranOn = std::this_thread::get_id(); }, TaskCost::tiny);
  EXPECT_TRUE(task->done());
  EXPECT_EQ(ranOn, std::this_thread::get_id());

  std::vector<int> order;
  auto gate = std::make_unique<Gate>(cpu(0));
  enqueue(cpu(0), {}, {target.buffer()}, [&] { order.push_back(1); });
  TaskHandle behind = enqueue(cpu(0), {}, {target.buffer()}, [&] {
    order.push_back(2);
    ranOn = std::this_thread::get_id();
  }, TaskCost::tiny);
  EXPECT_FALSE(behind->done()) << "ran ahead of the queued work";
  gate->open();
  waitall();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_NE(ranOn, std::this_thread::get_id());

  // Switched off (DLC_INLINE_TINY_TASKS=0), every task goes to the worker.
  set_inline_tiny_tasks(false);
  enqueue(cpu(0), {}, {target.buffer()}, [&] { ranOn = std::this_thread::get_id(); },
          TaskCost::tiny);
  waitall();
  EXPECT_NE(ranOn, std::this_thread::get_id());
  set_inline_tiny_tasks(wasInline);
}

// A tiny task whose input another queue has not written yet waits for it, even when its
// own queue is idle.
TEST(Engine, TinyTaskWaitsForAnInputFromAnotherQueue) {
  Tensor value = np::zeros({4}, cpu(1));
  waitall();
  std::atomic<int> written{0};
  int seen = -1;
  Gate gate(cpu(1));
  enqueue(cpu(1), {}, {value.buffer()}, [&] { written = 7; });
  TaskHandle reader =
      enqueue(cpu(0), {value.buffer()}, {}, [&] { seen = written; }, TaskCost::tiny);
  EXPECT_FALSE(reader->done()) << "ran before its input was written";
  gate.open();
  waitall();
  EXPECT_EQ(seen, 7);
}

// A sum over processes waiting for a peer (here: a task on the communication queue that
// waits until released) holds back no device's queue; it still follows the writer of
// what it reads, the tasks that read its result follow it, and waitall waits for it.
TEST(Engine, TheCommunicationQueueHoldsBackNoDevice) {
  Tensor gradient = np::zeros({4}, cpu(0)), sum = np::zeros({4}, cpu(0));
  waitall();
  std::atomic<bool> released{false};
  std::atomic<int> written{0};
  int summed = -1, afterSum = -1;
  enqueue(cpu(0), {}, {gradient.buffer()}, [&] { written = 5; });
  TaskHandle communication = enqueue_communication({gradient.buffer()}, {sum.buffer()}, [&] {
    summed = written;
    while (!released)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  });
  // The rest of the backward on cpu(0) runs while the sum waits.
  TaskHandle backward = enqueue(cpu(0), {}, {}, [] {});
  backward->wait();
  EXPECT_FALSE(communication->done());
  TaskHandle update = enqueue(cpu(0), {sum.buffer()}, {}, [&] { afterSum = summed; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(update->done()) << "the update ran before the sum it reads";
  released = true;
  waitall();
  EXPECT_TRUE(communication->done());
  EXPECT_EQ(summed, 5) << "the sum ran before the gradient it reads was written";
  EXPECT_EQ(afterSum, 5);
}

// Readers of one buffer are pruned as the list grows; a writer on another queue must
// still wait for every one of them.
TEST(Engine, WriterWaitsForEveryReaderOfAManyTimesReadBuffer) {
  Tensor shared = np::zeros({4}, cpu(0));
  shared.wait_to_read();
  std::atomic<int> reads{0};
  int readsSeenByWriter = -1;
  {
    Gate gate(cpu(0));
    for (int i = 0; i < 100; ++i)
      enqueue(cpu(0), {shared.buffer()}, {}, [&] { ++reads; }, TaskCost::tiny);
    enqueue(cpu(1), {}, {shared.buffer()}, [&] { readsSeenByWriter = reads; });
    gate.open();
    waitall();
  }
  EXPECT_EQ(readsSeenByWriter, 100);
}

// An error of a tiny task run on the caller surfaces at the next read, not at the call.
TEST(Engine, TinyTaskErrorSurfacesAtTheNextRead) {
  waitall();
  Tensor target = np::zeros({4});
  EXPECT_NO_THROW(enqueue(cpu(0), {}, {target.buffer()},
                          [] { throw Error("tiny task failed"); }, TaskCost::tiny));
  EXPECT_THROW(target.wait_to_read(), Error);
  EXPECT_THROW(waitall(), Error);
}

// A GPU task's fence is handed to followers from the moment it is issued until the task
// is done; the state then lets go of it (the event returns to its pool once the last
// follower that took it has let go too). A task never issued (a host task) has none:
// waiting for its issue is waiting for it to finish.
TEST(Engine, TaskStateHandsOutItsFenceFromIssueUntilDone) {
  TaskState gpuTask;
  std::atomic<int> recycled{0};
  int event = 0;
  std::thread worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gpuTask.set_fence(std::shared_ptr<void>(&event, [&](void *) { ++recycled; }));
  });
  std::shared_ptr<void> fence = gpuTask.wait_issued(); // blocks until the worker issues it
  worker.join();
  EXPECT_EQ(fence.get(), &event);
  EXPECT_FALSE(gpuTask.done());
  gpuTask.finish(nullptr);
  EXPECT_EQ(gpuTask.wait_issued(), nullptr) << "a finished task needs no device-side wait";
  EXPECT_EQ(recycled.load(), 0) << "a follower still holds the fence";
  fence.reset();
  EXPECT_EQ(recycled.load(), 1);
  gpuTask.set_fence(std::shared_ptr<void>(&event, [&](void *) { ++recycled; }));
  EXPECT_EQ(recycled.load(), 2) << "a fence set after the task finished is dropped at once";

  TaskState hostTask;
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    hostTask.finish(nullptr);
  });
  EXPECT_EQ(hostTask.wait_issued(), nullptr);
  EXPECT_TRUE(hostTask.done());
  finisher.join();
}

// Two threads enqueue copies in opposite directions between the same two tensors: each
// copy reads what the other writes. Registered one at a time, every pair is ordered one
// way; registered interleaved, each could order after the other and both wait forever.
TEST(Engine, OppositeCopiesFromTwoThreadsNeverWaitForEachOther) {
  Tensor p = np::ones({64}, DType::f32, cpu(0)), q = np::zeros({64}, DType::f32, cpu(1));
  auto copies = [](Tensor from, Tensor to) {
    for (int i = 0; i < 3000; ++i)
      from.copyto(to);
  };
  std::thread forward(copies, p, q), backward(copies, q, p);
  forward.join();
  backward.join();
  waitall();
  std::vector<float> a = p.to_vector<float>(), b = q.to_vector<float>();
  EXPECT_EQ(a, b) << "the last copy made both equal";
}

TEST(Allocator, StatisticsAndReuse) {
  Device device = cpu(7);
  MemoryStats before = memory_stats(device);
  {
    Tensor t = np::zeros({1000}, device);
    t.wait_to_read();
    MemoryStats during = memory_stats(device);
    EXPECT_GE(during.bytes_in_use - before.bytes_in_use, 4000);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
  }
  wait_for_device(device);
  MemoryStats after = memory_stats(device);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.bytes_cached, 4000);
  Tensor again = np::zeros({1000}, device);
  again.wait_to_read();
  EXPECT_GT(memory_stats(device).cache_hits, after.cache_hits) << "same size reuses the block";
}

TEST(Allocator, HostCacheStaysWithinThePeakOfMemoryInUse) {
  // Blocks of ever new sizes (images of every size through a loader) piled up in the
  // cache without bound: host allocations rarely fail, so nothing emptied it (the image
  // fuzzer ran out of memory on it).
  Device device = cpu(9);
  for (int64_t mib = 1; mib <= 300; ++mib) { // each size new: blocks round to 1 MiB
    Tensor t = Tensor::empty({mib << 18}, DType::f32, device);
    t.wait_to_read();
  }
  wait_for_device(device);
  MemoryStats stats = memory_stats(device);
  EXPECT_LE(stats.bytes_cached, std::max<int64_t>(int64_t(256) << 20, stats.peak_bytes_in_use))
      << "45 GiB of distinct sizes went through";
  EXPECT_GT(stats.bytes_cached, 0) << "what fits is still cached";
}

TEST(Allocator, HostCacheGivesBackTheLeastRecentlyFreedBlocks) {
  // A compiled program's arena, freed after each call into a cache that eager work had
  // filled, went back to the system every call (the block just freed was the one given
  // back), and the next call faulted in every page of it again.
  Device device = cpu(10);
  constexpr size_t MiB = size_t(1) << 20;
  {
    std::vector<std::shared_ptr<Storage>> eager; // 1 + 2 + ... + 20 = 210 MiB
    for (size_t mib = 1; mib <= 20; ++mib)
      eager.push_back(allocate(device, mib * MiB));
    for (auto &block : eager) // freed from the 1 MiB block on
      block.reset();
  }
  ASSERT_EQ(memory_stats(device).bytes_cached, int64_t(210 * MiB));
  allocate(device, 100 * MiB).reset(); // over the 256 MiB cap: older blocks make room
  MemoryStats freed = memory_stats(device);
  EXPECT_LE(freed.bytes_cached, int64_t(256 * MiB));
  auto arena = allocate(device, 100 * MiB);
  EXPECT_EQ(memory_stats(device).cache_hits, freed.cache_hits + 1)
      << "the block freed last is the one the cache kept";
  arena.reset();
  auto oldest = allocate(device, 1 * MiB);
  EXPECT_EQ(memory_stats(device).cache_hits, freed.cache_hits + 1)
      << "the block freed first is the one given back";
}

TEST(Allocator, OutOfMemoryNamesDeviceAndRequest) {
  Device device = cpu(8);
  set_memory_limit(device, 1 << 20);
  try {
    np::zeros({1 << 20}, device); // 4 MiB
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("cpu(8)"), std::string::npos) << message;
    EXPECT_NE(message.find("4194304 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("limit"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(np::zeros({1000}, device).wait_to_read());
  set_memory_limit(device, 0);
  EXPECT_NO_THROW(np::zeros({1 << 20}, device).wait_to_read());
}

namespace {
/// Counts how many live copies of it exist.
struct Counted {
  explicit Counted(std::shared_ptr<int> live) : live_(std::move(live)) { ++*live_; }
  Counted(const Counted &other) : live_(other.live_) { ++*live_; }
  Counted(Counted &&other) noexcept : live_(other.live_) { ++*live_; }
  ~Counted() { --*live_; }
  std::shared_ptr<int> live_;
};
} // namespace

TEST(TaskWork, RunsSmallAndLargeCallablesAndDestroysEachOnce) {
  auto live = std::make_shared<int>(0);
  int runs = 0;
  {
    Counted small(live);
    TaskWork inlineWork([small, &runs] { ++runs; });
    std::array<char, 2 * TaskWork::kInlineBytes> padding{};
    TaskWork heapWork([small, padding, &runs] { runs += 1 + padding[0]; });
    EXPECT_EQ(*live, 3) << "the local and one copy inside each work";
    TaskWork moved(std::move(inlineWork));
    TaskWork movedAgain;
    movedAgain = std::move(heapWork);
    EXPECT_FALSE(inlineWork) << "a moved-from work is empty";
    EXPECT_FALSE(heapWork);
    EXPECT_EQ(*live, 3) << "moving neither copies nor loses the callable";
    moved();
    movedAgain();
    EXPECT_EQ(runs, 2);
    moved = nullptr;
    EXPECT_EQ(*live, 2) << "clearing destroys the callable";
  }
  EXPECT_EQ(*live, 0);
  // Move-only callables, which std::function refuses.
  auto owned = std::make_unique<int>(41);
  TaskWork moveOnly([owned = std::move(owned), &runs] { runs += *owned; });
  moveOnly();
  EXPECT_EQ(runs, 43);
}

TEST(BufferList, KeepsOrderFromInlineToHeapAndReleasesOnClear) {
  std::vector<std::shared_ptr<Buffer>> buffers;
  for (int i = 0; i < 7; ++i)
    buffers.push_back(std::make_shared<Buffer>(cpu(), 16));
  BufferList list;
  for (size_t i = 0; i < buffers.size(); ++i) {
    list.push_back(buffers[i]);
    ASSERT_EQ(list.size(), i + 1);
    size_t k = 0;
    for (const std::shared_ptr<Buffer> &held : list)
      EXPECT_EQ(held, buffers[k++]) << "after " << i + 1 << " pushes";
  }
  EXPECT_EQ(buffers[0].use_count(), 2);
  BufferList moved(std::move(list));
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(moved.size(), buffers.size());
  EXPECT_EQ(buffers[6].use_count(), 2);
  moved.clear();
  EXPECT_EQ(buffers[0].use_count(), 1) << "clear releases the buffers";
  EXPECT_EQ(buffers[6].use_count(), 1);

  BufferList few = {buffers[1], buffers[2]};
  BufferList fromVector(std::vector<std::shared_ptr<Buffer>>(buffers.begin(), buffers.end()));
  few = std::move(fromVector);
  ASSERT_EQ(few.size(), buffers.size());
  EXPECT_EQ(*few.begin(), buffers[0]);
  EXPECT_EQ(buffers[1].use_count(), 2) << "assignment released what the list held";
}

TEST(Engine, ReusedKernelArgumentsFollowEachCallsArityAndShapes) {
  // Eager calls reuse their kernel arguments (shapes and all) from call to call: calls of
  // changing arity and rank, tiny ones run on the caller and large ones queued, must
  // each see their own.
  Tensor matrix = np::array(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor row = np::array(std::vector<float>{10, 20, 30});
  Tensor big = np::ones({1 << 16});
  for (int round = 0; round < 3; ++round) {
    Tensor sum = matrix + row;           // rank 2 and 1 in, rank 2 out
    Tensor flipped = np::negative(row);  // one input
    Tensor picked = np::where(matrix > np::full({2, 3}, 3.0), matrix, sum); // 3 inputs
    Tensor large = big + big;            // queued for the worker
    EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
    EXPECT_EQ(flipped.to_vector<float>(), (std::vector<float>{-10, -20, -30}));
    EXPECT_EQ(picked.to_vector<float>(), (std::vector<float>{11, 22, 33, 4, 5, 6}));
    EXPECT_EQ(large.shape(), Shape{1 << 16});
    EXPECT_EQ(large.to_vector<float>()[12345], 2.0f);
  }
}
