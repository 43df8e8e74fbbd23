//===- Program.h - a compiled function: kernel calls over a static memory plan -===//
//
// What the compiler lowers a `func.func` of the `dlc` dialect into, and all the runtime
// needs to run it: steps that call the kernel table's kernels on their devices, copies
// between devices and all-reduces, over values placed in the caller's argument and
// result buffers or at fixed offsets of one arena per device (dlc-plan-memory decided
// where). A program on one device runs as a single task on its queue, so a compiled
// block costs one dispatch however many ops it has; on several devices, each stretch of
// one device's steps is one task, each copy and all-reduce another, and the engine
// orders them through the buffers they touch, so the devices compute at the same time
// and meet only where the program says.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_PROGRAM_PROGRAM_H
#define DLC_RUNTIME_PROGRAM_PROGRAM_H

#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace dlc {

/// Where a value's elements live during a run.
enum class StorageKind {
  argument,
  result,
  arena,
  /// The program's prepared block (Program::prepared_bytes), kept from run to run.
  prepared,
};

struct ProgramValue {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
  /// The value whose storage this one views (reshape, split part), or -1: it owns its
  /// storage.
  int alias_of = -1;
  /// How its kernels see its elements (Layout.h), as dlc-assign-layouts decided.
  Layout layout = Layout::plain;
  /// Where it lives, as dlc-plan-memory placed it (views: inside the value they view).
  StorageKind storage = StorageKind::arena;
  int index = -1;     ///< argument, result or arena number (0 for the prepared block)
  size_t offset = 0;  ///< bytes into the argument, result or arena buffer

  size_t bytes() const { return size_t(shape_rules::numElements(shape)) * dtype_size(dtype); }
};

/// The relocatable object code (position-independent ELF) the compiler generated for a
/// program's host kernels, and the target it was generated for: LLVM's "triple cpu
/// +feature,...". What a model file links into its shared object (HostCode.h).
struct HostObject {
  std::string bytes;
  std::string target;
};

/// Native code the compiler generated for a fused element-wise region. `entry` is MLIR's
/// packed calling convention: one pointer per argument, each pointing at a 1-d strided
/// memref descriptor ({float *allocated, *aligned; int64_t offset, size, stride}), the
/// region's inputs then its outputs. `owner` keeps the code loaded. `symbol` names the
/// entry in `object`, the code it was loaded from (null for code read from a model
/// file, which keeps its own shared object).
struct GeneratedKernel {
  using Entry = void (*)(void **arguments);
  Entry entry = nullptr;
  std::shared_ptr<const void> owner;
  std::string symbol;
  std::shared_ptr<const HostObject> object;
};

/// Code the compiler generated for a fused element-wise region on GPUs. `ptx` holds all
/// of a program's GPU kernels (the driver compiles it for the GPU it is loaded on);
/// `name` is this region's entry, whose parameters are pointers to the region's inputs
/// then outputs, then the element count (int64), one thread per element. `host_build`
/// is the same kernel compiled for the CPU, for emulated GPUs only (packed: the
/// kernel's parameters, then the grid and block sizes as int64).
struct GeneratedGpuKernel {
  std::shared_ptr<const std::string> ptx;
  std::string name;
  std::shared_ptr<const GeneratedKernel> host_build;
};

/// How a device kind runs generated GPU kernels, registered by its backend:
/// `launch` queues `kernel` on the calling task's stream of GPU `device`, with
/// `pointers` (inputs then outputs) and `elements`; `needs_host_build` says whether the
/// kernels must come with their host build (emulated GPUs run no PTX).
struct GeneratedKernelLauncher {
  void (*launch)(const GeneratedGpuKernel &kernel, int device,
                 const std::vector<char *> &pointers, int64_t elements) = nullptr;
  bool needs_host_build = false;
};
void register_generated_kernel_launcher(DeviceKind kind, GeneratedKernelLauncher launcher);
/// The launcher of `kind`; null when its backend runs no generated kernels.
const GeneratedKernelLauncher *generated_kernel_launcher(DeviceKind kind);

/// How a device kind records a task's launches once and replays them with one call (CUDA
/// graphs), registered by its backend. `capture` runs `launches` on the calling task's
/// stream of GPU `device` while recording them: nothing runs, and the recording (with
/// what it must keep alive) is returned; it throws when the launches cannot be recorded,
/// leaving the stream as it was. `replay` queues a recording on the calling task's stream.
struct TaskGraphs {
  std::shared_ptr<void> (*capture)(int device, const std::function<void()> &launches) = nullptr;
  void (*replay)(const std::shared_ptr<void> &graph, int device) = nullptr;
};
void register_task_graphs(DeviceKind kind, TaskGraphs graphs);
/// The graphs of `kind`; null when its backend has none.
const TaskGraphs *task_graphs(DeviceKind kind);

/// Whether compiled programs on GPUs may run as graphs in this process (on unless
/// turned off here; dlc-run turns it off for DLC_CUDA_GRAPHS=0). A compiled program
/// also carries its own choice, Program::cuda_graphs: both must allow it.
void set_program_graphs(bool enabled);
bool program_graphs_enabled();

/// What graphed runs of a program did so far (Program::graph_stats).
struct ProgramGraphStats {
  int64_t captures = 0; ///< recordings made (the first, then one per binding that moved)
  int64_t replays = 0;  ///< runs that were one replay
  int64_t launched = 0; ///< runs whose steps were launched one by one (warm-up, fallback)
  int64_t staged = 0;   ///< arguments and results copied in or out around each replay
  std::string not_graphed; ///< why the program runs without graphs, or ""
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
  /// What DLC_PROFILE and program listings call it: its step's op and its sub-steps'
  /// ops, "dlc.fused.elementwise{dlc.mul, dlc.add}" (fused_elementwise_name, set by
  /// whoever builds the region once its sub-steps are in).
  std::string name;
  /// The region as generated code, run on the same chunks; the sub-kernels (above)
  /// remain its reference (reference_kernels runs them instead).
  std::shared_ptr<const GeneratedKernel> generated;
  /// On a GPU: the region's generated kernel, one launch (the sub-kernels describe it
  /// but do not run there: their chunks would live in host memory).
  std::shared_ptr<const GeneratedGpuKernel> gpu;
};

/// The name of `body`, run by a step of op `op` (FusedElementwise::name).
std::string fused_elementwise_name(const std::string &op, const FusedElementwise &body);

/// Runs `body` over its elements on `device`. On a GPU: its generated kernel, one
/// launch on the task's stream. On the host: chunk by chunk, the chunks spread over the
/// calling thread's OpenMP team: its generated code when it has some (and not
/// `reference_kernels`), else its sub-kernels, which see 1-d chunks (scalars as 0-d
/// tensors), small enough that their own loops stay single-threaded.
void run_fused_elementwise(const FusedElementwise &body, const std::vector<char *> &inputs,
                           const std::vector<char *> &outputs, bool reference_kernels,
                           Device device);

/// One step on `device`: a kernel call (a FusedElementwise body for fused element-wise
/// steps), a copy of its input's bytes into its output (between devices, or into a
/// result buffer), or an all-reduce whose input and output k live on devices[k].
struct ProgramStep {
  enum class Kind { kernel, copy, all_reduce };
  Kind kind = Kind::kernel;
  std::string op; ///< the dialect op, "dlc.conv2d"
  KernelEntry kernels;
  Attrs attrs;
  Device device; ///< where it runs (a copy runs on its target)
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<Device> devices; ///< all_reduce: the devices, in the inputs' order
  int64_t reduce_kind = 0;     ///< all_reduce: 0 sum, 1 mean
  int64_t processes = 1;       ///< all_reduce: the processes of the job it spans
  bool fresh_seed = false; ///< a random op: its "seed" is drawn anew for every run
  /// Reads only arguments and prepared values and writes prepared values (dlc.prepared):
  /// a run does it only when an argument it reads is another buffer, another offset,
  /// or has been written since the run that last did it.
  bool prepared = false;
  /// Positions in `inputs` (dlc.prepared_operands: a convolution's weights) that stay
  /// fixed between runs until a parameter changes: the kernel may keep them prepared
  /// for its library in the step's KernelMemo, told by the program's weights
  /// generation whether they changed. One-task programs only.
  std::vector<int> kept_inputs;
  std::shared_ptr<const FusedElementwise> fused;
};

/// Memory figures of a planned program.
struct MemoryPlan {
  size_t arena_bytes = 0;        ///< peak of the intermediates, after reuse (all arenas)
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
  /// One device's arena: the memory of a run's intermediates there.
  struct Arena {
    Device device;
    size_t bytes = 0;
  };

  std::string name;
  std::vector<ProgramValue> values;
  std::vector<ProgramStep> steps;
  std::vector<int> arguments; ///< the value of each argument
  std::vector<int> results;   ///< the value of each result (distinct, owning values)
  /// (value, argument): the value is copied into the argument's storage at the end.
  std::vector<std::pair<int, int>> updates;
  std::vector<Arena> arenas;
  /// Bytes of the prepared block, on the program's one device: the values of its
  /// prepared steps (dlc-hoist-parameter-work), which outlive a run. Programs with
  /// prepared steps run as one task.
  size_t prepared_bytes = 0;
  /// Whether its runs on a GPU may be recorded once and replayed as a CUDA graph
  /// (CompileOptions::cuda_graphs when it was compiled).
  bool cuda_graphs = true;

  /// Takes the memory figures of the plan the values' places come from (the lowering
  /// copies the places from dlc-plan-memory's decisions) and checks that every value
  /// lies inside its buffer. Call once, after the steps and places are complete.
  /// Returns "" or what is wrong; never throws, as the compiler calling it runs without
  /// exceptions.
  [[nodiscard]] std::string set_plan(const MemoryPlan &memory);
  const MemoryPlan &memory() const { return memory_; }

  /// How many seeds run() needs (one per random step, in step order).
  int64_t seeds_needed() const;
  /// The device of each random step, in order: run() takes one seed per entry, drawn
  /// from that device's generator as the eager ops would.
  std::vector<Device> seed_devices() const;
  /// Every device the program's steps run on, in first-use order.
  std::vector<Device> devices() const;
  /// Whether a run is one task on one device's queue (one device, no transfers or
  /// collectives); otherwise each stretch of one device's steps is a task.
  bool one_task() const { return oneTask_; }

  /// Queues the program: reads the arguments, writes the results and the updated
  /// arguments. `results` are the caller's result buffers, or empty: the run allocates
  /// them on their values' devices. Returns the result buffers. Arguments must live on
  /// their values' devices; `seeds` has seeds_needed() entries. (The program must be
  /// owned by a shared_ptr, which the queued tasks keep alive.)
  std::vector<BoundBuffer> run(const std::vector<BoundBuffer> &arguments,
                               const std::vector<BoundBuffer> &results,
                               std::vector<int64_t> seeds,
                               bool reference_kernels = false) const;

  /// A readable listing: one line per step with its values' places, then the plan.
  std::string str() const;

  /// What its graphed runs did (all zero where it runs without graphs).
  ProgramGraphStats graph_stats() const;

  /// How many runs did its prepared steps, and how many found them still valid.
  struct PreparedStats {
    int64_t prepared = 0, kept = 0;
  };
  PreparedStats prepared_stats() const;

private:
  /// Where a run's arguments, results and arena start.
  struct Bases {
    std::vector<char *> arguments, results;
    char *arena = nullptr;
    char *prepared = nullptr; ///< the prepared block
    /// Graphed runs only: the buffer behind each binding (arguments, then results).
    std::vector<std::shared_ptr<Buffer>> owners;
  };
  char *address(const Bases &bases, int value) const;
  /// Issues every step, then the updates, on `device` (the calling task's). Random steps
  /// take `seeds`, or read theirs from `device_seeds` (one int64 each) when it is given.
  /// `prepare`: run the prepared steps; `weightsGeneration`: the kept weights'
  /// (KernelArgs::memo_generation; 0: prepare them again).
  void launchSteps(Device device, const Bases &bases, const std::vector<int64_t> &seeds,
                   const int64_t *device_seeds, bool reference_kernels,
                   bool prepare = true, uint64_t weightsGeneration = 0) const;

  /// The prepared block and whether this run must redo the prepared steps: yes on the
  /// first run, after a failed preparation, with `always` (a graphed run replays every
  /// step), or when an argument they read is bound to another buffer or offset or has
  /// been written since. Called when the run is queued, so a write queued before it
  /// counts.
  /// A run that prepares also starts a new weights generation, returned third: kept
  /// weights (ProgramStep::kept_inputs) are prepared again.
  std::tuple<std::shared_ptr<Buffer>, bool, uint64_t>
  preparedFor(const std::vector<BoundBuffer> &arguments, bool always) const;
  /// After a preparing run failed: the next run prepares again.
  void forgetPrepared() const;

  /// The state of graphed runs (ProgramGraphs.cpp): one recording of the steps, its
  /// arena, and private copies of the arguments and results whose places move.
  struct Graphed;
  /// The graphed-run state for a run on `device`, made on first use; null when the run
  /// launches its steps one by one.
  std::shared_ptr<Graphed> graphedFor(Device device, bool reference_kernels) const;
  /// A run through the graph (worker side): a warm-up launch, a capture, or a replay,
  /// with the staging copies around it.
  void runGraphed(Graphed &graphed, Device device, const Bases &caller,
                  const std::shared_ptr<Storage> &pinned_seeds) const;

  void runAsOneTask(const std::vector<BoundBuffer> &arguments,
                    const std::vector<BoundBuffer> &results, std::vector<int64_t> seeds,
                    bool reference_kernels) const;
  void runByDevice(const std::vector<BoundBuffer> &arguments,
                   const std::vector<BoundBuffer> &results, std::vector<int64_t> seeds,
                   bool reference_kernels) const;

  MemoryPlan memory_;
  /// The arguments prepared steps read, and (buffer id, version, offset) of each at the
  /// last preparation (empty: none yet, or it failed).
  std::vector<int> preparedArguments_;
  /// Some step is prepared or keeps weights (set_plan works it out once).
  bool hasPrepared_ = false;
  /// The generation of the kept weights, and each step's memo (used by steps with
  /// kept_inputs only).
  mutable uint64_t weightsGeneration_ = 0;
  mutable std::vector<KernelMemo> memos_;
  mutable std::mutex preparedMutex_;
  mutable std::shared_ptr<Buffer> preparedBlock_;
  mutable std::vector<std::array<uint64_t, 3>> preparedStamps_;
  mutable PreparedStats preparedStats_;
  mutable std::mutex graphedMutex_;
  mutable std::shared_ptr<Graphed> graphed_;
  bool planned_ = false;
  bool oneTask_ = false;
  Device taskDevice_; ///< where a one-task run runs (set_plan works it out once)
};

} // namespace dlc

#endif // DLC_RUNTIME_PROGRAM_PROGRAM_H
