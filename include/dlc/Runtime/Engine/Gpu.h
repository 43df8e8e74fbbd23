//===- Gpu.h - GPU options and device memory ---------------------------------===//
//
// Present in every build; without CUDA (or without a GPU) the options are inert and
// gpu_memory_info throws UnsupportedError.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_GPU_H
#define DLC_RUNTIME_ENGINE_GPU_H

#include "dlc/Core/Device.h"

#include <cstdint>

namespace dlc {

/// Lets float32 matrix products and convolutions on GPUs use TF32 tensor cores (faster,
/// about 1e-3 relative error). Off by default, so that GPU results match the CPU's to
/// 1e-4, as MXNet and cuBLAS default to.
void set_gpu_tf32(bool enabled);
bool gpu_tf32();

/// How a GPU task follows work it depends on that its own stream does not order (another
/// GPU's, or this GPU's other stream's). On (the default): the queue's worker makes the
/// task's stream wait for that work on the device (cudaStreamWaitEvent) and goes on
/// issuing. Off (DLC_GPU_EVENT_WAITS=0): the worker waits on the host until that work has
/// finished, and copies use the compute stream.
void set_gpu_event_waits(bool enabled);
bool gpu_event_waits();

/// Copies between host memory and a GPU run on the GPU's copy stream, beside its kernels
/// (the default, with event waits on); off (DLC_GPU_COPY_STREAM=0), on the compute stream
/// in order with the kernels. Copies into a compiled program's arena regions always use
/// the compute stream (regions share memory that no buffer dependency orders).
void set_gpu_copy_stream(bool enabled);
bool gpu_copy_stream();

/// Free and total memory of a GPU as the driver reports it (dlc's cached blocks count as
/// used; see memory_stats for dlc's own view).
struct GpuMemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
GpuMemoryInfo gpu_memory_info(Device device);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_GPU_H
