//===- DropUnreadSaved.cpp - a forward returns only what its backward reads ---===//
//
// A hybridized block's forward returns its outputs and then the values its backward
// reads ("saved", results marked dlc.saved); the backward takes them as arguments with
// dlc.saved_from = [@forward, N]. The trace saves what the VJP rules read, and passes
// after it can make such an argument unread: dlc-keep-pool-indices gives a max
// pooling's gradient the indices instead of the pooling's input, which was each
// convolution block's largest activation. Returning it anyway writes it to memory at
// every step and holds it until the backward (109 MB at the LeafNetwork's batch 32).
//
// Here such arguments go, then every saved result that no argument is saved from any
// more; the remaining dlc.saved_from (and "saved.N" names) are renumbered. Outputs and
// arguments that are not saved values keep their places, so that callers may bind them
// by position and the saved ones by dlc.saved_from.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCDROPUNREADSAVED
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// The function and result number `dlc.saved_from` names, or {} where it names none.
std::optional<std::pair<StringRef, int64_t>> savedFrom(func::FuncOp function, unsigned argument) {
  auto source =
      function.getArgAttrOfType<ArrayAttr>(argument, DLCDialect::getSavedFromAttrName());
  auto producer = source && source.size() == 2 ? dyn_cast<FlatSymbolRefAttr>(source[0]) : nullptr;
  auto result = producer ? dyn_cast<IntegerAttr>(source[1]) : nullptr;
  if (!result)
    return std::nullopt;
  return std::make_pair(producer.getValue(), result.getInt());
}

/// Erases `ops` and then their operands' producers where nothing reads them any more
/// and they have no side effect (a value computed only to be saved).
void eraseUnused(SmallVector<Operation *> ops) {
  while (!ops.empty()) {
    Operation *op = ops.pop_back_val();
    if (!isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        ops.push_back(producer);
    op->erase();
  }
}

class DropUnreadSavedPass : public impl::DLCDropUnreadSavedBase<DropUnreadSavedPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);

    // Unread saved arguments go; what the others are saved from is noted.
    llvm::StringMap<llvm::DenseSet<int64_t>> stillRead;
    for (func::FuncOp function : functions) {
      llvm::BitVector unread(function.getNumArguments());
      for (unsigned i = 0; i < function.getNumArguments(); ++i)
        if (auto source = savedFrom(function, i)) {
          if (function.getArgument(i).use_empty())
            unread.set(i);
          else
            stillRead[source->first].insert(source->second);
        }
      if (unread.any())
        function.eraseArguments(unread);
    }

    // Saved results nothing reads go; the later ones move up.
    llvm::StringMap<SmallVector<int64_t>> renumbered; // per producer: old -> new, -1 gone
    for (func::FuncOp producer : functions) {
      auto returned = dyn_cast<func::ReturnOp>(producer.getBody().back().getTerminator());
      if (!returned)
        continue;
      const llvm::DenseSet<int64_t> &read = stillRead[producer.getSymName()];
      llvm::BitVector dropped(producer.getNumResults());
      SmallVector<int64_t> numbers;
      int64_t next = 0;
      for (unsigned k = 0; k < producer.getNumResults(); ++k) {
        bool gone = producer.getResultAttr(k, DLCDialect::getSavedAttrName()) &&
                    !read.contains(int64_t(k));
        dropped[k] = gone;
        numbers.push_back(gone ? -1 : next++);
      }
      if (dropped.none())
        continue;
      SmallVector<Operation *> producers;
      for (unsigned k : dropped.set_bits())
        if (Operation *op = returned.getOperand(k).getDefiningOp())
          producers.push_back(op);
      returned->eraseOperands(dropped);
      producer.eraseResults(dropped);
      eraseUnused(producers);
      renumbered[producer.getSymName()] = std::move(numbers);
    }
    if (renumbered.empty())
      return;

    for (func::FuncOp function : functions)
      for (unsigned i = 0; i < function.getNumArguments(); ++i) {
        auto source = savedFrom(function, i);
        auto numbers = source ? renumbered.find(source->first) : renumbered.end();
        if (numbers == renumbered.end() || source->second < 0 ||
            source->second >= int64_t(numbers->second.size()))
          continue;
        int64_t now = numbers->second[size_t(source->second)];
        Builder b(&getContext());
        function.setArgAttr(i, DLCDialect::getSavedFromAttrName(),
                            b.getArrayAttr({FlatSymbolRefAttr::get(&getContext(), source->first),
                                            b.getI64IntegerAttr(now)}));
        auto name = function.getArgAttrOfType<StringAttr>(i, DLCDialect::getNameAttrName());
        if (name && name.getValue() == "saved." + std::to_string(source->second))
          function.setArgAttr(i, DLCDialect::getNameAttrName(),
                              b.getStringAttr("saved." + std::to_string(now)));
      }
  }
};

} // namespace

} // namespace mlir::dlc
