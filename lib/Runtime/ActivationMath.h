//===- ActivationMath.h - one element of the activations without a library op ---===//
//
// What a CPU loop (CPU/ElementwiseKernels.cpp) and a GPU thread
// (CUDA/ElementwiseKernels.cu) compute per element, in float (the 16-bit floats compute
// in float too). Written once, so that the two devices cannot compute different
// functions; they may still differ in the last bits of erff and expf.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_ACTIVATIONMATH_H
#define DLC_LIB_RUNTIME_ACTIVATIONMATH_H

#include "HostDevice.h"

#include <cmath>

namespace dlc::activation_math {

inline constexpr float kSqrtHalf = 0.70710678118654752f;        // 1 / sqrt(2)
inline constexpr float kInvSqrtTwoPi = 0.39894228040143268f;    // 1 / sqrt(2 pi)

/// The exact GELU, x * Phi(x), as MXNet's LeakyReLU(act_type='gelu') and PyTorch's
/// default compute it (not the tanh approximation).
DLC_HOST_DEVICE float gelu(float x) { return 0.5f * x * (1.0f + erff(x * kSqrtHalf)); }

/// d gelu / dx = Phi(x) + x * phi(x), times the output gradient.
DLC_HOST_DEVICE float gelu_backward(float dy, float x) {
  float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
  float pdf = kInvSqrtTwoPi * expf(-0.5f * x * x);
  return dy * (cdf + x * pdf);
}

} // namespace dlc::activation_math

#endif // DLC_LIB_RUNTIME_ACTIVATIONMATH_H
