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

/// The eager kernels' attributes of `op`; false (with `error`) for one it cannot read.
bool kernelAttrs(Operation *op, Attrs &attrs, std::string &error) {
  for (NamedAttribute named : op->getAttrs()) {
    llvm::StringRef name = named.getName().getValue();
    Attribute value = named.getValue();
    if (name.starts_with("dlc.") || isa<mlir::dlc::DeviceAttr>(value))
      continue;
    if (auto flag = dyn_cast<BoolAttr>(value))
      attrs.set(name.str(), flag.getValue());
    else if (isa<UnitAttr>(value))
      attrs.set(name.str(), true);
    else if (auto number = dyn_cast<IntegerAttr>(value))
      attrs.set(name.str(), number.getValue().getSExtValue());
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
      os << describe(op) << ": the runtime cannot read attribute '" << name << "' (" << value
         << "); only splat constants and scalar/array attributes lower to kernels yet";
      return false;
    }
  }
  return true;
}

bool kernelStep(Operation *op, Device device, ProgramStep &step, std::string &error) {
  step.op = op->getName().getStringRef().str();
  const KernelEntry *kernels = find_kernel(step.op, device);
  if (!kernels) {
    error = describe(op) + ": no kernel for " + device.str();
    return false;
  }
  step.kernels = *kernels;
  if (!kernelAttrs(op, step.attrs, error))
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

/// The single step of a dlc.fused region, if the runtime has a fused kernel for it:
/// `conv2d_relu` / `dense_relu` call the library kernel with a ReLU epilogue, and
/// `elementwise` chains of float32 ops run chunk by chunk. Nothing (and no error) when
/// the region must run op by op; `error` set when it is malformed.
std::optional<ProgramStep> fusedStep(mlir::dlc::FusedOp fused, Device device,
                                     std::string &error) {
  Block &body = fused.getBody().front();
  std::string kind = fused.getKind() ? fused.getKind()->str() : "";
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  Operation *terminator = body.getTerminator();

  if (kind == "conv2d_relu" || kind == "dense_relu") {
    if (ops.size() != 2 || ops[1]->getName().getStringRef() != ::dlc::ops::relu ||
        ops[1]->getOperand(0) != ops[0]->getResult(0) ||
        terminator->getOperands() != ops[1]->getResults() ||
        ops[0]->getOperands() != ValueRange(body.getArguments()))
      return std::nullopt;
    const KernelEntry *kernels = find_kernel(ops[0]->getName().getStringRef().str(), device);
    if (!kernels)
      return std::nullopt;
    ProgramStep step;
    step.op = ops[0]->getName().getStringRef().str();
    step.kernels = *kernels;
    if (!kernelAttrs(ops[0], step.attrs, error))
      return std::nullopt;
    step.attrs.set("activation", std::string("relu"));
    step.op += "+relu";
    return step;
  }
  if (kind != "elementwise" || !device.is_host())
    return std::nullopt;

  auto elements = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.getElementType().isF32() ? tensor.getNumElements() : int64_t(-1);
  };
  int64_t n = 1;
  for (Type type : fused.getResultTypes())
    n = std::max(n, elements(type));
  auto body_ = std::make_shared<FusedElementwise>();
  llvm::DenseMap<Value, int> local;
  auto addLocal = [&](Value value) {
    int64_t count = elements(value.getType());
    if (count < 0 || (count != n && count != 1))
      return false;
    local[value] = int(body_->scalar.size());
    body_->scalar.push_back(count == 1 && n != 1);
    return true;
  };
  for (BlockArgument argument : body.getArguments())
    if (!addLocal(argument))
      return std::nullopt;
  body_->inputs = int(body.getNumArguments());
  body_->elements = n;
  for (Operation *op : ops) {
    const KernelEntry *kernels = find_kernel(op->getName().getStringRef().str(), device);
    if (!kernels || op->getNumResults() != 1)
      return std::nullopt;
    FusedElementwise::SubStep sub;
    sub.op = op->getName().getStringRef().str();
    sub.kernels = *kernels;
    if (!kernelAttrs(op, sub.attrs, error))
      return std::nullopt;
    for (Value operand : op->getOperands())
      sub.inputs.push_back(local.lookup(operand));
    if (!addLocal(op->getResult(0)))
      return std::nullopt;
    body_->steps.push_back(std::move(sub));
  }
  for (Value yielded : terminator->getOperands())
    body_->outputs.push_back(local.lookup(yielded));
  // A step output must be computed by the region and distinct, as each is written in place.
  std::set<int> seen;
  for (int out : body_->outputs)
    if (out < body_->inputs || !seen.insert(out).second || body_->scalar[size_t(out)])
      return std::nullopt;
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
    llvm::StringRef name = op->getName().getStringRef();
    if (name == ::dlc::ops::reshape)
      return addValue(op->getResult(0), ids.lookup(op->getOperand(0))) >= 0;
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
  program->plan();
  return program;
}

} // namespace dlc::compiler
