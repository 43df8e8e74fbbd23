//===- FuseAttention.cpp - an unfused attention chain becomes dlc.attention ---===//
//
// Matches, from each dlc.softmax over the last axis, the chain that attention is when
// written in steps: scores = matmul(q, k, transpose_b) (or of q and an explicit
// transpose of k, either perhaps scaled by a constant first), times (or divided by) a
// scalar constant, plus an additive mask or selected by a boolean one, softmax, and
// matmul with the values. Every intermediate must have that chain as its only use: a training
// step's backward reads the weights, and keeping them would save nothing. Exporters'
// spellings are matched too: kᵀ taken on a view of fewer axes (reshape, transpose,
// reshape back), and the weights guarded against NaN (select(p != p, 0, p), what PyTorch
// writes for a fully masked row's softmax; dlc.attention gives such a row 0, the guard's
// value, so the guard folds in).
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Core/ShapeRules.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCFUSEATTENTION
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

namespace rules = ::dlc::shape_rules;

/// The value of a one-element float constant, if `value` is one.
std::optional<double> scalarConstant(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!elements || !elements.isSplat() || !isa<FloatType>(elements.getElementType()) ||
      elements.getNumElements() != 1)
    return std::nullopt;
  return elements.getSplatValue<APFloat>().convertToDouble();
}

/// The lowest a boolean mask's fill may be: softmax gives it weight exp(fill - max) = 0.
constexpr double kMaskFill = -1e30;

/// A matched chain: the ops to erase (last first) and the fused op's operands.
struct Chain {
  Value query, key, value, mask;
  Operation *masking = nullptr; // the add or select that applies the mask
  double scale = 1.0;
  SmallVector<Operation *> ops; // from the output's matmul back to the scores' matmul
};

bool onlyUse(Value value, Operation *user) {
  return value.hasOneUse() && *value.getUsers().begin() == user;
}

/// q · kᵀ as a program may write it: matmul(q, k, transpose_b), or matmul(q, transpose(k))
/// swapping the last two axes (exporters' form), each operand perhaps scaled by a
/// constant first (PyTorch's ONNX export scales q and kᵀ by √scale each).
struct Product {
  Value query, key;
  double scale = 1.0;
  SmallVector<Operation *> ops; // the matmul first, then what fed it
};

/// Peels products with (and quotients by) scalar constants off `v`, each the only use
/// of its result by `user`, multiplying `scale`.
Value peelScales(Value v, Operation *user, double &scale, SmallVector<Operation *> &ops) {
  while (Operation *def = v.getDefiningOp()) {
    if (!onlyUse(v, user) || !isa<MulOp, DivOp>(def))
      break;
    Value a = def->getOperand(0), b = def->getOperand(1);
    std::optional<double> factor = scalarConstant(b);
    Value other = a;
    if (!factor && isa<MulOp>(def)) {
      factor = scalarConstant(a);
      other = b;
    }
    if (!factor || (isa<DivOp>(def) && *factor == 0))
      break;
    scale *= isa<DivOp>(def) ? 1.0 / *factor : *factor;
    ops.push_back(def);
    user = def;
    v = other;
  }
  return v;
}

/// kᵀ written on a view of fewer axes: reshape(transpose(reshape(k, (B·H, L, D)), last two
/// swapped), (B, H, D, L)), each the only use of the one before. Returns k, or null.
Value keyThroughViews(Value keyT, Operation *user, SmallVector<Operation *> &ops) {
  auto back = keyT.getDefiningOp<ReshapeOp>();
  if (!back || !onlyUse(keyT, user))
    return nullptr;
  auto swap = back.getInput().getDefiningOp<TransposeOp>();
  if (!swap || !onlyUse(back.getInput(), back))
    return nullptr;
  auto view = swap.getInput().getDefiningOp<ReshapeOp>();
  if (!view || !onlyUse(swap.getInput(), swap))
    return nullptr;
  auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  ArrayRef<int64_t> k = shape(view.getInput()), viewed = shape(view.getOutput()),
                    result = shape(keyT);
  ArrayRef<int64_t> perm = swap.getPermutation();
  int64_t rank = int64_t(perm.size());
  if (rank < 2 || k.size() < 2 || result.size() != k.size() || viewed.size() != size_t(rank))
    return nullptr;
  for (int64_t a = 0; a < rank; ++a)
    if (perm[size_t(a)] != (a == rank - 1 ? rank - 2 : a == rank - 2 ? rank - 1 : a))
      return nullptr;
  // The view keeps k's last two axes and merges only the ones before; the result is k
  // with those two swapped.
  size_t n = k.size();
  if (viewed[size_t(rank) - 2] != k[n - 2] || viewed[size_t(rank) - 1] != k[n - 1] ||
      result[n - 2] != k[n - 1] || result[n - 1] != k[n - 2] ||
      !std::equal(k.begin(), k.end() - 2, result.begin()))
    return nullptr;
  ops.append({back, swap, view});
  return view.getInput();
}

std::optional<Product> matchProduct(Value scores, Operation *user) {
  auto product = scores.getDefiningOp<MatmulOp>();
  if (!product || !onlyUse(scores, user) || product.getTransposeA())
    return std::nullopt;
  Product p;
  p.ops.push_back(product);
  p.query = peelScales(product.getLhs(), product, p.scale, p.ops);
  if (product.getTransposeB()) {
    p.key = peelScales(product.getRhs(), product, p.scale, p.ops);
    return p;
  }
  SmallVector<Operation *> keyOps;
  Operation *transposeUser = product;
  Value keyT = peelScales(product.getRhs(), product, p.scale, keyOps);
  if (!keyOps.empty())
    transposeUser = keyOps.back();
  auto transpose = keyT.getDefiningOp<TransposeOp>();
  if (!transpose) {
    SmallVector<Operation *> viewOps;
    Value key = keyThroughViews(keyT, transposeUser, viewOps);
    if (!key)
      return std::nullopt;
    p.ops.append(keyOps.begin(), keyOps.end());
    p.ops.append(viewOps.begin(), viewOps.end());
    p.key = peelScales(key, viewOps.back(), p.scale, p.ops);
    return p;
  }
  if (!onlyUse(keyT, transposeUser))
    return std::nullopt;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = int64_t(perm.size());
  for (int64_t a = 0; a < rank; ++a) {
    int64_t expected = a == rank - 1 ? rank - 2 : a == rank - 2 ? rank - 1 : a;
    if (perm[size_t(a)] != expected)
      return std::nullopt;
  }
  p.ops.append(keyOps.begin(), keyOps.end());
  p.ops.push_back(transpose);
  p.key = peelScales(transpose.getInput(), transpose, p.scale, p.ops);
  return p;
}

/// The NaN guard on the weights `p`: select(compare ne(p, p), 0, p), its compare used by
/// the select only, and p by nothing else. Returns the select, or null.
SelectOp nanGuard(SoftmaxOp softmax) {
  Value p = softmax.getOutput();
  SelectOp guard;
  CompareOp isNan;
  for (Operation *user : p.getUsers()) {
    if (auto compare = dyn_cast<CompareOp>(user)) {
      if (compare.getPredicate() != ComparePredicate::ne || compare.getLhs() != p ||
          compare.getRhs() != p || (isNan && isNan != compare))
        return nullptr;
      isNan = compare;
    } else if (auto select = dyn_cast<SelectOp>(user)) {
      if (guard && guard != select)
        return nullptr;
      guard = select;
    } else {
      return nullptr;
    }
  }
  std::optional<double> fill = guard ? scalarConstant(guard.getOnTrue()) : std::nullopt;
  if (!isNan || !fill || *fill != 0 || guard.getOnFalse() != p ||
      guard.getCondition() != isNan.getOutput() || !onlyUse(isNan.getOutput(), guard) ||
      guard.getType() != p.getType())
    return nullptr;
  return guard;
}

std::optional<Chain> match(SoftmaxOp softmax) {
  auto type = cast<RankedTensorType>(softmax.getType());
  const int64_t rank = type.getRank();
  const auto axis = int64_t(softmax.getAxis()); // I64Attr's getter gives it unsigned
  if (rank < 2 || (axis != -1 && axis != rank - 1))
    return std::nullopt;
  Chain chain;
  // The weights' one use (through a NaN guard, perhaps): the product with the values.
  Value weights = softmax.getOutput();
  SmallVector<Operation *> guardOps;
  if (SelectOp guard = nanGuard(softmax)) {
    weights = guard.getOutput();
    guardOps = {guard, guard.getCondition().getDefiningOp()};
  }
  if (!weights.hasOneUse())
    return std::nullopt;
  auto output = dyn_cast<MatmulOp>(*weights.getUsers().begin());
  if (!output || output.getLhs() != weights || output.getTransposeA() ||
      output.getTransposeB())
    return std::nullopt;
  chain.ops.push_back(output);
  chain.ops.append(guardOps.begin(), guardOps.end());
  chain.ops.push_back(softmax);
  chain.value = output.getRhs();
  // Back from the softmax's input: an optional mask, an optional scale, the scores.
  Value scores = softmax.getInput();
  Operation *user = softmax;
  auto step = [&](Operation *op) {
    chain.ops.push_back(op);
    user = op;
  };
  if (auto add = scores.getDefiningOp<AddOp>(); add && onlyUse(scores, user)) {
    // The scores side is q · kᵀ, perhaps scaled by a constant (a mask may be computed
    // with products too: BERT's is (1 - mask) * -10000).
    auto isScores = [&](Value v) { return matchProduct(v, v.hasOneUse() ? *v.getUsers().begin() : nullptr).has_value(); };
    auto fromScores = [&](Value v) {
      if (isScores(v))
        return true;
      Operation *def = v.getDefiningOp();
      if (!def || !isa<MulOp, DivOp>(def))
        return false;
      Value a = def->getOperand(0), b = def->getOperand(1);
      return (isScores(a) && scalarConstant(b)) || (isa<MulOp>(def) && isScores(b) && scalarConstant(a));
    };
    Value lhs = add.getLhs(), rhs = add.getRhs();
    if (fromScores(lhs) == fromScores(rhs))
      return std::nullopt;
    chain.mask = fromScores(lhs) ? rhs : lhs;
    scores = fromScores(lhs) ? lhs : rhs;
    chain.masking = add;
    step(add);
  } else if (auto select = scores.getDefiningOp<SelectOp>(); select && onlyUse(scores, user)) {
    std::optional<double> fill = scalarConstant(select.getOnFalse());
    if (!fill || *fill > kMaskFill)
      return std::nullopt;
    chain.mask = select.getCondition();
    scores = select.getOnTrue();
    chain.masking = select;
    step(select);
  }
  if (auto mul = scores.getDefiningOp<MulOp>(); mul && onlyUse(scores, user)) {
    std::optional<double> factor = scalarConstant(mul.getRhs());
    Value other = mul.getLhs();
    if (!factor) {
      factor = scalarConstant(mul.getLhs());
      other = mul.getRhs();
    }
    if (!factor)
      return std::nullopt;
    chain.scale = *factor;
    scores = other;
    step(mul);
  } else if (auto div = scores.getDefiningOp<DivOp>(); div && onlyUse(scores, user)) {
    std::optional<double> divisor = scalarConstant(div.getRhs());
    if (!divisor || *divisor == 0)
      return std::nullopt;
    chain.scale = 1.0 / *divisor;
    scores = div.getLhs();
    step(div);
  }
  std::optional<Product> product = matchProduct(scores, user);
  if (!product)
    return std::nullopt;
  chain.ops.append(product->ops.begin(), product->ops.end());
  chain.query = product->query;
  chain.key = product->key;
  chain.scale *= product->scale;
  if (!(chain.scale > 0) || !std::isfinite(chain.scale))
    return std::nullopt;
  // The fused op's own rules: one rank, shared leading dimensions, a mask that
  // broadcasts, one float type (or a boolean mask).
  auto shapeOf = [](Value v) {
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    return rules::Shape(shape.begin(), shape.end());
  };
  rules::Shape mask;
  if (chain.mask)
    mask = shapeOf(chain.mask);
  if (!rules::attention(shapeOf(chain.query), shapeOf(chain.key), shapeOf(chain.value),
                        chain.mask ? &mask : nullptr)
           .ok())
    return std::nullopt;
  Type element = getElementTypeOrSelf(chain.query.getType());
  if (getElementTypeOrSelf(chain.key.getType()) != element ||
      getElementTypeOrSelf(chain.value.getType()) != element)
    return std::nullopt;
  if (chain.mask) {
    Type maskElement = getElementTypeOrSelf(chain.mask.getType());
    bool boolean = maskElement.isInteger(1);
    // A boolean mask must be what select reads; an additive one of the scores' type.
    if (boolean != isa<SelectOp>(chain.masking) || (!boolean && maskElement != element))
      return std::nullopt;
  }
  return chain;
}

class FuseAttentionPass : public impl::DLCFuseAttentionBase<FuseAttentionPass> {
public:
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      std::optional<Chain> chain = match(softmax);
      if (!chain)
        continue;
      Operation *output = chain->ops.front();
      OpBuilder builder(output);
      SmallVector<Value> operands{chain->query, chain->key, chain->value};
      if (chain->mask)
        operands.push_back(chain->mask);
      SmallVector<NamedAttribute> attrs{
          builder.getNamedAttr("scale", builder.getF64FloatAttr(chain->scale))};
      auto fused = builder.create<AttentionOp>(output->getLoc(), operands, attrs);
      output->getResult(0).replaceAllUsesWith(fused.getOutput());
      for (Operation *op : chain->ops)
        op->erase();
    }
  }
};

} // namespace

} // namespace mlir::dlc
