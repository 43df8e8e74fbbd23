//===- CpuKernels.h - helpers shared by the CPU tensor kernels (internal) ----===//
#ifndef DLC_LIB_RUNTIME_CPU_CPUKERNELS_H
#define DLC_LIB_RUNTIME_CPU_CPUKERNELS_H

#include "ParallelFor.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/KernelGeometry.h"
#include "dlc/Runtime/CPU/NNKernels.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <limits>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace dlc::cpu_kernels {

/// Registers every CPU kernel in the kernel table.
void register_cpu_kernels();
void register_elementwise_kernels();
void register_matmul_kernels();
void register_reduce_kernels();
void register_layout_kernels();
void register_creation_kernels();
void register_nn_kernels();
void register_index_kernels(); // IndexKernels.cpp
void register_slice_kernels(); // SliceKernels.cpp
void register_norm_kernels(); // NormKernels.cpp
void register_attention_kernels(); // AttentionKernels.cpp
void register_optimizer_kernels(); // OptimizerKernels.cpp

/// Element counts from which a loop is split over the device's OpenMP team: below it,
/// waking the team costs more than the loop.
constexpr int64_t kParallelElements = int64_t(1) << 15;

/// Runs body(i) for i in [0, n), split over the OpenMP team when the loop touches `work`
/// >= kParallelElements elements, as a plain loop otherwise (ParallelFor.h says why: a
/// tenth of the cost of an eager op on a few elements).
template <typename Body> inline void parallel_for(int64_t n, int64_t work, Body &&body) {
  parallel_for_if(work >= kParallelElements, n, body);
}

/// Registers `fn` as both the fast and the reference CPU kernel of `op`: for ops whose
/// single loop is already what the plain-loop oracle would be.
inline void register_host_kernel(const char *op, KernelFn fn) {
  register_kernel(op, DeviceKind::cpu, {fn, fn});
}

/// What arithmetic on T computes in: float for the 16-bit floats, T otherwise.
template <typename T> using compute_t = kernels::compute_as<T, float16, bfloat16>;

template <typename T> inline compute_t<T> load(T value) { return value; }
inline float load(float16 value) { return to_float(value); }
inline float load(bfloat16 value) { return to_float(value); }

template <typename T, typename C> inline T store(C value) { return static_cast<T>(value); }
template <> inline float16 store<float16, float>(float value) { return to_float16(value); }
template <> inline bfloat16 store<bfloat16, float>(float value) { return to_bfloat16(value); }

/// `value` as a To element: 16-bit floats rounded, integers truncated toward zero as
/// numpy does, a value beyond the integer type's range saturated and NaN made 0 (a cast
/// there is undefined in C++: an ONNX file's constant of -inf filling uint8 reached one).
template <typename To, typename From> inline To convert_number(From value) {
  if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
    return store<To>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (value != value)
      return To(0);
    if (value <= From(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    if (value >= From(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

// The index math the CUDA kernels share (dlc/Core/KernelGeometry.h).
using kernels::AxisSplit;
using kernels::broadcast_strides;
using kernels::dispatch_dtype_as;
using kernels::pool_geometry;
using kernels::split_at_axis;
using kernels::transposed_strides;

/// Calls `f(T{})` with the C++ type of `dtype`.
template <typename F> void dispatch_dtype(DType dtype, F &&f) {
  dispatch_dtype_as<float16, bfloat16>(dtype, std::forward<F>(f));
}

/// Calls `f(T{})` for the floating-point dtypes the NN kernels take; a DTypeError naming
/// `op` for any other.
template <typename F> void dispatch_float_dtype(DType dtype, const char *op, F &&f) {
  switch (dtype) {
  case DType::f32:
    return f(float{});
  case DType::f16:
    return f(float16{});
  case DType::bf16:
    return f(bfloat16{});
  default:
    throw DTypeError(std::string(op) + ": needs float32, float16 or bfloat16 tensors, got " +
                     dtype_name(dtype));
  }
}

/// Calls `f(outIndex, offsets)` for every element of `out`, where offsets[k] is the
/// element of input k (strides from broadcast_strides) that numpy broadcasting pairs
/// with it. The innermost dimension runs as a tight loop, so `f` inlines into it.
template <size_t K, typename F>
void for_each_broadcast(const Shape &out, const std::array<std::vector<int64_t>, K> &strides,
                        F &&f) {
  int64_t total = shape_rules::numElements(out);
  if (total == 0)
    return;
  if (out.empty()) {
    f(int64_t(0), std::array<int64_t, K>{});
    return;
  }
  size_t rank = out.size(), last = rank - 1;
  int64_t inner = out[last];
  std::array<int64_t, K> innerStride{};
  for (size_t k = 0; k < K; ++k)
    innerStride[k] = strides[k][last];
  std::vector<int64_t> counter(rank, 0);
  std::array<int64_t, K> base{};
  for (int64_t row = 0; row < total; row += inner) {
    std::array<int64_t, K> at = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(row + j, at);
      for (size_t k = 0; k < K; ++k)
        at[k] += innerStride[k];
    }
    // Advance the outer dimensions' counter by one row.
    for (size_t d = last; d-- > 0;) {
      for (size_t k = 0; k < K; ++k)
        base[k] += strides[k][d];
      if (++counter[d] < out[d])
        break;
      for (size_t k = 0; k < K; ++k)
        base[k] -= strides[k][d] * out[d];
      counter[d] = 0;
    }
  }
}

} // namespace dlc::cpu_kernels

#endif // DLC_LIB_RUNTIME_CPU_CPUKERNELS_H
