//===- Collectives.cpp - all-reduce across GPUs through the device queues ----===//
#include "dlc/Runtime/Distributed/Collectives.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"
#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"

namespace dlc {

void enqueue_gpu_all_reduce(const std::vector<AllReduceRank> &ranks, bool mean,
                            bool over_processes) {
  for (const AllReduceRank &rank : ranks) {
    if (rank.device.is_host())
      throw UnsupportedError("all_reduce: the NCCL all-reduce takes GPU devices only, got " +
                             rank.device.str());
    if (rank.input.numel() != ranks.front().input.numel() ||
        rank.output.numel() != rank.input.numel() || rank.output.dtype != rank.input.dtype ||
        rank.input.dtype != ranks.front().input.dtype)
      throw ShapeError("all_reduce: every rank must reduce as many elements of one dtype; " +
                       rank.device.str() + " has " + std::to_string(rank.input.numel()) + " " +
                       dtype_name(rank.input.dtype) + ", " + ranks.front().device.str() +
                       " has " + std::to_string(ranks.front().input.numel()) + " " +
                       dtype_name(ranks.front().input.dtype));
  }
  if (ranks.empty())
    return;
  DeviceBackend &backend = backend_for(ranks.front().device, "all_reduce");
  // Everything that can fail before the collective runs fails here, before any rank is
  // queued.
  backend.check_all_reduce_dtype(ranks.front().input.dtype);
  std::vector<int> ordinals;
  for (const AllReduceRank &rank : ranks)
    ordinals.push_back(rank.device.id);
  // A job of one still gets the job's kind of communicator (NCCL's id and ranks): the
  // GPU check exercises that path on a machine with one GPU.
  ProcessGroup *processes = over_processes ? &process_group() : nullptr;
  std::shared_ptr<void> set = backend.communicators(ordinals, processes);
  std::vector<CollectiveRank> group;
  for (size_t index = 0; index < ranks.size(); ++index) {
    const AllReduceRank &rank = ranks[index];
    group.push_back({rank.device, {rank.input_buffer}, {rank.output_buffer},
                     [&backend, set, index, in = rank.input, out = rank.output, mean] {
                       backend.all_reduce(set, index, in.data, out.data, size_t(out.numel()),
                                          out.dtype, mean);
                     }});
  }
  enqueue_collective(std::move(group));
}

} // namespace dlc
