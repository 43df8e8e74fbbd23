//===- LoweringSupport.cpp - what both lowerings read from the IR --------------===//
#include "LoweringSupport.h"

#include "dlc/Core/KernelGeometry.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

namespace dlc::conversion::detail {

using namespace mlir;

bool lowerableTensor(Value value, const std::string &function, Shape &shape, DType &dtype,
                     std::string &error) {
  std::string why;
  if (mlir::dlc::runtimeTensor(value.getType(), shape, dtype, why))
    return true;
  llvm::raw_string_ostream os(error);
  os << "@" << function << ": cannot lower a value of type " << value.getType() << ": " << why;
  return false;
}

std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

Device runtimeDevice(mlir::dlc::DeviceAttr device) {
  return Device{DeviceKind(int32_t(device.getKind())), int(device.getOrdinal())};
}

bool storageOf(Value value, mlir::dlc::StorageAttr &storage, std::string &error) {
  if (auto argument = dyn_cast<BlockArgument>(value)) {
    storage = mlir::dlc::StorageAttr::get(value.getContext(), mlir::dlc::StorageKind::argument,
                                          argument.getArgNumber(), 0,
                                          mlir::dlc::StorageReuse::fresh);
    return true;
  }
  auto result = cast<OpResult>(value);
  auto places = result.getOwner()->getAttrOfType<ArrayAttr>(
      mlir::dlc::DLCDialect::getStorageAttrName());
  if (places && result.getResultNumber() < places.size())
    if ((storage = dyn_cast<mlir::dlc::StorageAttr>(places[result.getResultNumber()])))
      return true;
  error = describe(result.getOwner()) + ": result #" +
          std::to_string(result.getResultNumber()) +
          " has no place (dlc.storage); run dlc-plan-memory first";
  return false;
}

bool arenasOf(func::FuncOp function, ArrayAttr &arenas, std::string &error) {
  arenas = function->getAttrOfType<ArrayAttr>(mlir::dlc::DLCDialect::getArenasAttrName());
  if (arenas)
    return true;
  error = "@" + function.getName().str() +
          ": has no memory plan (dlc.arenas); run dlc-plan-memory first";
  return false;
}

bool kernelStep(Operation *op, Device device, ProgramStep &step, std::string &error) {
  step.op = op->getName().getStringRef().str();
  const KernelEntry *kernels = find_kernel(step.op, device);
  if (!kernels) {
    error = describe(op) + ": no kernel for " + device.str();
    return false;
  }
  step.kernels = *kernels;
  if (!mlir::dlc::readKernelAttrs(op, step.attrs, error))
    return false;
  // A cast's, a broadcast's and a created tensor's target is their result type, which
  // eager code passes as the "dtype" and "shape" attributes: the step carries it the same
  // way, so that the shape rule checking a model file's steps sees a cast to bool or
  // float16 as one, a broadcast to the batch (ViT's [CLS] token) as that, and a constant
  // of shape (1) (an imported ONNX model's) as one.
  bool created = isa<mlir::dlc::ConstantOp, mlir::dlc::RandomUniformOp,
                     mlir::dlc::RandomNormalOp>(op);
  if (created || isa<mlir::dlc::CastOp, mlir::dlc::BroadcastToOp>(op)) {
    Shape shape;
    DType dtype;
    std::string why;
    if (mlir::dlc::runtimeTensor(op->getResult(0).getType(), shape, dtype, why)) {
      if (created || isa<mlir::dlc::CastOp>(op))
        step.attrs.set("dtype", int64_t(dtype));
      if (created || isa<mlir::dlc::BroadcastToOp>(op))
        step.attrs.set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
    }
  }
  step.fresh_seed = step.attrs.has("seed");
  return true;
}

std::optional<ProgramStep> fusedStep(mlir::dlc::FusedOp fused, Device device,
                                     std::shared_ptr<FusedElementwise> &chain,
                                     std::string &error) {
  auto hasKernel = [&](StringRef op) {
    if (op == mlir::dlc::kElementwiseRegionKernel)
      return device.is_host() || generated_kernel_launcher(device.kind) != nullptr;
    return find_kernel(op.str(), device) != nullptr;
  };
  mlir::dlc::FusedExecution execution = mlir::dlc::fusedExecution(
      fused, mlir::dlc::DeviceKind(int32_t(device.kind)), hasKernel);
  if (execution == mlir::dlc::FusedExecution::op_by_op) {
    error = describe(fused) + ": the plan runs this region as one step, but " +
            device.str() + " has no fused kernel for it (the module's dlc.targets promise "
            "kernels this build does not have)";
    return std::nullopt;
  }
  Block &body = fused.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);

  if (execution == mlir::dlc::FusedExecution::library_pooling) {
    if (std::optional<mlir::dlc::PoolConvBackwardRegion> backward =
            mlir::dlc::poolConvBackwardRegion(fused)) {
      // The filter gradient's kernel with the pooling gradient's attributes under
      // kPoolEpiloguePrefix and the data gradient's under kDataGradientPrefix; its
      // operands and results are the region's.
      ProgramStep step;
      step.op = backward->filter->getName().getStringRef().str();
      step.kernels = *find_kernel(step.op, device);
      Attrs pooling, data;
      if (!mlir::dlc::readKernelAttrs(backward->filter, step.attrs, error) ||
          !mlir::dlc::readKernelAttrs(backward->pool, pooling, error) ||
          (backward->data && !mlir::dlc::readKernelAttrs(backward->data, data, error)))
        return std::nullopt;
      for (const auto &[name, value] : pooling.items())
        step.attrs.set(kernels::kPoolEpiloguePrefix + name, value);
      for (const auto &[name, value] : data.items())
        step.attrs.set(kernels::kDataGradientPrefix + name, value);
      step.op = backward->pool->getName().getStringRef().str() +
                (backward->data ? "+conv2d_backward_data" : "") + "+conv2d_backward_filter";
      return step;
    }
    // The convolution's kernel with the pooling's attributes under kPoolEpiloguePrefix;
    // its outputs are the region's results (the activation first where it is one).
    mlir::dlc::ConvPoolRegion region = *mlir::dlc::convPoolRegion(fused);
    ProgramStep step;
    step.op = region.conv->getName().getStringRef().str();
    step.kernels = *find_kernel(step.op, device);
    Attrs pooling;
    if (!mlir::dlc::readKernelAttrs(region.conv, step.attrs, error) ||
        !mlir::dlc::readKernelAttrs(region.pool, pooling, error))
      return std::nullopt;
    for (const auto &[name, value] : pooling.items())
      step.attrs.set(kernels::kPoolEpiloguePrefix + name, value);
    if (region.relu) {
      step.attrs.set("activation", std::string("relu"));
      step.op += "+relu";
    }
    step.op += "+" + region.pool->getName().getStringRef().drop_front(4).str();
    return step;
  }
  if (execution == mlir::dlc::FusedExecution::library_norm) {
    // The batch norm's kernel (its gradient's) with the activation named (and, with an
    // add, `residual`: the last operand is added before it): its operands and results
    // are the region's.
    mlir::dlc::NormActivationRegion region = *mlir::dlc::normActivationRegion(fused);
    ProgramStep step;
    step.op = region.norm->getName().getStringRef().str();
    step.kernels = *find_kernel(step.op, device);
    if (!mlir::dlc::readKernelAttrs(region.norm, step.attrs, error))
      return std::nullopt;
    step.attrs.set("activation", region.activationName().str());
    if (region.add) {
      step.attrs.set("residual", true);
      step.op += "+add";
    }
    step.op += "+" + region.activationName().str();
    return step;
  }
  if (execution == mlir::dlc::FusedExecution::library_epilogue) {
    ProgramStep step;
    step.op = ops[0]->getName().getStringRef().str();
    step.kernels = *find_kernel(step.op, device);
    if (!mlir::dlc::readKernelAttrs(ops[0], step.attrs, error))
      return std::nullopt;
    // The epilogue op's name: relu (also the ReLU gradient after a backward op), relu6,
    // silu or gelu.
    std::string activation = mlir::isa<mlir::dlc::Relu6Op>(ops[1])  ? "relu6"
                             : mlir::isa<mlir::dlc::SiluOp>(ops[1]) ? "silu"
                             : mlir::isa<mlir::dlc::GeluOp>(ops[1]) ? "gelu"
                                                                    : "relu";
    step.attrs.set("activation", activation);
    step.op += "+" + activation;
    return step;
  }

  chain = std::make_shared<FusedElementwise>();
  SmallVector<bool> scalar = mlir::dlc::fusedScalarValues(fused);
  chain->scalar.assign(scalar.begin(), scalar.end());
  chain->inputs = int(body.getNumArguments());
  chain->elements = mlir::dlc::fusedElements(fused);
  llvm::DenseMap<Value, int> local;
  for (BlockArgument argument : body.getArguments())
    local[argument] = int(local.size());
  for (Operation *op : ops) {
    FusedElementwise::SubStep sub;
    sub.op = op->getName().getStringRef().str();
    sub.kernels = *find_kernel(sub.op, device);
    if (!mlir::dlc::readKernelAttrs(op, sub.attrs, error))
      return std::nullopt;
    for (Value operand : op->getOperands())
      sub.inputs.push_back(local.lookup(operand));
    local[op->getResult(0)] = int(local.size());
    chain->steps.push_back(std::move(sub));
  }
  for (Value yielded : body.getTerminator()->getOperands())
    chain->outputs.push_back(local.lookup(yielded));
  ProgramStep step;
  step.op = mlir::dlc::kElementwiseRegionKernel.str();
  chain->name = fused_elementwise_name(step.op, *chain);
  step.fused = chain;
  return step;
}

} // namespace dlc::conversion::detail
