//===- PooledFilterGradient.h - a first layer's weight gradient through its pooling ===//
//
// A network's first convolution block (convolution, ReLU, max pooling over the image)
// needs only the weight gradient: no data gradient flows into the input. The compiled
// step runs it as a max_pool2d_backward_conv2d region, which writes the activation's
// gradient (as large as the convolution's output: 66 MB at the LeafNetwork's batch 32)
// and then reads it back for oneDNN's filter gradient. Yet that gradient is nonzero only
// at the window maxima the pooling's codes name, a quarter of the positions or fewer, so
// the weight gradient is a sum over the pooled outputs instead:
//   dw[o, c, kh, kw] = sum over (n, ph, pw) passing its code of
//                      dy[n, o, ph, pw] * x[n, c, oh + kh - pad, ow + kw - pad]
// with (oh, ow) the convolution output the code's tap names, and db[o] the sum of the
// passing dy. The kernel computes that from dy, the codes and x, without the
// activation's gradient (PooledFilterGradient.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H
#define DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::pooled_filter_gradient {

/// Whether `backward` computes the weight gradient of the convolution `conv` whose
/// output the max pooling `pool` read: an AVX-512 CPU; a 2x2 or 3x3 window, stride 1,
/// no dilation, one group; x plain; the activation (conv's output, pool's input) in
/// nChw16c; pooling windows of at most 4 rows whose taps and the window's columns span
/// at most 8 input columns (pool.kernelW + conv.KW - 1 <= 8).
bool applies(const Conv2DGeometry &conv, const Pool2DGeometry &pool);

/// dw (O, C, KH, KW) and db (O, or nullptr) of conv2d(x, w) + b followed (with `relu`)
/// by a ReLU and by the max pooling `pool` whose forward wrote `codes`
/// (max_pool2d_indexed), given that pooling's output gradient dy: the same gradient as
/// max_pool2d_indexed_backward then conv2d_backward_filter, summed in another order.
/// dy and codes in pool.layout; x plain.
void backward(const Conv2DGeometry &conv, const Pool2DGeometry &pool, const uint8_t *codes,
              const float *dy, const float *x, bool relu, float *dw, float *db);

} // namespace dlc::cpu_kernels::pooled_filter_gradient

#endif // DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H
