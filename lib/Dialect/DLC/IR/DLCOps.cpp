//===- DLCOps.cpp - dlc ops: type inference, verifiers, device checks -----===//
//
// Shapes come from dlc::shape_rules, which the eager runtime uses too; this file turns
// their answers into MLIR types and their errors into diagnostics naming the op.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"

#include "dlc/Core/KernelGeometry.h"
#include "dlc/Core/Layout.h"
#include "dlc/Core/ShapeRules.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::dlc;
namespace rules = ::dlc::shape_rules;

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

std::optional<DeviceAttr> mlir::dlc::getKnownDevice(Value value) {
  StringRef name = DLCDialect::getDeviceAttrName();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (!owner || !arg.getOwner()->isEntryBlock())
      return std::nullopt;
    if (auto fused = dyn_cast<FusedOp>(owner)) {
      if (arg.getArgNumber() < fused.getInputs().size())
        return getKnownDevice(fused.getInputs()[arg.getArgNumber()]);
      return std::nullopt;
    }
    if (auto fn = dyn_cast<FunctionOpInterface>(owner))
      if (auto device = fn.getArgAttrOfType<DeviceAttr>(arg.getArgNumber(), name))
        return device;
    return std::nullopt;
  }
  Operation *producer = value.getDefiningOp();
  // Constants belong to no device (see ConstantOp::verify).
  if (producer->hasTrait<mlir::OpTrait::ConstantLike>())
    return std::nullopt;
  if (auto copy = dyn_cast<CopyOp>(producer))
    return copy.getDevice();
  if (auto allReduce = dyn_cast<AllReduceOp>(producer)) {
    unsigned index = cast<OpResult>(value).getResultNumber();
    if (index < allReduce.getDevices().size())
      return dyn_cast<DeviceAttr>(allReduce.getDevices()[index]);
    return std::nullopt;
  }
  if (auto device = producer->getAttrOfType<DeviceAttr>(name))
    return device;
  return std::nullopt;
}

LogicalResult mlir::dlc::verifySameOperandsDevice(Operation *op) {
  auto own = op->getAttrOfType<DeviceAttr>(DLCDialect::getDeviceAttrName());
  std::optional<DeviceAttr> first;
  unsigned firstIndex = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<DeviceAttr> device = getKnownDevice(operand.get());
    if (!device)
      continue;
    unsigned index = operand.getOperandNumber();
    if (own && *device != own)
      return op->emitOpError() << "runs on " << own.str() << " but operand #" << index
                               << " lives on " << device->str()
                               << "; move it with dlc.copy first";
    if (!first) {
      first = device;
      firstIndex = index;
    } else if (*device != *first) {
      return op->emitOpError() << "operands live on different devices: operand #"
                               << firstIndex << " on " << first->str() << ", operand #"
                               << index << " on " << device->str()
                               << "; move one with dlc.copy first";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// Emits "'dlc.<op>' op <why>" at `loc` (when given) and fails.
LogicalResult inferError(std::optional<Location> loc, StringRef opName, const Twine &why) {
  return emitOptionalError(loc, "'", opName, "' op ", why);
}

/// The static shape of `value`, or an error naming the operand.
FailureOr<rules::Shape> shapeOf(std::optional<Location> loc, StringRef opName, Value value,
                                const Twine &what) {
  auto type = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
  if (!type || !type.hasStaticShape()) {
    (void)inferError(loc, opName,
                     what + " must be a statically shaped tensor, got " +
                         (value ? llvm::Twine("a value of another type") : "nothing"));
    return failure();
  }
  return rules::Shape(type.getShape().begin(), type.getShape().end());
}

Type elementTypeOf(Value value) { return value ? getElementTypeOrSelf(value.getType()) : Type(); }

RankedTensorType tensorOf(const rules::Shape &shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// Accepts a rule's answer: pushes the tensor type, or reports its error.
LogicalResult accept(std::optional<Location> loc, StringRef opName,
                     const rules::Inferred &inferred, Type elementType,
                     SmallVectorImpl<Type> &results) {
  if (!inferred.ok())
    return inferError(loc, opName, inferred.error);
  results.push_back(tensorOf(inferred.shape, elementType));
  return success();
}

/// A two-entry (H, W) window attribute.
FailureOr<std::array<int64_t, 2>> pairOf(std::optional<Location> loc, StringRef opName,
                                         ArrayRef<int64_t> values, const Twine &name) {
  if (values.size() != 2) {
    (void)inferError(loc, opName, name + " must have 2 entries (H, W), got " +
                                      Twine(values.size()));
    return failure();
  }
  return std::array<int64_t, 2>{values[0], values[1]};
}

template <typename AdaptorT>
FailureOr<rules::Conv2DParams> convParams(std::optional<Location> loc, StringRef opName,
                                          AdaptorT adaptor) {
  auto stride = pairOf(loc, opName, adaptor.getStride(), "stride");
  auto padding = pairOf(loc, opName, adaptor.getPadding(), "padding");
  auto dilation = pairOf(loc, opName, adaptor.getDilation(), "dilation");
  if (failed(stride) || failed(padding) || failed(dilation))
    return failure();
  return rules::Conv2DParams{*stride, *padding, *dilation,
                             static_cast<int64_t>(adaptor.getGroups())};
}

template <typename AdaptorT>
FailureOr<rules::Pool2DParams> poolParams(std::optional<Location> loc, StringRef opName,
                                          AdaptorT adaptor) {
  auto kernel = pairOf(loc, opName, adaptor.getKernel(), "kernel");
  auto stride = pairOf(loc, opName, adaptor.getStride(), "stride");
  auto padding = pairOf(loc, opName, adaptor.getPadding(), "padding");
  if (failed(kernel) || failed(stride) || failed(padding))
    return failure();
  return rules::Pool2DParams{*kernel, *stride, *padding, adaptor.getCeilMode()};
}

/// Broadcasts all `operands` together; the result has `elementType`.
LogicalResult inferBroadcast(std::optional<Location> loc, StringRef opName,
                             ValueRange operands, Type elementType,
                             SmallVectorImpl<Type> &results) {
  rules::Shape shape;
  for (auto [index, operand] : llvm::enumerate(operands)) {
    auto operandShape = shapeOf(loc, opName, operand, "operand #" + Twine(index));
    if (failed(operandShape))
      return failure();
    rules::Inferred joined = rules::broadcast(shape, *operandShape);
    if (!joined.ok())
      return inferError(loc, opName, joined.error);
    shape = joined.shape;
  }
  results.push_back(tensorOf(shape, elementType));
  return success();
}

/// Checks that `expected` (what the forward op gives) equals `actual`.
LogicalResult checkForwardShape(Operation *op, const rules::Inferred &forward,
                                ArrayRef<int64_t> actual, StringRef what) {
  if (!forward.ok())
    return op->emitOpError() << forward.error;
  if (ArrayRef<int64_t>(forward.shape) != actual)
    return op->emitOpError() << what << " is "
                             << rules::str(rules::Shape(actual.begin(), actual.end()))
                             << " but the forward op gives " << rules::str(forward.shape);
  return success();
}

/// A double as a person writes it: 1, 0.2, 1e-05.
std::string num(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

rules::Shape shapeOf(Value value) {
  auto shape = cast<ShapedType>(value.getType()).getShape();
  return rules::Shape(shape.begin(), shape.end());
}

} // namespace

//===----------------------------------------------------------------------===//
// Type inference
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto value = adaptor.getValue();
  if (!value)
    return inferError(loc, getOperationName(), "needs a 'value' attribute");
  results.push_back(value.getType());
  return success();
}

#define DLC_BROADCAST_INFERENCE(OP)                                                        \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,           \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {    \
    if (!adaptor.getLhs())                                                                 \
      return inferError(loc, getOperationName(), "needs two operands");                    \
    return inferBroadcast(loc, getOperationName(), {adaptor.getLhs(), adaptor.getRhs()},   \
                          elementTypeOf(adaptor.getLhs()), results);                       \
  }
DLC_BROADCAST_INFERENCE(AddOp)
DLC_BROADCAST_INFERENCE(SubOp)
DLC_BROADCAST_INFERENCE(MulOp)
DLC_BROADCAST_INFERENCE(DivOp)
DLC_BROADCAST_INFERENCE(PowOp)
DLC_BROADCAST_INFERENCE(MaxOp)
DLC_BROADCAST_INFERENCE(MinOp)
DLC_BROADCAST_INFERENCE(LeakyReluOp)
DLC_BROADCAST_INFERENCE(EluOp)
#undef DLC_BROADCAST_INFERENCE

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  return inferBroadcast(loc, getOperationName(), {adaptor.getLhs(), adaptor.getRhs()},
                        IntegerType::get(context, 1), results);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  Value onTrue = adaptor.getOnTrue(), onFalse = adaptor.getOnFalse();
  if (onTrue && onFalse && elementTypeOf(onTrue) != elementTypeOf(onFalse))
    return inferError(loc, getOperationName(),
                      "on_true and on_false must have one element type");
  return inferBroadcast(loc, getOperationName(),
                        {adaptor.getCondition(), onTrue, onFalse}, elementTypeOf(onTrue),
                        results);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto lhs = shapeOf(loc, name, adaptor.getLhs(), "lhs");
  auto rhs = shapeOf(loc, name, adaptor.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  return accept(loc, name,
                rules::matmul(*lhs, *rhs, adaptor.getTransposeA(), adaptor.getTransposeB()),
                elementTypeOf(adaptor.getLhs()), results);
}

LogicalResult DenseOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto weight = shapeOf(loc, name, adaptor.getWeight(), "weight");
  if (failed(input) || failed(weight))
    return failure();
  std::optional<rules::Shape> bias;
  if (adaptor.getBias()) {
    auto biasShape = shapeOf(loc, name, adaptor.getBias(), "bias");
    if (failed(biasShape))
      return failure();
    bias = *biasShape;
  }
  return accept(loc, name, rules::dense(*input, *weight, bias ? &*bias : nullptr),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto weight = shapeOf(loc, name, adaptor.getWeight(), "weight");
  auto params = convParams(loc, name, adaptor);
  if (failed(input) || failed(weight) || failed(params))
    return failure();
  std::optional<rules::Shape> bias;
  if (adaptor.getBias()) {
    auto biasShape = shapeOf(loc, name, adaptor.getBias(), "bias");
    if (failed(biasShape))
      return failure();
    bias = *biasShape;
  }
  return accept(loc, name, rules::conv2d(*input, *weight, bias ? &*bias : nullptr, *params),
                elementTypeOf(adaptor.getInput()), results);
}

template <typename PoolOpT>
static LogicalResult inferPool(std::optional<Location> loc, typename PoolOpT::Adaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  StringRef name = PoolOpT::getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto params = poolParams(loc, name, adaptor);
  if (failed(input) || failed(params))
    return failure();
  return accept(loc, name, rules::pool2d(*input, *params), elementTypeOf(adaptor.getInput()),
                results);
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferPool<MaxPool2DOp>(loc, adaptor, results);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferPool<AvgPool2DOp>(loc, adaptor, results);
}

LogicalResult MaxPool2DIndexedOp::inferReturnTypes(MLIRContext *context,
                                                   std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &results) {
  if (failed(inferPool<MaxPool2DIndexedOp>(loc, adaptor, results)))
    return failure();
  auto output = cast<RankedTensorType>(results.front());
  results.push_back(
      RankedTensorType::get(output.getShape(), IntegerType::get(context, 8, IntegerType::Unsigned)));
  return success();
}

/// Indices name a window's tap in one byte: at most 127 taps (the top bit and 255 are
/// flags).
template <typename OpT> static LogicalResult verifyIndexableWindow(OpT op) {
  ArrayRef<int64_t> kernel = op.getKernel();
  if (kernel.size() == 2 && kernel[0] * kernel[1] > ::dlc::kernels::kMaxIndexedPoolTaps)
    return op.emitOpError() << "keeps a byte per window, so a window has at most "
                            << ::dlc::kernels::kMaxIndexedPoolTaps << " taps; got "
                            << kernel[0] << "x" << kernel[1];
  return success();
}

/// Checks each per-channel vector of a batch norm against `input` and `axis`.
static LogicalResult checkBatchNormVectors(std::optional<Location> loc, StringRef name,
                                          const rules::Shape &input, int64_t axis,
                                          ArrayRef<std::pair<Value, const char *>> vectors) {
  for (auto [value, what] : vectors) {
    auto shape = shapeOf(loc, name, value, what);
    if (failed(shape))
      return failure();
    rules::Inferred ok = rules::batchNormStats(input, axis, *shape, what);
    if (!ok.ok())
      return inferError(loc, name, ok.error);
  }
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ValueRange stats = adaptor.getRunningStats();
  if (stats.size() != 2 && !(stats.empty() && adaptor.getTraining()))
    return inferError(loc, name,
                      "takes running_mean and running_var after beta (only training mode may "
                      "leave both out), got " + std::to_string(stats.size()) +
                          " more operand(s)");
  std::vector<std::pair<Value, const char *>> vectors{{adaptor.getGamma(), "gamma"},
                                                      {adaptor.getBeta(), "beta"}};
  if (stats.size() == 2) {
    vectors.push_back({stats[0], "running_mean"});
    vectors.push_back({stats[1], "running_var"});
  }
  if (failed(checkBatchNormVectors(loc, name, *input, adaptor.getAxis(), vectors)))
    return failure();
  results.push_back(adaptor.getInput().getType());
  if (adaptor.getTraining()) {
    results.push_back(adaptor.getGamma().getType());
    results.push_back(adaptor.getGamma().getType());
  }
  return success();
}

namespace {
/// The statistics' type of a layer norm of `input` over `axis`, or failure (reported).
FailureOr<Type> layerNormStatsType(std::optional<Location> loc, StringRef name, Value input,
                                   Value gamma, Value beta, int64_t axis) {
  auto in = shapeOf(loc, name, input, "input");
  auto g = shapeOf(loc, name, gamma, "gamma");
  auto b = shapeOf(loc, name, beta, "beta");
  if (failed(in) || failed(g) || failed(b))
    return failure();
  rules::Inferred stats = rules::layerNormStats(*in, axis, *g, *b);
  if (!stats.ok())
    return inferError(loc, name, stats.error);
  return Type(RankedTensorType::get(stats.shape, elementTypeOf(gamma)));
}
} // namespace

namespace {
/// attention's output and log-sum-exp types, or failure (reported).
LogicalResult attentionTypes(std::optional<Location> loc, StringRef name, Value query,
                             Value key, Value value, Value mask,
                             SmallVectorImpl<Type> &results) {
  auto q = shapeOf(loc, name, query, "query");
  auto k = shapeOf(loc, name, key, "key");
  auto v = shapeOf(loc, name, value, "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  FailureOr<rules::Shape> m;
  if (mask && failed(m = shapeOf(loc, name, mask, "mask")))
    return failure();
  Type element = elementTypeOf(query);
  if (elementTypeOf(key) != element || elementTypeOf(value) != element)
    return inferError(loc, name, "query, key and value must have one element type");
  if (mask && elementTypeOf(mask) != element && !elementTypeOf(mask).isInteger(1))
    return inferError(loc, name, "the mask must be boolean or of the query's element type");
  rules::Inferred out = rules::attention(*q, *k, *v, mask ? &*m : nullptr);
  if (!out.ok())
    return inferError(loc, name, out.error);
  rules::Shape lse(q->begin(), q->end() - 1);
  results.push_back(tensorOf(out.shape, element));
  results.push_back(tensorOf(lse, Float32Type::get(query.getContext())));
  results.push_back(tensorOf({}, IntegerType::get(query.getContext(), 64)));
  return success();
}
} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  return attentionTypes(loc, getOperationName(), adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), adaptor.getMask(), results);
}

LogicalResult AttentionBackwardOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  SmallVector<Type, 3> forward;
  if (failed(attentionTypes(loc, name, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
                            adaptor.getMask(), forward)))
    return failure();
  if (adaptor.getOutput().getType() != forward[0] ||
      adaptor.getGradOutput().getType() != forward[0])
    return inferError(loc, name, "output and grad_output must be the forward's output type");
  if (adaptor.getLogsumexp().getType() != forward[1])
    return inferError(loc, name, "logsumexp must be the forward's (float32, the query's shape "
                                 "less its features)");
  if (adaptor.getUsedSeed().getType() != forward[2])
    return inferError(loc, name, "used_seed must be the forward's 0-d int64 seed");
  results.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                  adaptor.getValue().getType()});
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  FailureOr<Type> stats = layerNormStatsType(loc, getOperationName(), adaptor.getInput(),
                                             adaptor.getGamma(), adaptor.getBeta(),
                                             adaptor.getAxis());
  if (failed(stats))
    return failure();
  results.append({adaptor.getInput().getType(), *stats, *stats});
  return success();
}

LogicalResult LayerNormBackwardOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  FailureOr<Type> stats = layerNormStatsType(loc, name, adaptor.getInput(), adaptor.getGamma(),
                                             adaptor.getGamma(), adaptor.getAxis());
  if (failed(stats))
    return failure();
  auto statsShape = cast<RankedTensorType>(*stats).getShape();
  for (auto [value, what] : {std::pair{Value(adaptor.getMean()), "mean"},
                             std::pair{Value(adaptor.getVar()), "var"}})
    if (value.getType() != *stats)
      return inferError(loc, name, std::string(what) + " must be float32 " +
                                       rules::str({statsShape.begin(), statsShape.end()}) +
                                       ", the statistics of this input and axis");
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto grad = shapeOf(loc, name, adaptor.getGradOutput(), "grad_output");
  if (failed(grad))
    return failure();
  if (*grad != *input)
    return inferError(loc, name, "grad_output " + rules::str(*grad) +
                                     " must have the input's shape " + rules::str(*input));
  results.append({adaptor.getInput().getType(), adaptor.getGamma().getType(),
                  adaptor.getGamma().getType()});
  return success();
}

LogicalResult BatchNormBackwardOp::inferReturnTypes(MLIRContext *,
                                                    std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto gradOutput = shapeOf(loc, name, adaptor.getGradOutput(), "grad_output");
  if (failed(input) || failed(gradOutput))
    return failure();
  if (*input != *gradOutput)
    return inferError(loc, name, "grad_output " + rules::str(*gradOutput) +
                                     " must have the input's shape " + rules::str(*input));
  if (failed(checkBatchNormVectors(loc, name, *input, adaptor.getAxis(),
                                   {{adaptor.getGamma(), "gamma"},
                                    {adaptor.getBatchMean(), "batch_mean"},
                                    {adaptor.getBatchVar(), "batch_var"}})))
    return failure();
  results.push_back(adaptor.getInput().getType());
  results.push_back(adaptor.getGamma().getType());
  results.push_back(adaptor.getGamma().getType());
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto input = shapeOf(loc, getOperationName(), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  results.push_back(adaptor.getInput().getType());
  results.push_back(tensorOf(*input, IntegerType::get(context, 1)));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto input = shapeOf(loc, getOperationName(), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  return accept(loc, getOperationName(), rules::flatten(*input),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = shapeOf(loc, getOperationName(), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  return accept(loc, getOperationName(),
                rules::transpose(*input, {permutation.begin(), permutation.end()}),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto input = shapeOf(loc, getOperationName(), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> axes = adaptor.getAxes();
  return accept(loc, getOperationName(),
                rules::reduce(*input, {axes.begin(), axes.end()}, adaptor.getKeepdims()),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult ArgmaxOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto input = shapeOf(loc, getOperationName(), adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  return accept(loc, getOperationName(),
                rules::reduce(*input, {static_cast<int64_t>(adaptor.getAxis())},
                              adaptor.getKeepdims()),
                IntegerType::get(context, 64), results);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  std::vector<rules::Shape> shapes;
  for (auto [index, input] : llvm::enumerate(adaptor.getInputs())) {
    auto shape = shapeOf(loc, getOperationName(), input, "input #" + Twine(index));
    if (failed(shape))
      return failure();
    shapes.push_back(*shape);
  }
  if (shapes.empty())
    return inferError(loc, getOperationName(), "needs at least one input");
  return accept(loc, getOperationName(),
                rules::concat(shapes, static_cast<int64_t>(adaptor.getAxis())),
                elementTypeOf(adaptor.getInputs()[0]), results);
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(MLIRContext *,
                                                      std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto logits = shapeOf(loc, name, adaptor.getLogits(), "logits");
  auto labels = shapeOf(loc, name, adaptor.getLabels(), "labels");
  if (failed(logits) || failed(labels))
    return failure();
  return accept(loc, name, rules::softmaxCrossEntropy(*logits, *labels),
                elementTypeOf(adaptor.getLogits()), results);
}

LogicalResult SoftmaxCrossEntropyBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto gradLoss = shapeOf(loc, name, adaptor.getGradLoss(), "grad_loss");
  auto logits = shapeOf(loc, name, adaptor.getLogits(), "logits");
  auto labels = shapeOf(loc, name, adaptor.getLabels(), "labels");
  if (failed(gradLoss) || failed(logits) || failed(labels))
    return failure();
  rules::Inferred loss = rules::softmaxCrossEntropy(*logits, *labels);
  if (!loss.ok())
    return inferError(loc, name, loss.error);
  if (loss.shape != *gradLoss)
    return inferError(loc, name, "grad_loss " + rules::str(*gradLoss) +
                                     " must have the loss shape " + rules::str(loss.shape));
  if (elementTypeOf(adaptor.getGradLoss()) != elementTypeOf(adaptor.getLogits()))
    return inferError(loc, name, "grad_loss and logits must have one element type");
  results.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult TakeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  auto indices = shapeOf(loc, name, adaptor.getIndices(), "indices");
  if (failed(input) || failed(indices))
    return failure();
  return accept(loc, name, rules::take(*input, *indices, adaptor.getAxis()),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult TakeBackwardOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto grad = shapeOf(loc, name, adaptor.getGradOutput(), "grad_output");
  auto indices = shapeOf(loc, name, adaptor.getIndices(), "indices");
  if (failed(grad) || failed(indices))
    return failure();
  return accept(loc, name,
                rules::takeBackward(*grad, *indices, adaptor.getAxis(), adaptor.getSize()),
                elementTypeOf(adaptor.getGradOutput()), results);
}

namespace {
rules::SliceParams sliceParams(ArrayRef<int64_t> begin, ArrayRef<int64_t> end,
                               ArrayRef<int64_t> step) {
  return {{begin.begin(), begin.end()}, {end.begin(), end.end()}, {step.begin(), step.end()}};
}
} // namespace

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto input = shapeOf(loc, name, adaptor.getInput(), "input");
  if (failed(input))
    return failure();
  return accept(loc, name,
                rules::slice(*input, sliceParams(adaptor.getBegin(), adaptor.getEnd(),
                                                 adaptor.getStep())),
                elementTypeOf(adaptor.getInput()), results);
}

LogicalResult SliceBackwardOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &results) {
  StringRef name = getOperationName();
  auto grad = shapeOf(loc, name, adaptor.getGradOutput(), "grad_output");
  if (failed(grad))
    return failure();
  ArrayRef<int64_t> shape = adaptor.getShape();
  return accept(loc, name,
                rules::sliceBackward(*grad, {shape.begin(), shape.end()},
                                     sliceParams(adaptor.getBegin(), adaptor.getEnd(),
                                                 adaptor.getStep())),
                elementTypeOf(adaptor.getGradOutput()), results);
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  for (Value input : adaptor.getInputs())
    results.push_back(input.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

// Canonicalization merges equal constants and hoists them regardless of discardable
// attributes, so a device on a constant would not survive it. A constant is data in the
// program instead: the lowering gives each device that uses it its own copy.
LogicalResult ConstantOp::verify() {
  if ((*this)->hasAttr(DLCDialect::getDeviceAttrName()))
    return emitOpError() << "has no device: a constant is available on every device that "
                            "uses it; drop '"
                         << DLCDialect::getDeviceAttrName() << "'";
  return success();
}

bool mlir::dlc::isBlockable(Type type, Layout layout) {
  if (layout == Layout::plain)
    return true;
  ::dlc::shape_rules::Shape shape;
  ::dlc::DType dtype;
  std::string why;
  return runtimeTensor(type, shape, dtype, why) &&
         ::dlc::blockable(shape, dtype, ::dlc::Layout(int(layout)));
}

LogicalResult ToLayoutOp::verify() {
  if (!isBlockable(getInput().getType(), getLayout()))
    return emitOpError() << "cannot block " << getInput().getType() << " as "
                         << stringifyLayout(getLayout())
                         << ": only 4-D float32 tensors whose channels are a multiple of "
                         << ::dlc::channel_block(::dlc::Layout(int(getLayout())))
                         << " have that layout";
  return success();
}

LogicalResult RandomUniformOp::verify() {
  if (!(getLow().convertToDouble() < getHigh().convertToDouble()))
    return emitOpError() << "needs low < high, got low = " << num(getLow().convertToDouble())
                         << ", high = " << num(getHigh().convertToDouble());
  return success();
}

LogicalResult RandomNormalOp::verify() {
  if (!(getStddev().convertToDouble() > 0))
    return emitOpError() << "needs stddev > 0, got " << num(getStddev().convertToDouble());
  return success();
}

/// A convolution gradient is consistent when convolving `input` with `weight` gives
/// the shape of `grad_output`.
template <typename OpT>
static LogicalResult verifyConvGradient(OpT op, Value input, Value weight) {
  auto params = convParams(op.getLoc(), OpT::getOperationName(), op);
  if (failed(params))
    return failure();
  return checkForwardShape(op, rules::conv2d(shapeOf(input), shapeOf(weight), nullptr, *params),
                           op.getGradOutput().getType().getShape(), "grad_output");
}

LogicalResult Conv2DBackwardDataOp::verify() {
  return verifyConvGradient(*this, getGradInput(), getWeight());
}

LogicalResult Conv2DBackwardFilterOp::verify() {
  if (failed(verifyConvGradient(*this, getInput(), getGradWeight())))
    return failure();
  if (Value bias = getGradBias()) {
    int64_t channels = getGradWeight().getType().getShape()[0];
    if (shapeOf(bias) != rules::Shape{channels})
      return emitOpError() << "grad_bias must have shape (" << channels
                           << "), one entry per output channel";
  }
  return success();
}

/// A pooling gradient is consistent when pooling `input` gives the shape of
/// `grad_output`.
template <typename OpT>
static LogicalResult verifyPoolGradient(OpT op, Value input) {
  auto params = poolParams(op.getLoc(), OpT::getOperationName(), op);
  if (failed(params))
    return failure();
  return checkForwardShape(op, rules::pool2d(shapeOf(input), *params),
                           op.getGradOutput().getType().getShape(), "grad_output");
}

LogicalResult MaxPool2DBackwardOp::verify() { return verifyPoolGradient(*this, getInput()); }

LogicalResult MaxPool2DIndexedOp::verify() { return verifyIndexableWindow(*this); }

LogicalResult MaxPool2DBackwardIndexedOp::verify() {
  if (failed(verifyIndexableWindow(*this)) || failed(verifyPoolGradient(*this, getGradInput())))
    return failure();
  if (getIndices().getType().getShape() != getGradOutput().getType().getShape())
    return emitOpError() << "needs indices of grad_output's shape "
                         << getGradOutput().getType() << ", got " << getIndices().getType();
  return success();
}

LogicalResult AvgPool2DBackwardOp::verify() {
  return verifyPoolGradient(*this, getGradInput());
}

LogicalResult BatchNormOp::verify() {
  double momentum = getMomentum().convertToDouble();
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError() << "needs epsilon > 0, got " << num(getEpsilon().convertToDouble());
  if (!(momentum >= 0 && momentum <= 1))
    return emitOpError() << "needs momentum in [0, 1], got " << num(momentum);
  return success();
}

LogicalResult BatchNormBackwardOp::verify() {
  Type gradient = getGradOutput().getType().getElementType();
  Type input = getInput().getType().getElementType();
  if (gradient != input)
    return emitOpError() << "needs grad_output of the input's element type " << input
                         << ", got " << gradient;
  return success();
}

/// The shared checks of attention and its backward.
static LogicalResult verifyAttention(Operation *op, double scale, double dropout) {
  if (!(scale > 0) || !std::isfinite(scale))
    return op->emitOpError() << "needs a finite scale > 0, got " << num(scale);
  if (!(dropout >= 0 && dropout < 1))
    return op->emitOpError() << "needs dropout in [0, 1), got " << num(dropout);
  return success();
}

LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getScale().convertToDouble(), getDropout().convertToDouble());
}

LogicalResult AttentionBackwardOp::verify() {
  return verifyAttention(*this, getScale().convertToDouble(), getDropout().convertToDouble());
}

LogicalResult LayerNormOp::verify() {
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError() << "needs epsilon > 0, got " << num(getEpsilon().convertToDouble());
  return success();
}

LogicalResult LayerNormBackwardOp::verify() {
  Type gradient = getGradOutput().getType().getElementType();
  Type input = getInput().getType().getElementType();
  if (gradient != input)
    return emitOpError() << "needs grad_output of the input's element type " << input
                         << ", got " << gradient;
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError() << "needs epsilon > 0, got " << num(getEpsilon().convertToDouble());
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0 && ratio < 1))
    return emitOpError() << "needs ratio in [0, 1), got " << num(ratio);
  return success();
}

/// The shared checks of the optimizer updates: every tensor but `rate` (0-d) has the
/// weight's shape, and so does every result.
static LogicalResult verifyUpdate(Operation *op, Value rate) {
  auto weight = cast<RankedTensorType>(op->getOperand(0).getType());
  if (cast<RankedTensorType>(rate.getType()).getRank() != 0)
    return op->emitOpError() << "needs a 0-d rate, got "
                             << rules::str(shapeOf(rate));
  for (Value v : op->getOperands())
    if (v != rate && cast<RankedTensorType>(v.getType()).getShape() != weight.getShape())
      return op->emitOpError() << "needs every operand but the rate of the weight's shape "
                               << rules::str(shapeOf(op->getOperand(0))) << ", got "
                               << rules::str(shapeOf(v));
  for (Type t : op->getResultTypes())
    if (t != weight)
      return op->emitOpError() << "needs results of the weight's type";
  return success();
}

LogicalResult AdamUpdateOp::verify() { return verifyUpdate(*this, getRate()); }
LogicalResult SgdMomentumUpdateOp::verify() { return verifyUpdate(*this, getRate()); }
LogicalResult SgdUpdateOp::verify() { return verifyUpdate(*this, getRate()); }

LogicalResult ReshapeOp::verify() {
  int64_t from = getInput().getType().getNumElements();
  int64_t to = getOutput().getType().getNumElements();
  if (from != to)
    return emitOpError() << "cannot reshape " << rules::str(shapeOf(getInput())) << " ("
                         << from << " elements) to " << rules::str(shapeOf(getOutput()))
                         << " (" << to << " elements)";
  return success();
}

LogicalResult BroadcastToOp::verify() {
  if (!rules::broadcastsTo(shapeOf(getInput()), shapeOf(getOutput())))
    return emitOpError() << "cannot broadcast " << rules::str(shapeOf(getInput())) << " to "
                         << rules::str(shapeOf(getOutput()));
  return success();
}

template <typename SoftmaxLikeOpT>
static LogicalResult verifySoftmaxAxis(SoftmaxLikeOpT op) {
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (rules::normalizeAxis(axis, op.getInput().getType().getRank()) < 0)
    return op.emitOpError() << "axis " << axis << " is out of range for input "
                            << rules::str(shapeOf(op.getInput()));
  return success();
}
LogicalResult SoftmaxOp::verify() { return verifySoftmaxAxis(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxAxis(*this); }

LogicalResult SplitOp::verify() {
  rules::Shape input = shapeOf(getInput());
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t a = rules::normalizeAxis(axis, static_cast<int64_t>(input.size()));
  if (a < 0)
    return emitOpError() << "axis " << axis << " is out of range for input "
                         << rules::str(input);
  if (getOutputs().empty())
    return emitOpError() << "needs at least one result";
  std::vector<rules::Shape> parts;
  for (Value output : getOutputs())
    parts.push_back(shapeOf(output));
  rules::Inferred joined = rules::concat(parts, axis);
  if (!joined.ok() || joined.shape != input)
    return emitOpError() << "results do not cover input " << rules::str(input)
                         << " along axis " << axis << ": "
                         << (joined.ok() ? "they join to " + rules::str(joined.shape)
                                         : joined.error);
  return success();
}

LogicalResult AllReduceOp::verify() {
  ArrayAttr devices = getDevices();
  if (getProcesses() < 1)
    return emitOpError() << "spans " << getProcesses() << " processes; expected at least 1";
  if (devices.empty() || (devices.size() < 2 && getProcesses() < 2))
    return emitOpError() << "needs at least two devices, or one device in each of several "
                            "processes (processes = N), got "
                         << devices.size() << " device(s) in one process";
  if (devices.size() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " operands for "
                         << devices.size() << " devices; expected one per device";
  llvm::SmallPtrSet<Attribute, 8> seen;
  for (auto [index, device] : llvm::enumerate(devices.getAsRange<DeviceAttr>())) {
    if (!seen.insert(device).second)
      return emitOpError() << "lists " << device.str() << " twice";
    if (getInputs()[index].getType() != getInputs()[0].getType())
      return emitOpError() << "operand #" << index << " has type "
                           << getInputs()[index].getType() << " but operand #0 has "
                           << getInputs()[0].getType();
    std::optional<DeviceAttr> actual = getKnownDevice(getInputs()[index]);
    if (actual && *actual != device)
      return emitOpError() << "operand #" << index << " lives on " << actual->str()
                           << " but devices[" << index << "] is " << device.str();
  }
  return success();
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments() << " arguments for "
                         << getInputs().size() << " operands";
  for (auto [index, pair] : llvm::enumerate(llvm::zip(body.getArguments(), getInputs()))) {
    auto [argument, input] = pair;
    if (argument.getType() != input.getType())
      return emitOpError() << "body argument #" << index << " has type "
                           << argument.getType() << " but operand #" << index << " has "
                           << input.getType();
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with dlc.yield";
  if (yield.getValues().getTypes() != getOutputs().getTypes()) {
    InFlightDiagnostic diag = emitOpError() << "body yields (";
    llvm::interleaveComma(yield.getValues().getTypes(), diag);
    diag << ") but the op returns (";
    llvm::interleaveComma(getOutputs().getTypes(), diag);
    return diag << ")";
  }
  return success();
}

#define GET_OP_CLASSES
#include "dlc/Dialect/DLC/IR/DLCOps.cpp.inc"
