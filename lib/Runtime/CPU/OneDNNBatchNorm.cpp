//===- OneDNNBatchNorm.cpp - batch normalization forward and backward with oneDNN ===//
//
// (N, C, S) is handed to oneDNN as NCHW with H = 1, W = S (or blocked, whose memory is
// the same for (H, W) and (1, H*W)); oneDNN's NCHW batch norm is a generic one, several
// times slower than its blocked kernels. Scale and shift are passed
// separately (use_scale | use_shift, new in oneDNN 2.6) so gamma and beta need no
// packing into the older (2, C) scale-shift tensor.
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstring>

namespace dlc::cpu_kernels::onednn {

using namespace detail;
using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;
using tag = memory::format_tag;

namespace {

memory::desc dataDesc(const BatchNormGeometry &g) {
  return f32Desc({g.N, g.C, 1, g.S}, activationTag(g.layout));
}

memory::desc channelDesc(const BatchNormGeometry &g) { return f32Desc({g.C}, tag::x); }

// oneDNN keeps epsilon as a float inside the primitive, so the key records the float
// that oneDNN will see, bit for bit.
int64_t epsilonBits(double epsilon) {
  const float asFloat = float(epsilon);
  uint32_t bits;
  std::memcpy(&bits, &asFloat, sizeof bits);
  return bits;
}

std::string batchNormKey(const char *op, const BatchNormGeometry &g, double epsilon) {
  return geometryKey(op, {g.N, g.C, g.S, int64_t(g.layout), epsilonBits(epsilon)});
}

const normalization_flags kTrainingFlags =
    normalization_flags::use_scale | normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc trainingPd(const BatchNormGeometry &g,
                                                             double epsilon) {
  dnnl::batch_normalization_forward::desc desc(prop_kind::forward_training, dataDesc(g),
                                               float(epsilon), kTrainingFlags);
  return {desc, threadEngine()};
}

} // namespace

void batch_norm_forward_training(const BatchNormGeometry &g, const float *x, const float *gamma,
                                 const float *beta, double epsilon, float *y, float *mean,
                                 float *var) {
  CachedKernel &kernel = cachedKernel(
      batchNormKey("batch_norm_forward_training", g, epsilon), [&](CachedKernel &k) {
        CachedKernel::Args args;
        args[DNNL_ARG_SRC] = k.bindUserBuffer(dataDesc(g));
        args[DNNL_ARG_SCALE] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_SHIFT] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_DST] = k.bindUserBuffer(dataDesc(g));
        // Without use_global_stats a training forward writes the batch mean and the
        // biased variance here, which is what the contract returns.
        args[DNNL_ARG_MEAN] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_VARIANCE] = k.bindUserBuffer(channelDesc(g));
        k.addStep(dnnl::batch_normalization_forward(trainingPd(g, epsilon)), std::move(args));
      });
  kernel.run({x, gamma, beta, y, mean, var});
}

void batch_norm_forward_inference(const BatchNormGeometry &g, const float *x,
                                  const float *gamma, const float *beta,
                                  const float *runningMean, const float *runningVar,
                                  double epsilon, float *y) {
  CachedKernel &kernel = cachedKernel(
      batchNormKey("batch_norm_forward_inference", g, epsilon), [&](CachedKernel &k) {
        dnnl::batch_normalization_forward::desc desc(
            prop_kind::forward_inference, dataDesc(g), float(epsilon),
            normalization_flags::use_global_stats | kTrainingFlags);
        dnnl::batch_normalization_forward::primitive_desc pd(desc, threadEngine());
        CachedKernel::Args args;
        args[DNNL_ARG_SRC] = k.bindUserBuffer(dataDesc(g));
        args[DNNL_ARG_SCALE] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_SHIFT] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_MEAN] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_VARIANCE] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_DST] = k.bindUserBuffer(dataDesc(g));
        k.addStep(dnnl::batch_normalization_forward(pd), std::move(args));
      });
  kernel.run({x, gamma, beta, runningMean, runningVar, y});
}

void batch_norm_backward(const BatchNormGeometry &g, const float *dy, const float *x,
                         const float *gamma, const float *mean, const float *var,
                         double epsilon, float *dx, float *dgamma, float *dbeta) {
  CachedKernel &kernel =
      cachedKernel(batchNormKey("batch_norm_backward", g, epsilon), [&](CachedKernel &k) {
        // prop_kind::backward (not backward_data): also differentiate through the batch
        // statistics and produce the scale and shift gradients.
        dnnl::batch_normalization_backward::desc desc(prop_kind::backward, dataDesc(g),
                                                      dataDesc(g), float(epsilon),
                                                      kTrainingFlags);
        dnnl::batch_normalization_backward::primitive_desc pd(desc, threadEngine(),
                                                              trainingPd(g, epsilon));
        CachedKernel::Args args;
        args[DNNL_ARG_DIFF_DST] = k.bindUserBuffer(dataDesc(g));
        args[DNNL_ARG_SRC] = k.bindUserBuffer(dataDesc(g));
        args[DNNL_ARG_SCALE] = k.bindUserBuffer(channelDesc(g));
        // The gradients do not depend on beta, so the contract does not pass it, but
        // oneDNN 2.6 refuses to execute a use_shift backward without a shift argument:
        // hand it a zero buffer of its own.
        args[DNNL_ARG_SHIFT] = k.ownBuffer(channelDesc(g));
        args[DNNL_ARG_MEAN] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_VARIANCE] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_DIFF_SRC] = k.bindUserBuffer(dataDesc(g));
        args[DNNL_ARG_DIFF_SCALE] = k.bindUserBuffer(channelDesc(g));
        args[DNNL_ARG_DIFF_SHIFT] = k.bindUserBuffer(channelDesc(g));
        k.addStep(dnnl::batch_normalization_backward(pd), std::move(args));
      });
  kernel.run({dy, x, gamma, mean, var, dx, dgamma, dbeta});
}

} // namespace dlc::cpu_kernels::onednn
