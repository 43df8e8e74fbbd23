//===- GroupUpdates.cpp - a training step's small parameter updates as one step -===//
//
// A compiled training step ends with one update per parameter: an element-wise region
// (or an optimizer op) whose results are written back into the parameter and its
// optimizer state. For a small parameter the step costs more than its arithmetic (a
// dispatch, a parallel team's start; a network's norms have a hundred such). This pass
// gathers the updates that compute the same formula on one host device into one step
// over all their elements: each operand of theirs is joined into one flat tensor
// (reshapes, a concat), the formula runs once over the flats, and the flat results are
// split back into the parameters' shapes (views). Scalars (rates, momentum) must be the
// same values, so every element computes what it did before, in the same order: the
// same bits.
//
// Cost rule: only updates of at most `max-elements` elements each. The join reads and
// writes their operands once more, which for small parameters costs less than the
// steps it saves; a large update already fills the device and keeps its own step (and
// its gradient need not wait for the others'). GPUs are left alone: their concat copies
// part by part, one transfer for each update it would save.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "Outline.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCGROUPUPDATES
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

bool isScalar(Value value) { return cast<RankedTensorType>(value.getType()).getRank() == 0; }

/// The type every non-scalar operand and every result of `op` has, when it is an
/// update: an element-wise region (of element-wise kernels, which take any shape) or an
/// optimizer op on a host device whose results are all float32 of one shape, read only
/// by the function's return, each into an argument it updates (dlc.updates).
std::optional<RankedTensorType> updatedType(Operation *op, func::FuncOp function) {
  auto fused = dyn_cast<FusedOp>(op);
  if (fused ? fused.getKind() != StringRef("elementwise") ||
                  !llvm::all_of(
                      fused.getBody().front().without_terminator(),
                      [](Operation &inner) { return inner.hasTrait<OpTrait::ElementwiseKernel>(); })
            : !isa<AdamUpdateOp, SgdMomentumUpdateOp, SgdUpdateOp>(op))
    return std::nullopt;
  if (!isHostKind(deviceKind(op)) || op->getNumResults() == 0)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || type.getRank() == 0 || !type.getElementType().isF32())
    return std::nullopt;
  for (Value result : op->getResults()) {
    if (result.getType() != type)
      return std::nullopt;
    for (OpOperand &use : result.getUses())
      if (!isa<func::ReturnOp>(use.getOwner()) ||
          !function.getResultAttr(use.getOperandNumber(), DLCDialect::getUpdatesAttrName()))
        return std::nullopt;
  }
  for (Value operand : op->getOperands())
    if (!isScalar(operand) && operand.getType() != type)
      return std::nullopt;
  return type;
}

/// Whether `a` and `b` compute one formula: the same op and attributes, scalars at the
/// same places and the same scalar values; for regions, bodies of the same ops, wired
/// alike, with the same attributes (their tensors' shapes may differ).
bool sameFormula(Operation *a, Operation *b) {
  if (a->getName() != b->getName() || a->getAttrDictionary() != b->getAttrDictionary() ||
      a->getNumOperands() != b->getNumOperands() || a->getNumResults() != b->getNumResults())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
    if (isScalar(x) != isScalar(y) || (isScalar(x) && x != y))
      return false;
  auto fa = dyn_cast<FusedOp>(a);
  if (!fa)
    return true;
  Block &ba = fa.getBody().front(), &bb = cast<FusedOp>(b).getBody().front();
  if (ba.getOperations().size() != bb.getOperations().size())
    return false;
  // Values numbered in order on both sides: block arguments, then results.
  llvm::DenseMap<Value, int> na, nb;
  for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments()))
    na[x] = int(na.size()), nb[y] = int(nb.size());
  for (auto [x, y] : llvm::zip(ba, bb)) {
    if (x.getName() != y.getName() || x.getAttrDictionary() != y.getAttrDictionary() ||
        x.getNumOperands() != y.getNumOperands() || x.getNumResults() != y.getNumResults() ||
        x.getNumRegions() != 0 || y.getNumRegions() != 0)
      return false;
    for (auto [u, v] : llvm::zip(x.getOperands(), y.getOperands()))
      if (na.lookup(u) != nb.lookup(v) || isScalar(u) != isScalar(v))
        return false;
    for (auto [u, v] : llvm::zip(x.getResults(), y.getResults())) {
      if (isScalar(u) != isScalar(v) ||
          getElementTypeOrSelf(u.getType()) != getElementTypeOrSelf(v.getType()))
        return false;
      na[u] = int(na.size()), nb[v] = int(nb.size());
    }
  }
  return true;
}

/// Copies `op` at `builder` with `operands`, its non-scalar results `elements` long (of
/// their own element types).
Operation *cloneFlat(OpBuilder &builder, Operation *op, ValueRange operands, int64_t elements) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addAttributes(op->getAttrs());
  for (Value result : op->getResults()) {
    Type element = getElementTypeOrSelf(result.getType());
    state.addTypes(isScalar(result) ? result.getType()
                                    : Type(RankedTensorType::get({elements}, element)));
  }
  return builder.create(state);
}

/// Replaces `members` (updates of one formula, in program order) by one update over
/// the join of their elements, placed where the last of them was.
void group(ArrayRef<Operation *> members) {
  Operation *leader = members.front(), *last = members.back();
  OpBuilder builder(last);
  Attribute device = leader->getAttr(DLCDialect::getDeviceAttrName());
  auto place = [&](Operation *op) {
    if (device)
      op->setAttr(DLCDialect::getDeviceAttrName(), device);
    return op;
  };
  Location location = leader->getLoc();
  // `value` as `type` (of as many elements): itself, or a view.
  auto reshaped = [&](Value value, RankedTensorType type) -> Value {
    if (value.getType() == type)
      return value;
    return place(builder.create<ReshapeOp>(location, type, value))->getResult(0);
  };
  Type element = cast<RankedTensorType>(leader->getResult(0).getType()).getElementType();
  SmallVector<int64_t> sizes;
  int64_t total = 0;
  for (Operation *member : members) {
    sizes.push_back(cast<RankedTensorType>(member->getResult(0).getType()).getNumElements());
    total += sizes.back();
  }
  auto flat = RankedTensorType::get({total}, element);

  // Each operand: the leader's scalar, or the members' tensors joined.
  SmallVector<Value> operands;
  for (unsigned k = 0; k < leader->getNumOperands(); ++k) {
    if (isScalar(leader->getOperand(k))) {
      operands.push_back(leader->getOperand(k));
      continue;
    }
    SmallVector<Value> parts;
    for (auto [member, size] : llvm::zip(members, sizes))
      parts.push_back(reshaped(member->getOperand(k), RankedTensorType::get({size}, element)));
    operands.push_back(
        place(builder.create<ConcatOp>(location, flat, parts, builder.getI64IntegerAttr(0)))
            ->getResult(0));
  }

  // The formula once over the flats: the optimizer op, or the region's body outlined
  // into a region again.
  SmallVector<Value> results;
  if (auto fused = dyn_cast<FusedOp>(leader)) {
    Block &body = fused.getBody().front();
    IRMapping mapping;
    mapping.map(body.getArguments(), operands);
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator()) {
      SmallVector<Value> mapped;
      for (Value operand : op.getOperands())
        mapped.push_back(mapping.lookup(operand));
      ops.push_back(place(cloneFlat(builder, &op, mapped, total)));
      mapping.map(op.getResults(), ops.back()->getResults());
    }
    SmallVector<Value> yielded;
    for (Value value : body.getTerminator()->getOperands())
      yielded.push_back(mapping.lookup(value));
    FusedOp grouped = outline(ops, "elementwise", yielded);
    results.assign(grouped.getResults().begin(), grouped.getResults().end());
  } else {
    Operation *grouped = place(cloneFlat(builder, leader, operands, total));
    results.assign(grouped->getResults().begin(), grouped->getResults().end());
  }

  // Each result split back into the members' parts (views along the first axis).
  SmallVector<Type> partTypes;
  for (int64_t size : sizes)
    partTypes.push_back(RankedTensorType::get({size}, element));
  for (auto [k, result] : llvm::enumerate(results)) {
    auto split =
        place(builder.create<SplitOp>(location, partTypes, result, builder.getI64IntegerAttr(0)));
    for (auto [member, part] : llvm::zip(members, split->getResults())) {
      Value original = member->getResult(unsigned(k));
      original.replaceAllUsesWith(reshaped(part, cast<RankedTensorType>(original.getType())));
    }
  }
  for (Operation *member : members)
    member->erase();
}

struct GroupUpdatesPass : impl::DLCGroupUpdatesBase<GroupUpdatesPass> {
  using DLCGroupUpdatesBase::DLCGroupUpdatesBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    SmallVector<SmallVector<Operation *>> groups;
    for (Operation &op : function.getBody().front().without_terminator()) {
      std::optional<RankedTensorType> type = updatedType(&op, function);
      if (!type || type->getNumElements() > maxElements)
        continue;
      auto same = llvm::find_if(groups, [&](const SmallVector<Operation *> &members) {
        return sameFormula(members.front(), &op);
      });
      if (same == groups.end())
        groups.push_back({&op});
      else
        same->push_back(&op);
    }
    for (const SmallVector<Operation *> &members : groups)
      if (members.size() > 1)
        group(members);
  }
};

} // namespace
} // namespace mlir::dlc
