//===- OneDNNDense.cpp - dense (fully connected) forward and backward with oneDNN ===//
//
// MXNet's dense weight (units, in_units) is exactly oneDNN's inner-product weight in
// `oi` layout, so y = x·wᵀ + b maps onto inner_product with no transposition, and onto
// matmul with the weights read as a (in_units, units) matrix in `ba` order; the forward
// times both per shape (dense_forward).
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::onednn {

using namespace detail;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;

namespace {

// The memory layouts of one dense layer, as oneDNN wants them.
struct DenseDescs {
  memory::desc src, weights, bias, dst;
};

DenseDescs denseDescs(int64_t M, int64_t K, int64_t units, bool withBias) {
  return {f32Desc({M, K}, tag::nc), f32Desc({units, K}, tag::oi),
          // A zero descriptor tells oneDNN there is no bias.
          withBias ? f32Desc({units}, tag::x) : memory::desc(), f32Desc({M, units}, tag::nc)};
}

/// The epilogue as oneDNN's post-op: ReLU, or GELU with erf.
dnnl::primitive_attr epilogueAttr(DenseEpilogue epilogue) {
  if (epilogue.kind != DenseEpilogue::gelu)
    return reluEpilogue(epilogue.kind == DenseEpilogue::relu);
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  attr.set_post_ops(ops);
  return attr;
}

dnnl::inner_product_forward::primitive_desc forwardPd(const DenseDescs &d, prop_kind kind,
                                                      DenseEpilogue epilogue = {}) {
  dnnl::inner_product_forward::desc desc(kind, d.src, d.weights, d.bias, d.dst);
  return {desc, epilogueAttr(epilogue), threadEngine()};
}

/// Binds dense_forward's buffers (x, w, b if any, y) and adds `form`'s primitive.
void buildForward(CachedKernel &k, DenseForm form, int64_t M, int64_t K, int64_t units,
                  bool withBias, DenseEpilogue epilogue) {
  DenseDescs d = denseDescs(M, K, units, withBias);
  CachedKernel::Args args;
  if (form == DenseForm::inner_product) {
    args[DNNL_ARG_SRC] = k.bindUserBuffer(d.src);
    args[DNNL_ARG_WEIGHTS] = k.bindUserBuffer(d.weights);
    if (withBias)
      args[DNNL_ARG_BIAS] = k.bindUserBuffer(d.bias);
    args[DNNL_ARG_DST] = k.bindUserBuffer(d.dst);
    k.addStep(dnnl::inner_product_forward(forwardPd(d, prop_kind::forward_inference, epilogue)),
              std::move(args));
    return;
  }
  // y (M, units) = x (M, K) · wᵀ: w's (units, K) rows are the columns of a (K, units)
  // matrix in `ba` order, so the matmul reads the weights where they are.
  memory::desc weights = f32Desc({K, units}, tag::ba),
               bias = withBias ? f32Desc({1, units}, tag::ab) : memory::desc();
  args[DNNL_ARG_SRC] = k.bindUserBuffer(f32Desc({M, K}, tag::ab));
  args[DNNL_ARG_WEIGHTS] = k.bindUserBuffer(weights);
  if (withBias)
    args[DNNL_ARG_BIAS] = k.bindUserBuffer(bias);
  args[DNNL_ARG_DST] = k.bindUserBuffer(f32Desc({M, units}, tag::ab));
  dnnl::matmul::desc desc(f32Desc({M, K}, tag::ab), weights, bias,
                          f32Desc({M, units}, tag::ab));
  k.addStep(dnnl::matmul({desc, epilogueAttr(epilogue), threadEngine()}), std::move(args));
}

std::string forwardKey(const char *form, int64_t M, int64_t K, int64_t units, bool withBias,
                       DenseEpilogue epilogue) {
  return geometryKey(form, {M, K, units, withBias, int64_t(epilogue.kind)});
}

} // namespace

void dense_forward_as(DenseForm form, int64_t M, int64_t K, int64_t units, const float *x,
                      const float *w, const float *b, float *y, DenseEpilogue epilogue) {
  const bool withBias = b != nullptr;
  CachedKernel &kernel = cachedKernel(
      forwardKey(form == DenseForm::matmul ? "dense_forward_matmul" : "dense_forward_ip", M, K,
                 units, withBias, epilogue),
      [&](CachedKernel &k) { buildForward(k, form, M, K, units, withBias, epilogue); });
  if (withBias)
    kernel.run({x, w, b, y});
  else
    kernel.run({x, w, y});
}

// Which form is faster depends on the rows: on 2 AVX-512 cores oneDNN 2.6's inner
// product took 0.05 ms against the matmul's 0.16 for 1 x 21632 -> 100, and 1.8 against
// 0.9 ms for 32 rows (its plain-weights kernel is a GEMM that does not block well for
// them). So both are timed once per shape, and every thread keeps the choice.
void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, DenseEpilogue epilogue) {
  const bool withBias = b != nullptr;
  // Below a million multiply-accumulates both take microseconds, and timing them would
  // only pick by noise (and two processes could compute different bits): the inner
  // product then.
  constexpr int64_t kTimedWork = 1'000'000;
  std::vector<std::function<void(CachedKernel &)>> builds;
  for (DenseForm form : {DenseForm::inner_product, DenseForm::matmul})
    if (form == DenseForm::inner_product || M * K * units >= kTimedWork)
      builds.push_back(
          [=](CachedKernel &k) { buildForward(k, form, M, K, units, withBias, epilogue); });
  // One choice for the layer with and without its epilogue: an eager Dense and ReLU
  // then compute as the compiled dense + relu step does, number for number.
  CachedKernel &kernel =
      cachedFastestKernel(forwardKey("dense_forward", M, K, units, withBias, epilogue), builds,
                          withBias ? std::initializer_list<const void *>{x, w, b, y}
                                   : std::initializer_list<const void *>{x, w, y},
                          forwardKey("dense_forward", M, K, units, withBias, {}));
  if (withBias)
    kernel.run({x, w, b, y});
  else
    kernel.run({x, w, y});
}

void dense_backward(int64_t M, int64_t K, int64_t units, const float *dy, const float *x,
                    const float *w, float *dx, float *dw, float *db) {
  const bool withBias = db != nullptr;
  CachedKernel &kernel = cachedKernel(
      geometryKey("dense_backward", {M, K, units, withBias}), [&](CachedKernel &k) {
        DenseDescs d = denseDescs(M, K, units, withBias);
        auto hint = forwardPd(d, prop_kind::forward_training);
        // Both primitives read dy, so one user memory serves the two steps.
        dnnl::memory diffDst = k.bindUserBuffer(d.dst);

        dnnl::inner_product_backward_data::desc dataDesc(d.src, d.weights, d.dst);
        dnnl::inner_product_backward_data::primitive_desc dataPd(dataDesc, threadEngine(),
                                                                 hint);
        CachedKernel::Args dataArgs;
        dataArgs[DNNL_ARG_DIFF_DST] = diffDst;
        dataArgs[DNNL_ARG_WEIGHTS] = k.bindUserBuffer(d.weights);
        dataArgs[DNNL_ARG_DIFF_SRC] = k.bindUserBuffer(d.src);
        k.addStep(dnnl::inner_product_backward_data(dataPd), std::move(dataArgs));

        dnnl::inner_product_backward_weights::desc weightsDesc(d.src, d.weights, d.bias,
                                                               d.dst);
        dnnl::inner_product_backward_weights::primitive_desc weightsPd(weightsDesc,
                                                                       threadEngine(), hint);
        CachedKernel::Args weightsArgs;
        weightsArgs[DNNL_ARG_DIFF_DST] = diffDst;
        weightsArgs[DNNL_ARG_SRC] = k.bindUserBuffer(d.src);
        weightsArgs[DNNL_ARG_DIFF_WEIGHTS] = k.bindUserBuffer(d.weights);
        if (withBias)
          // oneDNN reduces dy over the rows (the minibatch) for the bias gradient.
          weightsArgs[DNNL_ARG_DIFF_BIAS] = k.bindUserBuffer(d.bias);
        k.addStep(dnnl::inner_product_backward_weights(weightsPd), std::move(weightsArgs));
      });
  // Buffers in the order the build bound them: dy, w, dx, then x, dw and db.
  if (withBias)
    kernel.run({dy, w, dx, x, dw, db});
  else
    kernel.run({dy, w, dx, x, dw});
}

} // namespace dlc::cpu_kernels::onednn
