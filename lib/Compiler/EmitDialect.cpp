//===- EmitDialect.cpp - a traced Graph as a func.func of the dlc dialect -----===//
//
// The graph's attributes are the eager kernels' (dlc/Core/Attrs.h); the dialect
// spells some of them differently: shapes and dtypes live in result types, enums are
// enum attributes, flags are unit attributes, a `full` is a splat `dlc.constant`.
//
//===----------------------------------------------------------------------===//
#include "CompilerInternal.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>


namespace dlc::compiler {

using namespace mlir;

namespace {

Type elementType(MLIRContext &context, DType dtype) {
  switch (dtype) {
  case DType::f32:
    return Float32Type::get(&context);
  case DType::f16:
    return Float16Type::get(&context);
  case DType::bf16:
    return BFloat16Type::get(&context);
  case DType::i32:
    return IntegerType::get(&context, 32);
  case DType::i64:
    return IntegerType::get(&context, 64);
  case DType::u8:
    return IntegerType::get(&context, 8, IntegerType::Unsigned);
  case DType::boolean:
    return IntegerType::get(&context, 1);
  }
  return {};
}

RankedTensorType tensorType(MLIRContext &context, const GraphValue &value) {
  return RankedTensorType::get(value.shape, elementType(context, value.dtype));
}

mlir::dlc::DeviceAttr deviceAttr(MLIRContext &context, Device device) {
  return mlir::dlc::DeviceAttr::get(&context, mlir::dlc::DeviceKind(uint32_t(device.kind)), device.id);
}

/// How the dialect stores attribute `name` of `op` (from its ODS), if it has one.
std::optional<op_facts::AttrKind> attrKind(llvm::StringRef op, llvm::StringRef name) {
  const op_facts::OpInfo *facts = op_facts::find(std::string_view(op.data(), op.size()));
  const op_facts::AttrInfo *attr =
      facts ? facts->attr(std::string_view(name.data(), name.size())) : nullptr;
  return attr ? std::optional<op_facts::AttrKind>(attr->kind) : std::nullopt;
}

/// The dialect's spelling of one eager attribute; a null attribute means "leave out".
Attribute convert(MLIRContext &context, llvm::StringRef op, llvm::StringRef name,
                  const AttrValue &value, Type resultType) {
  Builder b(&context);
  if (op == ::dlc::ops::constant && name == "value") {
    auto type = cast<RankedTensorType>(resultType);
    double scalar = std::holds_alternative<double>(value) ? std::get<double>(value)
                    : std::holds_alternative<int64_t>(value) ? double(std::get<int64_t>(value))
                                                             : 0.0;
    Type element = type.getElementType();
    if (isa<FloatType>(element))
      return DenseElementsAttr::get(type, b.getFloatAttr(element, scalar));
    auto integer = cast<IntegerType>(element);
    llvm::APInt bits(integer.getWidth(), uint64_t(int64_t(scalar)), !integer.isUnsigned());
    return DenseElementsAttr::get(type, bits);
  }
  std::optional<op_facts::AttrKind> kind = attrKind(op, name);
  if (const auto *flag = std::get_if<bool>(&value)) {
    // BoolAttr where the dialect keeps one (they default to true), else a unit.
    if (kind == op_facts::AttrKind::boolean)
      return b.getBoolAttr(*flag);
    return *flag ? Attribute(b.getUnitAttr()) : Attribute();
  }
  if (const auto *number = std::get_if<int64_t>(&value)) {
    // The dialect's integer enums (reduction kinds, predicates) are 32-bit integers.
    if (kind == op_facts::AttrKind::enumeration)
      return b.getI32IntegerAttr(int32_t(*number));
    return b.getI64IntegerAttr(*number);
  }
  if (const auto *real = std::get_if<double>(&value))
    return b.getF64FloatAttr(*real);
  if (const auto *list = std::get_if<std::vector<int64_t>>(&value))
    return b.getDenseI64ArrayAttr(*list);
  return b.getStringAttr(std::get<std::string>(value));
}

} // namespace

/// What each kind of device this build has kernels for can run: the dialect ops in the
/// kernel table, as `#dlc.target`s for dlc-place-devices, and element-wise regions as
/// one step where generated kernels are wanted and the device's backend launches them.
ArrayAttr describeTargets(MLIRContext &context, bool generatedKernels) {
  Builder b(&context);
  SmallVector<Attribute> targets;
  for (Device device : {cpu(0), gpu(0)}) {
    SmallVector<Attribute> runs;
    for (const op_facts::OpInfo &op : op_facts::kTable)
      if (find_kernel(op.name, device))
        runs.push_back(b.getStringAttr(op.name));
    if (generatedKernels && !runs.empty() && !device.is_host() &&
        generated_kernel_launcher(device.kind))
      runs.push_back(b.getStringAttr(mlir::dlc::kElementwiseRegionKernel));
    if (!runs.empty())
      targets.push_back(mlir::dlc::TargetAttr::get(
          &context, mlir::dlc::DeviceKind(uint32_t(device.kind)), b.getArrayAttr(runs)));
  }
  return b.getArrayAttr(targets);
}

OwningOpRef<ModuleOp> emitModule(MLIRContext &context, const std::vector<const Graph *> &graphs,
                                 std::string &error, bool generatedKernels) {
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  (*module)->setAttr(mlir::dlc::DLCDialect::getTargetsAttrName(), describeTargets(context, generatedKernels));
  builder.setInsertionPointToEnd(module->getBody());

  for (const Graph *graph : graphs) {
    std::vector<Type> argumentTypes, resultTypes;
    for (const GraphArgument &argument : graph->arguments)
      argumentTypes.push_back(tensorType(context, graph->values[size_t(argument.value)]));
    for (int result : graph->results)
      resultTypes.push_back(tensorType(context, graph->values[size_t(result)]));
    for (const GraphUpdate &update : graph->updates)
      resultTypes.push_back(tensorType(context, graph->values[size_t(update.value)]));

    auto location = NameLoc::get(builder.getStringAttr(graph->name));
    auto function = builder.create<func::FuncOp>(
        location, graph->name, builder.getFunctionType(argumentTypes, resultTypes));
    mlir::dlc::DeviceAttr device = deviceAttr(context, graph->device);
    for (size_t i = 0; i < graph->arguments.size(); ++i) {
      function.setArgAttr(unsigned(i), mlir::dlc::DLCDialect::getNameAttrName(),
                          builder.getStringAttr(graph->arguments[i].name));
      function.setArgAttr(unsigned(i), mlir::dlc::DLCDialect::getDeviceAttrName(), device);
      if (graph->arguments[i].batch)
        function.setArgAttr(unsigned(i), mlir::dlc::DLCDialect::getBatchAttrName(),
                            builder.getUnitAttr());
      if (graph->arguments[i].parameter)
        function.setArgAttr(unsigned(i), mlir::dlc::DLCDialect::getParameterAttrName(),
                            builder.getUnitAttr());
      if (graph->arguments[i].saved_result >= 0)
        function.setArgAttr(
            unsigned(i), mlir::dlc::DLCDialect::getSavedFromAttrName(),
            builder.getArrayAttr({FlatSymbolRefAttr::get(&context, graphs.front()->name),
                                  builder.getI64IntegerAttr(graph->arguments[i].saved_result)}));
    }
    if (graph->blocked_results)
      function->setAttr(mlir::dlc::DLCDialect::getBlockedResultsAttrName(),
                        builder.getUnitAttr());
    for (size_t k = graph->first_saved; k < graph->results.size(); ++k)
      function.setResultAttr(unsigned(k), mlir::dlc::DLCDialect::getSavedAttrName(),
                             builder.getUnitAttr());
    for (size_t k = 0; k < graph->updates.size(); ++k)
      function.setResultAttr(unsigned(graph->results.size() + k),
                             mlir::dlc::DLCDialect::getUpdatesAttrName(),
                             builder.getI64IntegerAttr(graph->updates[k].argument));

    Block *body = function.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    std::vector<Value> values(graph->values.size());
    for (size_t i = 0; i < graph->arguments.size(); ++i)
      values[size_t(graph->arguments[i].value)] = body->getArgument(unsigned(i));

    for (const GraphNode &node : graph->nodes) {
      std::optional<RegisteredOperationName> name =
          RegisteredOperationName::lookup(node.op, &context);
      if (!name) {
        error = "hybridize: '" + node.name + "' (" + node.op +
                ") has no op in the dlc dialect, so it cannot be compiled; call that code "
                "outside the hybridized block or un-hybridize it";
        return nullptr;
      }
      OperationState state(NameLoc::get(inside.getStringAttr(node.name)), node.op);
      for (int input : node.inputs) {
        if (!values[size_t(input)]) {
          error = "hybridize: internal error: '" + node.name + "' reads a value before it is "
                  "defined";
          return nullptr;
        }
        state.operands.push_back(values[size_t(input)]);
      }
      for (int output : node.outputs)
        state.types.push_back(tensorType(context, graph->values[size_t(output)]));
      Type firstResult = state.types.empty() ? Type() : state.types.front();
      llvm::ArrayRef<StringAttr> declared = name->getAttributeNames();
      for (const auto &[attrName, attrValue] : node.attrs.items()) {
        // Eager attributes the op does not declare (shapes kept in types, options of a
        // sibling op such as max-pool's count_include_pad) are left out.
        bool known = llvm::any_of(declared, [&](StringAttr a) { return a == attrName; });
        if (!known)
          continue;
        if (Attribute converted = convert(context, node.op, attrName, attrValue, firstResult))
          state.addAttribute(attrName, converted);
      }
      if (node.gradient)
        state.addAttribute(mlir::dlc::DLCDialect::getGradientAttrName(), inside.getUnitAttr());
      if (node.op != ::dlc::ops::constant) // constants belong to every device that uses them
        state.addAttribute(mlir::dlc::DLCDialect::getDeviceAttrName(), device);
      Operation *op = inside.create(state);
      for (size_t k = 0; k < node.outputs.size(); ++k)
        values[size_t(node.outputs[k])] = op->getResult(unsigned(k));
    }

    std::vector<Value> returned;
    for (int result : graph->results)
      returned.push_back(values[size_t(result)]);
    for (const GraphUpdate &update : graph->updates)
      returned.push_back(values[size_t(update.value)]);
    inside.create<func::ReturnOp>(location, returned);
  }
  return module;
}

} // namespace dlc::compiler
