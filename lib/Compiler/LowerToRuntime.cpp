//===- LowerToRuntime.cpp - a func.func of the dlc dialect as a runtime Program -===//
//
// The inverse of EmitDialect's attribute spelling: every op becomes a step that calls
// the kernel table's kernels for the program's device with the attributes the eager
// kernels read; `dlc.reshape` becomes a view of its input (no step); results that are
// arguments, views or repeated get a copy step so that each result owns its buffer.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternal.h"
#include "LoweringSupport.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Runtime/Kernel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"
#include "dlc/Core/OpFacts.h"

#include <functional>
#include <optional>
#include <set>

namespace dlc::compiler {

using namespace mlir;

namespace detail {

bool toDType(Type element, DType &dtype) {
  if (element.isF32())
    dtype = DType::f32;
  else if (element.isF16())
    dtype = DType::f16;
  else if (element.isBF16())
    dtype = DType::bf16;
  else if (element.isInteger(1))
    dtype = DType::boolean;
  else if (element.isUnsignedInteger(8))
    dtype = DType::u8;
  else if (element.isSignlessInteger(32) || element.isSignedInteger(32))
    dtype = DType::i32;
  else if (element.isSignlessInteger(64) || element.isSignedInteger(64))
    dtype = DType::i64;
  else
    return false;
  return true;
}

bool lowerableTensor(Value value, const std::string &function, Shape &shape, DType &dtype,
                     std::string &error) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  std::string why = "the runtime has no such tensors";
  if (type && toDType(type.getElementType(), dtype)) {
    shape.assign(type.getShape().begin(), type.getShape().end());
    why = shape_rules::tensorSizeError(shape, int64_t(dtype_size(dtype)));
    if (why.empty())
      return true;
  }
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
  step.fresh_seed = step.attrs.has("seed");
  step.in_place = isInPlaceElementwise(op);
  return true;
}

/// Whether `op`'s kernel reads element i of each same-shaped input before writing element
/// i of its one output (DLC_ElementwiseKernel).
bool isInPlaceElementwise(Operation *op) {
  return op->getNumResults() == 1 && op->hasTrait<mlir::dlc::OpTrait::ElementwiseKernel>();
}

/// The single step of a dlc.fused region, if it runs as one (mlir::dlc::fusedExecution
/// decides, as it does for the passes): `conv2d_relu` / `dense_relu` call the library
/// kernel with a ReLU epilogue, and `elementwise` chains of float32 ops run chunk by
/// chunk. Nothing (and no error) when the region runs op by op; `error` set when an
/// attribute cannot be read.
std::optional<ProgramStep> fusedStep(mlir::dlc::FusedOp fused, Device device,
                                     std::string &error) {
  auto hasKernel = [&](StringRef op) { return find_kernel(op.str(), device) != nullptr; };
  mlir::dlc::FusedExecution execution = mlir::dlc::fusedExecution(
      fused, mlir::dlc::DeviceKind(int32_t(device.kind)), hasKernel);
  if (execution == mlir::dlc::FusedExecution::op_by_op)
    return std::nullopt;
  Block &body = fused.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);

  if (execution == mlir::dlc::FusedExecution::library_epilogue) {
    ProgramStep step;
    step.op = ops[0]->getName().getStringRef().str();
    step.kernels = *find_kernel(step.op, device);
    if (!mlir::dlc::readKernelAttrs(ops[0], step.attrs, error))
      return std::nullopt;
    step.attrs.set("activation", std::string("relu"));
    step.op += "+relu";
    return step;
  }

  auto body_ = std::make_shared<FusedElementwise>();
  SmallVector<bool> scalar = mlir::dlc::fusedScalarValues(fused);
  body_->scalar.assign(scalar.begin(), scalar.end());
  body_->inputs = int(body.getNumArguments());
  body_->elements = mlir::dlc::fusedElements(fused);
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
    body_->steps.push_back(std::move(sub));
  }
  for (Value yielded : body.getTerminator()->getOperands())
    body_->outputs.push_back(local.lookup(yielded));
  ProgramStep step;
  step.op = "dlc.fused.elementwise";
  step.fused = std::move(body_);
  return step;
}

} // namespace detail

using namespace detail;


Device functionDevice(func::FuncOp function, Device fallback) {
  if (function.getNumArguments() == 0)
    return fallback;
  auto attr = function.getArgAttrOfType<mlir::dlc::DeviceAttr>(
      0, mlir::dlc::DLCDialect::getDeviceAttrName());
  if (!attr)
    return fallback;
  return Device{DeviceKind(int32_t(attr.getKind())), int(attr.getOrdinal())};
}

std::shared_ptr<Program> lowerToProgram(func::FuncOp function, Device device,
                                        std::string &error,
                                        llvm::DenseMap<Value, int> *valueIds) {
  register_builtin_kernels();
  auto program = std::make_shared<Program>();
  program->name = function.getName().str();
  program->device = device;
  llvm::DenseMap<Value, int> localIds;
  llvm::DenseMap<Value, int> &ids = valueIds ? *valueIds : localIds;

  auto addValue = [&](Value value, int aliasOf) -> int {
    ProgramValue v;
    if (!lowerableTensor(value, program->name, v.shape, v.dtype, error))
      return -1;
    v.alias_of = aliasOf;
    v.layout = Layout(int(mlir::dlc::valueLayout(value)));
    program->values.push_back(std::move(v));
    int id = int(program->values.size()) - 1;
    ids[value] = id;
    return id;
  };
  auto copyOf = [&](int source) {
    ProgramValue v = program->values[size_t(source)];
    v.alias_of = -1;
    program->values.push_back(v);
    int id = int(program->values.size()) - 1;
    ProgramStep step;
    step.op = "copy";
    step.copy = true;
    step.inputs = {source};
    step.outputs = {id};
    program->steps.push_back(std::move(step));
    return id;
  };

  // One op as steps; dlc.fused regions become one step when the runtime has a fused
  // kernel for them (ReLU epilogues, element-wise chains) and their body's steps otherwise.
  std::function<bool(Operation *)> lowerOp = [&](Operation *op) -> bool {
    if (mlir::dlc::isViewOp(op)) {
      // A reshape views its input whole; split parts along the first axis follow each
      // other in it.
      size_t offset = 0;
      for (Value result : op->getResults()) {
        int id = addValue(result, ids.lookup(op->getOperand(0)));
        if (id < 0)
          return false;
        program->values[size_t(id)].view_offset = offset;
        offset += program->values[size_t(id)].bytes();
      }
      return true;
    }
    std::vector<int> inputs;
    for (Value operand : op->getOperands()) {
      auto it = ids.find(operand);
      if (it == ids.end()) {
        error = describe(op) + ": reads a value defined outside the function";
        return false;
      }
      inputs.push_back(it->second);
    }
    if (auto fused = dyn_cast<mlir::dlc::FusedOp>(op)) {
      std::optional<ProgramStep> step = fusedStep(fused, device, error);
      if (!error.empty())
        return false;
      if (!step) {
        // No fused kernel: run the body's ops one by one.
        Block &region = fused.getBody().front();
        for (auto [argument, id] : llvm::zip(region.getArguments(), inputs))
          ids[argument] = id;
        for (Operation &inner : region.without_terminator())
          if (!lowerOp(&inner))
            return false;
        for (auto [result, yielded] : llvm::zip(fused.getResults(), region.getTerminator()->getOperands()))
          ids[result] = ids.lookup(yielded);
        return true;
      }
      step->inputs = inputs;
      for (Value result : op->getResults()) {
        int id = addValue(result, -1);
        if (id < 0)
          return false;
        step->outputs.push_back(id);
      }
      program->steps.push_back(std::move(*step));
      return true;
    }
    ProgramStep step;
    if (!kernelStep(op, device, step, error))
      return false;
    step.inputs = inputs;
    for (Value result : op->getResults()) {
      int id = addValue(result, -1);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    program->steps.push_back(std::move(step));
    return true;
  };

  Block &body = function.getBody().front();
  for (BlockArgument argument : body.getArguments()) {
    int id = addValue(argument, -1);
    if (id < 0)
      return nullptr;
    program->arguments.push_back(id);
  }

  for (Operation &operation : body.getOperations()) {
    Operation *op = &operation;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::set<int> owned;
      for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
        int id = ids.lookup(ret.getOperand(k));
        if (auto update = function.getResultAttrOfType<IntegerAttr>(k, "dlc.updates")) {
          program->updates.push_back({id, int(update.getInt())});
          continue;
        }
        const ProgramValue &v = program->values[size_t(id)];
        bool isArgument = std::find(program->arguments.begin(), program->arguments.end(), id) !=
                          program->arguments.end();
        if (v.alias_of >= 0 || isArgument || owned.count(id))
          id = copyOf(id);
        owned.insert(id);
        program->results.push_back(id);
      }
      break;
    }
    if (!lowerOp(op))
      return nullptr;
  }
  error = program->plan();
  return error.empty() ? program : nullptr;
}

} // namespace dlc::compiler
