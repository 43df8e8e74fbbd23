//===- KernelCacheCounters.h - the loader's counters (internal) ----------------===//
#ifndef DLC_LIB_CONVERSION_DLCTORUNTIME_KERNELCACHECOUNTERS_H
#define DLC_LIB_CONVERSION_DLCTORUNTIME_KERNELCACHECOUNTERS_H

#include <atomic>
#include <cstdint>

namespace dlc::conversion::detail {

struct KernelCacheCounters {
  std::atomic<int64_t> compiled{0}, loaded{0}, reused{0}, rejected{0};
};
/// The process's counters, behind kernelCacheStats().
KernelCacheCounters &counters();

} // namespace dlc::conversion::detail

#endif // DLC_LIB_CONVERSION_DLCTORUNTIME_KERNELCACHECOUNTERS_H
