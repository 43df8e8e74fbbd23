//===- DLCExecution.cpp - what passes and the lowering agree on ---------------===//
#include "dlc/Dialect/DLC/IR/DLCExecution.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;
using namespace mlir::dlc;

bool mlir::dlc::readKernelAttrs(Operation *op, ::dlc::Attrs &attrs, std::string &error) {
  for (NamedAttribute named : op->getAttrs()) {
    llvm::StringRef name = named.getName().getValue();
    Attribute value = named.getValue();
    if (name.starts_with("dlc.") || isa<DeviceAttr>(value))
      continue;
    if (auto flag = dyn_cast<BoolAttr>(value))
      attrs.set(name.str(), flag.getValue());
    else if (isa<UnitAttr>(value))
      attrs.set(name.str(), true);
    else if (auto number = dyn_cast<IntegerAttr>(value))
      attrs.set(name.str(), number.getValue().getSExtValue());
    else if (auto layout = dyn_cast<LayoutAttr>(value))
      attrs.set(name.str(), int64_t(layout.getValue()));
    else if (auto real = dyn_cast<FloatAttr>(value))
      attrs.set(name.str(), real.getValueAsDouble());
    else if (auto list = dyn_cast<DenseI64ArrayAttr>(value))
      attrs.set(name.str(), std::vector<int64_t>(list.asArrayRef().begin(),
                                                 list.asArrayRef().end()));
    else if (auto text = dyn_cast<StringAttr>(value))
      attrs.set(name.str(), text.str());
    else if (auto elements = dyn_cast<DenseElementsAttr>(value); elements && elements.isSplat()) {
      Attribute splat = elements.getSplatValue<Attribute>();
      if (auto f = dyn_cast<FloatAttr>(splat))
        attrs.set(name.str(), f.getValueAsDouble());
      else if (auto i = dyn_cast<IntegerAttr>(splat))
        attrs.set(name.str(), double(i.getType().isUnsignedInteger()
                                         ? int64_t(i.getValue().getZExtValue())
                                         : i.getValue().getSExtValue()));
    } else {
      llvm::raw_string_ostream os(error);
      os << op->getName() << " at " << op->getLoc() << ": the runtime cannot read attribute '"
         << name << "' (" << value
         << "); only splat constants and scalar/array attributes lower to kernels yet";
      return false;
    }
  }
  return true;
}

Layout mlir::dlc::valueLayout(Value value) {
  if (auto result = dyn_cast<OpResult>(value)) {
    if (auto conversion = dyn_cast<ToLayoutOp>(result.getOwner()))
      return conversion.getLayout();
    auto layouts =
        result.getOwner()->getAttrOfType<ArrayAttr>(DLCDialect::getLayoutsAttrName());
    if (layouts && result.getResultNumber() < layouts.size())
      if (auto layout = dyn_cast<LayoutAttr>(layouts[result.getResultNumber()]))
        return layout.getValue();
    return Layout::plain;
  }
  auto argument = cast<BlockArgument>(value);
  auto function = dyn_cast_or_null<FunctionOpInterface>(argument.getOwner()->getParentOp());
  if (!function || argument.getOwner() != &function.getFunctionBody().front())
    return Layout::plain;
  auto layout = function.getArgAttrOfType<LayoutAttr>(argument.getArgNumber(),
                                                      DLCDialect::getLayoutAttrName());
  return layout ? layout.getValue() : Layout::plain;
}

bool mlir::dlc::runtimeTensor(Type type, ::dlc::shape_rules::Shape &shape, ::dlc::DType &dtype,
                              std::string &why) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  why = "the runtime has no such tensors";
  if (!tensor)
    return false;
  Type element = tensor.getElementType();
  if (element.isF32())
    dtype = ::dlc::DType::f32;
  else if (element.isF16())
    dtype = ::dlc::DType::f16;
  else if (element.isBF16())
    dtype = ::dlc::DType::bf16;
  else if (element.isInteger(1))
    dtype = ::dlc::DType::boolean;
  else if (element.isUnsignedInteger(8))
    dtype = ::dlc::DType::u8;
  else if (element.isSignlessInteger(32) || element.isSignedInteger(32))
    dtype = ::dlc::DType::i32;
  else if (element.isSignlessInteger(64) || element.isSignedInteger(64))
    dtype = ::dlc::DType::i64;
  else
    return false;
  shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  why = ::dlc::shape_rules::tensorSizeError(shape, int64_t(::dlc::dtype_size(dtype)));
  return why.empty();
}

std::optional<int64_t> mlir::dlc::runtimeBytes(Type type, std::string &why) {
  ::dlc::shape_rules::Shape shape;
  ::dlc::DType dtype;
  if (!runtimeTensor(type, shape, dtype, why))
    return std::nullopt;
  return ::dlc::shape_rules::numElements(shape) * int64_t(::dlc::dtype_size(dtype));
}

FailureOr<bool> mlir::dlc::hasRunnableBody(func::FuncOp function, StringRef pass) {
  if (function.isExternal())
    return false;
  Region &body = function.getBody();
  if (llvm::hasSingleElement(body) && !body.front().empty() &&
      isa<func::ReturnOp>(body.front().back()))
    return true;
  InFlightDiagnostic error = function.emitError()
                             << pass << ": @" << function.getName() << " has ";
  if (llvm::hasSingleElement(body))
    error << "a block that does not end with func.return";
  else
    error << body.getBlocks().size() << " blocks";
  error << "; the runtime runs functions of one block that ends with func.return";
  return failure();
}

DeviceAttr mlir::dlc::functionDevice(func::FuncOp function) {
  if (function.getNumArguments() > 0)
    if (auto device =
            function.getArgAttrOfType<DeviceAttr>(0, DLCDialect::getDeviceAttrName()))
      return device;
  return DeviceAttr::get(function.getContext(), DeviceKind::cpu, 0);
}

DeviceAttr mlir::dlc::stepDevice(Operation *op, DeviceAttr fallback) {
  StringRef name = DLCDialect::getDeviceAttrName();
  if (auto device = op->getAttrOfType<DeviceAttr>(name))
    return device;
  if (auto region = op->getParentOfType<FusedOp>())
    if (auto device = region->getAttrOfType<DeviceAttr>(name))
      return device;
  if (op->hasTrait<mlir::OpTrait::ConstantLike>())
    for (Operation *user : op->getUsers())
      if (auto device = user->getAttrOfType<DeviceAttr>(name))
        return device;
  return fallback;
}

bool mlir::dlc::isInPlaceElementwise(Operation *op) {
  return op->getNumResults() == 1 && op->hasTrait<mlir::dlc::OpTrait::ElementwiseKernel>();
}

bool mlir::dlc::isViewOp(Operation *op) {
  if (isa<ReshapeOp>(op))
    return true;
  auto split = dyn_cast<SplitOp>(op);
  return split && split.getAxis() == 0;
}

bool mlir::dlc::targetRuns(Operation *scope, StringRef op, DeviceKind kind) {
  auto module = isa<ModuleOp>(scope) ? cast<ModuleOp>(scope) : scope->getParentOfType<ModuleOp>();
  auto targets =
      module ? module->getAttrOfType<ArrayAttr>(DLCDialect::getTargetsAttrName()) : ArrayAttr();
  if (!targets) // everything, but a whole region only where the interpreted chain exists
    return op != kElementwiseRegionKernel || isHostKind(kind);
  if (kind == DeviceKind::cpu_pinned || kind == DeviceKind::cpu_shared)
    kind = DeviceKind::cpu;
  return llvm::any_of(targets, [&](Attribute entry) {
    auto target = dyn_cast<TargetAttr>(entry);
    return target && target.getKind() == kind && target.runs(op);
  });
}

DeviceKind mlir::dlc::deviceKind(Operation *op) {
  for (Operation *at = op; at; at = at->getParentOp())
    if (auto device = at->getAttrOfType<DeviceAttr>(DLCDialect::getDeviceAttrName()))
      return device.getKind();
  return DeviceKind::cpu;
}

bool mlir::dlc::isHostKind(DeviceKind kind) {
  return kind == DeviceKind::cpu || kind == DeviceKind::cpu_pinned ||
         kind == DeviceKind::cpu_shared;
}

namespace {

/// Elements of a float32 tensor type, or -1 for any other type.
int64_t f32Elements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32() ? tensor.getNumElements() : int64_t(-1);
}

} // namespace

int64_t mlir::dlc::fusedElements(FusedOp fused) {
  int64_t n = 1;
  for (Type type : fused.getResultTypes())
    n = std::max(n, f32Elements(type));
  return n;
}

SmallVector<bool> mlir::dlc::fusedScalarValues(FusedOp fused) {
  int64_t n = fusedElements(fused);
  SmallVector<bool> scalar;
  Block &body = fused.getBody().front();
  for (BlockArgument argument : body.getArguments())
    scalar.push_back(f32Elements(argument.getType()) == 1 && n != 1);
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      scalar.push_back(f32Elements(result.getType()) == 1 && n != 1);
  return scalar;
}

namespace {

/// The body ops of `fused` when it is a region of `kind` with two or three of them
/// (dlc-fuse-conv-pool's, whose middle op is optional); empty otherwise.
SmallVector<Operation *> twoOrThreeOps(FusedOp fused, StringRef kind) {
  SmallVector<Operation *> ops;
  if (!fused.getKind() || *fused.getKind() != kind)
    return ops;
  for (Operation &op : fused.getBody().front().without_terminator())
    ops.push_back(&op);
  if (ops.size() < 2 || ops.size() > 3)
    ops.clear();
  return ops;
}

} // namespace

std::optional<ConvPoolRegion> mlir::dlc::convPoolRegion(FusedOp fused) {
  SmallVector<Operation *> ops = twoOrThreeOps(fused, kConvPoolRegion);
  if (ops.empty())
    return std::nullopt;
  Block &body = fused.getBody().front();
  ConvPoolRegion region{dyn_cast<Conv2DOp>(ops.front()),
                        ops.size() == 3 ? dyn_cast<ReluOp>(ops[1]) : ReluOp(),
                        dyn_cast<MaxPool2DIndexedOp>(ops.back()), false};
  if (!region.conv || !region.pool || (ops.size() == 3 && !region.relu) ||
      ValueRange(region.conv->getOperands()) != ValueRange(body.getArguments()) ||
      (region.relu && region.relu.getInput() != region.conv.getOutput()))
    return std::nullopt;
  Value activation = region.relu ? region.relu.getResult() : region.conv.getOutput();
  if (region.pool.getInput() != activation)
    return std::nullopt;
  ValueRange yielded = body.getTerminator()->getOperands();
  region.yieldsActivation = yielded.size() == 3;
  if (yielded.size() != 2 + size_t(region.yieldsActivation) ||
      (region.yieldsActivation && yielded[0] != activation) ||
      yielded.take_back(2) != ValueRange(region.pool->getResults()))
    return std::nullopt;
  return region;
}

std::optional<PoolConvBackwardRegion> mlir::dlc::poolConvBackwardRegion(FusedOp fused) {
  SmallVector<Operation *> ops = twoOrThreeOps(fused, kPoolConvBackwardRegion);
  if (ops.empty())
    return std::nullopt;
  Block &body = fused.getBody().front();
  PoolConvBackwardRegion region{dyn_cast<MaxPool2DBackwardIndexedOp>(ops.front()),
                                ops.size() == 3 ? dyn_cast<Conv2DBackwardDataOp>(ops[1])
                                                : Conv2DBackwardDataOp(),
                                dyn_cast<Conv2DBackwardFilterOp>(ops.back())};
  const size_t arguments = 3 + size_t(bool(region.data));
  if (!region.pool || !region.filter || (ops.size() == 3 && !region.data) ||
      body.getNumArguments() != arguments ||
      region.pool.getGradOutput() != body.getArgument(0) ||
      region.pool.getIndices() != body.getArgument(1) ||
      region.filter.getGradOutput() != region.pool.getResult() ||
      region.filter.getInput() != body.getArgument(unsigned(arguments - 1)) ||
      (region.data && (region.data.getGradOutput() != region.pool.getResult() ||
                       region.data.getWeight() != body.getArgument(2))))
    return std::nullopt;
  SmallVector<Value> results;
  if (region.data)
    results.push_back(region.data.getResult());
  results.append(region.filter->result_begin(), region.filter->result_end());
  if (ValueRange(body.getTerminator()->getOperands()) != ValueRange(results))
    return std::nullopt;
  return region;
}

StringRef NormActivationRegion::activationName() const {
  return isa<Relu6Op, Relu6BackwardOp>(activation) ? "relu6" : "relu";
}

std::optional<NormActivationRegion> mlir::dlc::normActivationRegion(FusedOp fused) {
  if (!fused.getKind())
    return std::nullopt;
  const bool backward = *fused.getKind() == kNormActivationBackwardRegion;
  if (!backward && *fused.getKind() != kNormActivationRegion)
    return std::nullopt;
  Block &body = fused.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  ValueRange arguments = body.getArguments();
  ValueRange yielded = body.getTerminator()->getOperands();
  if (!backward) {
    // batch_norm(a0, a1, a2) -> (y, mean, var); [s = add(y, a3) or add(a3, y);]
    // act(s or y); yield (act, mean, var)
    if (ops.size() != 2 && ops.size() != 3)
      return std::nullopt;
    auto norm = dyn_cast<BatchNormOp>(ops[0]);
    Operation *act = ops.back();
    Operation *add = ops.size() == 3 ? ops[1] : nullptr;
    const size_t normOperands = add ? 3 : arguments.size();
    if (!norm || !norm.getTraining() || norm.getNumResults() != 3 ||
        !isa<ReluOp, Relu6Op>(act) ||
        ValueRange(norm->getOperands()) != arguments.take_front(normOperands) ||
        arguments.size() != (add ? 4u : 3u) || yielded.size() != 3 ||
        yielded[0] != act->getResult(0) || yielded[1] != norm.getResult(1) ||
        yielded[2] != norm.getResult(2))
      return std::nullopt;
    if (add) {
      Value y = norm.getResult(0), residual = arguments[3];
      if (!isa<AddOp>(add) || add->getResult(0).getType() != y.getType() ||
          residual.getType() != y.getType() ||
          !((add->getOperand(0) == y && add->getOperand(1) == residual) ||
            (add->getOperand(0) == residual && add->getOperand(1) == y)) ||
          act->getOperand(0) != add->getResult(0))
        return std::nullopt;
    } else if (act->getOperand(0) != norm.getResult(0)) {
      return std::nullopt;
    }
    return NormActivationRegion{norm, act, false, add};
  }
  if (ops.size() != 2)
    return std::nullopt;
  // act_backward(a0, a1); batch_norm_backward(that, a2, a3, a4, a5); yield its results
  // [and act_backward's]
  Operation *act = ops[0];
  auto norm = dyn_cast<BatchNormBackwardOp>(ops[1]);
  if (!norm || !isa<ReluBackwardOp, Relu6BackwardOp>(act) || arguments.size() != 6 ||
      act->getOperand(0) != arguments[0] || act->getOperand(1) != arguments[1] ||
      norm->getOperand(0) != act->getResult(0) ||
      ValueRange(norm->getOperands()).drop_front() != arguments.drop_front(2) ||
      yielded.size() < 3 || ValueRange(norm->getResults()) != yielded.take_front(3) ||
      (yielded.size() == 4 ? yielded[3] != act->getResult(0) : yielded.size() != 3))
    return std::nullopt;
  return NormActivationRegion{norm, act, true};
}

FusedExecution mlir::dlc::fusedExecution(FusedOp fused, DeviceKind kind,
                                         llvm::function_ref<bool(StringRef op)> hasKernel) {
  Block &body = fused.getBody().front();
  std::string fusedKind = fused.getKind() ? fused.getKind()->str() : "";
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  Operation *terminator = body.getTerminator();

  if (fusedKind == "conv2d_relu6" || fusedKind == "conv2d_silu" || fusedKind == "dense_gelu") {
    // oneDNN's clip, swish and gelu_erf post-ops: the host kernels only (the CUDA ones run
    // the region op by op).
    bool shaped = ops.size() == 2 &&
                  (fusedKind == "conv2d_relu6" ? isa<Conv2DOp>(ops[0]) && isa<Relu6Op>(ops[1])
                   : fusedKind == "conv2d_silu"
                       ? isa<Conv2DOp>(ops[0]) && isa<SiluOp>(ops[1])
                       : isa<DenseOp>(ops[0]) && isa<GeluOp>(ops[1])) &&
                  ops[1]->getOperand(0) == ops[0]->getResult(0) &&
                  terminator->getOperands() == ops[1]->getResults() &&
                  ops[0]->getOperands() == ValueRange(body.getArguments());
    return shaped && isHostKind(kind) && hasKernel(ops[0]->getName().getStringRef())
               ? FusedExecution::library_epilogue
               : FusedExecution::op_by_op;
  }
  if (fusedKind == kConvPoolRegion) {
    // The convolution kernels of host devices take a pooling epilogue.
    return convPoolRegion(fused) && isHostKind(kind) &&
                   hasKernel(Conv2DOp::getOperationName()) &&
                   hasKernel(MaxPool2DIndexedOp::getOperationName())
               ? FusedExecution::library_pooling
               : FusedExecution::op_by_op;
  }
  if (fusedKind == kPoolConvBackwardRegion) {
    // ... and their filter gradients the pooling's gradient before them.
    std::optional<PoolConvBackwardRegion> region = poolConvBackwardRegion(fused);
    return region && isHostKind(kind) &&
                   hasKernel(Conv2DBackwardFilterOp::getOperationName()) &&
                   hasKernel(MaxPool2DBackwardIndexedOp::getOperationName()) &&
                   (!region->data || hasKernel(Conv2DBackwardDataOp::getOperationName()))
               ? FusedExecution::library_pooling
               : FusedExecution::op_by_op;
  }
  if (fusedKind == kNormActivationRegion || fusedKind == kNormActivationBackwardRegion) {
    // The host's batch norm kernels fold the activation (its gradient) in.
    std::optional<NormActivationRegion> region = normActivationRegion(fused);
    return region && isHostKind(kind) && hasKernel(region->norm->getName().getStringRef())
               ? FusedExecution::library_norm
               : FusedExecution::op_by_op;
  }
  if (fusedKind == "conv2d_relu" || fusedKind == "dense_relu" ||
      fusedKind == "max_pool2d_backward_relu") {
    // The library op on the region's operands, then the ReLU (or, after a backward op,
    // the ReLU's gradient at the pooling's input) of its result.
    bool backward = fusedKind == "max_pool2d_backward_relu";
    bool shaped = ops.size() == 2 &&
                  (backward ? isa<MaxPool2DBackwardOp>(ops[0]) && isa<ReluBackwardOp>(ops[1]) &&
                                  ops[1]->getOperand(1) == ops[0]->getOperand(1)
                            : isa<ReluOp>(ops[1])) &&
                  ops[1]->getOperand(0) == ops[0]->getResult(0) &&
                  terminator->getOperands() == ops[1]->getResults() &&
                  ops[0]->getOperands() == ValueRange(body.getArguments());
    return shaped && hasKernel(ops[0]->getName().getStringRef())
               ? FusedExecution::library_epilogue
               : FusedExecution::op_by_op;
  }
  if (fusedKind != "elementwise" || (!isHostKind(kind) && !hasKernel(kElementwiseRegionKernel)))
    return FusedExecution::op_by_op;

  // Every value float32 of the region's size or one element; one result per op; each
  // output computed in the region, distinct and not a scalar (outputs are written in
  // place, chunk by chunk).
  int64_t n = fusedElements(fused);
  auto sized = [&](Value value) {
    int64_t count = f32Elements(value.getType());
    return count >= 0 && (count == n || count == 1);
  };
  if (!llvm::all_of(body.getArguments(), sized))
    return FusedExecution::op_by_op;
  for (Operation *op : ops)
    if (op->getNumResults() != 1 || !hasKernel(op->getName().getStringRef()) ||
        !sized(op->getResult(0)))
      return FusedExecution::op_by_op;
  std::set<Operation *> seen;
  for (Value yielded : terminator->getOperands()) {
    Operation *producer = yielded.getDefiningOp();
    if (!producer || producer->getBlock() != &body || !seen.insert(producer).second ||
        (f32Elements(yielded.getType()) == 1 && n != 1))
      return FusedExecution::op_by_op;
  }
  return FusedExecution::elementwise;
}

bool mlir::dlc::drawsFreshSeeds(Operation *op) {
  bool seeded = false;
  op->walk([&](Operation *inner) { seeded = seeded || inner->hasAttr("seed"); });
  return seeded;
}
