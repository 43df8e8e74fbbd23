//===- DLCScalarBodies.cpp - each element-wise op's scalar body, in arith/math ----===//
//
// ScalarBodyOpInterface: the function of one element that each element-wise op computes,
// built from the same functor the CPU and CUDA kernels run (dlc/Core/ElementwiseMath.h),
// instantiated with ScalarValue, whose operators and functions build `arith` and `math`
// ops. So the generated code of a fused region computes what the kernels compute: float
// for the 16-bit floats, rounded once; comparisons ordered (false for a NaN, as C++'s
// are) and choices as selects (`relu` is `x > 0 ? x : 0`, not arith.maximumf).
// convert-dlc-to-linalg and dlc-outline-kernels build their bodies from these.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "dlc/Core/ElementwiseMath.h"
#include "dlc/Core/OpFacts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <utility>

using namespace mlir;
using namespace mlir::dlc;

#include "dlc/Dialect/DLC/IR/DLCInterfaces.cpp.inc"

namespace mlir::dlc {
namespace {

/// A float value of the body being built.
struct ScalarValue {
  OpBuilder *b;
  Location loc;
  Value v;

  template <typename Op, typename... Operands> ScalarValue make(Operands... operands) const {
    return {b, loc, b->create<Op>(loc, operands...).getResult()};
  }
};

/// A comparison's i1, what `where` chooses with.
struct ScalarCondition {
  Value v;
};

ScalarValue operator+(ScalarValue x, ScalarValue y) { return x.make<arith::AddFOp>(x.v, y.v); }
ScalarValue operator-(ScalarValue x, ScalarValue y) { return x.make<arith::SubFOp>(x.v, y.v); }
ScalarValue operator*(ScalarValue x, ScalarValue y) { return x.make<arith::MulFOp>(x.v, y.v); }
ScalarValue operator/(ScalarValue x, ScalarValue y) { return x.make<arith::DivFOp>(x.v, y.v); }
ScalarValue operator-(ScalarValue x) { return x.make<arith::NegFOp>(x.v); }

ScalarCondition compare(ScalarValue x, ScalarValue y, arith::CmpFPredicate predicate) {
  return {x.b->create<arith::CmpFOp>(x.loc, predicate, x.v, y.v).getResult()};
}
ScalarCondition operator<(ScalarValue x, ScalarValue y) {
  return compare(x, y, arith::CmpFPredicate::OLT);
}
ScalarCondition operator>(ScalarValue x, ScalarValue y) {
  return compare(x, y, arith::CmpFPredicate::OGT);
}
ScalarCondition operator<=(ScalarValue x, ScalarValue y) {
  return compare(x, y, arith::CmpFPredicate::OLE);
}
ScalarCondition operator>=(ScalarValue x, ScalarValue y) {
  return compare(x, y, arith::CmpFPredicate::OGE);
}

ScalarValue where(ScalarCondition condition, ScalarValue then, ScalarValue otherwise) {
  return then.make<arith::SelectOp>(condition.v, then.v, otherwise.v);
}
ScalarValue lit(const ScalarValue &like, double value) {
  return like.make<arith::ConstantOp>(like.b->getF32FloatAttr(float(value)));
}
ScalarValue exp(ScalarValue x) { return x.make<math::ExpOp>(x.v); }
ScalarValue log(ScalarValue x) { return x.make<math::LogOp>(x.v); }
ScalarValue log1p(ScalarValue x) { return x.make<math::Log1pOp>(x.v); }
ScalarValue sqrt(ScalarValue x) { return x.make<math::SqrtOp>(x.v); }
ScalarValue tanh(ScalarValue x) { return x.make<math::TanhOp>(x.v); }
ScalarValue erf(ScalarValue x) { return x.make<math::ErfOp>(x.v); }
ScalarValue pow(ScalarValue x, ScalarValue y) { return x.make<math::PowFOp>(x.v, y.v); }

/// The body of functor F over float `operands`, computed in f32 (16-bit floats are
/// widened, the result rounded once, as the kernels do); null for other element types.
template <typename F, size_t... I>
Value scalarBody(OpBuilder &b, Location loc, ValueRange operands, std::index_sequence<I...>) {
  auto type = dyn_cast<FloatType>(operands.front().getType());
  if (!type || type.getWidth() > 32 || operands.size() != sizeof...(I))
    return {};
  Type f32 = b.getF32Type();
  auto widen = [&](Value v) {
    Value wide = v.getType() == f32 ? v : b.create<arith::ExtFOp>(loc, f32, v).getResult();
    return ScalarValue{&b, loc, wide};
  };
  Value result = F::apply(widen(operands[I])...).v;
  return type == f32 ? result : b.create<arith::TruncFOp>(loc, type, result).getResult();
}

} // namespace
} // namespace mlir::dlc

// Each op of DLC_ELEMENTWISE_OPS (generated from the ODS) builds its functor's body.
#define DLC_OPERANDS_unary 1
#define DLC_OPERANDS_binary 2
#define DLC_OPERANDS_gradient 2
#define DLC_SCALAR_BODY(op, Functor, kind, operands)                                        \
  Value Functor##Op::buildScalarBody(OpBuilder &b, Location loc, ValueRange values) {      \
    return scalarBody<::dlc::elementwise::Functor>(                                        \
        b, loc, values, std::make_index_sequence<DLC_OPERANDS_##kind>());                  \
  }
DLC_ELEMENTWISE_OPS(DLC_SCALAR_BODY)
#undef DLC_SCALAR_BODY
