//===- DLCDialect.cpp - dialect registration, attributes, attribute checks ===//
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dlc;

#include "dlc/Dialect/DLC/IR/DLCOpsDialect.cpp.inc"
#include "dlc/Dialect/DLC/IR/DLCEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dlc/Dialect/DLC/IR/DLCAttrs.cpp.inc"

void DLCDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dlc/Dialect/DLC/IR/DLCOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dlc/Dialect/DLC/IR/DLCAttrs.cpp.inc"
      >();
}

Operation *DLCDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                           Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

//===----------------------------------------------------------------------===//
// #dlc.device
//===----------------------------------------------------------------------===//

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 DeviceKind kind, int64_t ordinal) {
  if (ordinal < 0)
    return emitError() << "device ordinal must be >= 0, got " << ordinal;
  return success();
}

// #dlc.device<gpu:1>
/// `kind:ordinal`, as #dlc.device and #dlc.arena spell a device.
static DeviceAttr parseDeviceBody(AsmParser &parser) {
  StringRef kindName;
  int64_t ordinal = 0;
  llvm::SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return {};
  std::optional<DeviceKind> kind = symbolizeDeviceKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc) << "unknown device kind '" << kindName
                              << "'; expected cpu, gpu, cpu_pinned or cpu_shared";
    return {};
  }
  if (parser.parseColon() || parser.parseInteger(ordinal))
    return {};
  return parser.getChecked<DeviceAttr>(parser.getContext(), *kind, ordinal);
}

Attribute DeviceAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  DeviceAttr device = parseDeviceBody(parser);
  if (!device || parser.parseGreater())
    return {};
  return device;
}

void DeviceAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyDeviceKind(getKind()) << ":" << getOrdinal() << ">";
}

//===----------------------------------------------------------------------===//
// #dlc.storage, #dlc.arena
//===----------------------------------------------------------------------===//

Attribute StorageAttr::parse(AsmParser &parser, Type) {
  StringRef kindName, reuseName;
  int64_t index = 0, offset = 0;
  llvm::SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&kindName))
    return {};
  std::optional<StorageKind> kind = symbolizeStorageKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc) << "unknown storage '" << kindName
                              << "'; expected argument, result, arena or prepared";
    return {};
  }
  if (parser.parseInteger(index) || parser.parseKeyword("at") || parser.parseInteger(offset))
    return {};
  StorageReuse reuse = StorageReuse::fresh;
  if (succeeded(parser.parseOptionalComma())) {
    llvm::SMLoc reuseLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&reuseName))
      return {};
    std::optional<StorageReuse> parsed = symbolizeStorageReuse(reuseName);
    if (!parsed) {
      parser.emitError(reuseLoc) << "unknown reuse '" << reuseName
                                 << "'; expected freed or in_place";
      return {};
    }
    reuse = *parsed;
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<StorageAttr>(parser.getContext(), *kind, index, offset, reuse);
}

void StorageAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyStorageKind(getKind()) << " " << getIndex() << " at "
          << getOffset();
  if (getReuse() != StorageReuse::fresh)
    printer << ", " << stringifyStorageReuse(getReuse());
  printer << ">";
}

LogicalResult StorageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StorageKind kind, int64_t index, int64_t offset,
                                  StorageReuse reuse) {
  if (index < 0 || offset < 0)
    return emitError() << "a storage's index and offset are not negative, got " << index
                       << " and " << offset;
  if (reuse != StorageReuse::fresh && kind != StorageKind::arena)
    return emitError() << "only arena blocks are reused, not " << stringifyStorageKind(kind)
                       << " " << index;
  return success();
}

Attribute ArenaAttr::parse(AsmParser &parser, Type) {
  int64_t bytes = 0;
  if (parser.parseLess())
    return {};
  DeviceAttr device = parseDeviceBody(parser);
  if (!device || parser.parseComma() || parser.parseInteger(bytes) ||
      parser.parseKeyword("bytes") || parser.parseGreater())
    return {};
  return parser.getChecked<ArenaAttr>(parser.getContext(), device, bytes);
}

void ArenaAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyDeviceKind(getDevice().getKind()) << ":"
          << getDevice().getOrdinal() << ", " << getBytes() << " bytes>";
}

LogicalResult ArenaAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                DeviceAttr device, int64_t bytes) {
  if (!device || bytes < 0)
    return emitError() << "an arena has a device and a size of zero or more bytes, got "
                       << bytes;
  return success();
}

std::string DeviceAttr::str() const {
  return (stringifyDeviceKind(getKind()) + "(" + llvm::Twine(getOrdinal()) + ")").str();
}

//===----------------------------------------------------------------------===//
// #dlc.target
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 DeviceKind kind, ArrayAttr ops) {
  if (kind != DeviceKind::cpu && kind != DeviceKind::gpu)
    return emitError() << "a target is a kind of device that computes (cpu or gpu); "
                       << stringifyDeviceKind(kind) << " memory computes with cpu's kernels";
  for (Attribute op : ops)
    if (!::llvm::isa<StringAttr>(op))
      return emitError() << "a target's ops are op names (\"dlc.add\"), got " << op;
  return success();
}

bool TargetAttr::runs(StringRef op) const {
  return llvm::any_of(getOps(), [&](Attribute name) {
    return ::llvm::cast<StringAttr>(name).getValue() == op;
  });
}

static LogicalResult verifyTargets(Operation *op, Attribute value) {
  auto targets = dyn_cast<ArrayAttr>(value);
  if (!targets || !isa<ModuleOp>(op))
    return op->emitError() << "'" << DLCDialect::getTargetsAttrName()
                           << "' is an array of #dlc.target on a module";
  llvm::SmallDenseSet<uint32_t> kinds;
  for (Attribute entry : targets) {
    auto target = dyn_cast<TargetAttr>(entry);
    if (!target)
      return op->emitError() << "'" << DLCDialect::getTargetsAttrName()
                             << "' holds #dlc.target entries only, got " << entry;
    if (!kinds.insert(uint32_t(target.getKind())).second)
      return op->emitError() << "'" << DLCDialect::getTargetsAttrName() << "' describes "
                             << stringifyDeviceKind(target.getKind()) << " twice";
  }
  return success();
}

/// dlc.layouts on an op: one #dlc.layout per result, blocked only where the type can be.
static LogicalResult verifyResultLayouts(Operation *op, Attribute value) {
  auto layouts = dyn_cast<ArrayAttr>(value);
  if (!layouts || layouts.size() != op->getNumResults() ||
      !llvm::all_of(layouts, [](Attribute a) { return isa<LayoutAttr>(a); }))
    return op->emitError() << "'" << DLCDialect::getLayoutsAttrName() << "' lists one "
                           << "#dlc.layout per result (" << op->getNumResults()
                           << "), got " << value;
  for (auto [layout, result] : llvm::zip(layouts, op->getResults()))
    if (!isBlockable(result.getType(), cast<LayoutAttr>(layout).getValue()))
      return op->emitError() << "'" << DLCDialect::getLayoutsAttrName() << "': result #"
                             << result.getResultNumber() << " (" << result.getType()
                             << ") cannot be "
                             << stringifyLayout(cast<LayoutAttr>(layout).getValue());
  return success();
}

static LogicalResult verifyStorage(Operation *op, Attribute value) {
  auto places = dyn_cast<ArrayAttr>(value);
  if (!places || places.size() != op->getNumResults() ||
      !llvm::all_of(places, [](Attribute a) { return isa<StorageAttr>(a); }))
    return op->emitError() << "'" << DLCDialect::getStorageAttrName() << "' lists one "
                           << "#dlc.storage per result (" << op->getNumResults() << "), got "
                           << value;
  return success();
}

static LogicalResult verifyArenas(Operation *op, Attribute value) {
  auto arenas = dyn_cast<ArrayAttr>(value);
  if (!arenas || !isa<FunctionOpInterface>(op) ||
      !llvm::all_of(arenas, [](Attribute a) { return isa<ArenaAttr>(a); }))
    return op->emitError() << "'" << DLCDialect::getArenasAttrName()
                           << "' is an array of #dlc.arena on a function";
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes: dlc.device on ops, function arguments and results
//===----------------------------------------------------------------------===//

static LogicalResult verifyDeviceNamedAttr(Operation *op, NamedAttribute attr,
                                           StringRef where) {
  if (attr.getName() != DLCDialect::getDeviceAttrName())
    return op->emitError() << "unknown dlc attribute '" << attr.getName().getValue()
                           << "' on " << where;
  if (!isa<DeviceAttr>(attr.getValue()))
    return op->emitError() << "'" << DLCDialect::getDeviceAttrName() << "' on " << where
                           << " must be a #dlc.device, got " << attr.getValue();
  return success();
}

LogicalResult DLCDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  // dlc.place: a request (dlc-place-devices moves the op there); unlike dlc.device it
  // is not checked against the operands' devices.
  // dlc.gradient: marks the op giving a parameter's gradient in a training step, which
  // dlc-shard-data-parallel sums over the replicas.
  if (attr.getName() == DLCDialect::getGradientAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'dlc.gradient' is a unit attribute, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == DLCDialect::getTargetsAttrName())
    return verifyTargets(op, attr.getValue());
  if (attr.getName() == DLCDialect::getLayoutsAttrName())
    return verifyResultLayouts(op, attr.getValue());
  if (attr.getName() == DLCDialect::getBlockedResultsAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << DLCDialect::getBlockedResultsAttrName()
                             << "' is a unit attribute of a function";
    return success();
  }
  if (attr.getName() == DLCDialect::getStorageAttrName())
    return verifyStorage(op, attr.getValue());
  if (attr.getName() == DLCDialect::getArenasAttrName())
    return verifyArenas(op, attr.getValue());
  if (attr.getName() == DLCDialect::getPreparedArenaAttrName()) {
    if (!isa<ArenaAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << DLCDialect::getPreparedArenaAttrName()
                             << "' is a function's #dlc.arena, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == DLCDialect::getPreparedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << DLCDialect::getPreparedAttrName()
                             << "' is a unit attribute of an op";
    return success();
  }
  if (attr.getName() == DLCDialect::getPreparedOperandsAttrName()) {
    auto operands = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!operands || isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << DLCDialect::getPreparedOperandsAttrName()
                             << "' is an op's array<i64> of operand numbers, got "
                             << attr.getValue();
    int64_t previous = -1;
    for (int64_t operand : operands.asArrayRef()) {
      if (operand <= previous || operand >= int64_t(op->getNumOperands()))
        return op->emitError() << "'" << DLCDialect::getPreparedOperandsAttrName()
                               << "' lists operand " << operand << ", but the op has "
                               << op->getNumOperands()
                               << " operands (expected increasing operand numbers)";
      previous = operand;
    }
    return success();
  }
  if (attr.getName() == DLCDialect::getOpByOpAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FusedOp>(op))
      return op->emitError() << "'" << DLCDialect::getOpByOpAttrName()
                             << "' is a unit attribute of a dlc.fused region";
    return success();
  }
  if (attr.getName() == DLCDialect::getRecomputedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << DLCDialect::getRecomputedAttrName()
                             << "' is a unit attribute of an op";
    return success();
  }
  if (attr.getName() == DLCDialect::getRematAttrName()) {
    auto remat = dyn_cast<DictionaryAttr>(attr.getValue());
    bool valid = remat && isa<FunctionOpInterface>(op) && remat.size() == 3;
    for (StringRef key : {"budget", "peak_before", "peak_after"})
      valid = valid && isa_and_nonnull<IntegerAttr>(remat.get(key));
    if (!valid)
      return op->emitError() << "'" << DLCDialect::getRematAttrName()
                             << "' is a function's {budget, peak_before, peak_after} in "
                                "bytes, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == DLCDialect::getKernelAttrName()) {
    auto kernel = dyn_cast<SymbolRefAttr>(attr.getValue());
    if (!kernel || kernel.getNestedReferences().size() != 1 || !isa<FusedOp>(op))
      return op->emitError() << "'" << DLCDialect::getKernelAttrName()
                             << "' on a dlc.fused region names its kernel as "
                                "@module::@function, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == DLCDialect::getPlaceAttrName()) {
    if (!isa<DeviceAttr>(attr.getValue()))
      return op->emitError() << "'dlc.place' must be a #dlc.device, got " << attr.getValue();
    return success();
  }
  return verifyDeviceNamedAttr(op, attr, "an op");
}

LogicalResult DLCDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                                   unsigned arg, NamedAttribute attr) {
  // dlc.batch: the argument holds samples (split over devices by data parallelism).
  if (attr.getName() == DLCDialect::getBatchAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'dlc.batch' on argument #" << arg
                             << " is a unit attribute, got " << attr.getValue();
    return success();
  }
  // dlc.parameter: a parameter or captured tensor (dlc-hoist-parameter-work reads it).
  if (attr.getName() == DLCDialect::getParameterAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << DLCDialect::getParameterAttrName() << "' on argument #"
                             << arg << " is a unit attribute, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == DLCDialect::getLayoutAttrName()) {
    auto layout = dyn_cast<LayoutAttr>(attr.getValue());
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!layout)
      return op->emitError() << "'" << DLCDialect::getLayoutAttrName() << "' on argument #"
                             << arg << " must be a #dlc.layout, got " << attr.getValue();
    if (function && !isBlockable(function.getArgumentTypes()[arg], layout.getValue()))
      return op->emitError() << "argument #" << arg << " ("
                             << function.getArgumentTypes()[arg] << ") cannot be "
                             << stringifyLayout(layout.getValue());
    return success();
  }
  // dlc.saved_from = [@forward, N]: the argument is result N of @forward.
  if (attr.getName() == DLCDialect::getSavedFromAttrName()) {
    auto pair = dyn_cast<ArrayAttr>(attr.getValue());
    if (!pair || pair.size() != 2 || !isa<FlatSymbolRefAttr>(pair[0]) ||
        !isa<IntegerAttr>(pair[1]) || cast<IntegerAttr>(pair[1]).getInt() < 0)
      return op->emitError() << "'" << DLCDialect::getSavedFromAttrName() << "' on argument #"
                             << arg << " is [@function, result number], got "
                             << attr.getValue();
    return success();
  }
  // dlc.name: what a traced argument is (the block's input, a parameter's path).
  if (attr.getName() == DLCDialect::getNameAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'dlc.name' on argument #" << arg << " must be a string, got "
                             << attr.getValue();
    return success();
  }
  return verifyDeviceNamedAttr(op, attr, "argument #" + std::to_string(arg));
}

LogicalResult DLCDialect::verifyRegionResultAttribute(Operation *op, unsigned region,
                                                      unsigned result,
                                                      NamedAttribute attr) {
  // dlc.updates = N: the result is written back into argument N when the function ends
  // (state such as BatchNorm's running statistics).
  if (attr.getName() == DLCDialect::getUpdatesAttrName()) {
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (!index || index.getInt() < 0 ||
        (function && index.getInt() >= int64_t(function.getNumArguments())))
      return op->emitError() << "'dlc.updates' on result #" << result
                             << " must name an argument of the function, got "
                             << attr.getValue();
    if (function && function.getArgumentTypes()[size_t(index.getInt())] !=
                        function.getResultTypes()[result])
      return op->emitError() << "'dlc.updates' on result #" << result << ": argument #"
                             << index.getInt() << " has another type";
    return success();
  }
  // dlc.saved: the result is returned only for a backward to read (a unit attribute).
  if (attr.getName() == DLCDialect::getSavedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'dlc.saved' on result #" << result
                             << " must be a unit attribute, got " << attr.getValue();
    return success();
  }
  return verifyDeviceNamedAttr(op, attr, "result #" + std::to_string(result));
}
