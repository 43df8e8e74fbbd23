//===- CudaEmulator.cpp - launches on fibers, runtime calls on host memory ---===//
//
// Each GPU thread of a block is a ucontext fiber with its own stack. The scheduler
// resumes the block's fibers in order; a fiber runs until it finishes or reaches
// __syncthreads. When every fiber still running waits at the barrier, the next round
// resumes them all: the barrier's meaning on a GPU, where threads that have exited no
// longer count. Most kernels have no barrier; once a kernel's first launch on a thread
// has shown that, its threads run as plain calls, a hundred times faster than fibers
// (each fiber switch is a system call).
//
//===----------------------------------------------------------------------===//
#include "CudaEmulator.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace dlc_emu {

namespace {

constexpr size_t kStackBytes = 256 * 1024; // deep enough for any kernel's locals

struct Fiber {
  ucontext_t context;
  uint3 index;
  bool finished = false;
};

struct Grid {
  dim3 grid, block;
  bool plainCalls = false; // threads run as calls, not fibers (no barriers)
  bool reachedBarrier = false;
  uint3 blockIndex{0, 0, 0};
  const std::function<void()> *body = nullptr;
  std::vector<Fiber> fibers;
  Fiber *current = nullptr;
  ucontext_t scheduler;
  std::exception_ptr failure; // the first exception a thread threw
};

// Each thread runs one launch at a time (streams of emulated GPUs run side by side).
thread_local Grid *running = nullptr;
thread_local Counters totals;

/// Stacks, kept between launches (a block has at most 1024 threads), each above an
/// inaccessible guard page: a kernel overflowing its stack faults instead of writing
/// into its neighbour's.
char *stackOf(size_t thread) {
  static thread_local std::vector<char *> stacks;
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  while (stacks.size() <= thread) {
    void *block = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED || mprotect(block, page, PROT_NONE) != 0)
      throw std::runtime_error("CUDA emulator: cannot map a fiber stack");
    stacks.push_back(static_cast<char *>(block) + page);
  }
  return stacks[thread];
}

void threadEntry() {
  Grid &g = *running;
  try {
    (*g.body)();
  } catch (...) {
    if (!g.failure)
      g.failure = std::current_exception();
  }
  g.current->finished = true;
  // Returning resumes uc_link: the scheduler.
}

void fail(const std::string &what) {
  throw std::invalid_argument("CUDA emulator: " + what);
}

Grid &inLaunch(const char *what) {
  if (!running)
    fail(std::string(what) + " outside a kernel launch");
  return *running;
}

/// Makes fiber `t` of `g` ready to start the kernel. Not inlined: getcontext "returns
/// twice" for the compiler, which would then worry about the caller's loop variables.
[[gnu::noinline]] void startFiber(Grid &g, size_t t) {
  Fiber &f = g.fibers[t];
  f.finished = false;
  f.index = {unsigned(t % g.block.x), unsigned(t / g.block.x % g.block.y),
             unsigned(t / (size_t(g.block.x) * g.block.y))};
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stackOf(t);
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = &g.scheduler;
  makecontext(&f.context, threadEntry, 0);
}

/// Runs the block at g.blockIndex to its end.
void runBlock(Grid &g) {
  for (size_t t = 0; t < g.fibers.size(); ++t)
    startFiber(g, t);
  // Rounds alternate the order the threads run in, so that a kernel missing a barrier
  // reads what neither lower- nor higher-numbered threads have written yet, as on a GPU.
  for (bool backwards = false;; backwards = !backwards) {
    bool anyWaiting = false;
    size_t n = g.fibers.size();
    for (size_t k = 0; k < n; ++k) {
      Fiber &f = g.fibers[backwards ? n - 1 - k : k];
      if (f.finished)
        continue;
      g.current = &f;
      swapcontext(&g.scheduler, &f.context);
      anyWaiting |= !f.finished;
    }
    g.current = nullptr;
    if (!anyWaiting)
      return;
    ++totals.barriers; // every running thread is at the barrier: release them
  }
}

/// Runs the block at g.blockIndex with each thread a plain call.
void callBlock(Grid &g) {
  Fiber &f = g.fibers[0];
  g.current = &f;
  for (unsigned z = 0; z < g.block.z; ++z)
    for (unsigned y = 0; y < g.block.y; ++y)
      for (unsigned x = 0; x < g.block.x; ++x) {
        f.index = {x, y, z};
        (*g.body)();
      }
  g.current = nullptr;
}

/// Kernels whose first launch on this thread reached no barrier.
thread_local std::unordered_set<const void *> barrierFree;

} // namespace

void check_config(const Config &config) {
  const dim3 &grid = config.grid, &block = config.block;
  size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    fail("launch with grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
         std::to_string(grid.z) + ") and block (" + std::to_string(block.x) + ", " +
         std::to_string(block.y) + ", " + std::to_string(block.z) +
         "): a GPU takes 1 to 1024 threads a block (z up to 64) and a grid of 1 to 2^31-1 "
         "by 65535 by 65535 blocks");
}

void run_grid(const Config &config, const std::function<void()> &thread, const void *kernel) {
  if (running)
    fail("a launch from inside a kernel (dynamic parallelism) is not emulated");
  check_config(config);
  const dim3 &grid = config.grid, &block = config.block;
  size_t threads = size_t(block.x) * block.y * block.z;
  Grid g;
  g.grid = grid;
  g.block = block;
  g.body = &thread;
  g.plainCalls = kernel && barrierFree.count(kernel);
  g.fibers.resize(g.plainCalls ? 1 : threads);
  running = &g;
  ++totals.launches;
  try {
    for (unsigned z = 0; z < grid.z && !g.failure; ++z)
      for (unsigned y = 0; y < grid.y && !g.failure; ++y)
        for (unsigned x = 0; x < grid.x && !g.failure; ++x) {
          g.blockIndex = {x, y, z};
          if (g.plainCalls)
            callBlock(g);
          else
            runBlock(g);
        }
  } catch (...) {
    running = nullptr;
    throw;
  }
  running = nullptr;
  if (g.failure)
    std::rethrow_exception(g.failure);
  if (kernel && !g.reachedBarrier)
    barrierFree.insert(kernel);
}

const uint3 &thread_index() {
  Grid &g = inLaunch("threadIdx");
  return g.current->index;
}
const uint3 &block_index() { return inLaunch("blockIdx").blockIndex; }
const dim3 &block_dim() { return inLaunch("blockDim").block; }
const dim3 &grid_dim() { return inLaunch("gridDim").grid; }

void sync_threads() {
  Grid &g = inLaunch("__syncthreads");
  if (g.plainCalls)
    throw std::logic_error("CUDA emulator: a kernel reached __syncthreads in a launch run "
                           "without fibers, as its first launch reached none");
  g.reachedBarrier = true;
  swapcontext(&g.current->context, &g.scheduler);
}

int atomic_exch(int *address, int value) {
  inLaunch("atomicExch");
  return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST);
}

cudaError_t memcpy_async(void *target, const void *source, size_t bytes, cudaMemcpyKind,
                         cudaStream_t) {
  if (bytes)
    std::memcpy(target, source, bytes);
  return cudaSuccess;
}

cudaError_t memcpy_2d_async(void *target, size_t targetPitch, const void *source,
                            size_t sourcePitch, size_t width, size_t height, cudaMemcpyKind,
                            cudaStream_t) {
  if (width > targetPitch || width > sourcePitch)
    return cudaErrorInvalidPitchValue;
  for (size_t row = 0; row < height; ++row)
    std::memcpy(static_cast<char *>(target) + row * targetPitch,
                static_cast<const char *>(source) + row * sourcePitch, width);
  return cudaSuccess;
}

cudaError_t device_get_attribute(int *value, cudaDeviceAttr attribute, int) {
  if (attribute != cudaDevAttrMultiProcessorCount)
    return cudaErrorInvalidValue;
  *value = 132;
  return cudaSuccess;
}

Counters counters() { return totals; }

} // namespace dlc_emu
