//===- FuseConvPool.cpp - a convolution and its max pooling, one step each way ===//
//
// A training forward's convolution block writes its activation (the convolution's
// output, after the ReLU) and the max pooling reads it back: on the LeafNetwork's first
// block at batch 32, 66 MB each way, from memory. As one step the runtime runs the two
// over a few images at a time, and the pooling finds the activation in the cache.
//
// The pooling is the indexed one (dlc-keep-pool-indices, which runs first): its
// gradient reads the indices, not the activation, so in a step of one function the
// activation need not be written at all. Where something else reads it (the forward of
// a forward/backward pair returns the values it saved), it is a result of the region.
//
// The gradients come back the same way: the pooling's gradient writes the activation's
// gradient (as large) and the convolution's data and filter gradients read it. As one
// region they run chunk by chunk too, and it is never a value of the plan.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "Outline.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCFUSECONVPOOL
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// The device `op` was placed on (dlc-place-devices names one on every step).
DeviceAttr placedOn(Operation *op) {
  return op->getAttrOfType<DeviceAttr>(DLCDialect::getDeviceAttrName());
}

/// The ops of a convolution block ending in `activation`: a dlc.conv2d, or the
/// conv2d_relu region dlc-fuse made of one and its ReLU. Null for anything else.
Operation *convolutionBlock(Value activation) {
  Operation *producer = activation.getDefiningOp();
  if (isa_and_nonnull<Conv2DOp>(producer))
    return producer;
  auto fused = dyn_cast_or_null<FusedOp>(producer);
  if (!fused || fused.getKind() != StringRef("conv2d_relu") || fused->getNumResults() != 1)
    return nullptr;
  Block &body = fused.getBody().front();
  auto conv = dyn_cast<Conv2DOp>(&body.front());
  auto relu = conv ? dyn_cast<ReluOp>(conv->getNextNode()) : ReluOp();
  if (!relu || relu.getInput() != conv.getOutput() ||
      relu->getNextNode() != body.getTerminator() ||
      body.getTerminator()->getOperands() != relu->getResults() ||
      conv->getOperands() != ValueRange(body.getArguments()))
    return nullptr;
  return fused;
}

/// The ops of `fused`'s body, cloned before it on its device; its result replaced by the
/// clone of what it yields.
SmallVector<Operation *> inlineRegion(FusedOp fused) {
  OpBuilder builder(fused);
  IRMapping mapping;
  Block &body = fused.getBody().front();
  for (auto [argument, operand] : llvm::zip(body.getArguments(), fused.getInputs()))
    mapping.map(argument, operand);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    Operation *clone = builder.clone(op, mapping);
    clone->setAttr(DLCDialect::getDeviceAttrName(), placedOn(fused));
    ops.push_back(clone);
  }
  for (auto [result, yielded] : llvm::zip(fused.getResults(), body.getTerminator()->getOperands()))
    result.replaceAllUsesWith(mapping.lookup(yielded));
  fused->erase();
  return ops;
}

/// The pooling's gradient `gradient` and the convolution gradients that alone read it
/// (a filter gradient, and a data gradient unless the convolution read the network's
/// input) into a max_pool2d_backward_conv2d region, in that order, where the last of
/// them was.
void fuseGradients(MaxPool2DBackwardIndexedOp gradient) {
  DeviceAttr device = placedOn(gradient);
  if (!device || !isHostKind(device.getKind()))
    return;
  Conv2DBackwardDataOp data;
  Conv2DBackwardFilterOp filter;
  for (Operation *user : gradient->getUsers()) {
    auto asData = dyn_cast<Conv2DBackwardDataOp>(user);
    auto asFilter = dyn_cast<Conv2DBackwardFilterOp>(user);
    if (asData && !data && asData.getGradOutput() == gradient.getResult())
      data = asData;
    else if (asFilter && !filter && asFilter.getGradOutput() == gradient.getResult())
      filter = asFilter;
    else
      return; // another reader, or one reading it twice
  }
  if (!filter)
    return;
  SmallVector<Operation *> ops{gradient};
  if (data)
    ops.push_back(data);
  ops.push_back(filter);
  Operation *last = gradient;
  for (Operation *op : ops) {
    if (op->getBlock() != gradient->getBlock() || placedOn(op) != device)
      return;
    if (last->isBeforeInBlock(op))
      last = op;
  }
  // The region takes the last op's place: what the others read must be there already,
  // and what they give must be read only after it.
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (producer && !llvm::is_contained(ops, producer) && !producer->isBeforeInBlock(last))
        return;
    }
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!llvm::is_contained(ops, user) &&
            (user->getBlock() != last->getBlock() || !last->isBeforeInBlock(user)))
          return;
  }
  // outline() places the region before the last op of its list.
  if (last != ops.back())
    ops.back()->moveAfter(last);
  outline(ops, kPoolConvBackwardRegion);
}

struct FuseConvPoolPass : impl::DLCFuseConvPoolBase<FuseConvPoolPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
    if (failed(runnable))
      return signalPassFailure();
    if (!*runnable)
      return;
    SmallVector<MaxPool2DIndexedOp> poolings;
    function.walk([&](MaxPool2DIndexedOp pool) {
      if (!pool->getParentOfType<FusedOp>())
        poolings.push_back(pool);
    });
    SmallVector<MaxPool2DBackwardIndexedOp> gradients;
    function.walk([&](MaxPool2DBackwardIndexedOp gradient) {
      if (!gradient->getParentOfType<FusedOp>())
        gradients.push_back(gradient);
    });
    for (MaxPool2DBackwardIndexedOp gradient : gradients)
      fuseGradients(gradient);
    for (MaxPool2DIndexedOp pool : poolings) {
      Value activation = pool.getInput();
      Operation *block = convolutionBlock(activation);
      DeviceAttr device = placedOn(pool);
      // Host devices (whose kernels run the region as one step), one device, and every
      // other reader of the activation after the pooling: the region takes the
      // pooling's place.
      if (!block || !device || !isHostKind(device.getKind()) || placedOn(block) != device ||
          block->getBlock() != pool->getBlock() ||
          !llvm::all_of(activation.getUsers(), [&](Operation *user) {
            return user == pool || (user->getBlock() == pool->getBlock() &&
                                    pool->isBeforeInBlock(user));
          }))
        continue;
      SmallVector<Operation *> ops = isa<FusedOp>(block) ? inlineRegion(cast<FusedOp>(block))
                                                         : SmallVector<Operation *>{block};
      ops.push_back(pool);
      outline(ops, kConvPoolRegion);
    }
  }
};

} // namespace
} // namespace mlir::dlc
