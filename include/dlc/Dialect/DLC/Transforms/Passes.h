//===- Passes.h - dlc dialect passes -----------------------------------------===//
#ifndef DLC_DIALECT_DLC_TRANSFORMS_PASSES_H
#define DLC_DIALECT_DLC_TRANSFORMS_PASSES_H

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::dlc {

#define GEN_PASS_DECL
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

/// The dialect's part of hybridize()'s pipeline, by target: canonicalize, place devices,
/// fuse, assign layouts, mark parameter-only work, order the steps, plan memory. On `cuda`, placement defaults to
/// gpu(0) and falls back to the CPU for ops without a GPU kernel. (Code generation
/// follows in the Conversion layer's buildDLCCompilerPipeline.)
enum class PipelineTarget { cpu, cuda };
/// `fuse = false` leaves dlc-fuse out (to measure what fusion saves); `blockedLayout`
/// names the layout dlc-assign-layouts gives activations ("nChw16c", "nChw8c"), and ""
/// leaves the pass out (CPUs without oneDNN's blocked kernels, the reference kernels);
/// `prepareParameters = false` leaves dlc-hoist-parameter-work out.
void buildDLCPipeline(OpPassManager &pm, PipelineTarget target, bool fuse = true,
                      StringRef blockedLayout = "nChw16c", bool prepareParameters = true);

} // namespace mlir::dlc

#endif // DLC_DIALECT_DLC_TRANSFORMS_PASSES_H
