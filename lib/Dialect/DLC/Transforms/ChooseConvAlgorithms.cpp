//===- ChooseConvAlgorithms.cpp - direct or Winograd, per convolution shape ---===//
//
// The convolutions a Winograd transform exists for (stride 1, no dilation, one group; a
// 3x3 or 2x2 window) on host devices. `auto` is a
// rule, so every process compiles the same program: for 3x3 windows, Winograd for the
// forward convolutions of predicting functions whose weights stay prepared between runs
// (dlc.prepared_operands), where the weights are transformed once, and for every other
// one (training's forward and gradients) with enough output tiles for the kernels that
// transform the weights on each call to win; for 2x2 windows, every candidate; never
// below 16 input or output channels, or 10 million multiply-accumulates (100 million
// for 2x2 windows). `timed` measures both algorithms through a timer the compiler
// passes in (it links the runtime's kernels; this library does not) and takes Winograd
// where that is clearly faster; ops inside a fused region are timed as the region runs
// them (the region's operands' layouts, a ReLU epilogue, kept weights).
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

/// Output tiles (4x4, F(4x4,3x3)'s) a convolution needs before the Winograd kernels that
/// transform the weights on each call beat the direct ones. On 2 cores of an AVX-512
/// EPYC (oneDNN 2.6) they lose on 512 channels of 7x7 at batch 4 (16 tiles: forward
/// 4.6 against 3.3 ms) and win from 32 tiles on (batch 8: 5.2 against 6.8 ms; 1.2-2.4x
/// on ResNet-50's larger layers); `timed` measures where the rule is not enough.
constexpr int64_t kTransformingWinogradTiles = 32;

/// The 4x4 output tiles of a convolution whose output (or output gradient) is `output`.
int64_t winogradTiles(Value output) {
  auto type = cast<RankedTensorType>(output.getType());
  auto tiles = [](int64_t size) { return (size + 3) / 4; };
  return type.getDimSize(0) * tiles(type.getDimSize(2)) * tiles(type.getDimSize(3));
}

/// The output (or output gradient) of a convolution op: its tiles are Winograd's work.
Value convolutionOutput(Operation *op) {
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return conv.getResult();
  return op->getOperand(0); // the gradients' dy
}

/// The square window (3 or 2) of a stride-1, undilated, ungrouped f32 convolution op,
/// from its weight's (or weight gradient's) last two sizes; 0 for any other.
template <typename ConvLike> int64_t squareWindow(ConvLike conv, Value weight) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() != 4 || !type.getElementType().isF32())
    return 0;
  auto ones = [](ArrayRef<int64_t> pair) {
    return llvm::all_of(pair, [](int64_t v) { return v == 1; });
  };
  if (type.getDimSize(2) != type.getDimSize(3) || !ones(conv.getStride()) ||
      !ones(conv.getDilation()) || conv.getGroups() != 1)
    return 0;
  return type.getDimSize(2);
}

/// 3x3 windows: oneDNN's F(4x4, 3x3) in all three directions (dlc's F(4x4, 3x3) on
/// AVX2, also in all three). 2x2 windows: dlc's F(3x3, 2x2) forward and data gradient, and F(2x2, 3x3)
/// weight gradient (include/dlc/Runtime/CPU/Winograd2x2.h).
template <typename ConvLike> bool winogradShape(ConvLike conv, Value weight) {
  const int64_t window = squareWindow(conv, weight);
  return window == 3 || window == 2;
}

/// The weights (or weight gradient) of a convolution op, (O, C, KH, KW); null for
/// other ops.
Value convolutionWeight(Operation *op) {
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return conv.getWeight();
  if (auto conv = dyn_cast<Conv2DBackwardDataOp>(op))
    return conv.getWeight();
  if (auto conv = dyn_cast<Conv2DBackwardFilterOp>(op))
    return conv.getGradWeight();
  return {};
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

/// Input and output channels a convolution needs for `auto` to take Winograd: oneDNN's
/// Winograd kernels work on blocks of 16 channels, and below one block the direct
/// kernel wins (measured on 2 cores of an AVX-512 EPYC: 1 or 3 input channels 3-6x,
/// 8 by 1.1-1.2x; from 16 on Winograd wins).
constexpr int64_t kWinogradChannels = 16;

/// Multiply-accumulates (of the direct convolution) a convolution needs for `auto` to
/// take Winograd: its three phases (transform the input, multiply, transform back)
/// have fixed costs a small convolution does not repay. In a compiled Fashion-MNIST
/// network on 2 cores of an AVX-512 EPYC (32->64 channels on 14x14, 64->128 on 7x7:
/// 7.2 million each per image) Winograd lost at batch 1 (58 against 35 us per call)
/// and 2 and won from batch 4 on; ResNet-50's smallest 3x3 layer at batch 1 does 116
/// million and wins.
constexpr int64_t kWinogradMultiplyAccumulates = 10'000'000;

/// The same for 2x2 windows (dlc's F(3x3, 2x2), which transforms the weights on every
/// call and splits blocks of 48 tiles over the threads): on 2 cores of an AVX-512 EPYC
/// the LeafNetwork's 32 -> 64 channels on 62x62 lost at batch 2 (61 million: 0.61
/// against 0.54 ms) and won from batch 4 (122 million: 0.93 against 1.08 ms). The
/// weight gradient, one rule for all three directions, won at batch 4 by 1.15-1.5x.
constexpr int64_t kWinograd2x2MultiplyAccumulates = 100'000'000;

/// Whether the candidate `op` is large enough for Winograd to pay: kWinogradChannels
/// each way and the multiply-accumulates its window's kernel needs.
bool largeEnough(Operation *op) {
  auto weight = cast<RankedTensorType>(convolutionWeight(op).getType());
  auto output = cast<RankedTensorType>(convolutionOutput(op).getType());
  if (weight.getDimSize(0) < kWinogradChannels || weight.getDimSize(1) < kWinogradChannels)
    return false;
  const int64_t multiplyAccumulates = weight.getNumElements() * output.getDimSize(0) *
                                      output.getDimSize(2) * output.getDimSize(3);
  return multiplyAccumulates >= (weight.getDimSize(2) == 2 ? kWinograd2x2MultiplyAccumulates
                                                           : kWinogradMultiplyAccumulates);
}

/// Whether `auto` gives Winograd to the large-enough candidate `op`: 2x2 windows always
/// (dlc's kernel); 3x3 ones where their weights are transformed once, or with enough
/// output tiles for oneDNN's transforming kernels.
bool autoTakesWinograd(Operation *op, bool transformedOnce) {
  return cast<RankedTensorType>(convolutionWeight(op).getType()).getDimSize(2) == 2 ||
         transformedOnce || winogradTiles(convolutionOutput(op)) >= kTransformingWinogradTiles;
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

/// Unmarks the weights of the convolution `op` (keepsPreparedWeights) from its step's
/// kept operands. In a training function the trainer changes them every step, so keeping
/// them gains nothing, and a Winograd convolution with kept weights would run the kernel
/// that wants them transformed beforehand, a slow transform per step, where the training
/// kernels transform them inside, in parallel.
void forgetKeptWeights(Operation *op) {
  if (!keepsPreparedWeights(op))
    return;
  Operation *step = op;
  Value weight = cast<Conv2DOp>(op).getWeight();
  if (auto fused = op->getParentOfType<FusedOp>()) {
    step = fused;
    weight = fused.getInputs()[cast<BlockArgument>(weight).getArgNumber()];
  }
  StringRef name = DLCDialect::getPreparedOperandsAttrName();
  SmallVector<int64_t> kept;
  for (int64_t operand : step->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef())
    if (step->getOperand(unsigned(operand)) != weight)
      kept.push_back(operand);
  if (kept.empty())
    step->removeAttr(name);
  else
    step->setAttr(name, DenseI64ArrayAttr::get(op->getContext(), kept));
}

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
      if (trains)
        forgetKeptWeights(op);
      if (choose == "auto") {
        const bool transformedOnce = !trains && keepsPreparedWeights(op);
        if (largeEnough(op) && autoTakesWinograd(op, transformedOnce))
          op->setAttr("algorithm", winograd);
        return WalkResult::advance();
      }
      if (choose == "winograd") {
        op->setAttr("algorithm", winograd);
        return WalkResult::advance();
      }
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
