//===- ElementwiseMath.h - what each element-wise op computes, written once ----===//
//
// The scalar body of every element-wise op of the dialect: a functor per op, named in its
// ODS definition (`DLC_UnaryOp<"gelu", "Gelu", ...>`), whose `apply` computes one
// element from one element of each operand. It is a template over the value type, and
// three places instantiate it:
//   - the CPU kernels (lib/Runtime/CPU/ElementwiseKernels.cpp), with the compute type of
//     the tensor's dtype (float for the 16-bit floats, the integer itself otherwise);
//   - the CUDA kernels (lib/Runtime/CUDA/ElementwiseKernels.cu), in device code, with
//     the same types;
//   - the code generator (lib/Dialect/DLC/IR/DLCScalarBodies.cpp), with a value type
//     whose operators and functions build `arith` and `math` ops: the generated kernel
//     of a fused region computes what the hand-written kernels compute.
// So an op's math exists once, and a new element-wise op adds its functor here.
//
// Rules for a body: arithmetic with + - * / and unary -, comparisons with < > <= >=, a
// choice with `where(condition, then, otherwise)` (both sides are computed: it is a
// blend, not a branch), constants through `lit(x, value)`, and the functions below
// (exp, log, log1p, sqrt, tanh, erf, pow). Bodies of float-only ops compute in float.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ELEMENTWISEMATH_H
#define DLC_CORE_ELEMENTWISEMATH_H

#include "dlc/Core/HostDevice.h"

#include <cmath>
#include <type_traits>

namespace dlc::elementwise {

// --- the functions of a body, for arithmetic types (host and device) ----------------
// The code generator's value type has its own, found by argument-dependent lookup.

DLC_HOST_DEVICE float exp(float x) { return ::expf(x); }
DLC_HOST_DEVICE float log(float x) { return ::logf(x); }
/// log(1 + x), exact for small x where log(1 + x) would round 1 + x first.
DLC_HOST_DEVICE float log1p(float x) { return ::log1pf(x); }
DLC_HOST_DEVICE float sqrt(float x) { return ::sqrtf(x); }
DLC_HOST_DEVICE float tanh(float x) { return ::tanhf(x); }
DLC_HOST_DEVICE float erf(float x) { return ::erff(x); }
DLC_HOST_DEVICE float pow(float x, float y) { return ::powf(x, y); }
/// Integer powers go through double, as std::pow of integers does.
template <typename C, std::enable_if_t<std::is_integral_v<C>, int> = 0>
DLC_HOST_DEVICE C pow(C x, C y) {
  return static_cast<C>(::pow(double(x), double(y)));
}

/// `condition ? then : otherwise`, both computed.
template <typename C> DLC_HOST_DEVICE C where(bool condition, C then, C otherwise) {
  return condition ? then : otherwise;
}

/// `value` in the type of `like` (a constant of the generated code's value type).
template <typename C> DLC_HOST_DEVICE C lit(const C &, double value) {
  return static_cast<C>(value);
}

/// a / b, truncated toward zero for integers (b != 0: the kernels check divisors first);
/// the most negative integer over -1 wraps to itself, as numpy's division does (C++
/// leaves it undefined and x86's idiv traps).
template <typename C> DLC_HOST_DEVICE C quotient(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    if (b == C(-1))
      return C(U(0) - U(a)); // -a, computed where overflow is defined
  }
  return a / b;
}

// --- the ops --------------------------------------------------------------------------
// Unary ops take x; binary ops (numpy broadcasting) x and y; gradient ops the output's
// gradient dy and the forward input x.

struct Neg {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return -x; }
};
struct Exp {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return exp(x); }
};
struct Log {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return log(x); }
};
struct Sqrt {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return sqrt(x); }
};
/// 1 / sqrt(x): not an estimate (MLIR's math.rsqrt may lower to one).
struct Rsqrt {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return lit(x, 1) / sqrt(x); }
};
/// x > 0 ? x : 0: a NaN gives 0, as the comparison is false (not max(x, 0)).
struct Relu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    C zero = lit(x, 0);
    return where(x > zero, x, zero);
  }
};
/// 1 / (1 + e^-x)
struct Sigmoid {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    C one = lit(x, 1);
    return one / (one + exp(-x));
  }
};
struct Tanh {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return tanh(x); }
};

/// Phi(x), the standard normal distribution function: (1 + erf(x / sqrt 2)) / 2.
template <typename C> DLC_HOST_DEVICE C normal_cdf(C x) {
  return lit(x, 0.5) * (lit(x, 1) + erf(x * lit(x, 0.70710678118654752)));
}

/// The exact GELU, x * Phi(x), as MXNet's LeakyReLU(act_type='gelu') and PyTorch's
/// default compute it (not the tanh approximation).
struct Gelu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return x * normal_cdf(x); }
};

/// The error function, erf(x) = 2 / sqrt(pi) * integral of e^(-t^2) from 0 to x.
struct Erf {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) { return erf(x); }
};

/// MXNet's softrelu (softplus), log(1 + e^x): x itself above 20, where e^x would
/// overflow and log(1 + e^x) rounds to x, as MXNet computes it.
struct Softrelu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    return where(x > lit(x, 20), x, log1p(exp(x)));
  }
};

/// Hard swish, x * relu6(x + 3) / 6 (MobileNetV3's): 0 below -3, x above 3.
struct HardSwish {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    C shifted = x + lit(x, 3);
    C clamped = where(shifted < lit(x, 0), lit(x, 0),
                      where(shifted > lit(x, 6), lit(x, 6), shifted));
    return x * clamped / lit(x, 6);
  }
};

/// min(max(x, 0), 6); a NaN stays NaN.
struct Relu6 {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    return where(x < lit(x, 0), lit(x, 0), where(x > lit(x, 6), lit(x, 6), x));
  }
};

/// x / (1 + |x|)
struct Softsign {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    return x / (lit(x, 1) + where(x < lit(x, 0), -x, x));
  }
};

/// x * sigmoid(x) (SiLU; Swish with beta = 1).
struct Silu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    return x / (lit(x, 1) + exp(-x));
  }
};

/// The scaled exponential linear unit with its fixed constants (self-normalizing
/// networks): scale * x above 0, scale * alpha * (e^x - 1) below.
struct Selu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x) {
    C scale = lit(x, 1.0507009873554804934193349852946);
    C scaledAlpha = lit(x, 1.0507009873554804934193349852946 * 1.6732632423543772848170429916717);
    return where(x > lit(x, 0), scale * x, scaledAlpha * (exp(x) - lit(x, 1)));
  }
};

/// x above 0, slope * x below (LeakyReLU with a constant slope, PReLU with a learned
/// one broadcast along the channels).
struct LeakyRelu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C slope) {
    return where(x > lit(x, 0), x, slope * x);
  }
};

/// The exponential linear unit: x above 0, alpha * (e^x - 1) below.
struct Elu {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C alpha) {
    return where(x > lit(x, 0), x, alpha * (exp(x) - lit(x, 1)));
  }
};

/// dx = 0 < y < 6 ? dy : 0, from relu6's output y.
struct Relu6Backward {
  template <typename C> DLC_HOST_DEVICE static C apply(C dy, C y) {
    return where(y > lit(y, 0), where(y < lit(y, 6), dy, lit(y, 0)), lit(y, 0));
  }
};

/// dx = x > 0 ? dy : 0
struct ReluBackward {
  template <typename C> DLC_HOST_DEVICE static C apply(C dy, C x) {
    return where(x > lit(x, 0), dy, lit(x, 0));
  }
};
/// dx = dy * (Phi(x) + x * phi(x)), phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
struct GeluBackward {
  template <typename C> DLC_HOST_DEVICE static C apply(C dy, C x) {
    C density = lit(x, 0.39894228040143268) * exp(lit(x, -0.5) * (x * x));
    return dy * (normal_cdf(x) + x * density);
  }
};

struct Add {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return x + y; }
};
struct Sub {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return x - y; }
};
struct Mul {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return x * y; }
};
struct Div {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return quotient(x, y); }
};
struct Pow {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return pow(x, y); }
};
/// x < y ? y : x, as std::max: a NaN first is the result, one second is not.
struct Max {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return where(x < y, y, x); }
};
/// y < x ? y : x, as std::min.
struct Min {
  template <typename C> DLC_HOST_DEVICE static C apply(C x, C y) { return where(y < x, y, x); }
};

} // namespace dlc::elementwise

#endif // DLC_CORE_ELEMENTWISEMATH_H
