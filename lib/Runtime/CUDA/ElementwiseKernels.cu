//===- ElementwiseKernels.cu - GPU kernels of element-wise ops ---------------===//
//
// One thread per output element in a grid-stride loop. Operands of the output's shape
// are read directly; broadcasting ones through an Indexer. Arithmetic on the 16-bit
// floats computes in float, as on the CPU.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "dlc/Core/ElementwiseMath.h"
#include "dlc/Core/OpFacts.h"

#include <string_view>

namespace dlc::cuda {

namespace {

/// Whether an op's operands are float tensors only (DLC_ELEMENTWISE_OPS' last column).
constexpr bool floatOnly(std::string_view operands) { return operands == "float"; }

/// Whether an op computes on T (not on bool; a float-only op only on floats); otherwise
/// its kernel refuses the dtype, naming the op.
template <bool FloatOnly, typename T> constexpr bool computes() {
  return !std::is_same_v<T, bool> && (!FloatOnly || is_float_v<T>);
}
[[noreturn]] void refuse(const char *op, DType dtype, bool floatOnly) {
  throw DTypeError(std::string(op) + " needs a " + (floatOnly ? "floating-point" : "numeric") +
                   " tensor, got " + dtype_name(dtype));
}

/// mode 0: a and b have z's shape; 1: b is a scalar; 2: general broadcasting.
template <typename F, typename T>
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
    if constexpr (std::is_same_v<F, elementwise::Div> && !is_float_v<T>) {
      if (y == C(0)) {
        *divisionByZero = 1;
        z[i] = T(0);
        continue;
      }
    }
    z[i] = store<T>(F::apply(x, y));
  }
}

// z = F(a, b) with numpy broadcasting; inputs and output share a dtype.
template <typename F, const char *Op, bool FloatOnly> void binary(const KernelArgs &args) {
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  OpScope scope(Op);
  DeviceContext &ctx = current_context();
  int64_t n = z.numel();
  if (n == 0)
    return;
  int mode = a.shape == z.shape && b.shape == z.shape ? 0
             : a.shape == z.shape && b.numel() == 1   ? 1
                                                      : 2;
  Indexer ix;
  if (mode == 2)
    ix = make_indexer(Op, z.shape,
                      {broadcast_strides(a.shape, z.shape), broadcast_strides(b.shape, z.shape)});
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<FloatOnly, T>()) {
      refuse(Op, z.dtype, FloatOnly);
    } else {
      int *flag = nullptr;
      if constexpr (std::is_same_v<F, elementwise::Div> && !is_float_v<T>) {
        auto divisionByZero = std::make_shared<ErrorFlag>();
        flag = divisionByZero->device_pointer();
        ctx.after_completion([divisionByZero] {
          if (divisionByZero->take())
            throw Error("divide: integer division by zero");
        });
      }
      binaryKernel<F, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
          a.as<const T>(), b.as<const T>(), z.as<T>(), n, ix, mode, flag);
      check_launch("binaryKernel");
    }
  });
}

template <typename F, typename T> __global__ void unaryKernel(const T *x, T *y, int64_t n) {
  DLC_GRID_STRIDE_LOOP(i, n) { y[i] = store<T>(F::apply(load(x[i]))); }
}

// y = F(x), same shape and dtype.
template <typename F, const char *Op, bool FloatOnly> void unary(const KernelArgs &args) {
  OpScope scope(Op);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<FloatOnly, T>()) {
      refuse(Op, y.dtype, FloatOnly);
    } else {
      unaryKernel<F, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(x.as<const T>(),
                                                                       y.as<T>(), n);
      check_launch("unaryKernel");
    }
  });
}

template <typename F, typename T>
__global__ void gradientKernel(const T *dy, const T *x, T *dx, int64_t n) {
  DLC_GRID_STRIDE_LOOP(i, n) { dx[i] = store<T>(F::apply(load(dy[i]), load(x[i]))); }
}

// dx = F(dy, x); dy, x and dx share shape and dtype.
template <typename F, const char *Op, bool FloatOnly> void gradient(const KernelArgs &args) {
  OpScope scope(Op);
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  int64_t n = dx.numel();
  if (n == 0)
    return;
  DeviceContext &ctx = current_context();
  dispatch_dtype(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<FloatOnly, T>()) {
      refuse(Op, dx.dtype, FloatOnly);
    } else {
      gradientKernel<F, T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
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
  // Every element-wise kernel op of the dialect, with its scalar body (ElementwiseMath.h).
#define DLC_REGISTER(op, Functor, kind, operands)                                             \
  register_gpu_kernel(ops::op, kind<elementwise::Functor, ops::op, floatOnly(#operands)>);
  DLC_ELEMENTWISE_OPS(DLC_REGISTER)
#undef DLC_REGISTER
  register_gpu_kernel(ops::compare, compare);
  register_gpu_kernel(ops::select, select);
  register_gpu_kernel(ops::cast, cast);
}

} // namespace dlc::cuda
