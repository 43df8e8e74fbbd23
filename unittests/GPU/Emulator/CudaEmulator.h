//===- CudaEmulator.h - dlc's CUDA C++ kernels built for the CPU (tests) -----===//
//
// Force-included (-include) into lib/Runtime/CUDA's .cu files after
// expand_launches.py has turned their `<<<...>>>` launches into dlc_emu::launch calls,
// so that a host compiler builds them. A launch runs every thread of every block on the
// calling thread, one fiber per GPU thread of a block: __syncthreads switches fibers until
// the whole block has reached it, and `__shared__` variables are per block because blocks
// run one after another. "Device" memory is host memory, and copies are memcpy.
//
// Two builds use it. Standalone (DLC_CUDA_EMULATION_STANDALONE, the kernel tests): a
// launch runs at once, the kernels register in the emulator's own table, and the few
// runtime calls the kernel files make are done here. With the emulated CUDA runtime
// (EmulatedRuntime.cpp, the GPU tests on emulated GPUs): launches and copies go to the
// emulated streams, which run them in order on their own threads.
//
// It runs the kernels' own code, index math, block reductions and 16-bit conversions,
// on machines without a GPU (CI), against the CPU reference kernels. What it cannot
// show: races between blocks, timing, the device's float functions (expf and friends
// may differ from glibc's by an ulp), and cuDNN/cuBLAS, which only a GPU runs.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_UNITTESTS_GPU_EMULATOR_CUDAEMULATOR_H
#define DLC_UNITTESTS_GPU_EMULATOR_CUDAEMULATOR_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <tuple>

// The CUDA qualifiers, as plain C++ (the CUDA headers above have been read with theirs).
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __forceinline__
#define __forceinline__ inline
#undef __shared__
#define __shared__ static thread_local // blocks run one after another on each stream's thread

namespace dlc_emu {

/// A launch's configuration, as written between <<< and >>>.
struct Config {
  Config(dim3 grid, dim3 block, size_t dynamicSharedBytes = 0, cudaStream_t stream = nullptr)
      : grid(grid), block(block), stream(stream) {
    (void)dynamicSharedBytes;
  }
  dim3 grid, block;
  cudaStream_t stream;
};

/// Runs `job` in `stream`'s order: at once in the standalone build
/// (ImmediateLaunches.cpp), on the stream's thread with the emulated runtime.
void submit(cudaStream_t stream, std::function<void()> job);

/// Runs `thread` once per thread of the grid, block after block. Throws
/// std::invalid_argument for a configuration a GPU would refuse (no threads, more than
/// 1024 per block). With `kernel` (the kernel's address) given, a kernel whose first
/// launch on this thread reached no barrier runs its later launches as plain calls, no
/// fibers: fast enough for the GPU tests' large element-wise launches. Such a kernel that
/// does reach a barrier then throws std::logic_error (the emulator's assumption broke).
void run_grid(const Config &config, const std::function<void()> &thread,
              const void *kernel = nullptr);

/// Throws std::invalid_argument for a configuration a GPU refuses (CUDA's limits: 1 to
/// 1024 threads a block, block.z up to 64, grid.y and grid.z up to 65535, no empty grid).
void check_config(const Config &config);

/// A kernel launch: the arguments are converted to the kernel's parameter types once,
/// as a launch copies them, and every thread gets its own copy of that. The
/// configuration is checked at the call, as cudaLaunchKernel checks it.
template <typename... Params, typename... Args>
void launch(const Config &config, void (*kernel)(Params...), Args &&...args) {
  check_config(config);
  std::tuple<std::decay_t<Params>...> parameters(std::forward<Args>(args)...);
  submit(config.stream, [config, kernel, parameters] {
    run_grid(config, [&] { std::apply(kernel, parameters); }, reinterpret_cast<const void *>(kernel));
  });
}

/// The running thread's coordinates (valid inside a launch only).
const uint3 &thread_index();
const uint3 &block_index();
const dim3 &block_dim();
const dim3 &grid_dim();
/// Waits until every thread of the block still running has called it.
void sync_threads();

int atomic_exch(int *address, int value);

/// The runtime calls the kernel files make, on host memory (standalone build).
cudaError_t memcpy_async(void *target, const void *source, size_t bytes, cudaMemcpyKind kind,
                         cudaStream_t stream);
cudaError_t memcpy_2d_async(void *target, size_t targetPitch, const void *source,
                            size_t sourcePitch, size_t width, size_t height,
                            cudaMemcpyKind kind, cudaStream_t stream);
/// Multiprocessors: an H200's 132, so that reductions split as they would there.
cudaError_t device_get_attribute(int *value, cudaDeviceAttr attribute, int device);

/// Launches run so far, and barriers released, by this thread (for tests of the
/// emulator itself).
struct Counters {
  long launches = 0;
  long barriers = 0;
};
Counters counters();

/// What the host asked of the emulated CUDA runtime (EmulatedRuntime.cpp), counted when
/// asked, from every thread: what a training step costs a real GPU's host side.
struct RuntimeCalls {
  long kernelLaunches = 0;   ///< dlc's kernels, library ops, collectives: a launch each on a GPU
  long copies = 0;           ///< cudaMemcpy*Async
  long blockingCopies = 0;   ///< of those, into pageable memory: the host waits for them
  long mallocs = 0;          ///< cudaMalloc and cudaHostAlloc (slow, and may synchronize)
  long frees = 0;            ///< cudaFree and cudaFreeHost (synchronize the device)
  long streamSynchronizes = 0;
  long eventRecords = 0;
  long eventSynchronizes = 0; ///< host waits for a fence
  long streamWaits = 0;       ///< cudaStreamWaitEvent: ordering on the device
  long allReduces = 0;        ///< ncclAllReduce calls (one per rank)
  long graphLaunches = 0;     ///< cudaGraphLaunch: a captured sequence of work, replayed
  long graphInstantiations = 0; ///< cudaGraphInstantiate: a capture made runnable
};
RuntimeCalls runtime_calls();
void count_all_reduce(); // EmulatedNccl.cpp's calls

} // namespace dlc_emu

#define threadIdx (::dlc_emu::thread_index())
#define blockIdx (::dlc_emu::block_index())
#define blockDim (::dlc_emu::block_dim())
#define gridDim (::dlc_emu::grid_dim())
#define __syncthreads() ::dlc_emu::sync_threads()
#define atomicExch ::dlc_emu::atomic_exch
#ifdef DLC_CUDA_EMULATION_STANDALONE
#define cudaMemcpyAsync ::dlc_emu::memcpy_async
#define cudaMemcpy2DAsync ::dlc_emu::memcpy_2d_async
#define cudaDeviceGetAttribute ::dlc_emu::device_get_attribute
#endif

#endif // DLC_UNITTESTS_GPU_EMULATOR_CUDAEMULATOR_H
