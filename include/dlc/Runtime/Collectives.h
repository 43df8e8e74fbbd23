//===- Collectives.h - all-reduce across GPUs (NCCL) -------------------------===//
#ifndef DLC_RUNTIME_COLLECTIVES_H
#define DLC_RUNTIME_COLLECTIVES_H

#include "dlc/Runtime/Engine.h"
#include "dlc/Runtime/Kernel.h"

#include <memory>
#include <vector>

namespace dlc {

/// One device's part of an all-reduce: its input and output (same shape and dtype on every
/// rank) and the buffers that hold them.
struct AllReduceRank {
  Device device;
  TensorRef input, output;
  std::shared_ptr<Buffer> input_buffer, output_buffer;
};

/// Enqueues an all-reduce (sum, or mean with `mean`) across GPUs: NCCL, one communicator
/// set per device list (cached), each rank launched from its own GPU's queue after that
/// queue's earlier work. Every rank runs even when its input failed, so no peer waits
/// forever; the outputs are then poisoned with the input's error. Input and output may be
/// the same memory. Throws UnsupportedError when a device is not a GPU or dlc was built
/// without CUDA and NCCL.
void enqueue_gpu_all_reduce(const std::vector<AllReduceRank> &ranks, bool mean);

} // namespace dlc

#endif // DLC_RUNTIME_COLLECTIVES_H
