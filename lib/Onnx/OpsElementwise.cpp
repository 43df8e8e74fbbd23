//===- OpsElementwise.cpp - ONNX's element-wise ops with dlc's ----------------===//
//
// ONNX broadcasts as numpy does (multidirectional), which dlc's binary ops do too.
//
//===----------------------------------------------------------------------===//
#include "Ops.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <cmath>
#include <functional>
#include <limits>

namespace dlc::onnx::detail {
namespace {

using Tensors = std::vector<Tensor>;

Tensor scalarOf(double value, const Tensor &like) {
  return np::full({}, value, like.dtype(), like.device());
}

/// Integer division truncates toward zero in ONNX; dlc's divide is a true division, so
/// integer quotients (shape arithmetic) are computed here, on known values only.
Tensor integerDivide(const OpContext &c) {
  if (!c.on_host())
    c.fail("integer division of tensors computed at run time (dlc divides integers only "
           "in shape computations)");
  Shape shape = c.broadcast(c.shape(0), c.shape(1));
  std::vector<int64_t> a = np::broadcast_to(c.in(0), shape).to_vector<int64_t>();
  std::vector<int64_t> b = np::broadcast_to(c.in(1), shape).to_vector<int64_t>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (b[i] == 0)
      c.fail("integer division by zero");
    if (b[i] == -1 && a[i] == std::numeric_limits<int64_t>::min())
      c.fail("integer division overflows");
    a[i] /= b[i];
  }
  return np::array(a, shape, npx::cpu(0)).astype(c.dtype(0));
}

/// Arithmetic dlc has no kernel for, on known values only (exporters' shape arithmetic):
/// each element of the broadcast inputs, in double precision, back in input 0's dtype.
Tensor onHost(const OpContext &c, const char *what,
              const std::function<double(double, double)> &f) {
  if (!c.on_host())
    c.fail(std::string(what) + " of tensors computed at run time (dlc computes it only on "
           "values known at import, such as shapes)");
  Shape shape = c.shape(0);
  if (c.size() > 1)
    shape = c.broadcast(shape, c.shape(1));
  std::vector<double> a = np::broadcast_to(c.in(0), shape).to_vector<double>();
  std::vector<double> b = c.size() > 1 ? np::broadcast_to(c.in(1), shape).to_vector<double>()
                                       : std::vector<double>(a.size(), 0.0);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = f(a[i], b[i]);
  return np::array(a, shape, c.dtype(0), npx::cpu(0));
}

Tensor modulo(const OpContext &c) {
  bool fmod = c.attr_int("fmod", 0) != 0;
  return onHost(c, "Mod", [&](double a, double b) {
    if (b == 0)
      c.fail("modulo by zero");
    double r = std::fmod(a, b);
    // fmod=0: the sign of the divisor (Python's %), for integers.
    if (!fmod && r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  });
}

/// Max, Min, Sum, Mean: any number of inputs, broadcast together.
Tensor fold(const OpContext &c, Tensor (*op)(const Tensor &, const Tensor &)) {
  Tensor result = c.in(0);
  for (size_t i = 1; i < c.size(); ++i)
    result = op(result, c.in(i));
  return result;
}

Tensor power(const OpContext &c) {
  Tensor base = c.in(0);
  if (c.known(1) && shape_rules::numElements(c.shape(1)) == 1 && !c.on_host()) {
    // x^2 and x^1 written as what they are: exact, and no pow kernel.
    double exponent = c.scalar(1);
    if (exponent == 2.0)
      return base * base;
    if (exponent == 1.0)
      return base;
  }
  Tensor exponent = c.in(1);
  if (exponent.dtype() != base.dtype())
    exponent = exponent.astype(base.dtype());
  return np::power(base, exponent);
}

Tensor logical(const OpContext &c, const char *which) {
  for (size_t i = 0; i < c.size(); ++i)
    if (c.dtype(i) != DType::boolean)
      c.fail(std::string("expects bool inputs, input ") + std::to_string(i) + " is " +
             dtype_name(c.dtype(i)));
  Tensor a = c.in(0);
  Tensor yes = np::full({}, 1, DType::boolean, a.device());
  Tensor no = np::full({}, 0, DType::boolean, a.device());
  std::string op = which;
  // Booleans go through where: the dialect compares numbers only.
  if (op == "Not")
    return np::where(a, no, yes);
  Tensor b = c.in(1);
  if (op == "And")
    return np::broadcast_to(np::where(a, b, no),
                            c.broadcast(a.shape(), b.shape()));
  if (op == "Or")
    return np::broadcast_to(np::where(a, yes, b),
                            c.broadcast(a.shape(), b.shape()));
  return np::broadcast_to(np::where(a, np::where(b, no, yes), b), // Xor
                          c.broadcast(a.shape(), b.shape()));
}

Tensor clip(const OpContext &c) {
  std::optional<double> low, high;
  if (c.has(1))
    low = c.scalar(1);
  if (c.has(2))
    high = c.scalar(2);
  Tensor x = c.in(0);
  if (!is_floating(x.dtype())) {
    Tensor y = x;
    if (low)
      y = np::maximum(y, scalarOf(*low, x));
    if (high)
      y = np::minimum(y, scalarOf(*high, x));
    return y;
  }
  if (low && high && *low == 0 && *high == 6)
    return npx::relu6(x);
  if (!low && !high)
    return x;
  return np::clip(x, low, high);
}

Tensor cast(const OpContext &c, DType to) {
  Tensor x = c.in(0);
  return x.dtype() == to ? x : x.astype(to);
}

DType castTarget(const OpContext &c) {
  int64_t code = c.attr_int("to", 0);
  std::optional<DType> to = dtype_from_onnx(int32_t(code));
  if (!to)
    c.fail("cast to " + onnx_dtype_name(int32_t(code)) + ", a dtype dlc does not have");
  return *to;
}

Tensor gelu(const OpContext &c) {
  std::string approximate = c.attr_string("approximate", "none");
  if (approximate == "none")
    return npx::gelu(c.in(0));
  if (approximate == "tanh")
    return npx::gelu_tanh(c.in(0));
  c.fail("approximate='" + approximate + "' (expected 'none' or 'tanh')");
}

Tensors dropout(const OpContext &c) {
  bool training = c.has(2) && c.scalar(2) != 0;
  if (!training) {
    Tensor kept = c.in(0);
    if (c.node().outputs.size() < 2 || c.node().outputs[1].empty())
      return {kept};
    return {kept, np::full(c.shape(0), 1, DType::boolean, c.device())};
  }
  double ratio = c.has(1) ? c.scalar(1) : 0.5;
  std::optional<uint64_t> seed;
  if (c.has_attr("seed"))
    seed = uint64_t(c.attr_int("seed", 0));
  npx::DropoutResult result = npx::dropout(c.in(0), ratio, seed);
  return {result.output, result.mask};
}

OpSpec unary(const char *type, Tensor (*op)(const Tensor &)) {
  return {type, 11, [op](OpContext &c) { return Tensors{op(c.in(0))}; }};
}

OpSpec binary(const char *type, Tensor (*op)(const Tensor &, const Tensor &)) {
  return {type, 11, [op](OpContext &c) { return Tensors{op(c.in(0), c.in(1))}; }};
}

} // namespace

void add_elementwise_ops(std::vector<OpSpec> &specs) {
  specs.push_back(binary("Add", np::add));
  specs.push_back(binary("Sub", np::subtract));
  specs.push_back(binary("Mul", np::multiply));
  specs.push_back({"Div", 11, [](OpContext &c) {
                     if (!is_floating(c.dtype(0)))
                       return Tensors{integerDivide(c)};
                     return Tensors{np::divide(c.in(0), c.in(1))};
                   }});
  specs.push_back({"Pow", 11, [](OpContext &c) { return Tensors{power(c)}; }});
  specs.push_back({"Max", 11, [](OpContext &c) { return Tensors{fold(c, np::maximum)}; }});
  specs.push_back({"Min", 11, [](OpContext &c) { return Tensors{fold(c, np::minimum)}; }});
  specs.push_back({"Sum", 11, [](OpContext &c) { return Tensors{fold(c, np::add)}; }});
  specs.push_back({"Mean", 11, [](OpContext &c) {
                     return Tensors{fold(c, np::add) / double(c.size())};
                   }});
  specs.push_back({"Mod", 11, [](OpContext &c) { return Tensors{modulo(c)}; }, {}, {"fmod"},
                   OpKind::pure, {}, "values known at import only"});
  specs.push_back({"Floor", 11, [](OpContext &c) {
                     return Tensors{onHost(c, "Floor", [](double a, double) { return std::floor(a); })};
                   }, {}, {}, OpKind::pure, {}, "values known at import only"});
  specs.push_back({"Ceil", 11, [](OpContext &c) {
                     return Tensors{onHost(c, "Ceil", [](double a, double) { return std::ceil(a); })};
                   }, {}, {}, OpKind::pure, {}, "values known at import only"});
  specs.push_back({"Round", 11, [](OpContext &c) {
                     return Tensors{onHost(c, "Round", [](double a, double) { return std::nearbyint(a); })};
                   }, {}, {}, OpKind::pure, {}, "values known at import only"});
  specs.push_back({"Sign", 11, [](OpContext &c) {
                     Tensor x = c.in(0);
                     Tensor zero = scalarOf(0, x);
                     return Tensors{np::where(np::greater(x, zero), scalarOf(1, x),
                                              np::where(np::less(x, zero), scalarOf(-1, x), zero))};
                   }});
  specs.push_back({"IsNaN", 11, [](OpContext &c) {
                     Tensor x = c.in(0);
                     return Tensors{np::not_equal(x, x)};
                   }});
  specs.push_back({"IsInf", 11,
                   [](OpContext &c) {
                     Tensor x = c.in(0);
                     Tensor inf = scalarOf(std::numeric_limits<double>::infinity(), x);
                     Tensor up = np::equal(x, inf), down = np::equal(x, np::negative(inf));
                     bool positive = c.attr_int("detect_positive", 1) != 0;
                     bool negative = c.attr_int("detect_negative", 1) != 0;
                     if (positive && negative)
                       return Tensors{np::where(up, up, down)};
                     if (positive)
                       return Tensors{up};
                     if (negative)
                       return Tensors{down};
                     return Tensors{np::full(x.shape(), 0, DType::boolean, x.device())};
                   },
                   {},
                   {"detect_negative", "detect_positive"}});
  specs.push_back(binary("Equal", np::equal));
  specs.push_back(binary("Greater", np::greater));
  specs.push_back(binary("GreaterOrEqual", np::greater_equal));
  specs.back().since = 12;
  specs.push_back(binary("Less", np::less));
  specs.push_back(binary("LessOrEqual", np::less_equal));
  specs.back().since = 12;
  for (const char *op : {"Not", "And", "Or", "Xor"})
    specs.push_back({op, 11, [op](OpContext &c) { return Tensors{logical(c, op)}; }});

  specs.push_back(unary("Relu", npx::relu));
  specs.push_back(unary("Sigmoid", npx::sigmoid));
  specs.push_back(unary("Tanh", np::tanh));
  specs.push_back(unary("Exp", np::exp));
  specs.push_back(unary("Log", np::log));
  specs.push_back(unary("Sqrt", np::sqrt));
  specs.push_back(unary("Neg", np::negative));
  specs.push_back(unary("Erf", npx::erf));
  specs.push_back(unary("Softplus", npx::softrelu));
  specs.push_back(unary("Softsign", npx::softsign));
  specs.push_back(unary("HardSwish", npx::hard_swish));
  specs.back().since = 14;
  specs.push_back({"Abs", 11, [](OpContext &c) {
                     Tensor x = c.in(0);
                     return Tensors{np::maximum(x, np::negative(x))};
                   }});
  specs.push_back({"Reciprocal", 11, [](OpContext &c) {
                     Tensor x = c.in(0);
                     return Tensors{np::divide(scalarOf(1, x), x)};
                   }});
  specs.push_back({"HardSigmoid", 11,
                   [](OpContext &c) {
                     return Tensors{npx::hard_sigmoid(c.in(0), c.attr_float("alpha", 0.2),
                                                      c.attr_float("beta", 0.5))};
                   },
                   {},
                   {"alpha", "beta"}});
  specs.push_back({"LeakyRelu", 11,
                   [](OpContext &c) {
                     return Tensors{npx::leaky_relu(c.in(0), c.attr_float("alpha", 0.01))};
                   },
                   {},
                   {"alpha"}});
  specs.push_back({"PRelu", 11, [](OpContext &c) {
                     return Tensors{npx::leaky_relu(c.in(0), c.in(1))};
                   }});
  specs.push_back({"Elu", 11,
                   [](OpContext &c) {
                     return Tensors{npx::elu(c.in(0), c.attr_float("alpha", 1.0))};
                   },
                   {},
                   {"alpha"}});
  specs.push_back({"Selu", 11,
                   [](OpContext &c) {
                     double alpha = c.attr_float("alpha", 1.67326319217681884765625);
                     double gamma = c.attr_float("gamma", 1.05070102214813232421875);
                     Tensor x = c.in(0);
                     if (std::abs(alpha - 1.6732632423543772) < 1e-6 &&
                         std::abs(gamma - 1.0507009873554805) < 1e-6)
                       return Tensors{npx::selu(x)};
                     return Tensors{npx::elu(x, alpha) * gamma};
                   },
                   {},
                   {"alpha", "gamma"}});
  specs.push_back({"ThresholdedRelu", 11,
                   [](OpContext &c) {
                     Tensor x = c.in(0);
                     Tensor above = np::greater(x, scalarOf(c.attr_float("alpha", 1.0), x));
                     return Tensors{np::where(above, x, scalarOf(0, x))};
                   },
                   {},
                   {"alpha"}});
  specs.push_back({"Gelu", 20, [](OpContext &c) { return Tensors{gelu(c)}; }, {},
                   {"approximate"}});
  specs.push_back({"Clip", 11, [](OpContext &c) { return Tensors{clip(c)}; }, {1, 2}});
  specs.push_back({"Identity", 11, [](OpContext &c) { return Tensors{c.in(0)}; }});
  specs.push_back({"Cast", 11, [](OpContext &c) { return Tensors{cast(c, castTarget(c))}; },
                   {},
                   {"to", "saturate"}});
  specs.push_back({"CastLike", 15, [](OpContext &c) {
                     return Tensors{cast(c, c.dtype(1))};
                   }, {}, {"saturate"}});
  specs.push_back({"Where", 11, [](OpContext &c) {
                     return Tensors{np::where(c.in(0), c.in(1), c.in(2))};
                   }});
  specs.push_back({"Dropout", 11, [](OpContext &c) { return dropout(c); }, {1, 2},
                   {"seed", "ratio"}, OpKind::random, {},
                   "training_mode must be known at import"});
}

} // namespace dlc::onnx::detail
