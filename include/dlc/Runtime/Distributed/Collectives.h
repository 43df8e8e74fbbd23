//===- Collectives.h - all-reduce across GPUs (NCCL) -------------------------===//
#ifndef DLC_RUNTIME_DISTRIBUTED_COLLECTIVES_H
#define DLC_RUNTIME_DISTRIBUTED_COLLECTIVES_H

#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Runtime/Engine/Kernel.h"

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
///
/// With `over_processes` the all-reduce spans the job (process_group()): every process
/// enqueues it with as many GPUs, in the same order among its collectives, and each
/// output is the sum over every process's inputs (the mean divides by all of them). In a
/// job of one process that is the NCCL communicator of a job, with this process's GPUs as
/// its ranks.
void enqueue_gpu_all_reduce(const std::vector<AllReduceRank> &ranks, bool mean,
                            bool over_processes = false);

} // namespace dlc

#endif // DLC_RUNTIME_DISTRIBUTED_COLLECTIVES_H
