//===- OneDNNPool.cpp - 2-D average pooling forward and backward with oneDNN ---===//
//
// (Max pooling is dlc's own, MaxPoolKernels.cpp: faster on plain NCHW, see there.)
//
// Ceil mode reaches oneDNN as a larger right padding (see paddingRightFor). That extra
// padding is harmless for average pooling that excludes padding. For count_include_pad,
// oneDNN's pooling_avg_include_padding divides by kernelH*kernelW, overhang included,
// while MXNet, PyTorch and the reference clip a ceil-mode window's divisor at H+pad: the
// windows that run past it are rescaled here (forward: their means; backward: dy first).
//
// The dialect's ceil rule can also add a last output row (column) whose window starts
// past the input, inside padding and overhang only (H=5, kernel 2, stride 2, pad 1).
// oneDNN rejects such an average window, so
// the primitives run on the windows that do touch the input, writing through a strided
// view of the caller's buffer, and the empty row/column is zeroed here: the reference
// defines an empty window as 0 with no gradient.
//
//===----------------------------------------------------------------------===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::onednn {

using namespace detail;
using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;

namespace {

// Output rows (or columns) whose window touches the input. Only the last one can miss
// it: the one before starts below in + pad - kernel, which is < in because the dialect
// keeps pad < kernel.
int64_t nonEmptyWindows(int64_t in, int64_t out, int64_t stride, int64_t pad) {
  return (out - 1) * stride - pad >= in ? out - 1 : out;
}

// The memory layouts and window parameters of one pooling, as oneDNN wants them.
struct PoolDescs {
  int64_t rows, cols; // output rows and columns given to oneDNN (non-empty windows)
  memory::desc src;
  // The caller's (N, C, OH, OW) buffer seen as (N, C, rows, cols); strided when an
  // empty last row or column is left out.
  memory::desc dst;
  memory::dims strides, kernel, paddingL, paddingR;
};

PoolDescs poolDescs(const Pool2DGeometry &g) {
  PoolDescs d;
  d.rows = nonEmptyWindows(g.H, g.OH, g.strideH, g.padH);
  d.cols = nonEmptyWindows(g.W, g.OW, g.strideW, g.padW);
  d.src = f32Desc({g.N, g.C, g.H, g.W}, tag::nchw);
  d.dst = d.rows == g.OH && d.cols == g.OW
              ? f32Desc({g.N, g.C, g.OH, g.OW}, tag::nchw)
              : memory::desc({g.N, g.C, d.rows, d.cols}, memory::data_type::f32,
                             {g.C * g.OH * g.OW, g.OH * g.OW, g.OW, 1});
  d.strides = {g.strideH, g.strideW};
  d.kernel = {g.kernelH, g.kernelW};
  d.paddingL = {g.padH, g.padW};
  d.paddingR = {paddingRightFor(g.H, d.rows, g.kernelH, g.strideH, g.padH),
                paddingRightFor(g.W, d.cols, g.kernelW, g.strideW, g.padW)};
  return d;
}

// Writes 0 to the outputs of empty windows (the last row or column when its window
// misses the input); oneDNN never sees them.
void zeroEmptyWindows(const Pool2DGeometry &g, float *y) {
  const bool emptyRow = nonEmptyWindows(g.H, g.OH, g.strideH, g.padH) < g.OH;
  const bool emptyCol = nonEmptyWindows(g.W, g.OW, g.strideW, g.padW) < g.OW;
  if (!emptyRow && !emptyCol)
    return;
  for (int64_t plane = 0; plane < g.N * g.C; ++plane) {
    float *out = y + plane * g.OH * g.OW;
    if (emptyRow)
      std::fill(out + (g.OH - 1) * g.OW, out + g.OH * g.OW, 0.0f);
    if (emptyCol)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        out[oh * g.OW + g.OW - 1] = 0.0f;
  }
}

dnnl::pooling_forward::primitive_desc forwardPd(const PoolDescs &d, prop_kind kind,
                                                algorithm alg) {
  dnnl::pooling_forward::desc desc(kind, alg, d.src, d.dst, d.strides, d.kernel, d.paddingL,
                                   d.paddingR);
  return {desc, threadEngine()};
}

// Per output index along one axis, kernel / (the window's part inside the padded input):
// what turns oneDNN's include-padding mean into the clipped one. Empty when no window
// runs past the padding.
std::vector<float> overhangFactors(int64_t extent, int64_t out, int64_t kernel, int64_t stride,
                                   int64_t pad) {
  std::vector<float> factors(size_t(out), 1.0f);
  bool any = false;
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * stride - pad;
    int64_t inside = std::min(start + kernel, extent + pad) - start;
    if (inside < kernel && inside > 0) {
      factors[size_t(o)] = float(double(kernel) / double(inside));
      any = true;
    }
  }
  return any ? factors : std::vector<float>{};
}

// Multiplies the (N, C, OH, OW) `values` of windows that run past the padded input by
// their factor; returns false (and leaves them) when there is none.
bool scaleOverhangingWindows(const Pool2DGeometry &g, float *values) {
  std::vector<float> rows = overhangFactors(g.H, g.OH, g.kernelH, g.strideH, g.padH);
  std::vector<float> cols = overhangFactors(g.W, g.OW, g.kernelW, g.strideW, g.padW);
  if (rows.empty() && cols.empty())
    return false;
  rows.resize(size_t(g.OH), 1.0f);
  cols.resize(size_t(g.OW), 1.0f);
  for (int64_t plane = 0; plane < g.N * g.C; ++plane)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow)
        if (rows[size_t(oh)] != 1.0f || cols[size_t(ow)] != 1.0f)
          values[(plane * g.OH + oh) * g.OW + ow] *= rows[size_t(oh)] * cols[size_t(ow)];
  return true;
}

algorithm avgAlgorithm(bool countIncludePad) {
  return countIncludePad ? algorithm::pooling_avg_include_padding
                         : algorithm::pooling_avg_exclude_padding;
}

std::string poolKey(const char *op, const Pool2DGeometry &g, algorithm alg) {
  return geometryKey(op, {g.N, g.C, g.H, g.W, g.OH, g.OW, g.kernelH, g.kernelW, g.strideH,
                          g.strideW, g.padH, g.padW, int64_t(alg)});
}

// Forward pooling of any algorithm, x -> y.
void poolForward(const Pool2DGeometry &g, algorithm alg, const float *x, float *y) {
  CachedKernel &kernel = cachedKernel(poolKey("pool2d_forward", g, alg), [&](CachedKernel &k) {
    PoolDescs d = poolDescs(g);
    CachedKernel::Args args;
    args[DNNL_ARG_SRC] = k.bindUserBuffer(d.src);
    args[DNNL_ARG_DST] = k.bindUserBuffer(d.dst);
    k.addStep(dnnl::pooling_forward(forwardPd(d, prop_kind::forward_inference, alg)),
              std::move(args));
  });
  kernel.run({x, y});
  zeroEmptyWindows(g, y);
}

} // namespace

void avg_pool2d_forward(const Pool2DGeometry &g, bool countIncludePad, const float *x,
                        float *y) {
  poolForward(g, avgAlgorithm(countIncludePad), x, y);
  if (countIncludePad)
    scaleOverhangingWindows(g, y);
}

void avg_pool2d_backward(const Pool2DGeometry &g, bool countIncludePad, const float *dy,
                         float *dx) {
  const algorithm alg = avgAlgorithm(countIncludePad);
  CachedKernel &kernel =
      cachedKernel(poolKey("avg_pool2d_backward", g, alg), [&](CachedKernel &k) {
        PoolDescs d = poolDescs(g);
        dnnl::pooling_backward::desc desc(alg, d.src, d.dst, d.strides, d.kernel,
                                          d.paddingL, d.paddingR);
        dnnl::pooling_backward::primitive_desc pd(
            desc, threadEngine(), forwardPd(d, prop_kind::forward_training, alg));
        CachedKernel::Args args;
        args[DNNL_ARG_DIFF_DST] = k.bindUserBuffer(d.dst);
        args[DNNL_ARG_DIFF_SRC] = k.bindUserBuffer(d.src);
        k.addStep(dnnl::pooling_backward(pd), std::move(args));
      });
  if (countIncludePad) {
    // Windows past the padded input spread dy over fewer positions than oneDNN divides
    // by: their dy is scaled up first, on a copy.
    std::vector<float> scaled(dy, dy + g.N * g.C * g.OH * g.OW);
    if (scaleOverhangingWindows(g, scaled.data())) {
      kernel.run({scaled.data(), dx});
      return;
    }
  }
  kernel.run({dy, dx});
}

} // namespace dlc::cpu_kernels::onednn
