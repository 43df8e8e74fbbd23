//===- HoistParameterWork.cpp - mark the work that reads only parameters -----===//
//
// One walk in op order: a value is fixed when it is a parameter argument the function
// does not write back, or a result of a fixed op; an op is fixed when every operand is
// (a constant has none) and it has no effects and draws no fresh seed. Fixed ops that
// run a step and whose results stay inside the function are marked dlc.prepared; views
// of fixed values stay fixed without a mark (they take no step). What the runtime does
// with the mark is dlc-plan-memory's prepared block and the Program's version checks.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCHOISTPARAMETERWORK
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// Whether the function's steps run on one device without all-reduces: the programs
/// whose runs are one task, for which the runtime keeps prepared values.
bool runsAsOneTask(func::FuncOp function) {
  DeviceAttr fallback = functionDevice(function), device;
  bool one = true;
  function.getBody().front().walk([&](Operation *op) {
    if (isa<AllReduceOp, CopyOp>(op)) {
      one = false;
      return WalkResult::interrupt();
    }
    if (isa<func::ReturnOp, YieldOp>(op) || op->getParentOfType<FusedOp>())
      return WalkResult::advance();
    DeviceAttr at = stepDevice(op, fallback);
    if (device && at != device)
      one = false;
    device = at;
    return one ? WalkResult::advance() : WalkResult::interrupt();
  });
  return one;
}

/// The operand of `op` whose prepared form its kernel can keep between runs: a
/// convolution's weights (oneDNN reorders them into its blocked layout or transforms
/// them for Winograd on every call otherwise), also inside a conv2d_relu region, which
/// runs the convolution's kernel.
std::optional<unsigned> keptWeightsOperand(Operation *op) {
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return conv.getWeightMutable().getOperandNumber();
  auto fused = dyn_cast<FusedOp>(op);
  if (!fused || fused.getBody().front().empty())
    return std::nullopt;
  auto conv = dyn_cast<Conv2DOp>(&fused.getBody().front().front());
  if (!conv)
    return std::nullopt;
  auto weight = dyn_cast<BlockArgument>(conv.getWeight());
  if (!weight || weight.getOwner() != &fused.getBody().front())
    return std::nullopt;
  return weight.getArgNumber();
}

struct HoistParameterWorkPass : impl::DLCHoistParameterWorkBase<HoistParameterWorkPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
    if (failed(runnable))
      return signalPassFailure();
    if (!*runnable || !runsAsOneTask(function))
      return;
    Block &body = function.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    llvm::DenseSet<Value> fixed;
    for (BlockArgument argument : body.getArguments())
      if (function.getArgAttr(argument.getArgNumber(), DLCDialect::getParameterAttrName()))
        fixed.insert(argument);
    // An argument the function writes back changes with every run.
    for (unsigned k = 0; k < ret.getNumOperands(); ++k)
      if (auto updated = function.getResultAttrOfType<IntegerAttr>(
              k, DLCDialect::getUpdatesAttrName()))
        fixed.erase(body.getArgument(unsigned(updated.getInt())));
    llvm::DenseSet<Value> returned(ret.getOperands().begin(), ret.getOperands().end());

    for (Operation &operation : body.without_terminator()) {
      Operation *op = &operation;
      if (std::optional<unsigned> weights = keptWeightsOperand(op);
          weights && fixed.contains(op->getOperand(*weights)) &&
          !fixed.contains(op->getOperand(0)))
        op->setAttr(DLCDialect::getPreparedOperandsAttrName(),
                    DenseI64ArrayAttr::get(op->getContext(), {int64_t(*weights)}));
      bool reads = llvm::all_of(op->getOperands(), [&](Value v) { return fixed.contains(v); });
      if (!reads || op->getNumResults() == 0 || !isMemoryEffectFree(op) || drawsFreshSeeds(op))
        continue;
      if (llvm::any_of(op->getResults(), [&](Value v) { return returned.contains(v); }))
        continue;
      for (Value result : op->getResults())
        fixed.insert(result);
      if (!isViewOp(op))
        op->setAttr(DLCDialect::getPreparedAttrName(), UnitAttr::get(op->getContext()));
    }
  }
};

} // namespace
} // namespace mlir::dlc
