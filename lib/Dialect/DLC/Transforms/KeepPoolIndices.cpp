//===- KeepPoolIndices.cpp - max pooling's gradient from the forward's indices ===//
//
// A max pooling's gradient finds every window's maximum again in the pooling's input,
// which the forward must keep for it: the largest activation of a convolution block.
// Here the forward's pooling becomes dlc.max_pool2d_indexed, which also writes a byte per
// output saying where the maximum was, and the gradient becomes
// dlc.max_pool2d_backward_indexed, which reads those bytes and dy only. A ReLU's gradient
// that dlc-fuse folded into the pooling's (a max_pool2d_backward_relu region) goes into
// the op's `relu` flag: the byte says whether the maximum was > 0.
//
// The pooling and its gradient pair up in one function (a training step) or across two:
// the gradient's input is then an argument `dlc.saved_from = [@forward, N]`, result N of
// the forward is the pooling's input, and the indices become a new last result of the
// forward (before the results that write arguments back) and a new last argument of
// the backward (saved_from its number). Nothing is removed or reordered: the input
// argument the gradient no longer reads stays, unread, for dlc-drop-unread-saved.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Core/KernelGeometry.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "SavedValues.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCKEEPPOOLINDICES
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// A max pooling's gradient: a max_pool2d_backward, or a max_pool2d_backward_relu
/// region that runs one (dlc-fuse's fold of the ReLU's gradient).
struct PoolGradient {
  Operation *op;              ///< what is replaced
  MaxPool2DBackwardOp pooled; ///< the gradient op (inside the region for `relu`)
  Value gradOutput, input;    ///< in op's function
  bool relu;
};

std::optional<PoolGradient> poolGradient(Operation *op) {
  if (auto backward = dyn_cast<MaxPool2DBackwardOp>(op))
    return op->getParentOfType<FusedOp>()
               ? std::nullopt
               : std::optional<PoolGradient>(PoolGradient{
                     op, backward, backward.getGradOutput(), backward.getInput(), false});
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused || fused.getKind() != StringRef("max_pool2d_backward_relu") ||
      fused->getNumOperands() != 2)
    return std::nullopt;
  Block &body = fused.getBody().front();
  auto backward = dyn_cast<MaxPool2DBackwardOp>(&body.front());
  auto relu = backward ? dyn_cast<ReluBackwardOp>(backward->getNextNode()) : ReluBackwardOp();
  // The shape fusedExecution runs as one kernel: dx = relu_backward(pool_backward(dy, x), x).
  if (!relu || relu->getNextNode() != body.getTerminator() ||
      relu.getOperand(0) != backward.getResult() || relu.getOperand(1) != body.getArgument(1) ||
      backward.getGradOutput() != body.getArgument(0) ||
      backward.getInput() != body.getArgument(1) ||
      body.getTerminator()->getOperands() != relu->getResults())
    return std::nullopt;
  return PoolGradient{op, backward, fused->getOperand(0), fused->getOperand(1), true};
}

/// Whether the pooling `forward` (a max_pool2d, or one converted already) is the one
/// whose gradient `pooled` takes.
template <typename PoolOpT> bool samePooling(PoolOpT forward, MaxPool2DBackwardOp pooled) {
  return forward.getKernel() == pooled.getKernel() &&
         forward.getStride() == pooled.getStride() &&
         forward.getPadding() == pooled.getPadding() &&
         forward.getCeilMode() == pooled.getCeilMode() &&
         forward.getOutput().getType() == pooled.getGradOutput().getType();
}

class KeepPoolIndicesPass : public impl::DLCKeepPoolIndicesBase<KeepPoolIndicesPass> {
public:
  void runOnOperation() override {
    SmallVector<std::pair<func::FuncOp, PoolGradient>> gradients;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal())
        function.walk([&](Operation *op) {
          if (auto gradient = poolGradient(op))
            gradients.push_back({function, *gradient});
        });
    for (auto &[function, gradient] : gradients)
      if (Value indices = indicesFor(function, gradient))
        replace(gradient, indices);
  }

private:
  /// Whether `op` runs where the indexed kernels exist: a host device whose target lists
  /// both ops.
  bool runsIndexed(Operation *op, func::FuncOp function) {
    DeviceKind kind = stepDevice(op, functionDevice(function)).getKind();
    return isHostKind(kind) &&
           targetRuns(op, MaxPool2DIndexedOp::getOperationName(), kind) &&
           targetRuns(op, MaxPool2DBackwardIndexedOp::getOperationName(), kind);
  }

  /// The pooling of `input` (a value of its function) that `pooled` is the gradient of,
  /// converted to the indexed op; null when there is none that can be.
  MaxPool2DIndexedOp indexedPoolingOf(Value input, MaxPool2DBackwardOp pooled,
                                      func::FuncOp function) {
    ArrayRef<int64_t> kernel = pooled.getKernel();
    if (kernel.size() != 2 || kernel[0] * kernel[1] > ::dlc::kernels::kMaxIndexedPoolTaps)
      return {};
    for (Operation *user : input.getUsers())
      if (auto converted = dyn_cast<MaxPool2DIndexedOp>(user))
        if (samePooling(converted, pooled) && converted->getParentOp() == function.getOperation())
          return converted; // another gradient of the same pooling
    for (Operation *user : input.getUsers()) {
      auto forward = dyn_cast<MaxPool2DOp>(user);
      if (forward && samePooling(forward, pooled) && runsIndexed(forward, function) &&
          forward->getParentOp() == function.getOperation())
        return convert(forward);
    }
    return {};
  }

  static MaxPool2DIndexedOp convert(MaxPool2DOp forward) {
    OpBuilder builder(forward);
    auto replacement = builder.create<MaxPool2DIndexedOp>(
        forward.getLoc(), forward.getInput(), forward.getKernelAttr(), forward.getStrideAttr(),
        forward.getPaddingAttr(), forward.getCeilModeAttr());
    if (Attribute device = forward->getAttr(DLCDialect::getDeviceAttrName()))
      replacement->setAttr(DLCDialect::getDeviceAttrName(), device);
    forward.getResult().replaceAllUsesWith(replacement.getOutput());
    forward->erase();
    return replacement;
  }

  /// The indices `gradient` reads in `function`, or null when it keeps its input.
  Value indicesFor(func::FuncOp function, const PoolGradient &gradient) {
    if (!runsIndexed(gradient.op, function))
      return {};
    // One function: the pooling reads the same value, before the gradient.
    if (!isa<BlockArgument>(gradient.input) ||
        !function.getArgAttr(cast<BlockArgument>(gradient.input).getArgNumber(),
                             DLCDialect::getSavedFromAttrName())) {
      MaxPool2DIndexedOp pooling = indexedPoolingOf(gradient.input, gradient.pooled, function);
      if (!pooling || pooling->getBlock() != gradient.op->getBlock() ||
          !pooling->isBeforeInBlock(gradient.op))
        return {};
      return pooling.getIndices();
    }
    // Two functions: the input is a result of the forward.
    auto argument = cast<BlockArgument>(gradient.input);
    std::optional<SavedSource> source = savedSource(getOperation(), function, argument);
    if (!source)
      return {};
    MaxPool2DIndexedOp pooling = indexedPoolingOf(source->value, gradient.pooled, source->producer);
    if (!pooling)
      return {};
    return savedArgument(function, argument, source->producer,
                         returnedResult(source->producer, pooling.getIndices()));
  }

  static void replace(const PoolGradient &gradient, Value indices) {
    OpBuilder builder(gradient.op);
    MaxPool2DBackwardOp pooled = gradient.pooled;
    auto replacement = builder.create<MaxPool2DBackwardIndexedOp>(
        gradient.op->getLoc(), gradient.op->getResult(0).getType(), gradient.gradOutput, indices,
        pooled.getKernelAttr(), pooled.getStrideAttr(), pooled.getPaddingAttr(),
        pooled.getCeilModeAttr(), gradient.relu ? builder.getUnitAttr() : UnitAttr());
    if (Attribute device = gradient.op->getAttr(DLCDialect::getDeviceAttrName()))
      replacement->setAttr(DLCDialect::getDeviceAttrName(), device);
    gradient.op->getResult(0).replaceAllUsesWith(replacement.getResult());
    gradient.op->erase();
  }
};

} // namespace

} // namespace mlir::dlc
