//===- OneDNNSoftmax.cpp - softmax forward with oneDNN --------------------------===//
//
// Attention's softmax runs over (batch * heads * queries) rows of keys: 12x128x128 floats
// in a BERT layer. The reference kernel computes each row in double with two exps per
// element on one thread; oneDNN's softmax_v2 (accurate: the row's maximum subtracted
// first) runs vectorized exps over the threads. Plain layouts, any axis.
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::onednn {

using namespace detail;
using dnnl::memory;

void softmax_forward(const std::vector<int64_t> &shape, int64_t axis, const float *x, float *y) {
  std::string key = geometryKey("softmax", {axis, int64_t(shape.size())});
  for (int64_t d : shape)
    key += "x" + std::to_string(d);
  CachedKernel &kernel = cachedKernel(key, [&](CachedKernel &k) {
    memory::dims dims(shape.begin(), shape.end());
    // Row-major strides: the plain layout of any rank.
    memory::dims strides(dims.size(), 1);
    for (size_t a = dims.size() - 1; a-- > 0;)
      strides[a] = strides[a + 1] * dims[a + 1];
    memory::desc md(dims, memory::data_type::f32, strides);
    dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::softmax_accurate, md, md, int(axis));
    dnnl::softmax_v2_forward::primitive_desc pd(desc, threadEngine());
    CachedKernel::Args args;
    args[DNNL_ARG_SRC] = k.bindUserBuffer(md);
    args[DNNL_ARG_DST] = k.bindUserBuffer(md);
    k.addStep(dnnl::softmax_v2_forward(pd), std::move(args));
  });
  kernel.run({x, y});
}

} // namespace dlc::cpu_kernels::onednn
