//===- Pipelines.cpp - the dialect's pipeline, up to the memory plan ----------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

namespace mlir::dlc {

void buildDLCPipeline(OpPassManager &pm, PipelineTarget target,
                      const DLCPipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  DLCPlaceDevicesOptions placement;
  if (target == PipelineTarget::cuda) {
    placement.defaultDevice = "gpu:0";
    placement.allowFallback = true;
  }
  // Before placement, which then places the fused op as it would have its steps.
  if (options.fuse)
    pm.addNestedPass<func::FuncOp>(createDLCFuseAttention());
  pm.addNestedPass<func::FuncOp>(createDLCPlaceDevices(placement));
  // Before dlc-fuse, which would take the activations' gradients into element-wise
  // regions; twice, around dlc-drop-unread-saved, which drops the norms' outputs the
  // first run leaves unread, so that the second finds them read by the activation alone.
  if (options.fuse && options.normActivation) {
    pm.addPass(createDLCFuseNormActivation());
    pm.addPass(createDLCDropUnreadSaved());
    pm.addPass(createDLCFuseNormActivation());
  }
  if (options.fuse)
    pm.addNestedPass<func::FuncOp>(createDLCFuse());
  // After dlc-fuse, whose ReLU-gradient regions it takes in; before the layouts, which
  // then give the indices their pooling's layout.
  if (options.poolIndices)
    pm.addPass(createDLCKeepPoolIndices());
  // After it, which leaves the pooling's input unread; before dlc-fuse-conv-pool, which
  // then keeps a region's activation in scratch where the forward no longer returns it.
  pm.addPass(createDLCDropUnreadSaved());
  // After it, whose indexed poolings it takes; before the layouts, which plan the
  // region's activation as the convolution's output.
  if (options.fuse && options.poolIndices)
    pm.addNestedPass<func::FuncOp>(createDLCFuseConvPool());
  // After the regions are formed (the updates are dlc-fuse's regions); before the
  // layouts and the parameter work, which then see the joins as any other op.
  if (options.fuse && options.groupUpdates)
    pm.addNestedPass<func::FuncOp>(createDLCGroupUpdates());
  if (!options.blockedLayout.empty()) {
    DLCAssignLayoutsOptions layouts;
    layouts.layout = options.blockedLayout;
    pm.addPass(createDLCAssignLayouts(layouts));
  }
  if (options.prepareParameters)
    pm.addNestedPass<func::FuncOp>(createDLCHoistParameterWork());
  // After the layouts and the kept weights: a convolution is chosen for, and timed in,
  // the layouts it will run in, with its weights prepared once or on every call.
  DLCChooseConvAlgorithmsOptions algorithms;
  algorithms.choose = options.convAlgorithms;
  pm.addPass(createDLCChooseConvAlgorithms(algorithms, options.convTimer));
  pm.addNestedPass<func::FuncOp>(createDLCOrderSteps());
  // After the order is final and every region formed; the plan then places the copies.
  if (options.memoryBudget > 0) {
    DLCRematOptions remat;
    remat.budget = options.memoryBudget;
    pm.addNestedPass<func::FuncOp>(createDLCRemat(remat));
  }
  pm.addNestedPass<func::FuncOp>(createDLCPlanMemory());
}

} // namespace mlir::dlc
