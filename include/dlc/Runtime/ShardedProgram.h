//===- ShardedProgram.h - a compiled program over several devices -------------===//
//
// What a data-parallel function (dlc-shard-data-parallel's output) lowers into: steps
// that each run on one device's queue, copies between devices, and all-reduces.
// Consecutive kernel steps of one device run as one task, and each copy or all-reduce
// is its own; the engine orders tasks through the buffers they read and write, so the
// devices compute at the same time and meet only where the program says.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_SHARDEDPROGRAM_H
#define DLC_RUNTIME_SHARDEDPROGRAM_H

#include "dlc/Runtime/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace dlc {

struct ShardedValue {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
  int alias_of = -1;  ///< the value whose storage this one views (reshape, split part)
  size_t offset = 0;  ///< bytes into that value's storage
  Layout layout = Layout::plain; ///< how its kernels see it (dlc-assign-layouts)
  /// Where it lives, as dlc-plan-memory placed it: at `arena_offset` of arena `arena`,
  /// or, with -1, in the caller's argument, a fresh result buffer, or the value it views.
  int arena = -1;
  size_t arena_offset = 0;

  size_t bytes() const { return size_t(shape_rules::numElements(shape)) * dtype_size(dtype); }
};

struct ShardedStep {
  enum class Kind { kernel, copy, all_reduce };
  Kind kind = Kind::kernel;
  std::string op;
  KernelEntry kernels;
  Attrs attrs;
  Device device;            ///< where it runs (a copy runs on its target)
  std::vector<int> inputs;  ///< all_reduce: one per device, in the devices' order
  std::vector<int> outputs; ///< all_reduce: one per device
  std::vector<Device> devices; ///< all_reduce: the devices
  int64_t reduce_kind = 0;  ///< all_reduce: 0 sum, 1 mean
  bool fresh_seed = false;
  std::shared_ptr<const FusedElementwise> fused; ///< a fused element-wise region
};

class ShardedProgram : public std::enable_shared_from_this<ShardedProgram> {
public:
  std::string name;
  std::vector<ShardedValue> values;
  std::vector<ShardedStep> steps;
  std::vector<int> arguments;
  std::vector<int> results;
  std::vector<std::pair<int, int>> updates; ///< (value, argument): written back at the end

  /// One arena per device that runs steps (dlc-plan-memory's `dlc.arenas`), allocated
  /// once per run. The engine orders each arena's tasks, so a block is rewritten only
  /// after the reads of the value before it.
  struct Arena {
    Device device;
    size_t bytes = 0;
  };
  std::vector<Arena> arenas;

  int64_t seeds_needed() const;
  /// The device of each random step, in order: run() takes one seed per entry, drawn from
  /// that device's generator as the eager ops would.
  std::vector<Device> seed_devices() const;
  /// Every device the program runs on, in first-use order.
  std::vector<Device> devices() const;

  /// Queues every step; returns each result's storage (fresh buffers, or views of them).
  /// Arguments must live on their values' devices.
  std::vector<BoundBuffer> run(const std::vector<BoundBuffer> &arguments,
                               std::vector<int64_t> seeds,
                               bool reference_kernels = false) const;

  std::string str() const;
};

} // namespace dlc

#endif // DLC_RUNTIME_SHARDEDPROGRAM_H
