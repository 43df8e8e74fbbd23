//===- WinogradAvx2.h - dlc's own Winograd convolution for CPUs with AVX2 -----===//
//
// oneDNN 2.6 has Winograd kernels for AVX-512 only; on CPUs with AVX2 and without
// them, a convolution the compiler asked to compute by Winograd
// (dlc-choose-conv-algorithms) runs this F(4x4, 3x3) forward, data gradient or weight
// gradient where it applies, and oneDNN's direct kernel elsewhere (OneDNNConv.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CPU_WINOGRADAVX2_H
#define DLC_RUNTIME_CPU_WINOGRADAVX2_H

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::winograd_avx2 {

/// Whether the kernel computes `g` with `epilogue` on this CPU: AVX2 and FMA; a 3x3
/// window, stride 1, padding 1, no dilation, one group; nChw8c on both sides; at least
/// 64 input and output channels (below, the transforms, 2.25 times the activations each
/// way, were not measured to pay); no epilogue but the ReLU.
bool applies(const Conv2DGeometry &g, ConvEpilogue epilogue);

/// y = conv2d(x, w) + b (then the ReLU if `epilogue.relu`), F(4x4, 3x3): each 4x4 output
/// tile from a 6x6 input tile through 36 products of (tiles x C) by (C x O) matrices
/// (one oneDNN batched matmul). The weights' transform is kept in `memo` while its
/// generation and the weights buffer hold. x, y nChw8c; w (O, C, 3, 3); b or nullptr.
void forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b, float *y,
             ConvEpilogue epilogue, const WeightsMemo &memo);

/// Whether the data gradient of `g` runs here: the forward's conditions, no epilogue.
bool appliesToBackwardData(const Conv2DGeometry &g);

/// dx = the data gradient of conv2d(x, w) for dy: the forward's passes over dy with each
/// window turned half a turn and the channel axes swapped, the weights transformed on
/// every call. dy, dx nChw8c; w (O, C, 3, 3).
void backward_data(const Conv2DGeometry &g, const float *dy, const float *w, float *dx);

/// Whether the weight gradient of `g` runs here: the forward's conditions, no epilogue.
bool appliesToBackwardFilter(const Conv2DGeometry &g);

/// dw (O, C, 3, 3) = G^T [sum over tiles of (B^T d B) . (A e A^T)] G for every input tile
/// d and output-gradient tile e (36 products of (O x tiles) by (tiles x C), oneDNN's
/// batched matmul), and db (or nullptr) dy's sum per channel. dy, x nChw8c.
void backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                     float *db);

} // namespace dlc::cpu_kernels::winograd_avx2

#endif // DLC_RUNTIME_CPU_WINOGRADAVX2_H
