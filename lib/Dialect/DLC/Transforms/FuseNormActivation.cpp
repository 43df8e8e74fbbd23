//===- FuseNormActivation.cpp - training batch norm with its activation --------===//
//
// A training batch norm followed by a ReLU or ReLU6 becomes a batch_norm_activation
// region, and the activation's gradient followed by the norm's a
// batch_norm_activation_backward region (DLCExecution.h): one kernel each way on CPUs.
//
// A ReLU's gradient reads the ReLU's input, the norm's output, so the forward keeps that
// output for the backward and the norm cannot fold the ReLU in. The gradient passes
// where the input is > 0, which is where the ReLU's output is > 0, so first every
// `dlc.relu_backward %dz, %y` whose %y also feeds a `dlc.relu` reads that ReLU's output
// instead: in one function directly, across two (a saved argument) through the ReLU's
// output saved in its place, as dlc-keep-pool-indices saves a pooling's indices. The
// argument it no longer reads stays for dlc-drop-unread-saved, after which a second run
// of this pass finds the norm's output read by the ReLU alone. (ReLU6's gradient reads
// its output already.)
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "Outline.h"
#include "SavedValues.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCFUSENORMACTIVATION
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

Attribute deviceOf(Operation *op) { return op->getAttr(DLCDialect::getDeviceAttrName()); }

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

/// Whether `value` is the output of a training batch norm over axis 1 of float32.
bool isNormOutput(Value value) {
  auto norm = value.getDefiningOp<BatchNormOp>();
  return norm && norm.getTraining() && norm.getAxis() == 1 && value == norm.getResult(0) &&
         isF32Tensor(value.getType());
}

/// `value` when it is a norm's output (isNormOutput) or a `dlc.add` of one and a residual
/// of its type, that a `dlc.relu` reads: that ReLU.
ReluOp reluOfNorm(Value value) {
  auto add = value.getDefiningOp<AddOp>();
  const bool residual = add && add.getType() == add.getLhs().getType() &&
                        add.getLhs().getType() == add.getRhs().getType() &&
                        (isNormOutput(add.getLhs()) || isNormOutput(add.getRhs()));
  if (!residual && !isNormOutput(value))
    return {};
  Operation *producer = value.getDefiningOp();
  for (Operation *user : value.getUsers())
    if (auto relu = dyn_cast<ReluOp>(user); relu && relu->getBlock() == producer->getBlock())
      return relu;
  return {};
}

/// The residual that the only reader of norm output `y`, a `dlc.add` of `y` and another
/// value of its type defined before the norm (so that the region can take the norm's
/// place), adds; null otherwise.
Value residualOf(BatchNormOp norm, Operation *add) {
  Value y = norm.getResult(0);
  if (!isa<AddOp>(add) || add->getBlock() != norm->getBlock() ||
      add->getResult(0).getType() != y.getType() || deviceOf(add) != deviceOf(norm))
    return {};
  Value residual = add->getOperand(0) == y ? add->getOperand(1) : add->getOperand(0);
  if (residual == y || residual.getType() != y.getType() ||
      llvm::is_contained(norm->getOperands(), residual))
    return {};
  Operation *producer = residual.getDefiningOp();
  if (producer && (producer->getBlock() != norm->getBlock() || !producer->isBeforeInBlock(norm)))
    return {};
  return residual;
}

class FuseNormActivationPass : public impl::DLCFuseNormActivationBase<FuseNormActivationPass> {
public:
  void runOnOperation() override {
    SmallVector<func::FuncOp> functions;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && function.getBody().hasOneBlock())
        functions.push_back(function);
    for (func::FuncOp function : functions)
      readReluOutputs(function);
    for (func::FuncOp function : functions) {
      foldGradients(function);
      foldForwards(function);
    }
  }

private:
  /// Each ReLU gradient whose input is a norm's output that a ReLU reads takes that
  /// ReLU's output instead.
  void readReluOutputs(func::FuncOp function) {
    function.walk([&](ReluBackwardOp gradient) {
      Value input = gradient.getInput();
      if (ReluOp relu = reluOfNorm(input)) { // one function: the ReLU must come first
        if (relu->getBlock() == gradient->getBlock() && relu->isBeforeInBlock(gradient))
          gradient.getInputMutable().assign(relu.getResult());
        return;
      }
      auto argument = dyn_cast<BlockArgument>(input);
      if (!argument || argument.getOwner()->getParentOp() != function.getOperation())
        return;
      std::optional<SavedSource> source = savedSource(getOperation(), function, argument);
      ReluOp relu = source ? reluOfNorm(source->value) : ReluOp();
      if (!relu || relu->getParentOp() != source->producer.getOperation())
        return;
      gradient.getInputMutable().assign(
          savedArgument(function, argument, source->producer,
                        returnedResult(source->producer, relu.getResult())));
    });
  }

  /// `dlc.relu_backward` or `dlc.relu6_backward` read by a batch norm's gradient as its
  /// output gradient: one region with the first such norm gradient. Where others read
  /// the activation's gradient too (a residual's shortcut), the region also yields it,
  /// and takes the place of the activation's gradient (the norm gradient's other
  /// operands, forward values, come before it; otherwise no region).
  void foldGradients(func::FuncOp function) {
    SmallVector<std::pair<Operation *, BatchNormBackwardOp>> pairs;
    llvm::SmallPtrSet<Operation *, 16> taken;
    // The function's own ops only: the second run must not wrap the first's regions.
    for (auto norm : function.getBody().front().getOps<BatchNormBackwardOp>()) {
      Operation *gradient = norm.getGradOutput().getDefiningOp();
      if (!gradient || !isa<ReluBackwardOp, Relu6BackwardOp>(gradient) ||
          gradient->getBlock() != norm->getBlock() || deviceOf(gradient) != deviceOf(norm) ||
          norm.getAxis() != 1 || !isF32Tensor(norm.getGradOutput().getType()) ||
          taken.contains(gradient))
        continue;
      const bool before = llvm::all_of(ValueRange(norm->getOperands()).drop_front(), [&](Value v) {
        Operation *producer = v.getDefiningOp();
        return !producer || producer->isBeforeInBlock(gradient);
      });
      if (!gradient->hasOneUse() && !before)
        continue;
      taken.insert(gradient);
      pairs.push_back({gradient, norm});
    }
    for (auto [gradient, norm] : pairs) {
      SmallVector<Value> outputs(norm->getResults());
      if (!gradient->hasOneUse()) {
        norm->moveAfter(gradient);
        outputs.push_back(gradient->getResult(0));
      }
      outline({gradient, norm}, kNormActivationBackwardRegion, outputs);
    }
  }

  /// A training batch norm whose output only a ReLU or ReLU6 reads, or only an add of a
  /// residual (residualOf) that only such an activation reads: one region.
  void foldForwards(func::FuncOp function) {
    struct Chain {
      BatchNormOp norm;
      Operation *add; // or null
      Operation *activation;
    };
    SmallVector<Chain> chains;
    for (auto norm : function.getBody().front().getOps<BatchNormOp>()) {
      Value output = norm.getResult(0);
      if (!norm.getTraining() || norm.getAxis() != 1 || norm.getNumResults() != 3 ||
          !isF32Tensor(output.getType()) || !output.hasOneUse())
        continue;
      Operation *activation = *output.getUsers().begin(), *add = nullptr;
      if (residualOf(norm, activation) && activation->getResult(0).hasOneUse()) {
        add = activation;
        activation = *add->getResult(0).getUsers().begin();
      }
      if (isa<ReluOp, Relu6Op>(activation) && activation->getBlock() == norm->getBlock() &&
          deviceOf(activation) == deviceOf(norm))
        chains.push_back({norm, add, activation});
    }
    for (auto [norm, add, activation] : chains) {
      // Right after the norm (they read nothing else that comes after it), so that the
      // region, placed where the activation is, comes before every other reader of the
      // norm's statistics.
      SmallVector<Operation *> ops{norm.getOperation()};
      if (add) {
        add->moveAfter(norm);
        ops.push_back(add);
      }
      activation->moveAfter(ops.back());
      ops.push_back(activation);
      outline(ops, kNormActivationRegion,
              {activation->getResult(0), norm.getResult(1), norm.getResult(2)});
    }
  }
};

} // namespace

} // namespace mlir::dlc
