//===- Allocator.cpp - caching host allocator, one per device -----------------===//
//
// Size classes: multiples of 512 B up to 1 MiB, multiples of 1 MiB above, so a block
// freed by one step of a training loop fits the same request in the next step.
// Each device's memory comes from its kind's backend (DeviceBackend.h): GPU memory from
// cudaMalloc (never managed memory), cpu and cpu_shared 64-byte aligned host memory;
// cpu_pinned is the GPU backend's page-locked memory (so uploads go by DMA) where a GPU
// is usable, host memory otherwise. Blocks go back to the system through empty_cache(),
// when a request does not fit otherwise, and (host memory) when the cache outgrows its
// cap, least recently freed first.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Engine/Allocator.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dlc {

namespace {

/// The cache a host device may keep whatever its peak use (see DeviceAllocator::release).
constexpr int64_t kMinHostCache = int64_t(256) << 20;

size_t roundUp(size_t bytes) {
  constexpr size_t small = 512, large = size_t(1) << 20;
  if (bytes == 0)
    bytes = 1;
  size_t quantum = bytes <= large ? small : large;
  return (bytes + quantum - 1) / quantum * quantum;
}

std::string humanBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

/// Where one device's blocks come from and go back to.
class MemorySource {
public:
  explicit MemorySource(Device device)
      : device_(device), backend_(&backend_for(device, "allocating")) {
    // Pinned host memory is the accelerator's to give, when one is usable.
    if (device.kind == DeviceKind::cpu_pinned)
      if (DeviceBackend *gpus = device_backend(DeviceKind::gpu); gpus && num_gpus() > 0)
        pinner_ = gpus;
  }

  /// A block of `bytes`, or null when the system has no memory for it.
  void *take(size_t bytes) {
    if (pinner_)
      return pinner_->allocate_pinned(bytes);
    return backend_->allocate(device_.id, bytes);
  }

  void give_back(void *data) {
    if (pinner_)
      return pinner_->release_pinned(data);
    backend_->release(device_.id, data);
  }

  /// " (N free of M on the device)" for GPUs, "" otherwise.
  std::string deviceMemoryNote() const {
    if (!device_.is_host()) {
      try {
        DeviceMemoryInfo info = backend_->memory_info(device_.id);
        return "; " + humanBytes(int64_t(info.free)) + " free of " +
               humanBytes(int64_t(info.total)) + " on the device";
      } catch (const std::exception &) {
      }
    }
    return "";
  }

private:
  Device device_;
  DeviceBackend *backend_;
  DeviceBackend *pinner_ = nullptr; ///< the GPU backend, for cpu_pinned blocks
};

/// Refuses devices this process cannot allocate on, with the reason.
void requireAllocatable(Device device) {
  if (device.is_host()) {
    if (device.id < 0 || device.id >= kMaxHostDevices)
      throw UnsupportedError("cannot allocate on " + device.str() + ": host devices are " +
                             Device{device.kind, 0}.str() + " to " +
                             Device{device.kind, kMaxHostDevices - 1}.str());
    return;
  }
  if (!device_backend(device.kind))
    throw UnsupportedError("cannot allocate on " + device.str() +
                           ": dlc was built without CUDA (see DLC_ENABLE_CUDA)");
  int gpus = num_gpus();
  if (device.id >= 0 && device.id < gpus)
    return;
  throw UnsupportedError("cannot allocate on " + device.str() + ": this process sees " +
                         std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") +
                         (gpus == 0 ? " (no CUDA driver or no device)" : ""));
}

class DeviceAllocator {
public:
  explicit DeviceAllocator(Device device) : device_(device), source_(device) {}

  MemoryBlock allocate(size_t requested) {
    size_t bytes = roundUp(requested);
    void *data = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++stats_.allocations;
      auto cached = free_.find(bytes);
      if (cached != free_.end() && !cached->second.empty()) {
        data = uncache(cached->second);
        ++stats_.cache_hits;
      } else {
        data = fresh(lock, bytes, requested);
      }
      stats_.bytes_in_use += int64_t(bytes);
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    }
    return {data, bytes};
  }

  void release(void *data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_in_use -= int64_t(bytes);
    // Host memory is cached only up to what the device has used at its peak (and 256 MiB
    // at least): blocks come back to the same sizes in a training loop, but a stream of
    // different sizes (images of every size through a DataLoader) would otherwise pile up
    // without bound, since host allocations rarely fail and so never empty the cache.
    // What goes back over the cap is the least recently freed: a compiled program's arena,
    // freed after each call, stays cached however many blocks eager work left before it
    // (giving back the block just freed unmapped the arena on every call, and the next
    // call paid a page fault per 4 KiB of it: 30-45 % of a LeafNetwork step).
    // GPU blocks are all kept: cudaMalloc is slow, and running out empties the cache.
    if (device_.is_host()) {
      int64_t cap = std::max(kMinHostCache, stats_.peak_bytes_in_use);
      while (!recent_.empty() && stats_.bytes_cached + int64_t(bytes) > cap)
        source_.give_back(evictOldest());
    }
    cache(data, bytes);
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void setLimit(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.limit = bytes;
  }

  void emptyCache() {
    std::unique_lock<std::mutex> lock(mutex_);
    emptyCache(lock);
  }

private:
  // Called with `lock` (on mutex_) held; may release it while memory goes back.
  void *fresh(std::unique_lock<std::mutex> &lock, size_t bytes, size_t requested) {
    auto fits = [&] {
      return stats_.limit == 0 ||
             stats_.bytes_in_use + stats_.bytes_cached + int64_t(bytes) <= stats_.limit;
    };
    if (!fits())
      emptyCache(lock);
    void *data = fits() ? source_.take(bytes) : nullptr;
    if (!data && stats_.bytes_cached > 0) {
      emptyCache(lock);
      data = fits() ? source_.take(bytes) : nullptr;
    }
    if (!data) {
      --stats_.allocations;
      throw OutOfMemoryError(
          device_.str() + ": out of memory allocating " + humanBytes(int64_t(requested)) +
          " (" + std::to_string(requested) + " bytes); " + humanBytes(stats_.bytes_in_use) +
          " in use" +
          (stats_.limit ? " of a " + humanBytes(stats_.limit) + " limit" : std::string()) +
          source_.deviceMemoryNote());
    }
    return data;
  }

  /// Gives every cached block back to its source. The blocks leave the cache under the
  /// lock; the lock is released while they go back, because cudaFree waits for the whole
  /// device, whose kernels (an NCCL rank waiting for a peer) may wait for another thread
  /// that needs this allocator.
  void emptyCache(std::unique_lock<std::mutex> &lock) {
    if (stats_.bytes_cached == 0)
      return;
    std::vector<void *> blocks;
    for (const CachedBlock &block : recent_)
      blocks.push_back(block.data);
    spare_.splice(spare_.end(), recent_);
    for (auto &[bytes, sameSize] : free_)
      sameSize.clear();
    stats_.bytes_cached = 0;
    lock.unlock();
    for (void *data : blocks)
      source_.give_back(data);
    lock.lock();
  }

  /// A cached block, in `recent_` from the least to the most recently freed.
  struct CachedBlock {
    void *data;
    size_t bytes;
  };
  using Recency = std::list<CachedBlock>;

  /// Puts a freed block in the cache as the most recently freed one. The list node comes
  /// from `spare_` when there is one, so a loop's steady state allocates nothing here.
  void cache(void *data, size_t bytes) {
    if (spare_.empty())
      spare_.emplace_back();
    recent_.splice(recent_.end(), spare_, spare_.begin());
    auto node = std::prev(recent_.end());
    *node = {data, bytes};
    free_[bytes].push_back(node);
    stats_.bytes_cached += int64_t(bytes);
  }

  /// Takes the most recently freed block of one size class out of the cache.
  void *uncache(std::vector<Recency::iterator> &sameSize) {
    Recency::iterator node = sameSize.back();
    sameSize.pop_back();
    void *data = node->data;
    stats_.bytes_cached -= int64_t(node->bytes);
    spare_.splice(spare_.end(), recent_, node);
    return data;
  }

  /// Takes the least recently freed block out of the cache, for the caller to give back.
  void *evictOldest() {
    Recency::iterator node = recent_.begin();
    auto &sameSize = free_[node->bytes];
    sameSize.erase(std::find(sameSize.begin(), sameSize.end(), node));
    void *data = node->data;
    stats_.bytes_cached -= int64_t(node->bytes);
    spare_.splice(spare_.end(), recent_, node);
    return data;
  }

  Device device_;
  MemorySource source_;
  std::mutex mutex_;
  /// Cached blocks by size class, each list in the order they were freed. A size's list
  /// keeps its capacity as blocks come and go, so the cache itself allocates nothing once
  /// a loop's sizes have been seen.
  std::map<size_t, std::vector<Recency::iterator>> free_;
  Recency recent_; ///< every cached block, least recently freed first
  Recency spare_;  ///< list nodes to reuse
  MemoryStats stats_;
};

// Allocators live for the whole process (never destroyed): storages may be released by
// worker threads or static objects after main returns.
DeviceAllocator &allocatorFor(Device device) {
  // Allocators are never destroyed: a thread may remember the one it used last (every
  // tensor made and freed asks, twice per op: a lock and a hash saved each time).
  thread_local Device lastDevice;
  thread_local DeviceAllocator *last = nullptr;
  if (last && lastDevice == device)
    return *last;
  static std::mutex *mutex = new std::mutex;
  static auto *allocators = new std::unordered_map<Device, std::unique_ptr<DeviceAllocator>>;
  std::lock_guard<std::mutex> lock(*mutex);
  auto &slot = (*allocators)[device];
  if (!slot)
    slot = std::make_unique<DeviceAllocator>(device);
  lastDevice = device;
  last = slot.get();
  return *slot;
}

} // namespace

Storage::~Storage() {
  if (!base_ && !owner_)
    allocatorFor(device_).release(data_, bytes_);
}

MemoryBlock allocate_block(Device device, size_t bytes) {
  requireAllocatable(device);
  return allocatorFor(device).allocate(bytes);
}

std::shared_ptr<Storage> allocate(Device device, size_t bytes) {
  MemoryBlock block = allocate_block(device, bytes);
  try {
    return std::make_shared<Storage>(block.data, block.bytes, device);
  } catch (...) {
    allocatorFor(device).release(block.data, block.bytes);
    throw;
  }
}

MemoryStats memory_stats(Device device) { return allocatorFor(device).stats(); }

void set_memory_limit(Device device, int64_t bytes) { allocatorFor(device).setLimit(bytes); }

void empty_cache(Device device) { allocatorFor(device).emptyCache(); }

} // namespace dlc
