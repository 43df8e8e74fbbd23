//===- DLCScalarBodies.cpp - what each element-wise op computes, in arith/math ---===//
//
// ScalarBodyOpInterface: the function of one element that each element-wise op computes,
// as the hand-written kernels do (float for the 16-bit floats, rounded once; a NaN where
// they give one: `relu` and the comparisons are selects, as `x > 0 ? x : 0` is, not
// arith.maximumf). convert-dlc-to-linalg builds the bodies of its linalg.generic ops from
// these.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <functional>

using namespace mlir;
using namespace mlir::dlc;

#include "dlc/Dialect/DLC/IR/DLCInterfaces.cpp.inc"

namespace {

using Body = std::function<Value(OpBuilder &, Location, ArrayRef<Value>)>;

/// `body` over float operands, computed in f32 (16-bit floats are widened, the result
/// rounded once, as the kernels do); null for other element types.
Value inFloat(OpBuilder &b, Location loc, ValueRange operands, const Body &body) {
  auto type = dyn_cast<FloatType>(operands.front().getType());
  if (!type || type.getWidth() > 32)
    return {};
  Type f32 = b.getF32Type();
  SmallVector<Value> wide;
  for (Value v : operands)
    wide.push_back(v.getType() == f32 ? v : b.create<arith::ExtFOp>(loc, f32, v).getResult());
  Value result = body(b, loc, wide);
  return type == f32 ? result : b.create<arith::TruncFOp>(loc, type, result).getResult();
}

Value constant(OpBuilder &b, Location loc, double value) {
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(float(value)));
}

/// x > 0 ? then : 0
Value positiveOrZero(OpBuilder &b, Location loc, Value x, Value then) {
  Value zero = constant(b, loc, 0);
  Value positive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, x, zero);
  return b.create<arith::SelectOp>(loc, positive, then, zero);
}

/// Phi(x), the standard normal distribution function: (1 + erf(x / sqrt 2)) / 2
Value normalCdf(OpBuilder &b, Location loc, Value x) {
  Value scaled = b.create<arith::MulFOp>(loc, x, constant(b, loc, 0.70710678118654752));
  Value erf = b.create<math::ErfOp>(loc, scaled);
  Value one = constant(b, loc, 1);
  return b.create<arith::MulFOp>(loc, constant(b, loc, 0.5),
                                 b.create<arith::AddFOp>(loc, one, erf));
}

template <typename Op> Body unary() {
  return [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    return b.create<Op>(loc, v[0]);
  };
}

template <typename Op> Body binary() {
  return [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    return b.create<Op>(loc, v[0], v[1]);
  };
}

} // namespace

Value NegOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, unary<arith::NegFOp>());
}
Value ExpOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, unary<math::ExpOp>());
}
Value LogOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, unary<math::LogOp>());
}
Value SqrtOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, unary<math::SqrtOp>());
}
Value RsqrtOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  // 1 / sqrt(x), as the kernels compute it (math.rsqrt may lower to an estimate)
  return inFloat(b, loc, x, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    return b.create<arith::DivFOp>(loc, constant(b, loc, 1), b.create<math::SqrtOp>(loc, v[0]));
  });
}
Value ReluOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, [](OpBuilder &b, Location loc, ArrayRef<Value> v) {
    return positiveOrZero(b, loc, v[0], v[0]);
  });
}
Value SigmoidOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  // 1 / (1 + e^-x)
  return inFloat(b, loc, x, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    Value one = constant(b, loc, 1);
    Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, v[0]));
    return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
  });
}
Value TanhOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  return inFloat(b, loc, x, unary<math::TanhOp>());
}
Value GeluOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange x) {
  // x * Phi(x)
  return inFloat(b, loc, x, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    return b.create<arith::MulFOp>(loc, v[0], normalCdf(b, loc, v[0]));
  });
}
Value ReluBackwardOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange dyx) {
  // x > 0 ? dy : 0
  return inFloat(b, loc, dyx, [](OpBuilder &b, Location loc, ArrayRef<Value> v) {
    return positiveOrZero(b, loc, v[1], v[0]);
  });
}
Value GeluBackwardOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange dyx) {
  // dy * (Phi(x) + x * phi(x)), phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
  return inFloat(b, loc, dyx, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    Value x = v[1];
    Value square = b.create<arith::MulFOp>(loc, x, x);
    Value e = b.create<math::ExpOp>(
        loc, b.create<arith::MulFOp>(loc, constant(b, loc, -0.5), square));
    Value pdf = b.create<arith::MulFOp>(loc, constant(b, loc, 0.39894228040143268), e);
    Value slope = b.create<arith::AddFOp>(loc, normalCdf(b, loc, x),
                                          b.create<arith::MulFOp>(loc, x, pdf));
    return b.create<arith::MulFOp>(loc, v[0], slope);
  });
}
Value AddOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  return inFloat(b, loc, xy, binary<arith::AddFOp>());
}
Value SubOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  return inFloat(b, loc, xy, binary<arith::SubFOp>());
}
Value MulOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  return inFloat(b, loc, xy, binary<arith::MulFOp>());
}
Value DivOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  return inFloat(b, loc, xy, binary<arith::DivFOp>());
}
Value PowOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  return inFloat(b, loc, xy, binary<math::PowFOp>());
}
Value MaxOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  // x < y ? y : x, as std::max
  return inFloat(b, loc, xy, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    Value less = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, v[0], v[1]);
    return b.create<arith::SelectOp>(loc, less, v[1], v[0]);
  });
}
Value MinOp::buildScalarBody(OpBuilder &b, Location loc, ValueRange xy) {
  // y < x ? y : x, as std::min
  return inFloat(b, loc, xy, [](OpBuilder &b, Location loc, ArrayRef<Value> v) -> Value {
    Value less = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, v[1], v[0]);
    return b.create<arith::SelectOp>(loc, less, v[1], v[0]);
  });
}
