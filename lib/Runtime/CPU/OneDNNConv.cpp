//===- OneDNNConv.cpp - 2-D convolution forward and backward with oneDNN ===//
//
// Activations arrive and leave in the layouts the dispatcher chose (NCHW, or a
// blocked nChw16c or nChw8c where the channels allow; weights are always OIHW). Two builds are timed at first use:
// the primitive on those layouts directly, and the primitive on the layouts oneDNN
// prefers (format_tag::any) with reorders around it. A compiled program may ask for
// Winograd (the op's `algorithm`, chosen by dlc-choose-conv-algorithms); where oneDNN
// has no Winograd kernel for the shape or this CPU, the direct one runs, so a model
// file compiled on one machine runs on every other. A Winograd forward runs oneDNN's
// inference kernel where its step keeps the weights transformed (a memo), its training
// kernel, which transforms them itself, elsewhere (forwardKind); where oneDNN has none
// (AVX2), dlc's own F(4x4, 3x3) (WinogradAvx2.h) where it applies, in all three
// directions. 2x2 windows asked for
// Winograd run dlc's own kernels in all three directions (Winograd2x2.h).
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"
#include "dlc/Runtime/CPU/Winograd2x2.h"
#include "dlc/Runtime/CPU/WinogradAvx2.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

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

dnnl::convolution_forward::primitive_desc forwardPd(const ConvDescs &d, prop_kind kind,
                                                    algorithm alg, ConvEpilogue epilogue = {}) {
  dnnl::convolution_forward::desc desc(kind, alg, d.srcAny, d.weightsAny, d.bias, d.dstAny,
                                       d.strides, d.dilates, d.paddingL, d.paddingR);
  return {desc,
          epilogue.silu      ? swishEpilogue()
          : epilogue.cap > 0 ? clipEpilogue(0.f, epilogue.cap)
                             : reluEpilogue(epilogue.relu),
          threadEngine()};
}

algorithm onednnAlgorithm(const Conv2DGeometry &g) {
  return g.algorithm == op_enums::ConvAlgorithm::winograd ? algorithm::convolution_winograd
                                                          : algorithm::convolution_direct;
}

/// `g` as it will run: asked for Winograd where oneDNN has no Winograd kernel for this
/// shape, pass and CPU (`tryWinograd` throws), it is the direct convolution, with the
/// direct one's cache key and candidate builds, so it computes the very same bits.
/// Checked once per shape and pass (`key`).
template <typename TryWinograd>
Conv2DGeometry runnable(Conv2DGeometry g, const std::string &key, TryWinograd tryWinograd) {
  if (g.algorithm != op_enums::ConvAlgorithm::winograd)
    return g;
  static std::mutex mutex;
  static std::unordered_map<std::string, bool> available;
  std::lock_guard<std::mutex> lock(mutex);
  auto known = available.find(key);
  if (known == available.end()) {
    bool has = true;
    try {
      tryWinograd();
    } catch (const dnnl::error &) {
      has = false; // unimplemented for this shape or CPU
    }
    known = available.emplace(key, has).first;
  }
  if (!known->second)
    g.algorithm = op_enums::ConvAlgorithm::direct;
  return g;
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
  // Winograd kernels work on oneDNN's own layouts only.
  if (g.inputLayout != Layout::plain || g.outputLayout != Layout::plain ||
      g.algorithm == op_enums::ConvAlgorithm::winograd)
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
                          int64_t(g.inputLayout), int64_t(g.outputLayout),
                          int64_t(g.algorithm)});
}

} // namespace

namespace {

dnnl::convolution_backward_data::primitive_desc backwardDataPd(const ConvDescs &d,
                                                               algorithm alg) {
  dnnl::convolution_backward_data::desc desc(alg, d.srcAny, d.weightsAny, d.dstAny, d.strides,
                                             d.dilates, d.paddingL, d.paddingR);
  return {desc, threadEngine(), forwardPd(d, prop_kind::forward_training, alg)};
}

dnnl::convolution_backward_weights::primitive_desc backwardFilterPd(const ConvDescs &d,
                                                                    algorithm alg) {
  dnnl::convolution_backward_weights::desc desc(alg, d.srcAny, d.weightsAny, d.bias, d.dstAny,
                                                d.strides, d.dilates, d.paddingL, d.paddingR);
  return {desc, threadEngine(), forwardPd(d, prop_kind::forward_training, alg)};
}

bool isReferenceLoop(const dnnl::primitive_desc_base &pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

/// `makePd(d)`, unless oneDNN has only its reference loop for `d`'s layouts and a real
/// kernel once it may choose every layout: then that one, and `d` says so (the callers
/// reorder from their layouts into `d`'s). oneDNN's blocked backward-weights kernels
/// refuse a 3x3 window with padding 1 over a 1x1 image (where ResNets arrive from 32x32
/// inputs), and its reference loop took 70-140 ms for 9.4 million multiply-accumulates
/// there; with its own layouts oneDNN runs a GEMM-based kernel.
template <typename MakePd>
auto avoidingReferenceLoop(ConvDescs &d, MakePd makePd) {
  auto pd = makePd(d);
  if (!isReferenceLoop(pd))
    return pd;
  ConvDescs free = d;
  free.srcAny = f32Desc(d.src.dims(), tag::any);
  free.weightsAny = f32Desc(d.weights.dims(), tag::any);
  free.dstAny = f32Desc(d.dst.dims(), tag::any);
  auto alternative = makePd(free);
  if (isReferenceLoop(alternative))
    return pd;
  d = free;
  return alternative;
}

/// The forward pass's kind. A Winograd convolution whose weights a step keeps prepared
/// (a memo) runs oneDNN's inference kernel, on weights transformed once into its own
/// format; without a memo (eager calls, training) the training kernel, which takes the
/// weights blocked and transforms them inside, in parallel: oneDNN's reorder into the
/// inference format costs 1.5-130 ms per call on ResNet-50's layers. Direct
/// convolutions run the same kernel either way.
prop_kind forwardKind(const Conv2DGeometry &g, const WeightsMemo &memo) {
  return g.algorithm == op_enums::ConvAlgorithm::winograd && !memo.memo
             ? prop_kind::forward_training
             : prop_kind::forward_inference;
}

/// The cache key of a forward convolution: its epilogue and, for a Winograd one that
/// transforms its weights on each call, that kind.
std::string forwardKey(const Conv2DGeometry &g, bool withBias, ConvEpilogue epilogue,
                       prop_kind kind) {
  std::string name = epilogue.silu    ? "conv2d_forward_silu"
                     : !epilogue.relu   ? "conv2d_forward"
                     : epilogue.cap > 0 ? "conv2d_forward_relu_cap" + std::to_string(epilogue.cap)
                                        : "conv2d_forward_relu";
  if (kind == prop_kind::forward_training)
    name += "_transforming";
  return convKey(name.c_str(), g, withBias);
}

/// A forward kernel this thread has resolved, with everything that chose it: a
/// compiled program calls the same few convolutions on every run, and finding one here
/// skips building its cache keys (a few microseconds a call, a tenth of a batch-1
/// Fashion-MNIST prediction's three convolutions).
struct ResolvedForward {
  Conv2DGeometry g;
  bool withBias;
  ConvEpilogue epilogue;
  bool kept; // weights kept in a memo (forwardKind)
  CachedKernel *kernel;
};

bool sameConvolution(const Conv2DGeometry &a, const Conv2DGeometry &b) {
  auto fields = [](const Conv2DGeometry &g) {
    return std::tie(g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.OH, g.OW, g.strideH, g.strideW,
                    g.padH, g.padW, g.dilationH, g.dilationW, g.groups, g.inputLayout,
                    g.outputLayout, g.algorithm);
  };
  return fields(a) == fields(b);
}

/// The calling thread's resolved forwards (the kernels live in its primitive cache,
/// which never drops one). A few dozen shapes at most are kept; others take the keys.
std::vector<ResolvedForward> &resolvedForwards() {
  thread_local std::vector<ResolvedForward> resolved;
  return resolved;
}
constexpr size_t kResolvedForwards = 64;

CachedKernel *findResolved(const Conv2DGeometry &g, bool withBias, ConvEpilogue epilogue,
                           bool kept) {
  for (const ResolvedForward &r : resolvedForwards())
    if (r.withBias == withBias && r.kept == kept && r.epilogue.relu == epilogue.relu &&
        r.epilogue.cap == epilogue.cap && r.epilogue.silu == epilogue.silu &&
        sameConvolution(r.g, g))
      return r.kernel;
  return nullptr;
}

} // namespace

void conv2d_forward(const Conv2DGeometry &asked, const float *x, const float *w, const float *b,
                    float *y, ConvEpilogue epilogue, const WeightsMemo &memo) {
  // oneDNN has no Winograd kernel for 2x2 windows; dlc's own computes them.
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      winograd_2x2::applies(asked, epilogue))
    return winograd_2x2::forward(asked, x, w, b, y, epilogue, memo);
  const bool kept = memo.memo != nullptr;
  if (CachedKernel *known = findResolved(asked, b != nullptr, epilogue, kept)) {
    if (b)
      known->run({x, w, b, y}, memo);
    else
      known->run({x, w, y}, memo);
    return;
  }
  const bool relu = epilogue.any(); // any epilogue
  const bool withBias = b != nullptr;
  const prop_kind kind = forwardKind(asked, memo);
  // oneDNN's plain-layout convolutions lose their fast path with a post-op, so there
  // the ReLU is a second primitive, in place; blocked ones take it as a post-op.
  auto postOp = [&](const Conv2DGeometry &g, bool blocked) {
    return relu && (blocked || g.outputLayout != Layout::plain);
  };
  auto fusedEpilogue = [&](bool fused) { return fused ? epilogue : ConvEpilogue(); };
  const Conv2DGeometry g = runnable(asked, forwardKey(asked, withBias, epilogue, kind), [&] {
    forwardPd(convDescs(asked, withBias, true), kind, algorithm::convolution_winograd,
              fusedEpilogue(postOp(asked, true)));
  });
  // Where oneDNN has no Winograd kernel (CPUs without AVX-512), dlc's own computes the
  // shapes it wins on.
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      g.algorithm == op_enums::ConvAlgorithm::direct && winograd_avx2::applies(asked, epilogue))
    return winograd_avx2::forward(asked, x, w, b, y, epilogue, memo);
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, withBias, blocked);
      const bool fused = postOp(g, blocked);
      auto pd = forwardPd(d, forwardKind(g, memo), onednnAlgorithm(g), fusedEpilogue(fused));
      CachedKernel::Args args;
      args[DNNL_ARG_SRC] = k.userInputAs(d.src, pd.src_desc());
      args[DNNL_ARG_WEIGHTS] = k.memoInputAs(d.weights, pd.weights_desc());
      if (withBias)
        args[DNNL_ARG_BIAS] = k.bindUserBuffer(d.bias);
      dnnl::memory dst = k.userOutputAs(d.dst, pd.dst_desc());
      args[DNNL_ARG_DST] = dst;
      k.addStep(dnnl::convolution_forward(pd), std::move(args));
      if (relu && !fused) {
        bool capped = epilogue.cap > 0;
        dnnl::eltwise_forward::desc reluDesc(
            prop_kind::forward_inference,
            epilogue.silu ? algorithm::eltwise_swish
            : capped      ? algorithm::eltwise_clip
                          : algorithm::eltwise_relu,
            pd.dst_desc(), epilogue.silu ? 1.f : 0.f, capped ? epilogue.cap : 0.f);
        k.addStep(dnnl::eltwise_forward({reluDesc, threadEngine()}),
                  {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
      }
      k.finishOutputs();
    };
  };
  // A direct convolution that fell back from Winograd is the direct one, keys and all.
  const prop_kind ran = forwardKind(g, memo);
  std::string plainKey = forwardKey(g, withBias, ConvEpilogue(), ran);
  std::string key = relu ? forwardKey(g, withBias, epilogue, ran) : plainKey;
  CachedKernel &kernel =
      withBias ? cachedFastestKernel(key, candidates(g, build), {x, w, b, y}, plainKey)
               : cachedFastestKernel(key, candidates(g, build), {x, w, y}, plainKey);
  if (resolvedForwards().size() < kResolvedForwards)
    resolvedForwards().push_back({asked, withBias, epilogue, kept, &kernel});
  if (withBias)
    kernel.run({x, w, b, y}, memo);
  else
    kernel.run({x, w, y}, memo);
}

void conv2d_backward_data(const Conv2DGeometry &asked, const float *dy, const float *w,
                          float *dx) {
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      winograd_2x2::appliesToBackwardData(asked))
    return winograd_2x2::backward_data(asked, dy, w, dx);
  const Conv2DGeometry g = runnable(asked, convKey("conv2d_backward_data", asked, false), [&] {
    backwardDataPd(convDescs(asked, false, true), algorithm::convolution_winograd);
  });
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      g.algorithm == op_enums::ConvAlgorithm::direct &&
      winograd_avx2::appliesToBackwardData(asked))
    return winograd_avx2::backward_data(asked, dy, w, dx);
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, false, blocked);
      auto pd = avoidingReferenceLoop(
          d, [&](const ConvDescs &descs) { return backwardDataPd(descs, onednnAlgorithm(g)); });
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

void conv2d_backward_filter(const Conv2DGeometry &asked, const float *dy, const float *x,
                            float *dw, float *db) {
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      winograd_2x2::appliesToBackwardFilter(asked))
    return winograd_2x2::backward_filter(asked, dy, x, dw, db);
  const bool withBias = db != nullptr;
  const Conv2DGeometry g =
      runnable(asked, convKey("conv2d_backward_filter", asked, withBias), [&] {
        backwardFilterPd(convDescs(asked, withBias, true), algorithm::convolution_winograd);
      });
  if (asked.algorithm == op_enums::ConvAlgorithm::winograd &&
      g.algorithm == op_enums::ConvAlgorithm::direct &&
      winograd_avx2::appliesToBackwardFilter(asked))
    return winograd_avx2::backward_filter(asked, dy, x, dw, db);
  auto build = [&](bool blocked) {
    return [&, blocked](CachedKernel &k) {
      ConvDescs d = convDescs(g, withBias, blocked);
      auto pd = avoidingReferenceLoop(
          d, [&](const ConvDescs &descs) { return backwardFilterPd(descs, onednnAlgorithm(g)); });
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
