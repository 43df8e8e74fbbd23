//===- SavedValues.cpp - values a forward returns for its backward ------------===//
#include "SavedValues.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::dlc {

std::optional<SavedSource> savedSource(ModuleOp module, func::FuncOp function,
                                       BlockArgument argument) {
  auto source = function.getArgAttrOfType<ArrayAttr>(argument.getArgNumber(),
                                                     DLCDialect::getSavedFromAttrName());
  auto producerName =
      source && source.size() == 2 ? dyn_cast<FlatSymbolRefAttr>(source[0]) : nullptr;
  auto resultNumber = producerName ? dyn_cast<IntegerAttr>(source[1]) : nullptr;
  auto producer =
      resultNumber ? module.lookupSymbol<func::FuncOp>(producerName.getAttr()) : func::FuncOp();
  if (!producer || producer.isExternal() || !producer.getBody().hasOneBlock())
    return std::nullopt;
  auto returned = dyn_cast<func::ReturnOp>(producer.getBody().front().getTerminator());
  const int64_t n = resultNumber.getInt();
  if (!returned || n < 0 || n >= int64_t(returned.getNumOperands()))
    return std::nullopt;
  return SavedSource{producer, unsigned(n), returned.getOperand(unsigned(n))};
}

unsigned returnedResult(func::FuncOp producer, Value value) {
  MLIRContext *context = producer.getContext();
  auto returned = cast<func::ReturnOp>(producer.getBody().front().getTerminator());
  for (OpOperand &operand : returned->getOpOperands())
    if (operand.get() == value)
      return operand.getOperandNumber();
  unsigned at = 0;
  while (at < producer.getNumResults() &&
         !producer.getResultAttr(at, DLCDialect::getUpdatesAttrName()))
    ++at;
  returned->insertOperands(at, value);
  producer.insertResult(
      at, value.getType(),
      DictionaryAttr::get(context,
                          {NamedAttribute(StringAttr::get(context, DLCDialect::getSavedAttrName()),
                                          UnitAttr::get(context))}));
  return at;
}

Value savedArgument(func::FuncOp function, BlockArgument like, func::FuncOp producer,
                    unsigned result) {
  MLIRContext *context = function.getContext();
  auto source = ArrayAttr::get(context, {FlatSymbolRefAttr::get(producer.getSymNameAttr()),
                                         IntegerAttr::get(IntegerType::get(context, 64), result)});
  StringRef savedFrom = DLCDialect::getSavedFromAttrName();
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (function.getArgAttr(i, savedFrom) == source)
      return function.getArgument(i);
  Type type = producer.getResultTypes()[result];
  unsigned index = function.getNumArguments();
  function.insertArgument(index, type, {}, like.getLoc());
  if (Attribute device = function.getArgAttr(like.getArgNumber(), DLCDialect::getDeviceAttrName()))
    function.setArgAttr(index, DLCDialect::getDeviceAttrName(), device);
  function.setArgAttr(index, DLCDialect::getNameAttrName(),
                      StringAttr::get(context, "saved." + std::to_string(result)));
  function.setArgAttr(index, savedFrom, source);
  return function.getArgument(index);
}

} // namespace mlir::dlc
