//===- Elementwise.cpp - element-wise ops: arithmetic, comparisons, where, cast ===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NumPy.h"

namespace dlc {

namespace detail {

void require_same_dtype(const std::vector<TensorMeta> &inputs, size_t first) {
  for (size_t i = first + 1; i < inputs.size(); ++i)
    if (inputs[i].dtype != inputs[first].dtype)
      throw DTypeError(std::string("inputs must have one dtype, got ") +
                       dtype_name(inputs[first].dtype) + " and " +
                       dtype_name(inputs[i].dtype) + "; convert one with astype()");
}

namespace {

std::vector<TensorMeta> inferBroadcast(const std::vector<TensorMeta> &in, const Attrs &) {
  require_same_dtype(in);
  return sameDType(in, checked(shape_rules::broadcast(in[0].shape, in[1].shape)));
}

std::vector<TensorMeta> inferUnary(const std::vector<TensorMeta> &in, const Attrs &) {
  return {in[0]};
}

std::vector<TensorMeta> inferFloatUnary(const std::vector<TensorMeta> &in, const Attrs &) {
  if (!is_floating(in[0].dtype))
    throw DTypeError(std::string("needs a floating-point tensor, got ") +
                     dtype_name(in[0].dtype) + "; convert it with astype(DType::f32)");
  return {in[0]};
}

std::vector<TensorMeta> inferSameShapes(const std::vector<TensorMeta> &in, const Attrs &) {
  require_same_dtype(in);
  if (in[0].shape != in[1].shape)
    throw ShapeError("the gradient " + shape_rules::str(in[0].shape) +
                     " must have the input's shape " + shape_rules::str(in[1].shape));
  return {in[1]};
}

std::vector<TensorMeta> inferCompare(const std::vector<TensorMeta> &in, const Attrs &) {
  require_same_dtype(in);
  return {{checked(shape_rules::broadcast(in[0].shape, in[1].shape)), DType::boolean}};
}

std::vector<TensorMeta> inferWhere(const std::vector<TensorMeta> &in, const Attrs &) {
  if (in[0].dtype != DType::boolean)
    throw DTypeError(std::string("the condition must be bool, got ") +
                     dtype_name(in[0].dtype));
  require_same_dtype(in, 1);
  Shape shape = checked(shape_rules::broadcast(in[0].shape, in[1].shape));
  return {{checked(shape_rules::broadcast(shape, in[2].shape)), in[1].dtype}};
}

std::vector<TensorMeta> inferCast(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  return {{in[0].shape, DType(attrs.get_int("dtype", int64_t(DType::f32)))}};
}

// The dialect's ComparePredicate numbers.
enum Predicate : int64_t { eq = 0, ne = 1, lt = 2, le = 3, gt = 4, ge = 5 };

Tensor compare(const Tensor &a, const Tensor &b, Predicate predicate) {
  static const OpDef &op = find_op("compare");
  return invoke1(op, {a, b}, Attrs{{"predicate", int64_t(predicate)}});
}

/// A 0-d tensor of `value` with `like`'s dtype and device, for tensor-scalar arithmetic.
Tensor scalarLike(double value, const Tensor &like) {
  return np::full({}, value, like.dtype(), like.device());
}

} // namespace
} // namespace detail

using namespace detail;

void detail::register_elementwise_ops() {
  // Users' names (numpy's), and the dialect ops they map to.
  for (auto [name, dialectOp] : {std::pair{"add", "dlc.add"},
                                 {"subtract", "dlc.sub"},
                                 {"multiply", "dlc.mul"},
                                 {"divide", "dlc.div"},
                                 {"power", "dlc.pow"},
                                 {"maximum", "dlc.max"},
                                 {"minimum", "dlc.min"}})
    register_op({name, dialectOp, inferBroadcast});
  register_op({"negative", "dlc.neg", inferUnary});
  register_op({"relu", "dlc.relu", inferUnary});
  register_op({"relu_backward", "dlc.relu_backward", inferSameShapes});
  for (const char *name : {"exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh"})
    register_op({name, std::string("dlc.") + name, inferFloatUnary});
  register_op({"compare", "dlc.compare", inferCompare});
  register_op({"where", "dlc.select", inferWhere});
  register_op({"astype", "dlc.cast", inferCast});
}

#define DLC_BINARY(FN, OP)                                                                 \
  Tensor np::FN(const Tensor &a, const Tensor &b) {                                       \
    static const OpDef &op = find_op(OP);                                                 \
    return invoke1(op, {a, b});                                                           \
  }
DLC_BINARY(add, "add")
DLC_BINARY(subtract, "subtract")
DLC_BINARY(multiply, "multiply")
DLC_BINARY(divide, "divide")
DLC_BINARY(power, "power")
DLC_BINARY(maximum, "maximum")
DLC_BINARY(minimum, "minimum")
#undef DLC_BINARY

#define DLC_UNARY(NS, FN, OP)                                                              \
  Tensor NS::FN(const Tensor &x) {                                                        \
    static const OpDef &op = find_op(OP);                                                 \
    return invoke1(op, {x});                                                              \
  }
DLC_UNARY(np, negative, "negative")
DLC_UNARY(np, exp, "exp")
DLC_UNARY(np, log, "log")
DLC_UNARY(np, sqrt, "sqrt")
DLC_UNARY(np, rsqrt, "rsqrt")
DLC_UNARY(np, tanh, "tanh")
DLC_UNARY(npx, relu, "relu")
DLC_UNARY(npx, sigmoid, "sigmoid")
#undef DLC_UNARY

Tensor npx::relu_backward(const Tensor &dy, const Tensor &x) {
  static const OpDef &op = find_op("relu_backward");
  return invoke1(op, {dy, x});
}

Tensor np::equal(const Tensor &a, const Tensor &b) { return compare(a, b, eq); }
Tensor np::not_equal(const Tensor &a, const Tensor &b) { return compare(a, b, ne); }
Tensor np::less(const Tensor &a, const Tensor &b) { return compare(a, b, lt); }
Tensor np::less_equal(const Tensor &a, const Tensor &b) { return compare(a, b, le); }
Tensor np::greater(const Tensor &a, const Tensor &b) { return compare(a, b, gt); }
Tensor np::greater_equal(const Tensor &a, const Tensor &b) { return compare(a, b, ge); }

Tensor np::where(const Tensor &condition, const Tensor &x, const Tensor &y) {
  static const OpDef &op = find_op("where");
  return invoke1(op, {condition, x, y});
}

Tensor operator+(const Tensor &a, const Tensor &b) { return np::add(a, b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return np::subtract(a, b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return np::multiply(a, b); }
Tensor operator/(const Tensor &a, const Tensor &b) { return np::divide(a, b); }
Tensor operator-(const Tensor &x) { return np::negative(x); }
Tensor operator+(const Tensor &a, double b) { return a + scalarLike(b, a); }
Tensor operator-(const Tensor &a, double b) { return a - scalarLike(b, a); }
Tensor operator*(const Tensor &a, double b) { return a * scalarLike(b, a); }
Tensor operator/(const Tensor &a, double b) { return a / scalarLike(b, a); }
Tensor operator+(double a, const Tensor &b) { return scalarLike(a, b) + b; }
Tensor operator-(double a, const Tensor &b) { return scalarLike(a, b) - b; }
Tensor operator*(double a, const Tensor &b) { return scalarLike(a, b) * b; }
Tensor operator/(double a, const Tensor &b) { return scalarLike(a, b) / b; }
Tensor operator==(const Tensor &a, const Tensor &b) { return np::equal(a, b); }
Tensor operator!=(const Tensor &a, const Tensor &b) { return np::not_equal(a, b); }
Tensor operator<(const Tensor &a, const Tensor &b) { return np::less(a, b); }
Tensor operator<=(const Tensor &a, const Tensor &b) { return np::less_equal(a, b); }
Tensor operator>(const Tensor &a, const Tensor &b) { return np::greater(a, b); }
Tensor operator>=(const Tensor &a, const Tensor &b) { return np::greater_equal(a, b); }

} // namespace dlc
