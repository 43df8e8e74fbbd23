//===- DLCFolds.cpp - folders of dlc ops (what canonicalize simplifies) ---===//
//
// Each folder (and canonicalization pattern) states its algebra in a one-line comment.
// Folders that would change a result type (x * 1 where 1 broadcasts x to a bigger
// shape) do not fire.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::dlc;

/// `other` if the op's result has exactly its type, else null: folding `x op c` to
/// `x` must not drop a broadcast.
static OpFoldResult sameTypeOrNull(Value result, Value other) {
  return result.getType() == other.getType() ? OpFoldResult(other) : OpFoldResult();
}

static bool isSplatZero(Attribute attr) {
  return attr && (matchPattern(attr, m_AnyZeroFloat()) || matchPattern(attr, m_Zero()));
}

static bool isSplatOne(Attribute attr) {
  return attr && (matchPattern(attr, m_OneFloat()) || matchPattern(attr, m_One()));
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

// add(x, 0) -> x ; add(0, x) -> x
OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs()))
    return sameTypeOrNull(getResult(), getLhs());
  if (isSplatZero(adaptor.getLhs()))
    return sameTypeOrNull(getResult(), getRhs());
  return {};
}

// sub(x, 0) -> x
OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatZero(adaptor.getRhs()))
    return sameTypeOrNull(getResult(), getLhs());
  return {};
}

// mul(x, 1) -> x ; mul(1, x) -> x
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    return sameTypeOrNull(getResult(), getLhs());
  if (isSplatOne(adaptor.getLhs()))
    return sameTypeOrNull(getResult(), getRhs());
  return {};
}

namespace {
// mul(x, sigmoid(x)) -> silu(x): SiLU as exporters write it (EfficientNet's), so that it
// runs as one op and dlc-fuse can give it to a convolution as an epilogue. Only where
// the sigmoid has no other use (it would be computed besides).
struct MulBySigmoidIsSilu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (auto [x, other] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())}) {
      auto sigmoid = other.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x || !other.hasOneUse() ||
          x.getType() != mul.getType())
        continue;
      // The product's attributes (a placement) carry over; a mul has none of its own.
      Value silu = rewriter.create<SiluOp>(mul.getLoc(), TypeRange{mul.getType()}, ValueRange{x},
                                           mul->getAttrs());
      rewriter.replaceOp(mul, silu);
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not x * sigmoid(x) of x's type");
  }
};
} // namespace

void MulOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<MulBySigmoidIsSilu>(context);
}

// div(x, 1) -> x
OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOne(adaptor.getRhs()))
    return sameTypeOrNull(getResult(), getLhs());
  return {};
}

// cast(x : T to T) -> x
OpFoldResult CastOp::fold(FoldAdaptor) { return sameTypeOrNull(getResult(), getInput()); }

// broadcast_to(x : T to T) -> x
OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  return sameTypeOrNull(getResult(), getInput());
}

// reshape(x : T to T) -> x ; reshape(reshape(x)) -> reshape(x)
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

// transpose(x, identity) -> x ; transpose(transpose(x, p), q) -> transpose(x, p∘q)
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> outer = getPermutation();
  if (llvm::equal(outer, llvm::seq<int64_t>(0, outer.size())))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  ArrayRef<int64_t> first = inner.getPermutation();
  SmallVector<int64_t> composed;
  for (int64_t dim : outer)
    composed.push_back(first[dim]);
  getInputMutable().assign(inner.getInput());
  setPermutation(composed);
  if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
    return getInput();
  return getResult();
}

// copy(x to d) -> x when x lives on d ; copy(copy(x to a) to b) -> copy(x to b)
OpFoldResult CopyOp::fold(FoldAdaptor) {
  std::optional<DeviceAttr> source = getKnownDevice(getInput());
  if (source && *source == getDevice())
    return getInput();
  if (auto inner = getInput().getDefiningOp<CopyOp>()) {
    getInputMutable().assign(inner.getInput());
    std::optional<DeviceAttr> original = getKnownDevice(getInput());
    if (original && *original == getDevice())
      return getInput();
    return getResult();
  }
  return {};
}
