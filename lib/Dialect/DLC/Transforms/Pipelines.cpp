//===- Pipelines.cpp - the named pipelines of dlc-opt and hybridize() ---------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::dlc {

void buildDLCPipeline(OpPassManager &pm, PipelineTarget target, bool fuse,
                      bool blockedLayouts) {
  pm.addPass(createCanonicalizerPass());
  DLCPlaceDevicesOptions placement;
  if (target == PipelineTarget::cuda) {
    placement.defaultDevice = "gpu:0";
    placement.allowFallback = true;
  }
  pm.addNestedPass<func::FuncOp>(createDLCPlaceDevices(placement));
  if (fuse)
    pm.addNestedPass<func::FuncOp>(createDLCFuse());
  if (blockedLayouts)
    pm.addPass(createDLCAssignLayouts());
  pm.addNestedPass<func::FuncOp>(createDLCOrderSteps());
  pm.addNestedPass<func::FuncOp>(createDLCPlanMemory());
}

namespace {
// `--dlc-pipeline=cpu` reads as the pipeline `dlc-pipeline` with the flag option `cpu`.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<bool> cpu{*this, "cpu", llvm::cl::desc("the CPU pipeline")};
  Option<bool> cuda{*this, "cuda", llvm::cl::desc("the CUDA pipeline")};
  Option<bool> blockedLayouts{*this, "blocked-layouts",
                              llvm::cl::desc("assign oneDNN's blocked layouts (default on)"),
                              llvm::cl::init(true)};
};
} // namespace

void registerDLCPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "dlc-pipeline",
      "hybridize()'s pipeline: --dlc-pipeline=cpu or --dlc-pipeline=cuda (canonicalize, "
      "dlc-place-devices, dlc-fuse, dlc-assign-layouts unless blocked-layouts=false, "
      "dlc-order-steps, dlc-plan-memory)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildDLCPipeline(pm, options.cuda ? PipelineTarget::cuda : PipelineTarget::cpu,
                         /*fuse=*/true, options.blockedLayouts);
      });
}

} // namespace mlir::dlc
