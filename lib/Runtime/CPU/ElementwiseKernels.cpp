//===- ElementwiseKernels.cpp - CPU kernels of element-wise ops ---------------===//
//
// One loop serves as both the fast and the reference kernel: with contiguous operands
// of equal shape it is a plain loop the compiler vectorizes, and the broadcasting path
// walks numpy's index mapping directly. Compiled programs call these too; a fused
// elementwise region calls them chunk by chunk.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "dlc/Core/ElementwiseMath.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>
#include <string_view>

namespace dlc::cpu_kernels {

namespace {

/// Whether an op's operands are float tensors only (DLC_ELEMENTWISE_OPS' last column).
constexpr bool floatOnly(std::string_view operands) { return operands == "float"; }

/// Whether an op computes on T (not on bool; a float-only op only on floats); otherwise
/// its kernel refuses the dtype, naming the op.
template <const char *Op, bool FloatOnly, typename T> constexpr bool computes() {
  return !std::is_same_v<T, bool> && (!FloatOnly || std::is_floating_point_v<compute_t<T>>);
}
template <const char *Op> [[noreturn]] void refuse(DType dtype, bool floatOnly) {
  throw DTypeError(std::string(Op) + " needs a " + (floatOnly ? "floating-point" : "numeric") +
                   " tensor, got " + dtype_name(dtype));
}

// z = F(a, b) with numpy broadcasting; inputs and output share a dtype.
template <typename F, const char *Op, bool FloatOnly> void binaryKernel(const KernelArgs &args) {
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &z = args.outputs[0];
  dispatch_dtype(z.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<Op, FloatOnly, T>()) {
      refuse<Op>(z.dtype, FloatOnly);
    } else {
      const T *pa = a.as<T>(), *pb = b.as<T>();
      T *pz = z.as<T>();
      int64_t n = z.numel();
      // Checked here, not in the loop: an exception must not leave an OpenMP region.
      if constexpr (std::is_same_v<F, elementwise::Div> && std::is_integral_v<compute_t<T>>) {
        if (std::find(pb, pb + b.numel(), T(0)) != pb + b.numel())
          throw Error("divide: integer division by zero");
      }
      if (a.shape == z.shape && b.shape == z.shape) {
        parallel_for(n, n, [&](int64_t i) { pz[i] = store<T>(F::apply(load(pa[i]), load(pb[i]))); });
      } else if (a.shape == z.shape && b.numel() == 1) {
        auto scalar = load(pb[0]);
        parallel_for(n, n, [&](int64_t i) { pz[i] = store<T>(F::apply(load(pa[i]), scalar)); });
      } else {
        std::array<std::vector<int64_t>, 2> strides{broadcast_strides(a.shape, z.shape),
                                                    broadcast_strides(b.shape, z.shape)};
        for_each_broadcast<2>(z.shape, strides, [&](int64_t i, const auto &at) {
          pz[i] = store<T>(F::apply(load(pa[at[0]]), load(pb[at[1]])));
        });
      }
    }
  });
}

// y = F(x), same shape and dtype.
template <typename F, const char *Op, bool FloatOnly> void unaryKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<Op, FloatOnly, T>()) {
      refuse<Op>(y.dtype, FloatOnly);
    } else {
      const T *px = x.as<T>();
      T *py = y.as<T>();
      int64_t n = y.numel();
      parallel_for(n, n, [&](int64_t i) { py[i] = store<T>(F::apply(load(px[i]))); });
    }
  });
}

// dx = F(dy, x); dy, x and dx share shape and dtype. F reads both operands whatever it
// chooses, so that a choice compiles to a blend, not a branch that mispredicts on every
// other element.
template <typename F, const char *Op, bool FloatOnly> void gradientKernel(const KernelArgs &args) {
  const TensorRef &dy = args.inputs[0], &x = args.inputs[1], &dx = args.outputs[0];
  dispatch_dtype(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!computes<Op, FloatOnly, T>()) {
      refuse<Op>(dx.dtype, FloatOnly);
    } else {
      const T *pdy = dy.as<T>(), *px = x.as<T>();
      T *pdx = dx.as<T>();
      int64_t n = dx.numel();
      parallel_for(n, n, [&](int64_t i) { pdx[i] = store<T>(F::apply(load(pdy[i]), load(px[i]))); });
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

// y = x converted to y's dtype, element by element (float to int truncates, as numpy;
// out of range it saturates, NaN gives 0: convert_number).
void castKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t n = y.numel();
  dispatch_dtype(x.dtype, [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatch_dtype(y.dtype, [&](auto toTag) {
      using To = decltype(toTag);
      const From *px = x.as<From>();
      To *py = y.as<To>();
      for (int64_t i = 0; i < n; ++i)
        py[i] = convert_number<To>(load(px[i]));
    });
  });
}

} // namespace

void register_elementwise_kernels() {
  // Every element-wise kernel op of the dialect, with its scalar body (ElementwiseMath.h).
#define DLC_REGISTER(op, Functor, kind, operands)                                             \
  register_host_kernel(ops::op, kind##Kernel<elementwise::Functor, ops::op, floatOnly(#operands)>);
  DLC_ELEMENTWISE_OPS(DLC_REGISTER)
#undef DLC_REGISTER
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
  register_index_kernels();
  register_norm_kernels();
  register_attention_kernels();
  register_optimizer_kernels();
}

} // namespace dlc::cpu_kernels
