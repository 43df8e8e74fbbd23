//===- ChooseConvAlgorithms.cpp - direct or Winograd, per convolution shape ---===//
//
// The convolutions a Winograd transform exists for (3x3 window, stride 1, no dilation,
// one group) on host devices. `auto` takes Winograd for the forward convolutions whose
// weights stay prepared between runs (dlc.prepared_operands): a rule, so every process
// compiles the same program. `timed` measures both algorithms through a timer the
// compiler passes in (it links the runtime's kernels; this library does not) and takes
// Winograd where that is clearly faster; ops inside a fused region are timed as the
// region runs them (the region's operands' layouts, a ReLU epilogue, kept weights).
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCCHOOSECONVALGORITHMS
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// Winograd is taken when it needs at most this share of the direct kernel's time: it
/// rounds a little more, which only a clear gain pays for (and timing noise is no gain).
constexpr double kWinogradShare = 0.9;

/// The window of a convolution op: its weight's (or weight gradient's) last two sizes.
template <typename ConvLike> bool winogradShape(ConvLike conv, Value weight) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() != 4 || !type.getElementType().isF32())
    return false;
  auto ones = [](ArrayRef<int64_t> pair) {
    return llvm::all_of(pair, [](int64_t v) { return v == 1; });
  };
  return type.getDimSize(2) == 3 && type.getDimSize(3) == 3 && ones(conv.getStride()) &&
         ones(conv.getDilation()) && conv.getGroups() == 1;
}

/// Whether `op` is a convolution Winograd could compute.
bool winogradCandidate(Operation *op) {
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return winogradShape(conv, conv.getWeight());
  if (auto conv = dyn_cast<Conv2DBackwardDataOp>(op))
    return winogradShape(conv, conv.getWeight());
  if (auto conv = dyn_cast<Conv2DBackwardFilterOp>(op))
    return winogradShape(conv, conv.getGradWeight());
  return false;
}

} // namespace

bool keepsPreparedWeights(Operation *op) {
  auto conv = dyn_cast<Conv2DOp>(op);
  if (!conv)
    return false;
  Operation *step = op;
  Value weight = conv.getWeight();
  if (auto fused = op->getParentOfType<FusedOp>()) {
    auto argument = dyn_cast<BlockArgument>(weight);
    if (!argument)
      return false;
    step = fused;
    weight = fused.getInputs()[argument.getArgNumber()];
  }
  auto kept = step->getAttrOfType<DenseI64ArrayAttr>(DLCDialect::getPreparedOperandsAttrName());
  if (!kept)
    return false;
  for (int64_t operand : kept.asArrayRef())
    if (step->getOperand(unsigned(operand)) == weight)
      return true;
  return false;
}

namespace {

struct ChooseConvAlgorithmsPass
    : impl::DLCChooseConvAlgorithmsBase<ChooseConvAlgorithmsPass> {
  using DLCChooseConvAlgorithmsBase::DLCChooseConvAlgorithmsBase;
  ChooseConvAlgorithmsPass(const DLCChooseConvAlgorithmsOptions &options,
                           ConvAlgorithmTimer timer)
      : DLCChooseConvAlgorithmsBase(options), timer_(std::move(timer)) {}

  void runOnOperation() override {
    if (choose != "auto" && choose != "timed" && choose != "winograd" && choose != "direct") {
      getOperation().emitError() << "dlc-choose-conv-algorithms: choose='" << choose
                                 << "'; expected auto, timed, winograd or direct";
      return signalPassFailure();
    }
    if (choose == "direct" || (choose == "timed" && !timer_))
      return;
    // Forwards recorded for training: a backward reads their results.
    llvm::DenseSet<StringRef> training;
    for (auto function : getOperation().getOps<func::FuncOp>())
      for (unsigned i = 0; i < function.getNumArguments(); ++i)
        if (auto source = function.getArgAttrOfType<ArrayAttr>(
                i, DLCDialect::getSavedFromAttrName()))
          if (!source.empty())
            if (auto producer = dyn_cast<FlatSymbolRefAttr>(source[0]))
              training.insert(producer.getValue());
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && failed(chooseIn(function, training.contains(function.getName()))))
        return signalPassFailure();
  }

private:
  LogicalResult chooseIn(func::FuncOp function, bool trains) {
    DeviceAttr fallback = functionDevice(function);
    auto winograd = ConvAlgorithmAttr::get(&getContext(), ConvAlgorithm::winograd);
    WalkResult walked = function.walk([&](Operation *op) {
      if (!winogradCandidate(op))
        return WalkResult::advance();
      // An op in a fused region runs where the region runs.
      Operation *step = op->getParentOfType<FusedOp>();
      if (!isHostKind(stepDevice(step ? step : op, fallback).getKind()))
        return WalkResult::advance();
      if (choose == "winograd" || (choose == "auto" && !trains && keepsPreparedWeights(op))) {
        op->setAttr("algorithm", winograd);
        return WalkResult::advance();
      }
      if (choose == "auto")
        return WalkResult::advance();
      std::optional<double> direct = timer_(op, ConvAlgorithm::direct);
      std::optional<double> transformed = timer_(op, ConvAlgorithm::winograd);
      if (!direct || !transformed) {
        op->emitError() << "dlc-choose-conv-algorithms: " << op->getName()
                        << " could not be timed with the host's kernels";
        return WalkResult::interrupt();
      }
      if (*transformed <= kWinogradShare * *direct)
        op->setAttr("algorithm", winograd);
      return WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  }

  ConvAlgorithmTimer timer_;
};

} // namespace

std::unique_ptr<Pass> createDLCChooseConvAlgorithms(const DLCChooseConvAlgorithmsOptions &options,
                                                    ConvAlgorithmTimer timer) {
  return std::make_unique<ChooseConvAlgorithmsPass>(options, std::move(timer));
}

} // namespace mlir::dlc
