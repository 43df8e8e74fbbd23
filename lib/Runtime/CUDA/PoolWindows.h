//===- PoolWindows.h - per-element pooling math of the GPU kernels -----------===//
//
// What one GPU thread computes in PoolKernels.cu, as functions that compile for the host
// too: unittests/GPU/GpuKernelMathTest.cpp runs them over every element on the CPU and
// compares with the reference kernels, so the index arithmetic is checked on machines
// without a GPU. Windows are visited in the reference's order and sums are in double, so
// the results are the reference's bit for bit.
//
// Coordinates are plane-local and 32-bit: a GPU emulates 64-bit division with a long
// instruction sequence, and these functions divide several times per element. Planes
// (H*W and OH*OW) must hold fewer than 2^31 elements; the kernels check.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H
#define DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H

#include "dlc/Core/KernelGeometry.h"

#include <cstdint>

#if defined(__CUDACC__) || defined(DLC_CUDA_EMULATION)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define DLC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DLC_HOST_DEVICE inline
#endif

namespace dlc::cuda::pool {

/// An element's value in float32, the type the functions below compare and return (the
/// kernels round results once to the tensor's type).
DLC_HOST_DEVICE float value_of(float v) { return v; }
#if defined(__CUDACC__) || defined(DLC_CUDA_EMULATION)
DLC_HOST_DEVICE float value_of(__half v) { return __half2float(v); }
DLC_HOST_DEVICE float value_of(__nv_bfloat16 v) { return __bfloat162float(v); }
#endif

/// One (H, W) -> (OH, OW) pooling plane: Pool2DGeometry without N and C, in 32 bits.
struct Plane {
  int H, W, OH, OW;
  int kernelH, kernelW, strideH, strideW, padH, padW;
};

inline Plane plane_of(const kernels::Pool2DGeometry &g) {
  return {int(g.H),       int(g.W),       int(g.OH),   int(g.OW),   int(g.kernelH),
          int(g.kernelW), int(g.strideH), int(g.strideW), int(g.padH), int(g.padW)};
}

/// The windows along one axis that cover input coordinate i: [first, last], empty when
/// first > last. Window o covers [o*stride - pad, o*stride - pad + kernel - 1].
DLC_HOST_DEVICE void covering_windows(int i, int kernel, int stride, int pad, int outputs,
                                      int &first, int &last) {
  int low = i + pad - kernel + 1; // the smallest o*stride that still reaches i
  first = low <= 0 ? 0 : (low + stride - 1) / stride;
  last = (i + pad) / stride;
  if (last > outputs - 1)
    last = outputs - 1;
}

/// Calls visit(oh, ow) for the windows that cover input (ih, iw), in row-major order (the
/// order the reference kernels meet them in, so sums come out bit-equal).
template <typename Visit>
DLC_HOST_DEVICE void for_each_covering_window(const Plane &g, int ih, int iw, Visit &&visit) {
  int oh0, oh1, ow0, ow1;
  covering_windows(ih, g.kernelH, g.strideH, g.padH, g.OH, oh0, oh1);
  covering_windows(iw, g.kernelW, g.strideW, g.padW, g.OW, ow0, ow1);
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow)
      visit(oh, ow);
}

/// Calls visit(index in the plane) for the inputs window (oh, ow) covers, row-major
/// (padding and the part of a ceil-mode window past the input are skipped).
template <typename Visit>
DLC_HOST_DEVICE void for_each_window_input(const Plane &g, int oh, int ow, Visit &&visit) {
  for (int kh = 0; kh < g.kernelH; ++kh) {
    int ih = oh * g.strideH - g.padH + kh;
    if (ih < 0 || ih >= g.H)
      continue;
    for (int kw = 0; kw < g.kernelW; ++kw) {
      int iw = ow * g.strideW - g.padW + kw;
      if (iw >= 0 && iw < g.W)
        visit(ih * g.W + iw);
    }
  }
}

/// Index in the plane of the first maximum of window (oh, ow), row-major; -1 when the
/// window covers no input (possible in ceil mode).
template <typename T>
DLC_HOST_DEVICE int first_max(const Plane &g, const T *plane, int oh, int ow) {
  int best = -1;
  float bestValue = 0.f;
  for_each_window_input(g, oh, ow, [&](int at) {
    // Strictly greater: a later equal value never displaces the first maximum.
    float v = value_of(plane[at]);
    if (best < 0 || v > bestValue) {
      best = at;
      bestValue = v;
    }
  });
  return best;
}

/// The number average pooling divides window (oh, ow) by: with count_include_pad, the
/// window's part inside the padded input (a ceil-mode window may run past it), else the
/// input elements it covers (as the CPU reference counts).
DLC_HOST_DEVICE int avg_divisor(const Plane &g, bool includePad, int oh, int ow) {
  if (includePad) {
    int top = oh * g.strideH - g.padH, left = ow * g.strideW - g.padW;
    int bottom = top + g.kernelH < g.H + g.padH ? top + g.kernelH : g.H + g.padH;
    int right = left + g.kernelW < g.W + g.padW ? left + g.kernelW : g.W + g.padW;
    return (bottom - top) * (right - left);
  }
  int rows = 0, cols = 0;
  for (int kh = 0; kh < g.kernelH; ++kh) {
    int ih = oh * g.strideH - g.padH + kh;
    rows += ih >= 0 && ih < g.H;
  }
  for (int kw = 0; kw < g.kernelW; ++kw) {
    int iw = ow * g.strideW - g.padW + kw;
    cols += iw >= 0 && iw < g.W;
  }
  return rows * cols;
}

/// y at (oh, ow) = the window's maximum; an empty window gives 0.
template <typename T>
DLC_HOST_DEVICE float max_output(const Plane &g, const T *plane, int oh, int ow) {
  int best = first_max(g, plane, oh, ow);
  return best < 0 ? 0.f : value_of(plane[best]);
}

/// dx at (ih, iw): dy summed over the windows whose maximum it is, given every window's
/// argmax (first_max) for this plane.
template <typename T>
DLC_HOST_DEVICE float max_gradient(const Plane &g, const int32_t *argmax, const T *dy, int ih,
                                   int iw) {
  int p = ih * g.W + iw;
  double acc = 0;
  for_each_covering_window(g, ih, iw, [&](int oh, int ow) {
    if (argmax[oh * g.OW + ow] == p)
      acc += value_of(dy[oh * g.OW + ow]);
  });
  return float(acc);
}

/// y at (oh, ow) = the window's mean (see avg_divisor); an empty window gives 0.
template <typename T>
DLC_HOST_DEVICE float avg_output(const Plane &g, bool includePad, const T *plane, int oh, int ow) {
  double sum = 0;
  for_each_window_input(g, oh, ow, [&](int at) { sum += value_of(plane[at]); });
  int divisor = avg_divisor(g, includePad, oh, ow);
  return divisor == 0 ? 0.f : float(sum / double(divisor));
}

/// dx at (ih, iw): dy / divisor summed over the windows that cover it.
template <typename T>
DLC_HOST_DEVICE float avg_gradient(const Plane &g, bool includePad, const T *dy, int ih, int iw) {
  double acc = 0;
  for_each_covering_window(g, ih, iw, [&](int oh, int ow) {
    acc += double(value_of(dy[oh * g.OW + ow])) / double(avg_divisor(g, includePad, oh, ow));
  });
  return float(acc);
}

} // namespace dlc::cuda::pool

#endif // DLC_LIB_RUNTIME_CUDA_POOLWINDOWS_H
