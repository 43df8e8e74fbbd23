//===- ArenaPlanner.h - first-fit placement in one arena ----------------------===//
//
// What dlc-plan-memory places a function's intermediates with. Plain C++ with no MLIR,
// so that a test can check the placement rule on its own.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ARENAPLANNER_H
#define DLC_CORE_ARENAPLANNER_H

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>

namespace dlc {

inline constexpr size_t kAlignment = 64; // a cache line, and what oneDNN likes

inline size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

/// The most bytes an arena may span: its size is an int64_t in the IR and the model file.
inline constexpr size_t kMaxArenaBytes = size_t(1) << 63;

/// First-fit placement in one growing arena; freed blocks merge with their neighbours.
class ArenaPlanner {
public:
  /// Returns the offset; `reused` tells whether it came from freed memory. A block that
  /// would take the arena past kMaxArenaBytes is not placed: overflowed() says so.
  size_t allocate(size_t bytes, bool &reused) {
    if (bytes > kMaxArenaBytes - kAlignment) {
      overflowed_ = true;
      reused = false;
      return 0;
    }
    bytes = aligned(std::max<size_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes)
        continue;
      size_t offset = it->first;
      if (it->second == bytes)
        free_.erase(it);
      else {
        free_[offset + bytes] = it->second - bytes;
        free_.erase(it);
      }
      reused = true;
      return offset;
    }
    reused = false;
    // Grow, absorbing a free block that ends at the current end.
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        size_t offset = last->first;
        if (bytes >= kMaxArenaBytes - offset) {
          overflowed_ = true;
          return 0;
        }
        free_.erase(last);
        end_ = offset + bytes;
        reused = true;
        return offset;
      }
    }
    if (bytes >= kMaxArenaBytes - end_) {
      overflowed_ = true;
      return 0;
    }
    size_t offset = end_;
    end_ += bytes;
    return offset;
  }

  void release(size_t offset, size_t bytes) {
    bytes = aligned(std::max<size_t>(bytes, 1));
    auto [it, inserted] = free_.emplace(offset, bytes);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto previous = std::prev(it);
      if (previous->first + previous->second == it->first) {
        previous->second += it->second;
        free_.erase(it);
      }
    }
  }

  size_t end() const { return end_; }

  /// Whether a block could not be placed because the arena would pass kMaxArenaBytes.
  bool overflowed() const { return overflowed_; }

private:
  std::map<size_t, size_t> free_; // offset -> bytes
  size_t end_ = 0;
  bool overflowed_ = false;
};


} // namespace dlc

#endif // DLC_CORE_ARENAPLANNER_H
