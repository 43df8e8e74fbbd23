//===- Passes.h - dlc dialect passes -----------------------------------------===//
#ifndef DLC_DIALECT_DLC_TRANSFORMS_PASSES_H
#define DLC_DIALECT_DLC_TRANSFORMS_PASSES_H

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <optional>
#include <vector>

namespace mlir::dlc {

#define GEN_PASS_DECL
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

/// Seconds one call of the convolution `op` takes on the host when its `algorithm` is
/// `algorithm` (its shapes, layouts and attributes as the program will run it), or
/// nullopt when it cannot be timed. The compiler, which links the runtime's kernels,
/// gives one to dlc-choose-conv-algorithms.
using ConvAlgorithmTimer =
    std::function<std::optional<double>(Operation *op, ConvAlgorithm algorithm)>;

/// Whether the dlc.conv2d `op` reads its weights from an operand its step keeps
/// prepared between runs (dlc.prepared_operands on it or on its fused region).
bool keepsPreparedWeights(Operation *op);

/// A value dlc-plan-memory places in its device's arena, and the steps over which it
/// holds its block: from the step that makes it to its last reader's.
struct ArenaLifetime {
  Value value;
  DeviceAttr device;
  int64_t bytes = 0;
  int first = 0, last = 0; ///< indices into MemoryPlanPreview::steps; steps.size(): the end
};

/// What dlc-plan-memory would decide for a function, planned without writing into it.
/// Steps are the function's ops that are not views, in order (an op-by-op region is one
/// step); arguments, results in caller buffers and prepared values hold no arena block.
struct MemoryPlanPreview {
  SmallVector<Operation *> steps;
  std::vector<ArenaLifetime> lifetimes;
  /// Each value that lives in an arena block, a view or a region's result included, to
  /// the lifetime of the value that owns the block.
  llvm::DenseMap<Value, int> lifetimeOf;
  /// Each arena's size, one per device in the order its steps first run there.
  SmallVector<int64_t> arenaSizes;
};

/// dlc-plan-memory's plan of `function` (one block ending with func.return); the
/// function is left as it is. Failure, with an error, where the plan fails.
FailureOr<MemoryPlanPreview> previewMemoryPlan(func::FuncOp function);

/// dlc-choose-conv-algorithms with a timer for `choose=timed`.
std::unique_ptr<Pass> createDLCChooseConvAlgorithms(const DLCChooseConvAlgorithmsOptions &options,
                                                    ConvAlgorithmTimer timer);

/// The dialect's part of hybridize()'s pipeline, by target: canonicalize, place devices,
/// fuse, keep pooling indices, assign layouts, mark parameter-only work, choose convolution algorithms, order
/// the steps, plan memory. On `cuda`, placement defaults to gpu(0) and falls back to the
/// CPU for ops without a GPU kernel. (Code generation follows in the Conversion layer's
/// buildDLCCompilerPipeline.)
enum class PipelineTarget { cpu, cuda };

struct DLCPipelineOptions {
  bool fuse = true; ///< dlc-fuse (off: to measure what fusion saves)
  /// dlc-assign-layouts's blocked layout for activations ("nChw16c", "nChw8c"); "": the
  /// pass left out (CPUs without oneDNN's blocked kernels, the reference kernels).
  std::string blockedLayout = "nChw16c";
  /// dlc-hoist-parameter-work (off: parameter-only work runs on every call)
  bool prepareParameters = true;
  /// dlc-keep-pool-indices (off: max pooling's gradient reads the pooling's input)
  bool poolIndices = true;
  /// dlc-fuse-norm-activation, with `fuse` (off: the norms and activations stay apart)
  bool normActivation = true;
  /// dlc-group-updates, with `fuse` (off: every parameter's update is its own step)
  bool groupUpdates = true;
  /// dlc-remat's budget in bytes (0: the pass left out, every activation kept)
  int64_t memoryBudget = 0;
  /// dlc-choose-conv-algorithms's `choose` (auto, timed, winograd, direct) and its timer
  /// (none: `timed` leaves every convolution direct).
  std::string convAlgorithms = "auto";
  ConvAlgorithmTimer convTimer;
};

void buildDLCPipeline(OpPassManager &pm, PipelineTarget target,
                      const DLCPipelineOptions &options = {});

} // namespace mlir::dlc

#endif // DLC_DIALECT_DLC_TRANSFORMS_PASSES_H
