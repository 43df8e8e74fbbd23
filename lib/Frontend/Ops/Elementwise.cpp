//===- Elementwise.cpp - element-wise ops: arithmetic, comparisons, where, cast ===//
#include "../OpDefinitions.h"
#include "../Tracer.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace dlc {

namespace detail {

void require_same_dtype(const std::vector<TensorMeta> &inputs, size_t first) {
  for (size_t i = first + 1; i < inputs.size(); ++i)
    if (inputs[i].dtype != inputs[first].dtype)
      throw DTypeError(std::string("inputs must have one dtype, got ") +
                       dtype_name(inputs[first].dtype) + " and " +
                       dtype_name(inputs[i].dtype) + "; convert one with astype()");
}

Tensor sum_to(const Tensor &gradient, const Shape &shape) {
  const Shape &from = gradient.shape();
  if (from == shape)
    return gradient;
  size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < from.size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && from[d] != 1))
      axes.push_back(int64_t(d));
  Tensor summed = axes.empty() ? gradient : np::sum(gradient, axes, /*keepdims=*/true);
  return summed.reshape(shape);
}

namespace {

/// Gradient `g` masked by `condition` (kept where true, zero elsewhere).
Tensor masked(const Tensor &condition, const Tensor &g) {
  return np::where(condition, g, np::zeros({}, g.dtype(), g.device()));
}

// z = a op b: each operand's gradient is summed back to its own (broadcast) shape.
std::vector<Tensor> vjpBroadcast(const VjpContext &c, const Tensor &da, const Tensor &db) {
  return {da.defined() ? sum_to(da, c.inputs[0].shape()) : Tensor(),
          db.defined() ? sum_to(db, c.inputs[1].shape()) : Tensor()};
}
std::vector<Tensor> vjpAdd(const VjpContext &c) {
  return vjpBroadcast(c, c.output_grads[0], c.output_grads[0]);
}
std::vector<Tensor> vjpSubtract(const VjpContext &c) {
  return vjpBroadcast(c, c.output_grads[0], -c.output_grads[0]);
}
std::vector<Tensor> vjpMultiply(const VjpContext &c) {
  const Tensor &g = c.output_grads[0];
  return vjpBroadcast(c, g * c.inputs[1], g * c.inputs[0]);
}
std::vector<Tensor> vjpDivide(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &a = c.inputs[0], &b = c.inputs[1];
  return vjpBroadcast(c, g / b, -(g * a) / (b * b));
}
// d(a^b) = b a^(b-1) da + a^b log(a) db
std::vector<Tensor> vjpPower(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &a = c.inputs[0], &b = c.inputs[1];
  return vjpBroadcast(c, g * b * np::power(a, b - 1.0), g * c.outputs[0] * np::log(a));
}
// Ties send the gradient to the first operand.
std::vector<Tensor> vjpMaximum(const VjpContext &c) {
  Tensor first = c.inputs[0] >= c.inputs[1];
  const Tensor &g = c.output_grads[0];
  return vjpBroadcast(c, masked(first, g), g - masked(first, g));
}
std::vector<Tensor> vjpMinimum(const VjpContext &c) {
  Tensor first = c.inputs[0] <= c.inputs[1];
  const Tensor &g = c.output_grads[0];
  return vjpBroadcast(c, masked(first, g), g - masked(first, g));
}
std::vector<Tensor> vjpNegative(const VjpContext &c) { return {-c.output_grads[0]}; }
std::vector<Tensor> vjpExp(const VjpContext &c) { return {c.output_grads[0] * c.outputs[0]}; }
std::vector<Tensor> vjpLog(const VjpContext &c) { return {c.output_grads[0] / c.inputs[0]}; }
std::vector<Tensor> vjpSqrt(const VjpContext &c) {
  return {c.output_grads[0] * 0.5 / c.outputs[0]};
}
// d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3
std::vector<Tensor> vjpRsqrt(const VjpContext &c) {
  const Tensor &y = c.outputs[0];
  return {c.output_grads[0] * (y * y * y) * -0.5};
}
// Masked by the output (y > 0 exactly where x > 0): the input need not be kept, so a
// compiled step can fuse the ReLU into the convolution or dense layer before it.
std::vector<Tensor> vjpRelu(const VjpContext &c) {
  return {npx::relu_backward(c.output_grads[0], c.outputs[0])};
}
// Masked by the output too: 0 < y < 6 exactly where 0 < x < 6.
std::vector<Tensor> vjpRelu6(const VjpContext &c) {
  return {npx::relu6_backward(c.output_grads[0], c.outputs[0])};
}
// Needs the input: the derivative is not a function of the output alone.
std::vector<Tensor> vjpGelu(const VjpContext &c) {
  return {npx::gelu_backward(c.output_grads[0], c.inputs[0])};
}
// d erf(x) = 2 / sqrt(pi) e^(-x^2)
std::vector<Tensor> vjpErf(const VjpContext &c) {
  const Tensor &x = c.inputs[0];
  return {c.output_grads[0] * np::exp(-(x * x)) * 1.1283791670955126};
}
// d softrelu(x) = e^x / (1 + e^x) = sigmoid(x)
std::vector<Tensor> vjpSoftrelu(const VjpContext &c) {
  return {c.output_grads[0] * npx::sigmoid(c.inputs[0])};
}
// d hard_swish(x) = 0 below -3, 1 above 3, (2x + 3) / 6 between
std::vector<Tensor> vjpHardSwish(const VjpContext &c) {
  const Tensor &x = c.inputs[0], &g = c.output_grads[0];
  auto scalar = [&](double value) { return np::full({}, value, x.dtype(), x.device()); };
  Tensor slope = np::where(x < scalar(-3), scalar(0),
                           np::where(x > scalar(3), scalar(1), (x * 2.0 + 3.0) / 6.0));
  return {g * slope};
}
std::vector<Tensor> vjpSigmoid(const VjpContext &c) {
  const Tensor &y = c.outputs[0];
  return {c.output_grads[0] * y * (1.0 - y)};
}
std::vector<Tensor> vjpTanh(const VjpContext &c) {
  const Tensor &y = c.outputs[0];
  return {c.output_grads[0] * (1.0 - y * y)};
}
// where(c, x, y): the condition gets none, x and y their halves of the gradient.
std::vector<Tensor> vjpWhere(const VjpContext &c) {
  const Tensor &g = c.output_grads[0];
  Tensor toX = masked(c.inputs[0], g);
  return {Tensor(), sum_to(toX, c.inputs[1].shape()), sum_to(g - toX, c.inputs[2].shape())};
}
// A cast's gradient is cast back; integer inputs get none.
std::vector<Tensor> vjpCast(const VjpContext &c) {
  if (!is_floating(c.inputs[0].dtype()))
    return {Tensor()};
  return {c.output_grads[0].astype(c.inputs[0].dtype())};
}
std::vector<Tensor> vjpBroadcastTo(const VjpContext &c) {
  return {sum_to(c.output_grads[0], c.inputs[0].shape())};
}

std::vector<TensorMeta> inferBroadcastTo(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  Shape target = attrs.get_ints("shape", {});
  if (!shape_rules::broadcastsTo(in[0].shape, target))
    throw ShapeError("cannot broadcast " + shape_rules::str(in[0].shape) + " to " +
                     shape_rules::str(target));
  return {{target, in[0].dtype}};
}

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

std::vector<TensorMeta> inferFloatSameShapes(const std::vector<TensorMeta> &in,
                                             const Attrs &attrs) {
  return inferFloatUnary(inferSameShapes(in, attrs), attrs);
}

std::vector<TensorMeta> inferFloatBroadcast(const std::vector<TensorMeta> &in,
                                            const Attrs &attrs) {
  return inferFloatUnary(inferBroadcast(in, attrs), attrs);
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

using Predicate = op_enums::ComparePredicate;

Tensor compare(const Tensor &a, const Tensor &b, Predicate predicate) {
  static const OpDef &op = find_op("compare");
  return invoke1(op, {a, b}, Attrs{{"predicate", int64_t(predicate)}});
}

/// A 0-d tensor of `value` with `like`'s dtype and device, for tensor-scalar arithmetic.
/// Eager code uses the same few over and over (a momentum, a dropout scale), so each is
/// made once per value, dtype and device and then shared: nothing ever writes into them,
/// and on a GPU every one made is a kernel launch (a BatchNorm layer's running averages
/// took four per step). A trace makes its own: a constant of the graph, not an argument.
Tensor scalarLike(double value, const Tensor &like) {
  if (trace::Tracer::current())
    return np::full({}, value, like.dtype(), like.device());
  using Key = std::tuple<uint64_t, DType, Device>;
  // Never destroyed: the tensors may hold GPU memory, freed at exit after CUDA is gone.
  static auto *mutex = new std::mutex;
  static auto *made = new std::map<Key, Tensor>;
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  Key key{bits, like.dtype(), like.device()};
  std::lock_guard<std::mutex> lock(*mutex);
  auto found = made->find(key);
  if (found != made->end())
    return found->second;
  if (made->size() >= 1024)
    made->clear(); // a program sweeping through many values
  Tensor scalar = np::full({}, value, like.dtype(), like.device());
  made->emplace(key, scalar);
  return scalar;
}

// d softsign(x) = 1 / (1 + |x|)^2 = (1 - |y|)^2, from the output.
std::vector<Tensor> vjpSoftsign(const VjpContext &c) {
  const Tensor &y = c.outputs[0];
  Tensor rest = 1.0 - np::maximum(y, -y);
  return {c.output_grads[0] * rest * rest};
}
// d silu(x) = s + x s (1 - s), s = sigmoid(x)
std::vector<Tensor> vjpSilu(const VjpContext &c) {
  const Tensor &x = c.inputs[0];
  Tensor s = npx::sigmoid(x);
  return {c.output_grads[0] * s * (1.0 + x * (1.0 - s))};
}
// d selu(x) = scale above 0, y + scale * alpha below
std::vector<Tensor> vjpSelu(const VjpContext &c) {
  const Tensor &x = c.inputs[0], &y = c.outputs[0];
  constexpr double scale = 1.0507009873554804934193349852946;
  constexpr double alpha = 1.6732632423543772848170429916717;
  Tensor positive = x > scalarLike(0, x);
  return {c.output_grads[0] * np::where(positive, scalarLike(scale, x), y + scale * alpha)};
}
// d/dx = 1 above 0, slope below; d/dslope = x below 0 (summed over the broadcast).
std::vector<Tensor> vjpLeakyRelu(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &x = c.inputs[0], &slope = c.inputs[1];
  Tensor positive = x > scalarLike(0, x);
  Tensor dslope = c.wants_grad(1) ? np::where(positive, scalarLike(0, x), g * x) : Tensor();
  return vjpBroadcast(c, np::where(positive, g, g * slope), dslope);
}
// d/dx = 1 above 0, y + alpha below; d/dalpha = e^x - 1 below 0.
std::vector<Tensor> vjpElu(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &x = c.inputs[0], &alpha = c.inputs[1];
  Tensor positive = x > scalarLike(0, x);
  Tensor zero = scalarLike(0, x);
  Tensor dalpha =
      c.wants_grad(1) ? np::where(positive, zero, g * (np::exp(x) - 1.0)) : Tensor();
  return vjpBroadcast(c, np::where(positive, g, g * (c.outputs[0] + alpha)), dalpha);
}

} // namespace
} // namespace detail

using namespace detail;

void detail::register_elementwise_ops() {
  // Users' names (numpy's), the dialect ops they map to, shape rules, VJP rules (the
  // layout rule, elementwise, comes from the dialect op's ODS).
  struct ElementwiseOp {
    const char *name, *dialectOp;
    InferFn infer;
    VjpFn vjp;
    const char *module; ///< OpDef::module: where Python binds it (null: not by itself)
  };
  const ElementwiseOp elementwise[] = {
      {"add", ops::add, inferBroadcast, vjpAdd, "np"},
      {"subtract", ops::sub, inferBroadcast, vjpSubtract, "np"},
      {"multiply", ops::mul, inferBroadcast, vjpMultiply, "np"},
      {"divide", ops::div, inferBroadcast, vjpDivide, nullptr}, // Python's / of integers
      {"power", ops::pow, inferBroadcast, vjpPower, "np"},
      {"maximum", ops::max, inferBroadcast, vjpMaximum, "np"},
      {"minimum", ops::min, inferBroadcast, vjpMinimum, "np"},
      {"negative", ops::neg, inferUnary, vjpNegative, "np"},
      {"relu", ops::relu, inferUnary, vjpRelu, "npx"},
      {"relu_backward", ops::relu_backward, inferSameShapes, vjp_not_implemented, nullptr},
      {"exp", ops::exp, inferFloatUnary, vjpExp, "np"},
      {"log", ops::log, inferFloatUnary, vjpLog, "np"},
      {"sqrt", ops::sqrt, inferFloatUnary, vjpSqrt, "np"},
      {"rsqrt", ops::rsqrt, inferFloatUnary, vjpRsqrt, "npx"},
      {"sigmoid", ops::sigmoid, inferFloatUnary, vjpSigmoid, "npx"},
      {"tanh", ops::tanh, inferFloatUnary, vjpTanh, "np"},
      {"gelu", ops::gelu, inferFloatUnary, vjpGelu, "npx"},
      {"erf", ops::erf, inferFloatUnary, vjpErf, "npx"},
      {"softrelu", ops::softrelu, inferFloatUnary, vjpSoftrelu, "npx"},
      {"hard_swish", ops::hard_swish, inferFloatUnary, vjpHardSwish, "npx"},
      {"relu6", ops::relu6, inferFloatUnary, vjpRelu6, "npx"},
      {"softsign", ops::softsign, inferFloatUnary, vjpSoftsign, "npx"},
      {"silu", ops::silu, inferFloatUnary, vjpSilu, "npx"},
      {"selu", ops::selu, inferFloatUnary, vjpSelu, "npx"},
      // Python's npx.leaky_relu is MXNet's (act_type=, slope=, gamma=): bound by hand.
      {"leaky_relu", ops::leaky_relu, inferFloatBroadcast, vjpLeakyRelu, nullptr},
      {"elu", ops::elu, inferFloatBroadcast, vjpElu, nullptr},
      {"relu6_backward", ops::relu6_backward, inferFloatSameShapes, vjp_not_implemented, nullptr},
      {"gelu_backward", ops::gelu_backward, inferFloatSameShapes, vjp_not_implemented, nullptr},
  };
  for (const ElementwiseOp &op : elementwise) {
    OpDef def = caller_runnable({op.name, op.dialectOp, op.infer, op.vjp});
    def.module = op.module ? op.module : "";
    register_op(std::move(def));
  }
  register_op(caller_runnable({"compare", ops::compare, inferCompare})); // no gradient
  register_op(caller_runnable({"where", ops::select, inferWhere, vjpWhere}));
  register_op(caller_runnable({"astype", ops::cast, inferCast, vjpCast}));
  register_op(caller_runnable({"broadcast_to", ops::broadcast_to, inferBroadcastTo, vjpBroadcastTo}));
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
DLC_UNARY(npx, gelu, "gelu")
DLC_UNARY(npx, erf, "erf")
DLC_UNARY(npx, softrelu, "softrelu")
DLC_UNARY(npx, hard_swish, "hard_swish")
DLC_UNARY(npx, relu6, "relu6")
DLC_UNARY(npx, softsign, "softsign")
DLC_UNARY(npx, silu, "silu")
DLC_UNARY(npx, selu, "selu")
#undef DLC_UNARY

Tensor npx::relu_backward(const Tensor &dy, const Tensor &x) {
  static const OpDef &op = find_op("relu_backward");
  return invoke1(op, {dy, x});
}

Tensor npx::leaky_relu(const Tensor &x, const Tensor &slope) {
  static const OpDef &op = find_op("leaky_relu");
  return invoke1(op, {x, slope});
}
Tensor npx::leaky_relu(const Tensor &x, double slope) {
  return leaky_relu(x, scalarLike(slope, x));
}

Tensor npx::prelu(const Tensor &x, const Tensor &gamma) {
  if (gamma.ndim() != 1 || x.ndim() < 2 || (gamma.size() != 1 && gamma.size() != x.shape()[1]))
    throw ShapeError("prelu: gamma " + shape_rules::str(gamma.shape()) +
                     " must hold one slope, or one per channel of the input " +
                     shape_rules::str(x.shape()) + " (axis 1)");
  // The channels' slopes along axis 1: (C, 1, ..., 1) for the trailing axes.
  Shape perChannel{gamma.size()};
  for (size_t d = 2; d < x.shape().size(); ++d)
    perChannel.push_back(1);
  return leaky_relu(x, gamma.size() == 1 ? gamma.reshape({}) : gamma.reshape(perChannel));
}

Tensor npx::elu(const Tensor &x, double alpha) {
  static const OpDef &op = find_op("elu");
  return invoke1(op, {x, scalarLike(alpha, x)});
}

Tensor np::clip(const Tensor &x, std::optional<double> low, std::optional<double> high) {
  Tensor y = x;
  if (low)
    y = np::maximum(y, scalarLike(*low, x));
  if (high)
    y = np::minimum(y, scalarLike(*high, x));
  return y;
}

Tensor npx::hard_sigmoid(const Tensor &x, double alpha, double beta) {
  return np::clip(x * alpha + beta, 0.0, 1.0);
}

Tensor npx::relu6_backward(const Tensor &dy, const Tensor &y) {
  static const OpDef &op = find_op("relu6_backward");
  return invoke1(op, {dy, y});
}

Tensor npx::gelu_tanh(const Tensor &x) {
  const double c = 0.7978845608028654; // sqrt(2 / pi)
  Tensor inner = (x + x * x * x * 0.044715) * c;
  return x * 0.5 * (np::tanh(inner) + 1.0);
}

Tensor npx::gelu_backward(const Tensor &dy, const Tensor &x) {
  static const OpDef &op = find_op("gelu_backward");
  return invoke1(op, {dy, x});
}

Tensor np::broadcast_to(const Tensor &x, const Shape &shape) {
  static const OpDef &op = find_op("broadcast_to");
  return invoke1(op, {x}, Attrs{{"shape", shape}});
}

Tensor np::equal(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::eq); }
Tensor np::not_equal(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::ne); }
Tensor np::less(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::lt); }
Tensor np::less_equal(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::le); }
Tensor np::greater(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::gt); }
Tensor np::greater_equal(const Tensor &a, const Tensor &b) { return compare(a, b, Predicate::ge); }

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
