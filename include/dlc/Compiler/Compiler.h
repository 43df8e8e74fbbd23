//===- Compiler.h - traced graphs to verified `dlc` modules to runtime programs -===//
//
// The compiler's entry for hybridize(): the graphs of one block (its forward and, when
// it trains, its backward) become one module with a `func.func` each, which is
// verified, run through the pipeline, and lowered into runtime Programs. MLIR stays
// behind this header: callers see strings and Programs.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_COMPILER_H
#define DLC_COMPILER_COMPILER_H

#include "dlc/Compiler/Graph.h"
#include "dlc/Core/CompileOptions.h"
#include "dlc/Runtime/Program/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::dlc {
struct OnnxGraph;
} // namespace mlir::dlc

namespace dlc::compiler {

struct CompiledModule {
  std::string traced_ir;  ///< the module as traced, before the pipeline
  std::string ir;         ///< after the pipeline: what was lowered
  std::vector<std::shared_ptr<Program>> programs; ///< one per graph, in order
  /// Per program, per argument: the result of the first program it is saved from
  /// (`dlc.saved_from`), or -1. The pipeline may append arguments to a backward (and
  /// results to its forward) that the traced graphs did not have: dlc-keep-pool-indices'
  /// indices.
  std::vector<std::vector<int>> saved_results;
};

/// Every entry compiles as `options` say (dlc/Core/CompileOptions.h) and reads nothing
/// else: an unset blocked layout means plain here (the front end resolves the process's
/// setting before it calls, and keys its caches by the result).

/// Emits `graphs` as one module, verifies it, runs the pipeline and lowers every
/// function to a planned Program. Returns "" on success, else the diagnostics (MLIR's,
/// with the op names of the trace as locations). Never throws: the compiler is built
/// without exceptions, as LLVM is.
std::string compile(const std::vector<const Graph *> &graphs, CompiledModule &out,
                    const CompileOptions &options);

/// A training step compiled for data parallelism.
struct CompiledDataParallel {
  std::string traced_ir; ///< the single-device step, as traced
  std::string ir;        ///< after sharding and the pipeline: what was lowered
  std::shared_ptr<Program> program;
};

/// Emits `step` (a single-device training step whose sample arguments are marked `batch`
/// and whose parameter gradients are marked `gradient`), shards it over `devices` with
/// dlc-shard-data-parallel (when there are several, or `processes` > 1: the step is one
/// process's part of a job, and its all-reduces span the processes), runs the CPU
/// pipeline and lowers it to a Program; `sync_batch_norm` normalizes with whole-batch
/// statistics. Returns "" on success, else the diagnostics.
std::string compile_data_parallel(const Graph &step, const std::vector<Device> &devices,
                                  CompiledDataParallel &out, bool sync_batch_norm,
                                  const CompileOptions &options, int processes = 1);

/// A function of a module written by export_model, compiled for predicting.
struct CompiledExport {
  std::string ir;                          ///< after the pipeline: what was lowered
  std::shared_ptr<Program> program;
  std::vector<std::string> argument_names; ///< per program argument: its `dlc.name`
};

/// Parses `text` (an exported module; `source` names it in diagnostics), keeps its
/// function `function`, moves it whole to device 0 of `target` (cpu or gpu), runs the
/// pipeline and lowers it. Refuses a function that updates its arguments (a forward traced
/// while training). Returns "" on success, else the diagnostics.
std::string compile_exported(const std::string &text, const std::string &source,
                             const std::string &function, DeviceKind target, CompiledExport &out,
                             const CompileOptions &options);

/// Parses `text` as compile_exported does and writes its function `function`, as traced
/// (before any pass), as ONNX nodes into `out` (dlc/Conversion/DLCToOnnx/DLCToOnnx.h).
/// Returns "" on success, else the problem (an op with no ONNX form, named).
std::string translate_exported_to_onnx(const std::string &text, const std::string &source,
                                       const std::string &function, mlir::dlc::OnnxGraph &out);

} // namespace dlc::compiler

#endif // DLC_COMPILER_COMPILER_H
