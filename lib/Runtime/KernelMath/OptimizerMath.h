//===- OptimizerMath.h - one element of the fused optimizer updates -----------===//
//
// What the CPU loop (CPU/OptimizerKernels.cpp) and a GPU thread (CUDA/OptimizerKernels.cu)
// compute per element. The operations and their order are those of the optimizer written
// with separate element-wise ops (Trainer::update when traced), each rounded to float:
// on a GPU through the _rn intrinsics, which the compiler may not contract into FMAs. So
// the fused update gives the same bits as the separate ops, on every device.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_KERNELMATH_OPTIMIZERMATH_H
#define DLC_LIB_RUNTIME_KERNELMATH_OPTIMIZERMATH_H

#include "dlc/Core/HostDevice.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <cmath>
#include <string>


namespace dlc::optimizer_math {

DLC_HOST_DEVICE float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
DLC_HOST_DEVICE float sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
DLC_HOST_DEVICE float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
DLC_HOST_DEVICE float div(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
DLC_HOST_DEVICE float root(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// Adam's constants as the separate ops see them: each a float32 scalar.
struct Adam {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, epsilon;
};

/// mean' = mean*beta1 + g*(1-beta1); var' = var*beta2 + g*g*(1-beta2);
/// weight' = weight - mean'*rate / (sqrt(var') + epsilon).
DLC_HOST_DEVICE void adam(const Adam &c, float rate, float weight, float grad, float mean,
                              float var, float &weightOut, float &meanOut, float &varOut) {
  meanOut = add(mul(mean, c.beta1), mul(grad, c.oneMinusBeta1));
  varOut = add(mul(var, c.beta2), mul(mul(grad, grad), c.oneMinusBeta2));
  weightOut = sub(weight, div(mul(meanOut, rate), add(root(varOut), c.epsilon)));
}

/// momentum' = momentum*mu + g; weight' = weight - d*rate, with d = g + momentum'*mu
/// (Nesterov) or momentum'.
DLC_HOST_DEVICE void momentum(float mu, bool nesterov, float rate, float weight, float grad,
                                  float state, float &weightOut, float &stateOut) {
  stateOut = add(mul(state, mu), grad);
  float direction = nesterov ? add(grad, mul(stateOut, mu)) : stateOut;
  weightOut = sub(weight, mul(direction, rate));
}

/// weight' = weight - g*rate (plain SGD).
DLC_HOST_DEVICE float sgd(float rate, float weight, float grad) {
  return sub(weight, mul(grad, rate));
}

/// Adam's constants from the op's attributes, each rounded to float32 as a scalar operand.
inline Adam adam_constants(const Attrs &attrs) {
  double beta1 = attrs.get_float("beta1", 0.9), beta2 = attrs.get_float("beta2", 0.999);
  return {float(beta1), float(1 - beta1), float(beta2), float(1 - beta2),
          float(attrs.get_float("epsilon", 1e-8))};
}

/// The factor the gradient is multiplied by first (MXNet's rescale_grad: 1/batch size),
/// as the separate ops' float32 scalar. 1 leaves the gradient's bits as they are.
inline float rescale_of(const Attrs &attrs) { return float(attrs.get_float("rescale_grad", 1.0)); }

/// The element count of an update call, after checking that every tensor is float32
/// (DTypeError naming `op` otherwise).
inline int64_t checked_elements(const KernelArgs &k, const char *op) {
  for (const auto *side : {&k.inputs, &k.outputs})
    for (const TensorRef &t : *side)
      if (t.dtype != DType::f32)
        throw DTypeError(std::string(op) + ": needs float32 tensors, got " +
                         dtype_name(t.dtype));
  return k.outputs[0].numel();
}

} // namespace dlc::optimizer_math

#endif // DLC_LIB_RUNTIME_KERNELMATH_OPTIMIZERMATH_H
