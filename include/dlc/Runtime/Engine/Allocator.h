//===- Allocator.h - caching memory allocator, one per device ----------------===//
#ifndef DLC_RUNTIME_ENGINE_ALLOCATOR_H
#define DLC_RUNTIME_ENGINE_ALLOCATOR_H

#include "dlc/Core/Device.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace dlc {

/// Memory counters of one device's allocator, in bytes (sizes are rounded up to the
/// allocator's size classes).
struct MemoryStats {
  int64_t bytes_in_use = 0;     ///< held by live storages
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;     ///< freed, kept for reuse
  int64_t allocations = 0;      ///< requests served
  int64_t cache_hits = 0;       ///< requests served from the cache
  int64_t limit = 0;            ///< 0: no limit
};

/// A block of device memory. Releasing the last reference returns it to its
/// allocator's cache.
class Storage {
public:
  Storage(void *data, size_t bytes, Device device) : data_(data), bytes_(bytes), device_(device) {}
  /// `bytes` of `base` from `offset` on: a region with its own identity for the engine
  /// (a compiled program's value in its arena), keeping `base` alive, releasing nothing.
  Storage(std::shared_ptr<Storage> base, size_t offset, size_t bytes)
      : data_(static_cast<char *>(base->data()) + offset), bytes_(bytes),
        device_(base->device()), base_(std::move(base)) {}
  /// Memory dlc did not allocate (an array another library exported, e.g. by DLPack),
  /// kept alive by `owner` while the storage lives and released by dropping it.
  Storage(void *data, size_t bytes, Device device, std::shared_ptr<void> owner)
      : data_(data), bytes_(bytes), device_(device), owner_(std::move(owner)) {}
  ~Storage();
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;

  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  /// Whether this is a region of another storage (whose other regions may hold other
  /// values at other times).
  bool is_region() const { return base_ != nullptr; }

private:
  void *data_;
  size_t bytes_; // rounded size
  Device device_;
  std::shared_ptr<Storage> base_; // set for regions of another storage
  std::shared_ptr<void> owner_;   // set for memory another library owns
};

/// Allocates `bytes` on `device` (reusing a cached block of the same size class when there
/// is one). Throws OutOfMemoryError naming the device and the request when the system
/// or the device's limit refuses it, after emptying the cache once.
std::shared_ptr<Storage> allocate(Device device, size_t bytes);

/// A block for a Storage made in place (a Buffer holds its own): its address and rounded
/// size, as allocate() would have put them in a Storage(data, bytes, device), whose
/// destructor gives the block back. Throws as allocate() does.
struct MemoryBlock {
  void *data;
  size_t bytes;
};
MemoryBlock allocate_block(Device device, size_t bytes);

/// Counters of `device`'s allocator.
MemoryStats memory_stats(Device device);

/// Caps what `device` may hold (in use + cached); 0 removes the cap.
void set_memory_limit(Device device, int64_t bytes);

/// Frees `device`'s cached blocks.
void empty_cache(Device device);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_ALLOCATOR_H
