//===- Pipelines.cpp - the dialect's pipeline, up to the memory plan ----------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

namespace mlir::dlc {

void buildDLCPipeline(OpPassManager &pm, PipelineTarget target, bool fuse,
                      StringRef blockedLayout, bool prepareParameters) {
  pm.addPass(createCanonicalizerPass());
  DLCPlaceDevicesOptions placement;
  if (target == PipelineTarget::cuda) {
    placement.defaultDevice = "gpu:0";
    placement.allowFallback = true;
  }
  pm.addNestedPass<func::FuncOp>(createDLCPlaceDevices(placement));
  if (fuse)
    pm.addNestedPass<func::FuncOp>(createDLCFuse());
  if (!blockedLayout.empty()) {
    DLCAssignLayoutsOptions layouts;
    layouts.layout = blockedLayout.str();
    pm.addPass(createDLCAssignLayouts(layouts));
  }
  if (prepareParameters)
    pm.addNestedPass<func::FuncOp>(createDLCHoistParameterWork());
  pm.addNestedPass<func::FuncOp>(createDLCOrderSteps());
  pm.addNestedPass<func::FuncOp>(createDLCPlanMemory());
}

} // namespace mlir::dlc
