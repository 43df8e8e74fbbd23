//===- Gpu.h - GPU options and device memory ---------------------------------===//
//
// Present in every build; without CUDA (or without a GPU) the options are inert and
// gpu_memory_info throws UnsupportedError.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_GPU_H
#define DLC_RUNTIME_GPU_H

#include "dlc/Core/Device.h"

#include <cstdint>

namespace dlc {

/// Lets float32 matrix products and convolutions on GPUs use TF32 tensor cores (faster,
/// about 1e-3 relative error). Off by default, so that GPU results match the CPU's to
/// 1e-4, as MXNet and cuBLAS default to.
void set_gpu_tf32(bool enabled);
bool gpu_tf32();

/// Free and total memory of a GPU as the driver reports it (dlc's cached blocks count as
/// used; see memory_stats for dlc's own view).
struct GpuMemoryInfo {
  int64_t free_bytes = 0;
  int64_t total_bytes = 0;
};
GpuMemoryInfo gpu_memory_info(Device device);

} // namespace dlc

#endif // DLC_RUNTIME_GPU_H
