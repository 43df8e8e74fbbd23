//===- CompileOptions.h - what a compile is asked to do, as one value ---------===//
//
// Everything that changes what hybridize(), the compiled training step or dlc-compile
// produce is a field here. The value is filled where the user speaks (dlc-compile's and
// dlc-train's flags, hybridize() and TrainStep arguments in C++ and Python, or
// compile_options_from_environment(), the one reader of the documented variables), passed
// down to the compiler, printed with DLC_COMPILE_TIMING and made part of every compile
// cache key. The compiler itself reads no environment variable: two compiles that differ
// in an option differ in their keys, and a test states what it compiled with.
//
// Settings that do not change the compiled program (profiling, the numerics guard,
// logging) stay run-time settings of the process: see docs/options.md.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_COMPILEOPTIONS_H
#define DLC_CORE_COMPILEOPTIONS_H

#include "dlc/Core/Layout.h"

#include <optional>
#include <string>

namespace dlc {

struct CompileOptions {
  /// dlc-assign-layouts's blocked layout for CPU activations (plain: the pass is left
  /// out). Unset: the process's eager setting (blocked_layout(), which follows the CPU and
  /// DLC_BLOCKED_LAYOUTS), plain while the reference kernels are on.
  std::optional<Layout> blocked_layout;
  /// dlc-fuse (DLC_DISABLE_FUSION=1 turns it off, to measure what fusion saves).
  bool fuse = true;
  /// dlc-hoist-parameter-work: work that reads only parameters and constants (batch-norm
  /// folding, constants) done once and kept until a parameter changes
  /// (DLC_PREPARE_PARAMETERS=0: done on every call, the path before it).
  bool prepare_parameters = true;
  /// dlc-keep-pool-indices: a training forward's max pooling also writes where each
  /// window's maximum was, and its gradient reads that instead of the pooling's input
  /// (DLC_POOL_INDICES=0: the gradient finds the maxima again, the path before it).
  bool pool_indices = true;
  /// dlc-fuse-norm-activation (with `fuse`): a training batch norm and the ReLU or ReLU6
  /// after it run as one kernel each way (DLC_NORM_ACTIVATION=0: the norm and the
  /// activation as two steps each way, the path before it). The same numbers either way.
  bool norm_activation = true;
  /// dlc-group-updates (with `fuse`): a compiled training step's small parameter updates
  /// of one formula run as one step over all their elements (DLC_GROUP_UPDATES=0: one
  /// step per parameter, the path before it). The same numbers either way.
  bool group_updates = true;
  /// dlc-remat: the most bytes a compiled function's arena may hold on one device;
  /// activations (element-wise ops, batch norms, convolutions) are computed again in the
  /// backward instead of kept until it, until the arena fits (DLC_MEMORY_BUDGET, bytes
  /// with an optional K, M or G). 0: no budget, every activation kept.
  int64_t memory_budget = 0;
  /// dlc-choose-conv-algorithms: "auto" (Winograd for the 3x3 convolutions with 16
  /// channels each way and 10 million multiply-accumulates whose weights stay prepared
  /// between runs, prediction, or that have 32 output tiles of 4x4), "timed" (each 3x3 convolution
  /// shape timed with oneDNN's direct and Winograd kernels at compile time, the faster
  /// recorded; processes may then choose differently), "winograd" (wherever the shape
  /// allows) or "direct" (DLC_CONV_ALGORITHMS=direct: the path before the pass).
  std::string conv_algorithms = "auto";
  /// Element-wise regions compiled to generated code (DLC_GENERATED_KERNELS=0: run
  /// through their interpreted sub-kernels, the path before code generation).
  bool generated_kernels = true;
  /// Device programs replayed as CUDA graphs once warm (DLC_CUDA_GRAPHS=0: launched op
  /// by op). A property of the compiled program; the host ignores it.
  bool cuda_graphs = true;
  /// Print where the compile's time goes (MLIR's pass timing, then the lowering) and
  /// these options to stderr (DLC_COMPILE_TIMING=1). Not part of the cache key: it
  /// changes what is reported, not what is compiled.
  bool timing = false;
  /// The CUDA toolkit whose libdevice generated PTX links (a directory holding
  /// nvvm/libdevice/libdevice.10.bc); "": none, GPU regions then run op by op.
  std::string cuda_toolkit;
  /// The GPU architecture generated PTX is for.
  std::string gpu_chip = "sm_90";
  /// Where generated host objects and PTX are kept between processes; "": not kept.
  std::string cache_dir;

  /// "blocked-layout=nChw8c fuse=1 prepare-parameters=1 pool-indices=1 conv-algorithms=auto generated-kernels=1 cuda-graphs=1 cuda-toolkit=...
  /// gpu-chip=sm_90 cache-dir=..." (an unset layout reads "process"): what
  /// DLC_COMPILE_TIMING prints.
  std::string str() const;
  /// str() less timing: what compile cache keys hold.
  std::string key() const;

  bool operator==(const CompileOptions &other) const { return str() == other.str(); }
};

/// The options the documented environment variables ask for, read now:
/// DLC_DISABLE_FUSION, DLC_PREPARE_PARAMETERS, DLC_POOL_INDICES, DLC_CONV_ALGORITHMS, DLC_GENERATED_KERNELS, DLC_CUDA_GRAPHS, DLC_COMPILE_TIMING,
/// DLC_GPU_CHIP, DLC_CACHE_DIR ("off": no cache; unset: dlc under $XDG_CACHE_HOME or
/// ~/.cache) and the CUDA toolkit (the first holding libdevice of $DLC_CUDA_TOOLKIT, the
/// toolkit dlc was configured with, $CUDA_HOME and /usr/local/cuda). The blocked layout
/// stays unset (the process's). A malformed value is an Error naming the variable.
CompileOptions compile_options_from_environment();

/// A memory budget written as bytes with an optional binary suffix (K, M, G: 2^10,
/// 2^20, 2^30; "512M", "1.5G"); an Error naming `where` for anything else.
int64_t parse_memory_budget(const std::string &value, const std::string &where);

/// `value` when it is one of conv_algorithms' values; else an Error that says where it
/// came from (`where`: "DLC_CONV_ALGORITHMS", "--conv-algorithms", ...).
const std::string &checked_conv_algorithms(const std::string &value, const std::string &where);

/// The CUDA toolkit compile_options_from_environment() picks ("" when none holds
/// libdevice).
std::string default_cuda_toolkit();

/// The kernel cache directory compile_options_from_environment() picks.
std::string default_cache_dir();

} // namespace dlc

#endif // DLC_CORE_COMPILEOPTIONS_H
