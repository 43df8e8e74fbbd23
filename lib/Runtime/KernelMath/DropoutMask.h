//===- DropoutMask.h - which elements dropout keeps, on every device ---------===//
//
// Element i of a dropout with seed s is kept when a hash of (s, i) falls below the keep
// probability: a counter-based draw, so every element is decided on its own. The CPU
// kernel and a GPU thread compute the same bits, so a seed drops the same elements
// everywhere, and the GPU draws its mask where it runs: nothing is drawn on the host or
// copied, and a GPU kernel can read its seed from device memory (a replayed CUDA graph
// gets a new seed each step without a new launch).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_KERNELMATH_DROPOUTMASK_H
#define DLC_LIB_RUNTIME_KERNELMATH_DROPOUTMASK_H

#include "dlc/Core/HostDevice.h"

#include <cstdint>

namespace dlc::dropout_mask {

/// SplitMix64's finalizer: a bijection of 64 bits whose outputs pass BigCrush as a
/// counter-based generator.
DLC_HOST_DEVICE uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The threshold for keeping an element with probability `keep` (in [0, 1]): 53-bit
/// draws below it are kept.
inline uint64_t threshold(double keep) {
  if (keep >= 1.0)
    return uint64_t(1) << 53;
  return keep <= 0.0 ? 0 : uint64_t(keep * double(uint64_t(1) << 53));
}

/// Whether element `index` is kept, for `seed` and a `threshold` from threshold().
DLC_HOST_DEVICE bool keep(uint64_t seed, uint64_t index, uint64_t threshold) {
  uint64_t stream = mix(seed + 0x9e3779b97f4a7c15ULL);
  return (mix(stream ^ (index * 0xd1b54a32d192ed03ULL)) >> 11) < threshold;
}

} // namespace dlc::dropout_mask

#endif // DLC_LIB_RUNTIME_KERNELMATH_DROPOUTMASK_H
