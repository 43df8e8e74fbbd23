//===- CudaDTypes.cuh - dlc dtypes as device types (internal, CUDA only) -----===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDADTYPES_CUH
#define DLC_LIB_RUNTIME_CUDA_CUDADTYPES_CUH

#include "CudaContext.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/Error.h"
#include "dlc/Core/KernelGeometry.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace dlc::cuda {

/// Calls `f(T{})` with the device type of `dtype` (float16 is __half, bfloat16 is
/// __nv_bfloat16: the same bits as dlc's host structs).
template <typename F> void dispatch_dtype(DType dtype, F &&f) {
  kernels::dispatch_dtype_as<__half, __nv_bfloat16>(dtype, std::forward<F>(f));
}

/// What arithmetic on T computes in: float for the 16-bit floats, T otherwise.
template <typename T> using compute_t = kernels::compute_as<T, __half, __nv_bfloat16>;

template <typename T> constexpr bool is_float_v =
    std::is_floating_point_v<compute_t<T>>;

/// Calls `f(T{})` with the device type of a floating-point tensor (float32, float16 or
/// bfloat16: the NN ops' dtypes), or throws DTypeError naming the current op.
template <typename F> void dispatch_float_dtype(const TensorRef &t, F &&f) {
  dispatch_dtype(t.dtype, [&](auto tag) {
    if constexpr (is_float_v<decltype(tag)>)
      f(tag);
    else
      throw DTypeError(std::string(current_op()) + ": the GPU kernels take float32, float16 "
                       "or bfloat16, got " + dtype_name(t.dtype));
  });
}

template <typename T> __device__ __forceinline__ compute_t<T> load(T value) { return value; }
__device__ __forceinline__ float load(__half value) { return __half2float(value); }
__device__ __forceinline__ float load(__nv_bfloat16 value) { return __bfloat162float(value); }

template <typename T, typename C> __device__ __forceinline__ T store(C value) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half(float(value));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16(float(value));
  else
    return static_cast<T>(value);
}

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDADTYPES_CUH
