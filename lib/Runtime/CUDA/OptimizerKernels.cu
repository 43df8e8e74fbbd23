//===- OptimizerKernels.cu - fused optimizer updates on GPUs ------------------===//
//
// One launch per parameter for its whole update, where the separate element-wise ops
// make a dozen. One thread per element in a grid-stride loop; the arithmetic is
// OptimizerMath.h, the CPU kernels' own, so both devices give the same bits.
//
//===----------------------------------------------------------------------===//
#include "../KernelMath/OptimizerMath.h"
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

__global__ void adamKernel(optimizer_math::Adam c, float rescale, const float *rate,
                           const float *w, const float *g, const float *m, const float *v,
                           float *wOut, float *mOut, float *vOut, int64_t n) {
  const float r = *rate;
  DLC_GRID_STRIDE_LOOP(i, n) {
    optimizer_math::adam(c, r, w[i], optimizer_math::mul(g[i], rescale), m[i], v[i], wOut[i],
                         mOut[i], vOut[i]);
  }
}

__global__ void momentumKernel(float mu, bool nesterov, float rescale, const float *rate,
                               const float *w, const float *g, const float *s, float *wOut,
                               float *sOut, int64_t n) {
  const float r = *rate;
  DLC_GRID_STRIDE_LOOP(i, n) {
    optimizer_math::momentum(mu, nesterov, r, w[i], optimizer_math::mul(g[i], rescale), s[i],
                             wOut[i], sOut[i]);
  }
}

__global__ void sgdKernel(float rescale, const float *rate, const float *w, const float *g,
                          float *wOut, int64_t n) {
  const float r = *rate;
  DLC_GRID_STRIDE_LOOP(i, n) {
    wOut[i] = optimizer_math::sgd(r, w[i], optimizer_math::mul(g[i], rescale));
  }
}

/// Launches `kernel` over the call's elements on the current GPU's stream, after the
/// dtype check; nothing for an empty parameter.
template <typename Launch> void launchUpdate(const KernelArgs &k, const char *op, Launch launch) {
  OpScope scope(op);
  int64_t n = optimizer_math::checked_elements(k, op);
  if (n > 0)
    launch(n, current_context().stream());
}

// (weight, grad, mean, var, rate) -> (weight', mean', var').
void adamUpdate(const KernelArgs &k) {
  launchUpdate(k, "adam_update", [&](int64_t n, cudaStream_t stream) {
    adamKernel<<<blocks_for(n), kThreads, 0, stream>>>(
        optimizer_math::adam_constants(*k.attrs), optimizer_math::rescale_of(*k.attrs),
        k.inputs[4].as<const float>(),
        k.inputs[0].as<const float>(), k.inputs[1].as<const float>(),
        k.inputs[2].as<const float>(), k.inputs[3].as<const float>(), k.outputs[0].as<float>(),
        k.outputs[1].as<float>(), k.outputs[2].as<float>(), n);
    check_launch("adamKernel");
  });
}

// (weight, grad, momentum, rate) -> (weight', momentum').
void momentumUpdate(const KernelArgs &k) {
  launchUpdate(k, "sgd_momentum_update", [&](int64_t n, cudaStream_t stream) {
    momentumKernel<<<blocks_for(n), kThreads, 0, stream>>>(
        float(k.attrs->get_float("momentum", 0.9)), k.attrs->get_bool("nesterov", false),
        optimizer_math::rescale_of(*k.attrs), k.inputs[3].as<const float>(), k.inputs[0].as<const float>(),
        k.inputs[1].as<const float>(), k.inputs[2].as<const float>(), k.outputs[0].as<float>(),
        k.outputs[1].as<float>(), n);
    check_launch("momentumKernel");
  });
}

// (weight, grad, rate) -> weight'.
void sgdUpdate(const KernelArgs &k) {
  launchUpdate(k, "sgd_update", [&](int64_t n, cudaStream_t stream) {
    sgdKernel<<<blocks_for(n), kThreads, 0, stream>>>(
        optimizer_math::rescale_of(*k.attrs), k.inputs[2].as<const float>(),
        k.inputs[0].as<const float>(), k.inputs[1].as<const float>(), k.outputs[0].as<float>(), n);
    check_launch("sgdKernel");
  });
}

} // namespace

void register_optimizer_kernels() {
  register_gpu_kernel(ops::adam_update, adamUpdate);
  register_gpu_kernel(ops::sgd_momentum_update, momentumUpdate);
  register_gpu_kernel(ops::sgd_update, sgdUpdate);
}

} // namespace dlc::cuda
