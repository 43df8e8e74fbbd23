//===- ElementwiseKernels.cpp - CPU kernels of element-wise ops ---------------===//
//
// One loop serves as both the fast and the reference kernel: with contiguous operands
// of equal shape it is a plain loop the compiler vectorizes, and the broadcasting path
// walks numpy's index mapping directly. Compiled programs call these too; a fused
// elementwise region calls them chunk by chunk.
//
//===----------------------------------------------------------------------===//
#include "../ActivationMath.h"
#include "../IntegerMath.h"
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>

namespace dlc::cpu_kernels {


namespace {

enum class Binary { add, sub, mul, div, pow, max, min };

template <Binary B, typename C> C apply(C a, C b) {
  if constexpr (B == Binary::add)
    return a + b;
  else if constexpr (B == Binary::sub)
    return a - b;
  else if constexpr (B == Binary::mul)
    return a * b;
  else if constexpr (B == Binary::div) {
    if constexpr (std::is_integral_v<C>)
      return integer_math::divide(a, b); // divisors were checked for zero before the loop
    else
      return a / b;
  } else if constexpr (B == Binary::pow)
    return static_cast<C>(std::pow(a, b));
  else if constexpr (B == Binary::max)
    return std::max(a, b);
  else
    return std::min(a, b);
}

// z = a (op) b with numpy broadcasting; inputs and output share a dtype.
template <Binary B> void binaryKernel(const KernelArgs &args) {
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("element-wise arithmetic on bool tensors is not supported");
    } else {
      const T *pa = a.as<T>(), *pb = b.as<T>();
      T *pz = z.as<T>();
      int64_t n = z.numel();
      // Checked here, not in the loop: an exception must not leave an OpenMP region.
      if constexpr (B == Binary::div && std::is_integral_v<compute_t<T>>) {
        if (std::find(pb, pb + b.numel(), T(0)) != pb + b.numel())
          throw Error("divide: integer division by zero");
      }
      if (a.shape == z.shape && b.shape == z.shape) {
        parallel_for(n, n, [&](int64_t i) { pz[i] = store<T>(apply<B>(load(pa[i]), load(pb[i]))); });
      } else if (a.shape == z.shape && b.numel() == 1) {
        auto scalar = load(pb[0]);
        parallel_for(n, n, [&](int64_t i) { pz[i] = store<T>(apply<B>(load(pa[i]), scalar)); });
      } else {
        std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape, z.shape),
                                                    broadcast_strides(b.shape, z.shape)};
        for_each_broadcast<2>(z.shape, strides, [&](int64_t i, const auto &at) {
          pz[i] = store<T>(apply<B>(load(pa[at[0]]), load(pb[at[1]])));
        });
      }
    }
  });
}

enum class Unary { neg, exp, log, sqrt, rsqrt, relu, sigmoid, tanh, gelu };

template <Unary U, typename C> C apply(C x) {
  if constexpr (U == Unary::neg)
    return -x;
  else if constexpr (U == Unary::relu)
    return x > C(0) ? x : C(0);
  else if constexpr (U == Unary::exp)
    return std::exp(x);
  else if constexpr (U == Unary::log)
    return std::log(x);
  else if constexpr (U == Unary::sqrt)
    return std::sqrt(x);
  else if constexpr (U == Unary::rsqrt)
    return C(1) / std::sqrt(x);
  else if constexpr (U == Unary::sigmoid)
    return C(1) / (C(1) + std::exp(-x));
  else if constexpr (U == Unary::gelu)
    return activation_math::gelu(x);
  else
    return std::tanh(x);
}

// y = f(x), same shape and dtype.
template <Unary U> void unaryKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool integral = std::is_integral_v<compute_t<T>>;
    if constexpr (std::is_same_v<T, bool> ||
                  (integral && U != Unary::neg && U != Unary::relu)) {
      throw DTypeError(std::string("this op needs a floating-point tensor, got ") +
                       dtype_name(y.dtype));
    } else {
      const T *px = x.as<T>();
      T *py = y.as<T>();
      int64_t n = y.numel();
      parallel_for(n, n, [&](int64_t i) { py[i] = store<T>(apply<U>(load(px[i]))); });
    }
  });
}

// dx = x > 0 ? dy : 0; dy, x and dx share shape and dtype.
void reluBackwardKernel(const KernelArgs &args) {
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  dispatch_dtype(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("relu_backward of bool tensors is not supported");
    } else {
      const T *pdy = dy.as<T>(), *px = x.as<T>();
      T *pdx = dx.as<T>();
      using C = compute_t<T>;
      // Both loads are unconditional so that the choice compiles to a blend, not a
      // branch that mispredicts on every other element.
      int64_t n = dx.numel();
      parallel_for(n, n, [&](int64_t i) {
        C gradient = load(pdy[i]);
        pdx[i] = store<T>(load(px[i]) > C(0) ? gradient : C(0));
      });
    }
  });
}

// dx = dy * gelu'(x); dy, x and dx share shape and a floating-point dtype.
void geluBackwardKernel(const KernelArgs &args) {
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  dispatch_dtype(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<compute_t<T>>) {
      throw DTypeError(std::string("gelu_backward needs a floating-point tensor, got ") +
                       dtype_name(dx.dtype));
    } else {
      const T *pdy = dy.as<T>(), *px = x.as<T>();
      T *pdx = dx.as<T>();
      int64_t n = dx.numel();
      parallel_for(n, n, [&](int64_t i) {
        pdx[i] = store<T>(activation_math::gelu_backward(load(pdy[i]), load(px[i])));
      });
    }
  });
}

// z = a (cmp) b with broadcasting; z is bool.
void compareKernel(const KernelArgs &args) {
  using Predicate = op_enums::ComparePredicate;
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  auto predicate = Predicate(args.attrs->get_int("predicate", int64_t(Predicate::eq)));
  bool *pz = z.as<bool>();
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.as<T>(), *pb = b.as<T>();
    std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape, z.shape),
                                                broadcast_strides(b.shape, z.shape)};
    for_each_broadcast<2>(z.shape, strides, [&](int64_t i, const auto &at) {
      auto x = load(pa[at[0]]), y = load(pb[at[1]]);
      switch (predicate) {
      case Predicate::eq: pz[i] = x == y; break;
      case Predicate::ne: pz[i] = x != y; break;
      case Predicate::lt: pz[i] = x < y; break;
      case Predicate::le: pz[i] = x <= y; break;
      case Predicate::gt: pz[i] = x > y; break;
      case Predicate::ge:
      default: pz[i] = x >= y; break;
      }
    });
  });
}

// z = condition ? x : y with three-way broadcasting.
void selectKernel(const KernelArgs &args) {
  const TensorRef &c = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const TensorRef &z = args.outputs[0];
  const bool *pc = c.as<bool>();
  std::array<std::vector<int64_t>, 3> strides{broadcast_strides(c.shape, z.shape),
                                              broadcast_strides(x.shape, z.shape),
                                              broadcast_strides(y.shape, z.shape)};
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.as<T>(), *py = y.as<T>();
    T *pz = z.as<T>();
    for_each_broadcast<3>(z.shape, strides, [&](int64_t i, const auto &at) {
      T onTrue = px[at[1]], onFalse = py[at[2]]; // unconditional loads: a blend, no branch
      pz[i] = pc[at[0]] ? onTrue : onFalse;
    });
  });
}

// y = x converted to y's dtype, element by element (float to int truncates, as numpy).
void castKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  dispatch_dtype(x.dtype, [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatch_dtype(y.dtype, [&](auto toTag) {
      using To = decltype(toTag);
      const From *px = x.as<From>();
      To *py = y.as<To>();
      for (int64_t i = 0; i < n; ++i) {
        auto value = load(px[i]);
        if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>)
          py[i] = store<To>(static_cast<float>(value));
        else
          py[i] = static_cast<To>(value);
      }
    });
  });
}

} // namespace

void register_elementwise_kernels() {
  register_host_kernel(ops::add, binaryKernel<Binary::add>);
  register_host_kernel(ops::sub, binaryKernel<Binary::sub>);
  register_host_kernel(ops::mul, binaryKernel<Binary::mul>);
  register_host_kernel(ops::div, binaryKernel<Binary::div>);
  register_host_kernel(ops::pow, binaryKernel<Binary::pow>);
  register_host_kernel(ops::max, binaryKernel<Binary::max>);
  register_host_kernel(ops::min, binaryKernel<Binary::min>);
  register_host_kernel(ops::neg, unaryKernel<Unary::neg>);
  register_host_kernel(ops::exp, unaryKernel<Unary::exp>);
  register_host_kernel(ops::log, unaryKernel<Unary::log>);
  register_host_kernel(ops::sqrt, unaryKernel<Unary::sqrt>);
  register_host_kernel(ops::rsqrt, unaryKernel<Unary::rsqrt>);
  register_host_kernel(ops::relu, unaryKernel<Unary::relu>);
  register_host_kernel(ops::relu_backward, reluBackwardKernel);
  register_host_kernel(ops::sigmoid, unaryKernel<Unary::sigmoid>);
  register_host_kernel(ops::tanh, unaryKernel<Unary::tanh>);
  register_host_kernel(ops::gelu, unaryKernel<Unary::gelu>);
  register_host_kernel(ops::gelu_backward, geluBackwardKernel);
  register_host_kernel(ops::compare, compareKernel);
  register_host_kernel(ops::select, selectKernel);
  register_host_kernel(ops::cast, castKernel);
}

void register_cpu_kernels() {
  register_elementwise_kernels();
  register_matmul_kernels();
  register_reduce_kernels();
  register_layout_kernels();
  register_creation_kernels();
  register_nn_kernels();
  register_optimizer_kernels();
}

} // namespace dlc::cpu_kernels
