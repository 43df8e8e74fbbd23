//===- OptimizerKernels.cpp - fused optimizer updates on CPUs -----------------===//
//
// One pass over a parameter for its whole update (MXNet's adam_update and
// sgd_mom_update), where the separate element-wise ops make a dozen. The per-element
// arithmetic is OptimizerMath.h, shared with the GPU kernels; the loop is its own
// reference (each element is independent and computed the same way at any thread count).
//
//===----------------------------------------------------------------------===//
#include "../KernelMath/OptimizerMath.h"
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cpu_kernels {

namespace {

// (weight, grad, mean, var, rate) -> (weight', mean', var').
void adamUpdate(const KernelArgs &k) {
  const int64_t n = optimizer_math::checked_elements(k, "adam_update");
  const optimizer_math::Adam c = optimizer_math::adam_constants(*k.attrs);
  const float *w = k.inputs[0].as<const float>(), *g = k.inputs[1].as<const float>(),
              *m = k.inputs[2].as<const float>(), *v = k.inputs[3].as<const float>();
  const float rate = *k.inputs[4].as<const float>();
  const float rescale = optimizer_math::rescale_of(*k.attrs);
  float *wOut = k.outputs[0].as<float>(), *mOut = k.outputs[1].as<float>(),
        *vOut = k.outputs[2].as<float>();
  parallel_for(n, n, [&](int64_t i) {
    optimizer_math::adam(c, rate, w[i], optimizer_math::mul(g[i], rescale), m[i], v[i], wOut[i],
                         mOut[i], vOut[i]);
  });
}

// (weight, grad, momentum, rate) -> (weight', momentum').
void momentumUpdate(const KernelArgs &k) {
  const int64_t n = optimizer_math::checked_elements(k, "sgd_momentum_update");
  const float mu = float(k.attrs->get_float("momentum", 0.9));
  const bool nesterov = k.attrs->get_bool("nesterov", false);
  const float *w = k.inputs[0].as<const float>(), *g = k.inputs[1].as<const float>(),
              *s = k.inputs[2].as<const float>();
  const float rate = *k.inputs[3].as<const float>();
  const float rescale = optimizer_math::rescale_of(*k.attrs);
  float *wOut = k.outputs[0].as<float>(), *sOut = k.outputs[1].as<float>();
  parallel_for(n, n, [&](int64_t i) {
    optimizer_math::momentum(mu, nesterov, rate, w[i], optimizer_math::mul(g[i], rescale), s[i],
                             wOut[i], sOut[i]);
  });
}

// (weight, grad, rate) -> weight'.
void sgdUpdate(const KernelArgs &k) {
  const int64_t n = optimizer_math::checked_elements(k, "sgd_update");
  const float *w = k.inputs[0].as<const float>(), *g = k.inputs[1].as<const float>();
  const float rate = *k.inputs[2].as<const float>();
  const float rescale = optimizer_math::rescale_of(*k.attrs);
  float *wOut = k.outputs[0].as<float>();
  parallel_for(n, n, [&](int64_t i) {
    wOut[i] = optimizer_math::sgd(rate, w[i], optimizer_math::mul(g[i], rescale));
  });
}

} // namespace

void register_optimizer_kernels() {
  register_host_kernel(ops::adam_update, adamUpdate);
  register_host_kernel(ops::sgd_momentum_update, momentumUpdate);
  register_host_kernel(ops::sgd_update, sgdUpdate);
}

} // namespace dlc::cpu_kernels
