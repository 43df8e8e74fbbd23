//===- TimeConvolutions.cpp - dlc-choose-conv-algorithms's timer ---------------===//
//
// Times a convolution op of the IR with the runtime's host kernel, as the program will
// call it: the operands' and results' layouts (a fused region's from the region), its
// attributes with the algorithm asked for, a ReLU epilogue inside a conv2d_relu region,
// its weights prepared once where its step keeps them.
// Timings are kept for the process: one shape is timed once however often it occurs
// and whatever compiles it.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternal.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Runtime/Engine/KernelTiming.h"

#include <map>
#include <mutex>

namespace dlc::compiler {

using namespace mlir;

namespace {

/// The layout `value` has where its user reads it: a fused region's argument is the
/// region's operand.
Layout layoutRead(Value value) {
  if (auto argument = dyn_cast<BlockArgument>(value))
    if (auto fused = dyn_cast_or_null<mlir::dlc::FusedOp>(argument.getOwner()->getParentOp()))
      return Layout(int(mlir::dlc::valueLayout(fused.getInputs()[argument.getArgNumber()])));
  return Layout(int(mlir::dlc::valueLayout(value)));
}

/// The layout `result` is written in: a fused region's yielded value is the region's
/// result.
Layout layoutWritten(OpResult result) {
  if (auto fused = dyn_cast_or_null<mlir::dlc::FusedOp>(result.getOwner()->getParentOp()))
    for (OpOperand &use : result.getUses())
      if (isa<mlir::dlc::YieldOp>(use.getOwner()))
        return Layout(int(mlir::dlc::valueLayout(fused.getResult(use.getOperandNumber()))));
  return Layout(int(mlir::dlc::valueLayout(result)));
}

bool describe(Value value, Layout layout, TimedTensor &tensor, std::string &key) {
  std::string why;
  if (!mlir::dlc::runtimeTensor(value.getType(), tensor.shape, tensor.dtype, why))
    return false;
  tensor.layout = layout;
  for (int64_t size : tensor.shape)
    key += std::to_string(size) + "x";
  key += std::string(dtype_name(tensor.dtype)) + "/" + std::to_string(int(layout)) + ";";
  return true;
}

} // namespace

mlir::dlc::ConvAlgorithmTimer hostConvTimer() {
  return [](Operation *op, mlir::dlc::ConvAlgorithm algorithm) -> std::optional<double> {
    std::vector<TimedTensor> inputs, outputs;
    std::string key = op->getName().getStringRef().str() + "|";
    for (Value operand : op->getOperands()) {
      inputs.emplace_back();
      if (!describe(operand, layoutRead(operand), inputs.back(), key))
        return std::nullopt;
    }
    for (OpResult result : op->getResults()) {
      outputs.emplace_back();
      if (!describe(result, layoutWritten(result), outputs.back(), key))
        return std::nullopt;
    }
    Attrs attrs;
    std::string error;
    if (!mlir::dlc::readKernelAttrs(op, attrs, error))
      return std::nullopt;
    attrs.set("algorithm", int64_t(algorithm));
    if (auto fused = op->getParentOfType<mlir::dlc::FusedOp>()) // the library epilogue
      attrs.set("activation", std::string(!fused.getKind()                   ? "relu"
                                          : *fused.getKind() == "conv2d_relu6" ? "relu6"
                                          : *fused.getKind() == "conv2d_silu"  ? "silu"
                                                                               : "relu"));
    const bool kept = mlir::dlc::keepsPreparedWeights(op);
    key += attrs.str() + (kept ? "|kept" : "");

    static std::mutex mutex;
    static std::map<std::string, double> timed;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto known = timed.find(key); known != timed.end())
      return known->second;
    // nullopt (a kernel that refused): the pass reports the op
    std::optional<double> seconds =
        time_host_kernel(op->getName().getStringRef().str(), inputs, outputs, attrs, kept);
    if (seconds)
      timed[key] = *seconds;
    return seconds;
  };
}

} // namespace dlc::compiler
