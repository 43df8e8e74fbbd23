//===- PoolWindows.h - per-element pooling math of the GPU kernels -----------===//
//
// What one GPU thread computes in PoolKernels.cu, as functions that compile for the host
// too: unittests/GPU/GpuKernelMathTest.cpp runs them over every element on the CPU and
// compares with the reference kernels, so the index arithmetic is checked on machines
// without a GPU. Windows are visited in the reference's order and sums are in double, so
// the results are the reference's bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H
#define DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstdint>

#ifdef __CUDACC__
#define DLC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DLC_HOST_DEVICE inline
#endif

namespace dlc::cuda::pool {

using cpu_kernels::Pool2DGeometry;

/// The windows along one axis that cover input coordinate i: [first, last], empty when
/// first > last. Window o covers [o*stride - pad, o*stride - pad + kernel - 1].
DLC_HOST_DEVICE void covering_windows(int64_t i, int64_t kernel, int64_t stride, int64_t pad,
                                      int64_t outputs, int64_t &first, int64_t &last) {
  int64_t low = i + pad - kernel + 1; // the smallest o*stride that still reaches i
  first = low <= 0 ? 0 : (low + stride - 1) / stride;
  last = (i + pad) / stride;
  if (last > outputs - 1)
    last = outputs - 1;
}

/// Flat index in the (H, W) plane of the first maximum of window (oh, ow), row-major;
/// -1 when the window covers no input (possible in ceil mode).
DLC_HOST_DEVICE int64_t first_max(const Pool2DGeometry &g, const float *plane, int64_t oh,
                                  int64_t ow) {
  int64_t best = -1;
  float bestValue = 0.f;
  for (int64_t kh = 0; kh < g.kernelH; ++kh) {
    int64_t ih = oh * g.strideH - g.padH + kh;
    if (ih < 0 || ih >= g.H)
      continue;
    for (int64_t kw = 0; kw < g.kernelW; ++kw) {
      int64_t iw = ow * g.strideW - g.padW + kw;
      if (iw < 0 || iw >= g.W)
        continue;
      float v = plane[ih * g.W + iw];
      // Strictly greater: a later equal value never displaces the first maximum.
      if (best < 0 || v > bestValue) {
        best = ih * g.W + iw;
        bestValue = v;
      }
    }
  }
  return best;
}

/// The number average pooling divides window (oh, ow) by.
DLC_HOST_DEVICE int64_t avg_divisor(const Pool2DGeometry &g, bool includePad, int64_t oh,
                                    int64_t ow) {
  if (includePad)
    return g.kernelH * g.kernelW;
  int64_t rows = 0, cols = 0;
  for (int64_t kh = 0; kh < g.kernelH; ++kh) {
    int64_t ih = oh * g.strideH - g.padH + kh;
    rows += ih >= 0 && ih < g.H;
  }
  for (int64_t kw = 0; kw < g.kernelW; ++kw) {
    int64_t iw = ow * g.strideW - g.padW + kw;
    cols += iw >= 0 && iw < g.W;
  }
  return rows * cols;
}

/// Output element t of y (N,C,OH,OW) = max_pool(x); an empty window gives 0.
DLC_HOST_DEVICE float max_output(const Pool2DGeometry &g, const float *x, int64_t t) {
  int64_t planeOut = g.OH * g.OW, nc = t / planeOut, o = t % planeOut;
  const float *plane = x + nc * g.H * g.W;
  int64_t best = first_max(g, plane, o / g.OW, o % g.OW);
  return best < 0 ? 0.f : plane[best];
}

/// The plane position window t takes its maximum from (-1 for none).
DLC_HOST_DEVICE int32_t max_window_argmax(const Pool2DGeometry &g, const float *x, int64_t t) {
  int64_t planeOut = g.OH * g.OW, nc = t / planeOut, o = t % planeOut;
  return int32_t(first_max(g, x + nc * g.H * g.W, o / g.OW, o % g.OW));
}

/// dx at input element t (N,C,H,W): dy summed over the windows whose maximum it is,
/// given every window's argmax (max_window_argmax).
DLC_HOST_DEVICE float max_gradient(const Pool2DGeometry &g, const int32_t *argmax,
                                   const float *dy, int64_t t) {
  int64_t planeIn = g.H * g.W, planeOut = g.OH * g.OW;
  int64_t nc = t / planeIn, p = t % planeIn, ih = p / g.W, iw = p % g.W;
  int64_t oh0, oh1, ow0, ow1;
  covering_windows(ih, g.kernelH, g.strideH, g.padH, g.OH, oh0, oh1);
  covering_windows(iw, g.kernelW, g.strideW, g.padW, g.OW, ow0, ow1);
  const int32_t *planeArgmax = argmax + nc * planeOut;
  const float *planeDy = dy + nc * planeOut;
  double acc = 0;
  for (int64_t oh = oh0; oh <= oh1; ++oh)
    for (int64_t ow = ow0; ow <= ow1; ++ow)
      if (planeArgmax[oh * g.OW + ow] == p)
        acc += planeDy[oh * g.OW + ow];
  return float(acc);
}

/// Output element t of y = avg_pool(x); an empty window gives 0.
DLC_HOST_DEVICE float avg_output(const Pool2DGeometry &g, bool includePad, const float *x,
                                 int64_t t) {
  int64_t planeOut = g.OH * g.OW, nc = t / planeOut, o = t % planeOut;
  int64_t oh = o / g.OW, ow = o % g.OW;
  const float *plane = x + nc * g.H * g.W;
  double sum = 0;
  for (int64_t kh = 0; kh < g.kernelH; ++kh) {
    int64_t ih = oh * g.strideH - g.padH + kh;
    if (ih < 0 || ih >= g.H)
      continue;
    for (int64_t kw = 0; kw < g.kernelW; ++kw) {
      int64_t iw = ow * g.strideW - g.padW + kw;
      if (iw >= 0 && iw < g.W)
        sum += plane[ih * g.W + iw];
    }
  }
  int64_t divisor = avg_divisor(g, includePad, oh, ow);
  return divisor == 0 ? 0.f : float(sum / double(divisor));
}

/// dx at input element t: dy / divisor summed over the windows that cover it.
DLC_HOST_DEVICE float avg_gradient(const Pool2DGeometry &g, bool includePad, const float *dy,
                                   int64_t t) {
  int64_t planeIn = g.H * g.W, planeOut = g.OH * g.OW;
  int64_t nc = t / planeIn, p = t % planeIn, ih = p / g.W, iw = p % g.W;
  int64_t oh0, oh1, ow0, ow1;
  covering_windows(ih, g.kernelH, g.strideH, g.padH, g.OH, oh0, oh1);
  covering_windows(iw, g.kernelW, g.strideW, g.padW, g.OW, ow0, ow1);
  const float *planeDy = dy + nc * planeOut;
  double acc = 0;
  for (int64_t oh = oh0; oh <= oh1; ++oh)
    for (int64_t ow = ow0; ow <= ow1; ++ow)
      acc += double(planeDy[oh * g.OW + ow]) / double(avg_divisor(g, includePad, oh, ow));
  return float(acc);
}

} // namespace dlc::cuda::pool

#endif // DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H
