//===- Program.h - a compiled function: kernel calls over a static memory plan -===//
//
// What the compiler lowers a `func.func` of the `dlc` dialect into, and all the runtime
// needs to run it: steps that call the kernel table's kernels, values placed in the
// caller's argument and result buffers or at fixed offsets of one arena, reused once
// dead. A run is a single task on the device's queue, so a compiled block costs one
// dispatch however many ops it has.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_PROGRAM_H
#define DLC_RUNTIME_PROGRAM_H

#include "dlc/Runtime/Engine.h"
#include "dlc/Runtime/Kernel.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlc {

/// Where a value's elements live during a run.
enum class StorageKind { argument, result, arena };

struct ProgramValue {
  Shape shape;
  DType dtype = DType::f32;
  /// The value whose storage this one views (reshape, split part), or -1: it owns its
  /// storage.
  int alias_of = -1;
  /// How its kernels see its elements (Layout.h), as dlc-assign-layouts decided.
  Layout layout = Layout::plain;
  /// Where it lives, as dlc-plan-memory placed it (views: inside the value they view).
  StorageKind storage = StorageKind::arena;
  int index = -1;     ///< argument or result number
  size_t offset = 0;  ///< bytes into the argument, result or arena buffer

  size_t bytes() const { return size_t(shape_rules::numElements(shape)) * dtype_size(dtype); }
};

/// A fused element-wise region (dlc-fuse's "elementwise"): sub-kernels over region-local
/// values, run one cache-sized chunk of elements at a time so that intermediates never
/// leave the cache. Local values 0..inputs-1 are the step's inputs; each sub-step defines
/// the next one. Float32 only.
struct FusedElementwise {
  struct SubStep {
    std::string op;
    KernelEntry kernels;
    Attrs attrs;
    std::vector<int> inputs; ///< local values
  };
  int inputs = 0;
  int64_t elements = 1;       ///< elements per non-scalar value (its outputs' size)
  std::vector<SubStep> steps; ///< sub-step k defines local value inputs + k
  std::vector<int> outputs;   ///< the local value of each step output
  std::vector<bool> scalar;   ///< per local value: one element, not chunked
};

/// Runs `body` over its elements, chunk by chunk, the chunks spread over the calling
/// thread's OpenMP team. Sub-kernels see 1-d chunks (scalars as 0-d tensors), small
/// enough that their own loops stay single-threaded.
void run_fused_elementwise(const FusedElementwise &body, const std::vector<char *> &inputs,
                           const std::vector<char *> &outputs, bool reference_kernels);

/// One kernel call; "copy" steps (no kernel) copy their input's bytes to their output;
/// fused steps run a FusedElementwise body.
struct ProgramStep {
  std::string op; ///< the dialect op, "dlc.conv2d"
  KernelEntry kernels;
  Attrs attrs;
  std::vector<int> inputs;
  std::vector<int> outputs;
  bool fresh_seed = false; ///< a random op: its "seed" is drawn anew for every run
  bool copy = false;
  std::shared_ptr<const FusedElementwise> fused;
};

/// Memory figures of a planned program.
struct MemoryPlan {
  size_t arena_bytes = 0;        ///< peak of the intermediates, after reuse
  size_t intermediate_bytes = 0; ///< what they would take without reuse
  size_t result_bytes = 0;
  int64_t reused = 0;            ///< intermediates placed in memory a dead one freed
  int64_t in_place = 0;          ///< ... of which written over their element-wise input
};

/// A buffer region handed to a run: an argument or a result.
struct BoundBuffer {
  std::shared_ptr<Buffer> buffer;
  size_t offset = 0;
};

class Program : public std::enable_shared_from_this<Program> {
public:
  std::string name;
  Device device;
  std::vector<ProgramValue> values;
  std::vector<ProgramStep> steps;
  std::vector<int> arguments; ///< the value of each argument
  std::vector<int> results;   ///< the value of each result (distinct, owning values)
  /// (value, argument): the value is copied into the argument's storage at the end.
  std::vector<std::pair<int, int>> updates;

  /// Takes the memory figures of the plan the values' places come from (the lowering
  /// copies the places from dlc-plan-memory's decisions) and checks that every value
  /// lies inside its buffer. Call once, after the steps and places are complete.
  /// Returns "" or what is wrong; never throws, as the compiler calling it runs without
  /// exceptions.
  [[nodiscard]] std::string set_plan(const MemoryPlan &memory);
  const MemoryPlan &memory() const { return memory_; }
  /// How many seeds run() needs (one per random step, in step order).
  int64_t seeds_needed() const;

  /// Queues the whole program on `device` as one task: reads the arguments, writes the
  /// (the program must be owned by a shared_ptr, which the task keeps alive)
  /// results and the updated arguments. `seeds` has seeds_needed() entries.
  TaskHandle run(const std::vector<BoundBuffer> &arguments,
                 const std::vector<BoundBuffer> &results, std::vector<int64_t> seeds,
                 bool reference_kernels = false) const;

  /// A readable listing: one line per step with its values' places, then the plan.
  std::string str() const;

private:
  MemoryPlan memory_;
  bool planned_ = false;
};

} // namespace dlc

#endif // DLC_RUNTIME_PROGRAM_H
