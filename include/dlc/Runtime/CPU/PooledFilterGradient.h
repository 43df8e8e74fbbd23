//===- PooledFilterGradient.h - a weight gradient through its max pooling's codes ===//
//
// A convolution block (convolution, ReLU, max pooling) of a compiled training step runs
// its backward as a max_pool2d_backward_conv2d region, which writes the activation's
// gradient (as large as the convolution's output: 66 MB for the LeafNetwork's first
// block at batch 32) and reads it back for the filter gradient. Yet that gradient is
// nonzero only at the window maxima the pooling's codes name, a quarter of the positions
// or fewer, so the weight gradient is a sum over the pooled outputs instead:
//   dw[o, c, kh, kw] = sum over (n, ph, pw) passing its code of
//                      dy[n, o, ph, pw] * x[n, c, oh + kh - pad, ow + kw - pad]
// with (oh, ow) the convolution output the code's tap names, and db[o] the sum of the
// passing dy: about a quarter of the direct weight gradient's multiply-adds. Two forms:
// a network's input (x plain, few channels; PooledFilterGradient.cpp) and an activation
// inside the network (x blocked; PooledFilterGradientBlocked.cpp). The region's data
// gradient, where it has one, still reads the activation's gradient.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H
#define DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::pooled_filter_gradient {

/// Whether `backward` computes the weight gradient of the convolution `conv` whose
/// output the max pooling `pool` read: a 2x2 or 3x3 window, stride 1, no dilation, one
/// group, and either x plain on an AVX-512 CPU with the activation (conv's output, pool's
/// input) in nChw16c and pooling windows of at most 4 rows whose taps and the window's
/// columns span at most 8 input columns (pool.kernelW + conv.KW - 1 <= 8), or x and the
/// activation blocked (nChw16c or nChw8c, on every CPU) and a pooling with at most half
/// as many outputs as inputs.
bool applies(const Conv2DGeometry &conv, const Pool2DGeometry &pool);

/// dw (O, C, KH, KW) and db (O, or nullptr) of conv2d(x, w) + b followed (with `relu`)
/// by a ReLU and by the max pooling `pool` whose forward wrote `codes`
/// (max_pool2d_indexed), given that pooling's output gradient dy: the same gradient as
/// max_pool2d_indexed_backward then conv2d_backward_filter, summed in another order.
/// dy and codes in pool.layout; x in conv.inputLayout.
void backward(const Conv2DGeometry &conv, const Pool2DGeometry &pool, const uint8_t *codes,
              const float *dy, const float *x, bool relu, float *dw, float *db);

} // namespace dlc::cpu_kernels::pooled_filter_gradient

#endif // DLC_RUNTIME_CPU_POOLEDFILTERGRADIENT_H
