//===- Collectives.cpp - all-reduce across GPUs through the device queues ----===//
#include "dlc/Runtime/Collectives.h"

#include "dlc/Config.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine.h"

#if DLC_HAVE_CUDA
#include "CUDA/CudaEngine.h"
#endif

namespace dlc {

void enqueue_gpu_all_reduce(const std::vector<AllReduceRank> &ranks, bool mean) {
  for (const AllReduceRank &rank : ranks)
    if (rank.device.is_host())
      throw UnsupportedError("all_reduce: the NCCL all-reduce takes GPU devices only, got " +
                             rank.device.str());
#if DLC_HAVE_CUDA
  std::vector<int> ordinals;
  for (const AllReduceRank &rank : ranks)
    ordinals.push_back(rank.device.id);
  // Ranks are enqueued in one pass, so every GPU's queue sees collectives in the same
  // order, as NCCL requires.
  for (size_t index = 0; index < ranks.size(); ++index) {
    const AllReduceRank &rank = ranks[index];
    enqueue_collective(rank.device, {rank.input_buffer}, {rank.output_buffer},
                       [ordinals, index, in = rank.input, out = rank.output, mean] {
                         cuda::all_reduce(ordinals, index, in.data, out.data,
                                          size_t(out.numel()), out.dtype, mean);
                       });
  }
#else
  (void)mean;
  throw UnsupportedError("all_reduce across GPUs needs dlc built with CUDA and NCCL");
#endif
}

} // namespace dlc
