//===- ElementwiseKernels.cu - GPU kernels of element-wise ops ---------------===//
//
// One thread per output element in a grid-stride loop. Operands of the output's shape
// are read directly; broadcasting ones through an Indexer. Arithmetic on the 16-bit
// floats computes in float, as on the CPU.
//
//===----------------------------------------------------------------------===//
#include "../ActivationMath.h"
#include "../IntegerMath.h"
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

enum class Binary { add, sub, mul, div, pow, max, min };

template <Binary B, typename C> __device__ __forceinline__ C apply(C a, C b) {
  if constexpr (B == Binary::add)
    return a + b;
  else if constexpr (B == Binary::sub)
    return a - b;
  else if constexpr (B == Binary::mul)
    return a * b;
  else if constexpr (B == Binary::div) {
    if constexpr (std::is_integral_v<C>)
      return integer_math::divide(a, b); // zero divisors were flagged before
    else
      return a / b;
  } else if constexpr (B == Binary::pow) {
    if constexpr (std::is_same_v<C, float>)
      return powf(a, b);
    else
      return static_cast<C>(pow(double(a), double(b)));
  } else if constexpr (B == Binary::max)
    return a > b ? a : b;
  else
    return a < b ? a : b;
}

/// mode 0: a and b have z's shape; 1: b is a scalar; 2: general broadcasting.
template <Binary B, typename T>
__global__ void binaryKernel(const T *a, const T *b, T *z, int64_t n, Indexer ix, int mode,
                             int *divisionByZero) {
  using C = compute_t<T>;
  DLC_GRID_STRIDE_LOOP(i, n) {
    C x, y;
    if (mode == 0) {
      x = load(a[i]);
      y = load(b[i]);
    } else if (mode == 1) {
      x = load(a[i]);
      y = load(b[0]);
    } else {
      int64_t at[2];
      broadcast_offsets<2>(ix, i, at);
      x = load(a[at[0]]);
      y = load(b[at[1]]);
    }
    if constexpr (B == Binary::div && !is_float_v<T>) {
      if (y == C(0)) {
        *divisionByZero = 1;
        z[i] = T(0);
        continue;
      }
    }
    z[i] = store<T>(apply<B>(x, y));
  }
}

// z = a (op) b with numpy broadcasting; inputs and output share a dtype.
template <Binary B> void binary(const KernelArgs &args) {
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  OpScope scope("element-wise arithmetic");
  DeviceContext &ctx = current_context();
  int64_t n = z.numel();
  if (n == 0)
    return;
  int mode = a.shape == z.shape && b.shape == z.shape ? 0
             : a.shape == z.shape && b.numel() == 1   ? 1
                                                      : 2;
  Indexer ix;
  if (mode == 2)
    ix = make_indexer("element-wise arithmetic", z.shape,
                      {broadcast_strides(a.shape, z.shape), broadcast_strides(b.shape, z.shape)});
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("element-wise arithmetic on bool tensors is not supported");
    } else {
      int *flag = nullptr;
      if constexpr (B == Binary::div && !is_float_v<T>) {
        auto divisionByZero = std::make_shared<ErrorFlag>();
        flag = divisionByZero->device_pointer();
        ctx.after_completion([divisionByZero] {
          if (divisionByZero->take())
            throw Error("divide: integer division by zero");
        });
      }
      binaryKernel<B, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
          a.as<const T>(), b.as<const T>(), z.as<T>(), n, ix, mode, flag);
      check_launch("binaryKernel");
    }
  });
}

enum class Unary { neg, exp, log, sqrt, rsqrt, relu, sigmoid, tanh, gelu };

template <Unary U, typename C> __device__ __forceinline__ C apply(C x) {
  if constexpr (U == Unary::neg)
    return -x;
  else if constexpr (U == Unary::relu)
    return x > C(0) ? x : C(0);
  else if constexpr (U == Unary::gelu)
    return activation_math::gelu(float(x));
  else if constexpr (std::is_same_v<C, float>) {
    if constexpr (U == Unary::exp)
      return expf(x);
    else if constexpr (U == Unary::log)
      return logf(x);
    else if constexpr (U == Unary::sqrt)
      return sqrtf(x);
    else if constexpr (U == Unary::rsqrt)
      return 1.0f / sqrtf(x);
    else if constexpr (U == Unary::sigmoid)
      return 1.0f / (1.0f + expf(-x));
    else
      return tanhf(x);
  } else {
    if constexpr (U == Unary::exp)
      return exp(x);
    else if constexpr (U == Unary::log)
      return log(x);
    else if constexpr (U == Unary::sqrt)
      return sqrt(x);
    else if constexpr (U == Unary::rsqrt)
      return C(1) / sqrt(x);
    else if constexpr (U == Unary::sigmoid)
      return C(1) / (C(1) + exp(-x));
    else
      return tanh(x);
  }
}

template <Unary U, typename T> __global__ void unaryKernel(const T *x, T *y, int64_t n) {
  DLC_GRID_STRIDE_LOOP(i, n) { y[i] = store<T>(apply<U>(load(x[i]))); }
}

// y = f(x), same shape and dtype.
template <Unary U> void unary(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool integral = !is_float_v<T>;
    if constexpr (std::is_same_v<T, bool> || (integral && U != Unary::neg && U != Unary::relu)) {
      throw DTypeError(std::string("this op needs a floating-point tensor, got ") +
                       dtype_name(y.dtype));
    } else {
      unaryKernel<U, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(x.as<const T>(),
                                                                       y.as<T>(), n);
      check_launch("unaryKernel");
    }
  });
}

// The gradient ops dx = f(dy, x) of the activations; dy, x and dx share shape and dtype.
enum class Gradient { relu, gelu };

template <Gradient G, typename T>
__global__ void gradientKernel(const T *dy, const T *x, T *dx, int64_t n) {
  using C = compute_t<T>;
  DLC_GRID_STRIDE_LOOP(i, n) {
    if constexpr (G == Gradient::relu) // dx = x > 0 ? dy : 0
      dx[i] = store<T>(load(x[i]) > C(0) ? load(dy[i]) : C(0));
    else // dx = dy * gelu'(x)
      dx[i] = store<T>(activation_math::gelu_backward(float(load(dy[i])), float(load(x[i]))));
  }
}

template <Gradient G> void gradient(const KernelArgs &args) {
  const char *op = G == Gradient::relu ? ops::relu_backward : ops::gelu_backward;
  OpScope scope(op);
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  int64_t n = dx.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || (G == Gradient::gelu && !is_float_v<T>)) {
      throw DTypeError(std::string(op) + " needs a " +
                       (G == Gradient::gelu ? "floating-point" : "numeric") + " tensor, got " +
                       dtype_name(dx.dtype));
    } else {
      gradientKernel<G, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
          dy.as<const T>(), x.as<const T>(), dx.as<T>(), n);
      check_launch("gradientKernel");
    }
  });
}

template <typename T>
__global__ void compareKernel(const T *a, const T *b, bool *z, int64_t n, Indexer ix,
                              op_enums::ComparePredicate predicate) {
  using Predicate = op_enums::ComparePredicate;
  DLC_GRID_STRIDE_LOOP(i, n) {
    int64_t at[2];
    broadcast_offsets<2>(ix, i, at);
    auto x = load(a[at[0]]);
    auto y = load(b[at[1]]);
    bool r = false;
    switch (predicate) {
    case Predicate::eq: r = x == y; break;
    case Predicate::ne: r = x != y; break;
    case Predicate::lt: r = x < y; break;
    case Predicate::le: r = x <= y; break;
    case Predicate::gt: r = x > y; break;
    case Predicate::ge:
    default: r = x >= y; break;
    }
    z[i] = r;
  }
}

// z = a (cmp) b with broadcasting; z is bool.
void compare(const KernelArgs &args) {
  OpScope scope(ops::compare);
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  int64_t n = z.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  Indexer ix = make_indexer(ops::compare, z.shape,
                            {broadcast_strides(a.shape, z.shape), broadcast_strides(b.shape, z.shape)});
  auto predicate = op_enums::ComparePredicate(
      args.attrs->get_int("predicate", int64_t(op_enums::ComparePredicate::eq)));
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    compareKernel<T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
        a.as<const T>(), b.as<const T>(), z.as<bool>(), n, ix, predicate);
    check_launch("compareKernel");
  });
}

template <typename T>
__global__ void selectKernel(const bool *c, const T *x, const T *y, T *z, int64_t n,
                             Indexer ix) {
  DLC_GRID_STRIDE_LOOP(i, n) {
    int64_t at[3];
    broadcast_offsets<3>(ix, i, at);
    z[i] = c[at[0]] ? x[at[1]] : y[at[2]];
  }
}

// z = condition ? x : y with three-way broadcasting.
void select(const KernelArgs &args) {
  OpScope scope(ops::select);
  const TensorRef &c = args.inputs[0], &x = args.inputs[1], &y = args.inputs[2];
  const TensorRef &z = args.outputs[0];
  int64_t n = z.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  Indexer ix = make_indexer(ops::select, z.shape,
                            {broadcast_strides(c.shape, z.shape), broadcast_strides(x.shape, z.shape),
                             broadcast_strides(y.shape, z.shape)});
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    selectKernel<T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
        c.as<const bool>(), x.as<const T>(), y.as<const T>(), z.as<T>(), n, ix);
    check_launch("selectKernel");
  });
}

template <typename From, typename To> __global__ void castKernel(const From *x, To *y, int64_t n) {
  DLC_GRID_STRIDE_LOOP(i, n) {
    auto value = load(x[i]);
    if constexpr (std::is_same_v<To, bool>)
      y[i] = value != decltype(value)(0);
    else if constexpr (std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16>)
      y[i] = store<To>(static_cast<float>(value));
    else
      y[i] = static_cast<To>(value);
  }
}

// y = x converted to y's dtype (float to int truncates, as numpy).
void cast(const KernelArgs &args) {
  OpScope scope(ops::cast);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(x.dtype, [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatch_dtype(y.dtype, [&](auto toTag) {
      using To = decltype(toTag);
      castKernel<From, To><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(x.as<const From>(),
                                                                         y.as<To>(), n);
      check_launch("castKernel");
    });
  });
}

template <typename T>
__global__ void biasActivation(T *y, const float *product, const T *bias, int64_t rows,
                               int64_t columns, bool relu) {
  DLC_GRID_STRIDE_LOOP(i, rows * columns) {
    float v = (product ? product[i] : float(load(y[i]))) +
              (bias ? float(load(bias[i % columns])) : 0.f);
    y[i] = store<T>(relu && v < 0.f ? 0.f : v);
  }
}

template <typename T>
__global__ void channelBiasActivation(T *y, const T *bias, int64_t count, int64_t channels,
                                      int64_t inner, bool relu) {
  DLC_GRID_STRIDE_LOOP(i, count) {
    float v = float(load(y[i])) + (bias ? float(load(bias[(i / inner) % channels])) : 0.f);
    y[i] = store<T>(relu && v < 0.f ? 0.f : v);
  }
}

} // namespace

void launch_bias_activation(DType dtype, void *y, const float *product, const void *bias,
                            int64_t rows, int64_t columns, bool relu) {
  int64_t n = rows * columns;
  if (n == 0 || (!product && !bias && !relu))
    return;
  TensorRef typed{y, {n}, dtype};
  dispatch_float_dtype(typed, [&](auto tag) {
    using T = decltype(tag);
    biasActivation<T><<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
        static_cast<T *>(y), product, static_cast<const T *>(bias), rows, columns, relu);
  });
  check_launch("biasActivation");
}

void launch_channel_bias_activation(DType dtype, void *y, const void *bias, int64_t count,
                                    int64_t channels, int64_t inner, bool relu) {
  if (count == 0 || (!bias && !relu))
    return;
  TensorRef typed{y, {count}, dtype};
  dispatch_float_dtype(typed, [&](auto tag) {
    using T = decltype(tag);
    channelBiasActivation<T><<<blocks_for(count), kThreads, 0, current_context().stream()>>>(
        static_cast<T *>(y), static_cast<const T *>(bias), count, channels, std::max<int64_t>(1, inner),
        relu);
  });
  check_launch("channelBiasActivation");
}

void register_elementwise_kernels() {
  register_gpu_kernel(ops::add, binary<Binary::add>);
  register_gpu_kernel(ops::sub, binary<Binary::sub>);
  register_gpu_kernel(ops::mul, binary<Binary::mul>);
  register_gpu_kernel(ops::div, binary<Binary::div>);
  register_gpu_kernel(ops::pow, binary<Binary::pow>);
  register_gpu_kernel(ops::max, binary<Binary::max>);
  register_gpu_kernel(ops::min, binary<Binary::min>);
  register_gpu_kernel(ops::neg, unary<Unary::neg>);
  register_gpu_kernel(ops::exp, unary<Unary::exp>);
  register_gpu_kernel(ops::log, unary<Unary::log>);
  register_gpu_kernel(ops::sqrt, unary<Unary::sqrt>);
  register_gpu_kernel(ops::rsqrt, unary<Unary::rsqrt>);
  register_gpu_kernel(ops::relu, unary<Unary::relu>);
  register_gpu_kernel(ops::relu_backward, gradient<Gradient::relu>);
  register_gpu_kernel(ops::sigmoid, unary<Unary::sigmoid>);
  register_gpu_kernel(ops::tanh, unary<Unary::tanh>);
  register_gpu_kernel(ops::gelu, unary<Unary::gelu>);
  register_gpu_kernel(ops::gelu_backward, gradient<Gradient::gelu>);
  register_gpu_kernel(ops::compare, compare);
  register_gpu_kernel(ops::select, select);
  register_gpu_kernel(ops::cast, cast);
}

} // namespace dlc::cuda
