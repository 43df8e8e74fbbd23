//===- Winograd2x2.h - dlc's own Winograd convolution for 2x2 windows ---------===//
//
// oneDNN 2.6 has Winograd kernels for 3x3 windows only. The seed's LeafNetwork
// convolves with 2x2 windows, and its compiled training step spends most of its time in
// them: a convolution the compiler asked to compute by Winograd
// (dlc-choose-conv-algorithms) runs these kernels where they apply, F(3x3, 2x2) forward
// and data gradient, F(2x2, 3x3) weight gradient, and oneDNN's direct kernel elsewhere
// (OneDNNConv.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CPU_WINOGRAD2X2_H
#define DLC_RUNTIME_CPU_WINOGRAD2X2_H

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::winograd_2x2 {

/// Whether the kernel computes the forward `g` with `epilogue`: a 2x2 window, stride 1,
/// padding 0 or 1, no dilation, one group; the same blocked layout (nChw8c or nChw16c)
/// on both sides; no epilogue but the ReLU. On every CPU: AVX-512 or AVX2 code where the
/// CPU has it, portable vector code elsewhere.
bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue);

/// y = conv2d(x, w) + b (then the ReLU if `epilogue.relu`): each 3x3 output tile from the
/// 4x4 input tile under it through 16 products where the direct sum takes 36. The
/// weights' transform is kept in `memo` while its generation and the weights buffer
/// hold. x, y in g's blocked layout; w (O, C, 2, 2); b or nullptr.
void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo);

/// Whether the kernel computes the data gradient of the convolution `g` (applies'
/// conditions, without the epilogue).
bool appliesToBackwardData(const Conv2DGeometry &g);

/// dx = the gradient of conv2d(x, w) with respect to x, given dy: the forward
/// convolution of dy, padded by 1 - padding, with the window turned half a turn and
/// its channel axes swapped. dy, dx in g's blocked layout; w (O, C, 2, 2).
void backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx);

/// Whether the kernel computes the weight gradient of the convolution `g` (applies'
/// conditions, without the epilogue).
bool appliesToBackwardFilter(const Conv2DGeometry &g);

/// dw (O, C, 2, 2) and db (O, or nullptr) of conv2d(x, w) + b given dy: each 2x2 window
/// of dw the correlation of x with dy, by F(2x2, 3x3) on the 4x4 input tiles under dy's
/// 3x3 tiles, summed over the tiles before the output transform. x, dy in g's blocked
/// layout.
void backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                     float *db);

} // namespace dlc::cpu_kernels::winograd_2x2

#endif // DLC_RUNTIME_CPU_WINOGRAD2X2_H
