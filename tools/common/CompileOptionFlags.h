//===- CompileOptionFlags.h - the compile options as command-line flags --------===//
//
// dlc-compile and dlc-train take the same flags for CompileOptions
// (dlc/Core/CompileOptions.h). A flag given on the command line wins; an option without
// one is as the environment asks (compile_options_from_environment). Included by one
// translation unit per tool: the flags are that tool's globals.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TOOLS_COMMON_COMPILEOPTIONFLAGS_H
#define DLC_TOOLS_COMMON_COMPILEOPTIONFLAGS_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/Error.h"

#include "llvm/Support/CommandLine.h"

namespace dlc::tools {

inline llvm::cl::OptionCategory compileOptionFlags("Compile options (default: as the DLC_* "
                                                   "environment variables ask)");

inline llvm::cl::opt<bool> fuseFlag("fuse", llvm::cl::desc("fuse ops into regions (dlc-fuse)"),
                                    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> prepareParametersFlag(
    "prepare-parameters",
    llvm::cl::desc("do work that reads only parameters once and keep it until they change "
                   "(false: on every call)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> poolIndicesFlag(
    "pool-indices",
    llvm::cl::desc("let max pooling's gradient read where the forward found each maximum "
                   "(false: find the maxima again in the pooling's input)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> normActivationFlag(
    "norm-activation",
    llvm::cl::desc("run a training batch norm and the ReLU or ReLU6 after it as one kernel "
                   "each way (false: two steps each way)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> groupUpdatesFlag(
    "group-updates",
    llvm::cl::desc("run a training step's small parameter updates of one formula as one step "
                   "(false: one step per parameter)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> memoryBudgetFlag(
    "memory-budget",
    llvm::cl::desc("the most bytes (K, M, G allowed) a compiled step's arena may hold on a "
                   "device: activations (element-wise ops, batch norms, convolutions) are "
                   "computed again in the backward until it fits (0: no budget, the default)"),
    llvm::cl::value_desc("bytes"), llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> convAlgorithmsFlag(
    "conv-algorithms",
    llvm::cl::desc("how 3x3 CPU convolutions compute: auto (Winograd for large enough "
                   "ones whose weights stay prepared, or training's with 32 output tiles; "
                   "the default), timed (the faster of direct and Winograd "
                   "on this machine), winograd or direct"),
    llvm::cl::value_desc("choice"), llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> generatedKernelsFlag(
    "generated-kernels",
    llvm::cl::desc("compile element-wise regions to generated code (false: their "
                   "interpreted sub-kernels)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> cudaGraphsFlag(
    "cuda-graphs",
    llvm::cl::desc("on a GPU, record each compiled program once as a CUDA graph and replay "
                   "it (false: launch its kernels one by one)"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<bool> compileTimingFlag(
    "compile-timing",
    llvm::cl::desc("print the options and where each compile's time goes to stderr"),
    llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> blockedLayoutFlag(
    "blocked-layout",
    llvm::cl::desc("CPU activations' blocked layout: nChw16c, nChw8c or plain (default: "
                   "the CPU's)"),
    llvm::cl::value_desc("layout"), llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> cudaToolkitFlag(
    "cuda-toolkit", llvm::cl::desc("the CUDA toolkit whose libdevice generated PTX links"),
    llvm::cl::value_desc("dir"), llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> gpuChipFlag(
    "gpu-chip", llvm::cl::desc("the GPU architecture of generated PTX (default sm_90)"),
    llvm::cl::value_desc("sm_NN"), llvm::cl::cat(compileOptionFlags));
inline llvm::cl::opt<std::string> cacheDirFlag(
    "cache-dir",
    llvm::cl::desc("where generated kernels are kept between runs ('off': nowhere)"),
    llvm::cl::value_desc("dir"), llvm::cl::cat(compileOptionFlags));

/// The environment's options with every flag given on the command line applied.
inline CompileOptions compileOptionsFromFlags() {
  CompileOptions options = compile_options_from_environment();
  auto given = [](const llvm::cl::Option &flag) { return flag.getNumOccurrences() > 0; };
  if (given(fuseFlag))
    options.fuse = fuseFlag;
  if (given(prepareParametersFlag))
    options.prepare_parameters = prepareParametersFlag;
  if (given(poolIndicesFlag))
    options.pool_indices = poolIndicesFlag;
  if (given(normActivationFlag))
    options.norm_activation = normActivationFlag;
  if (given(groupUpdatesFlag))
    options.group_updates = groupUpdatesFlag;
  if (given(memoryBudgetFlag))
    options.memory_budget = parse_memory_budget(memoryBudgetFlag, "--memory-budget");
  if (given(convAlgorithmsFlag))
    options.conv_algorithms = checked_conv_algorithms(convAlgorithmsFlag, "--conv-algorithms");
  if (given(generatedKernelsFlag))
    options.generated_kernels = generatedKernelsFlag;
  if (given(cudaGraphsFlag))
    options.cuda_graphs = cudaGraphsFlag;
  if (given(compileTimingFlag))
    options.timing = compileTimingFlag;
  if (given(blockedLayoutFlag)) {
    const std::string &name = blockedLayoutFlag;
    if (name == layout_name(Layout::plain))
      options.blocked_layout = Layout::plain;
    else if (name == layout_name(Layout::nChw8c))
      options.blocked_layout = Layout::nChw8c;
    else if (name == layout_name(Layout::nChw16c))
      options.blocked_layout = Layout::nChw16c;
    else
      throw ValueError("--blocked-layout=" + name + ": expected nChw16c, nChw8c or plain");
  }
  if (given(cudaToolkitFlag))
    options.cuda_toolkit = cudaToolkitFlag;
  if (given(gpuChipFlag))
    options.gpu_chip = gpuChipFlag;
  if (given(cacheDirFlag))
    options.cache_dir = cacheDirFlag == "off" ? std::string() : cacheDirFlag.getValue();
  return options;
}

} // namespace dlc::tools

#endif // DLC_TOOLS_COMMON_COMPILEOPTIONFLAGS_H
