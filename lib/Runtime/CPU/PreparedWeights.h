//===- PreparedWeights.h - weights transformed once per change, in a step's memo ===//
//
// dlc's own Winograd kernels (WinogradAvx2.cpp, Winograd2x2.cpp) transform the weights
// before their products. A compiled step whose weights only change with the parameters
// passes a memo (NNKernels.h, WeightsMemo): the transform is kept there and made again
// only when the generation or the weights buffer changes. Without a memo (eager calls,
// training) it is made on every call, into the calling thread's scratch.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_PREPAREDWEIGHTS_H
#define DLC_LIB_RUNTIME_CPU_PREPAREDWEIGHTS_H

#include "dlc/Runtime/CPU/NNKernels.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <cstdlib>
#include <new>
#include <vector>

namespace dlc::cpu_kernels {

/// `floats` values that prepare(out) writes from the weights at `source`: the memo's
/// while its generation and source hold, else prepared again (there, or in this
/// thread's scratch without a memo; each call site, a lambda of its own, has its own).
template <typename Prepare>
const float *preparedWeights(const WeightsMemo &memo, const void *source, size_t floats,
                             Prepare prepare) {
  const size_t bytes = floats * sizeof(float);
  if (!memo.memo) {
    thread_local std::vector<float> scratch;
    scratch.resize(floats);
    prepare(scratch.data());
    return scratch.data();
  }
  KernelMemo &kept = *memo.memo;
  // Generation 0 is "never prepared" (KernelMemo), as in OneDNNPrimitiveCache.cpp.
  if (kept.data && kept.bytes == bytes && memo.generation != 0 &&
      kept.generation == memo.generation && kept.source == source)
    return static_cast<const float *>(kept.data.get());
  if (!kept.data || kept.bytes != bytes) {
    kept.data.reset(std::aligned_alloc(64, (bytes + 63) / 64 * 64), std::free);
    if (!kept.data)
      throw std::bad_alloc();
    kept.bytes = bytes;
  }
  prepare(static_cast<float *>(kept.data.get()));
  kept.generation = memo.generation;
  kept.source = source;
  return static_cast<const float *>(kept.data.get());
}

} // namespace dlc::cpu_kernels

#endif // DLC_LIB_RUNTIME_CPU_PREPAREDWEIGHTS_H
