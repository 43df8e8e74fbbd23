//===- OneDNNConv.cpp - 2-D convolution forward and backward with oneDNN ===//
//
// Activations arrive and leave in the layouts the dispatcher chose (NCHW, or a
// blocked nChw16c or nChw8c where the channels allow; weights are always OIHW). Two builds are timed at first use:
// the primitive on those layouts directly, and the primitive on the layouts oneDNN
// prefers (format_tag::any) with reorders around it.
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstdlib>

namespace dlc::cpu_kernels::onednn {

using namespace detail;
using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;

namespace {

// The memory layouts and window parameters of one convolution, as oneDNN wants them.
struct ConvDescs {
  memory::desc src, weights, bias, dst;    // the callers' layouts
  memory::desc srcAny, weightsAny, dstAny; // what the primitive is asked to use

  memory::dims strides, dilates, paddingL, paddingR;
};

ConvDescs convDescs(const Conv2DGeometry &g, bool withBias, bool blocked) {
  ConvDescs d;
  d.src = f32Desc({g.N, g.C, g.H, g.W}, activationTag(g.inputLayout));
  d.dst = f32Desc({g.N, g.O, g.OH, g.OW}, activationTag(g.outputLayout));
  // Grouped weights (O, C/groups, KH, KW) are, byte for byte, goihw with the output
  // channels split as (groups, O/groups).
  d.weights = g.groups == 1
                  ? f32Desc({g.O, g.C, g.KH, g.KW}, tag::oihw)
                  : f32Desc({g.groups, g.O / g.groups, g.C / g.groups, g.KH, g.KW}, tag::goihw);
  // Blocked: oneDNN picks the layouts of the weights and of plain activations (and the
  // kernels reorder around the primitive), activations already blocked stay so; plain:
  // the primitive works on the callers' layouts directly.
  d.srcAny = blocked && g.inputLayout == Layout::plain ? f32Desc(d.src.dims(), tag::any) : d.src;
  d.weightsAny = blocked ? f32Desc(d.weights.dims(), tag::any) : d.weights;
  d.dstAny =
      blocked && g.outputLayout == Layout::plain ? f32Desc(d.dst.dims(), tag::any) : d.dst;
  // A zero descriptor tells oneDNN there is no bias.
  d.bias = withBias ? f32Desc({g.O}, tag::x) : memory::desc();
  d.strides = {g.strideH, g.strideW};
  // oneDNN counts dilation from 0 (dense window), the dialect from 1.
  d.dilates = {g.dilationH - 1, g.dilationW - 1};
  d.paddingL = {g.padH, g.padW};
  d.paddingR = {paddingRightFor(g.H, g.OH, (g.KH - 1) * g.dilationH + 1, g.strideH, g.padH),
                paddingRightFor(g.W, g.OW, (g.KW - 1) * g.dilationW + 1, g.strideW, g.padW)};
  return d;
}

/// A ReLU applied to the accumulator before the store (oneDNN's post-op): dlc-fuse's
/// conv2d + relu epilogue in one pass over the output.
dnnl::primitive_attr reluEpilogue(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  return attr;
}

dnnl::convolution_forward::primitive_desc forwardPd(const ConvDescs &d, prop_kind kind,
                                                    bool relu = false) {
  dnnl::convolution_forward::desc desc(kind, algorithm::convolution_direct, d.srcAny, d.weightsAny,
                                       d.bias, d.dstAny, d.strides, d.dilates, d.paddingL,
                                       d.paddingR);
  return {desc, reluEpilogue(relu), threadEngine()};
}

/// The candidate builds to time: DLC_ONEDNN_LAYOUT=plain or =blocked forces one (for
/// measurements), anything else lets the timing choose. With a blocked activation only
/// oneDNN's choice of weights layout is a candidate: its blocked kernels want blocked
/// weights, and with plain ones it falls back to a reference loop (seconds per call).
template <typename Build>
std::vector<std::function<void(CachedKernel &)>> candidates(const Conv2DGeometry &g,
                                                            Build build) {
  static const std::string forced = [] {
    const char *value = std::getenv("DLC_ONEDNN_LAYOUT");
    return std::string(value ? value : "");
  }();
  if (g.inputLayout != Layout::plain || g.outputLayout != Layout::plain)
    return {build(true)};
  if (forced == "plain")
    return {build(false)};
  if (forced == "blocked")
    return {build(true)};
  return {build(false), build(true)};
}

std::string convKey(const char *op, const Conv2DGeometry &g, bool withBias) {
  return geometryKey(op, {g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.OH, g.OW, g.strideH, g.strideW,
                          g.padH, g.padW, g.dilationH, g.dilationW, g.groups, withBias,
                          int64_t(g.inputLayout), int64_t(g.outputLayout)});
}

} // namespace

void conv2d_forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b,
                    float *y, bool relu) {
  const bool withBias = b != nullptr;
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, withBias, blocked);
      // oneDNN's plain-layout convolutions lose their fast path with a post-op, so there
      // the ReLU is a second primitive, in place; blocked ones take it as a post-op.
      const bool postOp = relu && (blocked || g.outputLayout != Layout::plain);
      auto pd = forwardPd(d, prop_kind::forward_inference, postOp);
      CachedKernel::Args args;
      args[DNNL_ARG_SRC] = k.userInputAs(d.src, pd.src_desc());
      args[DNNL_ARG_WEIGHTS] = k.userInputAs(d.weights, pd.weights_desc());
      if (withBias)
        args[DNNL_ARG_BIAS] = k.bindUserBuffer(d.bias);
      dnnl::memory dst = k.userOutputAs(d.dst, pd.dst_desc());
      args[DNNL_ARG_DST] = dst;
      k.addStep(dnnl::convolution_forward(pd), std::move(args));
      if (relu && !postOp) {
        dnnl::eltwise_forward::desc reluDesc(prop_kind::forward_inference,
                                             algorithm::eltwise_relu, pd.dst_desc(), 0.f, 0.f);
        k.addStep(dnnl::eltwise_forward({reluDesc, threadEngine()}),
                  {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
      }
      k.finishOutputs();
    };
  };
  std::string plainKey = convKey("conv2d_forward", g, withBias);
  std::string key = relu ? convKey("conv2d_forward_relu", g, withBias) : plainKey;
  if (withBias)
    cachedFastestKernel(key, candidates(g, build), {x, w, b, y}, plainKey).run({x, w, b, y});
  else
    cachedFastestKernel(key, candidates(g, build), {x, w, y}, plainKey).run({x, w, y});
}

void conv2d_backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx) {
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, false, blocked);
      dnnl::convolution_backward_data::desc desc(algorithm::convolution_direct, d.srcAny,
                                                 d.weightsAny, d.dstAny, d.strides, d.dilates,
                                                 d.paddingL, d.paddingR);
      dnnl::convolution_backward_data::primitive_desc pd(desc, threadEngine(),
                                                         forwardPd(d, prop_kind::forward_training));
      CachedKernel::Args args;
      args[DNNL_ARG_DIFF_DST] = k.userInputAs(d.dst, pd.diff_dst_desc());
      args[DNNL_ARG_WEIGHTS] = k.userInputAs(d.weights, pd.weights_desc());
      args[DNNL_ARG_DIFF_SRC] = k.userOutputAs(d.src, pd.diff_src_desc());
      k.addStep(dnnl::convolution_backward_data(pd), std::move(args));
      k.finishOutputs();
    };
  };
  cachedFastestKernel(convKey("conv2d_backward_data", g, false), candidates(g, build), {dy, w, dx})
      .run({dy, w, dx});
}

void conv2d_backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                            float *db) {
  const bool withBias = db != nullptr;
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, withBias, blocked);
      dnnl::convolution_backward_weights::desc desc(algorithm::convolution_direct, d.srcAny,
                                                    d.weightsAny, d.bias, d.dstAny, d.strides,
                                                    d.dilates, d.paddingL, d.paddingR);
      dnnl::convolution_backward_weights::primitive_desc pd(
          desc, threadEngine(), forwardPd(d, prop_kind::forward_training));
      CachedKernel::Args args;
      args[DNNL_ARG_DIFF_DST] = k.userInputAs(d.dst, pd.diff_dst_desc());
      args[DNNL_ARG_SRC] = k.userInputAs(d.src, pd.src_desc());
      args[DNNL_ARG_DIFF_WEIGHTS] = k.userOutputAs(d.weights, pd.diff_weights_desc());
      if (withBias)
        args[DNNL_ARG_DIFF_BIAS] = k.bindUserBuffer(d.bias);
      k.addStep(dnnl::convolution_backward_weights(pd), std::move(args));
      k.finishOutputs();
    };
  };
  std::string key = convKey("conv2d_backward_filter", g, withBias);
  if (withBias)
    cachedFastestKernel(key, candidates(g, build), {dy, x, dw, db}).run({dy, x, dw, db});
  else
    cachedFastestKernel(key, candidates(g, build), {dy, x, dw}).run({dy, x, dw});
}

void reorder_layout(int64_t N, int64_t C, int64_t H, int64_t W, Layout from, Layout to,
                    const float *src, float *dst) {
  CachedKernel &kernel = cachedKernel(
      geometryKey("reorder_layout", {N, C, H, W, int64_t(from), int64_t(to)}),
      [&](CachedKernel &k) {
        dnnl::memory in = k.bindUserBuffer(f32Desc({N, C, H, W}, activationTag(from))),
                     out = k.bindUserBuffer(f32Desc({N, C, H, W}, activationTag(to)));
        k.addStep(dnnl::reorder(in, out), {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}});
      });
  kernel.run({src, dst});
}

} // namespace dlc::cpu_kernels::onednn
