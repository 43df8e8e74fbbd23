//===- IntegerMath.h - integer quotients, defined for every operand pair ------===//
//
// What the CPU loop (CPU/ElementwiseKernels.cpp) and a GPU thread
// (CUDA/ElementwiseKernels.cu) compute for an integer `divide`. C++ leaves the most
// negative value divided by -1 undefined, and x86's idiv traps on it (SIGFPE, the
// process dies); numpy's integer division wraps it to the most negative value again.
// dlc does as numpy, on every device. Division by zero is checked by the callers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_INTEGERMATH_H
#define DLC_LIB_RUNTIME_INTEGERMATH_H

#include <type_traits>

#ifdef __CUDACC__
#define DLC_INT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DLC_INT_HOST_DEVICE inline
#endif

namespace dlc::integer_math {

/// a / b truncated toward zero, b != 0; the most negative a over -1 wraps to itself.
template <typename C> DLC_INT_HOST_DEVICE C divide(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    if (b == C(-1))
      return C(U(0) - U(a)); // -a, computed where overflow is defined
  }
  return a / b;
}

} // namespace dlc::integer_math

#endif // DLC_LIB_RUNTIME_INTEGERMATH_H
