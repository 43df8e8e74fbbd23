//===- ReferenceKernels.cpp - plain-loop oracles of the CPU neural-network kernels ===//
//
// Every kernel here is the obvious loop nest over NCHW/OIHW buffers, written to be read
// and trusted rather than to be fast: the oneDNN kernels are tested against these, and
// these against finite differences. Sums run in double so that the oracle's own rounding
// stays far below the tolerance the fast kernels are held to.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/CPU/NNKernels.h"

#include "dlc/Core/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlc::cpu_kernels::ref {

namespace {

// Index of element (a, b, c, d) in a contiguous (A, B, C, D) buffer, with the leading
// extent implied.
inline int64_t at4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t B, int64_t C,
                   int64_t D) {
  return ((a * B + b) * C + c) * D + d;
}

// Input row/column read by output position `out` at window offset `k`; may lie in the
// padding (negative or >= the input extent).
inline int64_t inputCoord(int64_t out, int64_t k, int64_t stride, int64_t pad,
                          int64_t dilation) {
  return out * stride - pad + k * dilation;
}

inline bool inBounds(int64_t i, int64_t extent) { return i >= 0 && i < extent; }

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

// x is (N,C,H,W), w is (O,C/groups,KH,KW), b is (O) or nullptr, y is (N,O,OH,OW)
void conv2d_forward(const Conv2DGeometry &g, const float *x, const float *w, const float *b,
                    float *y, ConvEpilogue epilogue, const WeightsMemo &) {
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      const int64_t group = o / Og;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double acc = b ? b[o] : 0.0;
          for (int64_t cg = 0; cg < Cg; ++cg) {
            const int64_t c = group * Cg + cg;
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, g.dilationH);
              if (!inBounds(ih, g.H))
                continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, g.dilationW);
                if (!inBounds(iw, g.W))
                  continue;
                acc += double(x[at4(n, c, ih, iw, g.C, g.H, g.W)]) *
                       double(w[at4(o, cg, kh, kw, Cg, g.KH, g.KW)]);
              }
            }
          }
          if (epilogue.relu && acc < 0)
            acc = 0;
          if (epilogue.cap > 0 && acc > epilogue.cap)
            acc = epilogue.cap;
          if (epilogue.silu)
            acc = acc / (1 + std::exp(-acc));
          y[at4(n, o, oh, ow, g.O, g.OH, g.OW)] = float(acc);
        }
    }
}

// dy is (N,O,OH,OW), w is (O,C/groups,KH,KW); dx is (N,C,H,W)
void conv2d_backward_data(const Conv2DGeometry &g, const float *dy, const float *w,
                          float *dx) {
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  // Scatter each output gradient back through the window that produced it; inputs that
  // no window reads (padding overhang, stride gaps) keep a zero gradient.
  std::vector<double> acc(g.N * g.C * g.H * g.W, 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      const int64_t group = o / Og;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const double grad = dy[at4(n, o, oh, ow, g.O, g.OH, g.OW)];
          for (int64_t cg = 0; cg < Cg; ++cg) {
            const int64_t c = group * Cg + cg;
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, g.dilationH);
              if (!inBounds(ih, g.H))
                continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, g.dilationW);
                if (!inBounds(iw, g.W))
                  continue;
                acc[at4(n, c, ih, iw, g.C, g.H, g.W)] +=
                    grad * double(w[at4(o, cg, kh, kw, Cg, g.KH, g.KW)]);
              }
            }
          }
        }
    }
  for (size_t i = 0; i < acc.size(); ++i)
    dx[i] = float(acc[i]);
}

// dy is (N,O,OH,OW), x is (N,C,H,W); dw is (O,C/groups,KH,KW); db is (O) or nullptr
void conv2d_backward_filter(const Conv2DGeometry &g, const float *dy, const float *x, float *dw,
                            float *db) {
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  for (int64_t o = 0; o < g.O; ++o) {
    const int64_t group = o / Og;
    for (int64_t cg = 0; cg < Cg; ++cg) {
      const int64_t c = group * Cg + cg;
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          double acc = 0.0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.OH; ++oh) {
              const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, g.dilationH);
              if (!inBounds(ih, g.H))
                continue;
              for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, g.dilationW);
                if (!inBounds(iw, g.W))
                  continue;
                acc += double(dy[at4(n, o, oh, ow, g.O, g.OH, g.OW)]) *
                       double(x[at4(n, c, ih, iw, g.C, g.H, g.W)]);
              }
            }
          dw[at4(o, cg, kh, kw, Cg, g.KH, g.KW)] = float(acc);
        }
    }
  }
  if (!db)
    return;
  for (int64_t o = 0; o < g.O; ++o) {
    double acc = 0.0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t i = 0; i < g.OH * g.OW; ++i)
        acc += dy[(n * g.O + o) * g.OH * g.OW + i];
    db[o] = float(acc);
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//
//
// A ceil-mode window may hang past the padding, and when the stride exceeds the window
// its last row/column may even miss the input entirely. Such an empty window yields 0
// (max and both averages) and passes no gradient back.

namespace {

// Flat index into plane (H, W) of the first maximum of the window at (oh, ow), scanning
// in row-major order; -1 when the window covers no input element.
int64_t firstMaxInWindow(const Pool2DGeometry &g, const float *plane, int64_t oh,
                         int64_t ow) {
  int64_t best = -1;
  for (int64_t kh = 0; kh < g.kernelH; ++kh) {
    const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, 1);
    if (!inBounds(ih, g.H))
      continue;
    for (int64_t kw = 0; kw < g.kernelW; ++kw) {
      const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, 1);
      if (!inBounds(iw, g.W))
        continue;
      // Strictly greater, so a later equal value never displaces the first maximum.
      if (best < 0 || plane[ih * g.W + iw] > plane[best])
        best = ih * g.W + iw;
    }
  }
  return best;
}

// Positions of a window starting at `start` that lie inside the padded input
// [-pad, extent + pad): a ceil-mode window can run past its end.
int64_t withinPadding(int64_t start, int64_t kernel, int64_t extent, int64_t pad) {
  return std::min(start + kernel, extent + pad) - start;
}

// Divisor of the average over window (oh, ow): with count_include_pad (MXNet's default)
// the window's part inside the padded input, as MXNet, PyTorch and Caffe count it (a
// 3x3 window that a ceil-mode output runs past the padding divides by 6, not 9);
// without, the number of input elements it covers.
int64_t avgDivisor(const Pool2DGeometry &g, bool countIncludePad, int64_t oh, int64_t ow) {
  if (countIncludePad)
    return withinPadding(oh * g.strideH - g.padH, g.kernelH, g.H, g.padH) *
           withinPadding(ow * g.strideW - g.padW, g.kernelW, g.W, g.padW);
  int64_t rows = 0, cols = 0;
  for (int64_t kh = 0; kh < g.kernelH; ++kh)
    rows += inBounds(inputCoord(oh, kh, g.strideH, g.padH, 1), g.H);
  for (int64_t kw = 0; kw < g.kernelW; ++kw)
    cols += inBounds(inputCoord(ow, kw, g.strideW, g.padW, 1), g.W);
  return rows * cols;
}

} // namespace

// x is (N,C,H,W), y is (N,C,OH,OW)
void max_pool2d_forward(const Pool2DGeometry &g, const float *x, float *y) {
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t best = firstMaxInWindow(g, plane, oh, ow);
        y[(nc * g.OH + oh) * g.OW + ow] = best < 0 ? 0.0f : plane[best];
      }
  }
}

// x, dx are (N,C,H,W), dy is (N,C,OH,OW)
void max_pool2d_backward(const Pool2DGeometry &g, const float *x, const float *dy, float *dx,
                         bool reluGrad) {
  std::vector<double> acc(g.N * g.C * g.H * g.W, 0.0);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t best = firstMaxInWindow(g, plane, oh, ow);
        if (best >= 0 && (!reluGrad || plane[best] > 0.0f))
          acc[nc * g.H * g.W + best] += dy[(nc * g.OH + oh) * g.OW + ow];
      }
  }
  for (size_t i = 0; i < acc.size(); ++i)
    dx[i] = float(acc[i]);
}

// x is (N,C,H,W), y and indices are (N,C,OH,OW)
void max_pool2d_indexed_forward(const Pool2DGeometry &g, const float *x, float *y,
                                uint8_t *indices) {
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t best = firstMaxInWindow(g, plane, oh, ow);
        const int64_t o = (nc * g.OH + oh) * g.OW + ow;
        y[o] = best < 0 ? 0.0f : plane[best];
        if (best < 0) {
          indices[o] = pool_index::kEmpty;
          continue;
        }
        const int64_t kh = best / g.W - (oh * g.strideH - g.padH),
                      kw = best % g.W - (ow * g.strideW - g.padW);
        indices[o] = uint8_t(kh * g.kernelW + kw) | (plane[best] > 0.0f ? 0 : pool_index::kNotPositive);
      }
  }
}

// dy and indices are (N,C,OH,OW), dx is (N,C,H,W)
void max_pool2d_indexed_backward(const Pool2DGeometry &g, const uint8_t *indices,
                                 const float *dy, float *dx, bool reluGrad) {
  std::vector<double> acc(g.N * g.C * g.H * g.W, 0.0);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t o = (nc * g.OH + oh) * g.OW + ow;
        const uint8_t code = indices[o];
        if (code == pool_index::kEmpty || (reluGrad && (code & pool_index::kNotPositive)))
          continue;
        const int64_t tap = code & pool_index::kTapMask;
        const int64_t ih = oh * g.strideH - g.padH + tap / g.kernelW,
                      iw = ow * g.strideW - g.padW + tap % g.kernelW;
        if (tap >= g.kernelH * g.kernelW || !inBounds(ih, g.H) || !inBounds(iw, g.W))
          throw Error("max_pool2d_indexed_backward: index " + std::to_string(int(code)) +
                      " of output " + std::to_string(o) + " names no input of its window");
        acc[(nc * g.H + ih) * g.W + iw] += dy[o];
      }
  for (size_t i = 0; i < acc.size(); ++i)
    dx[i] = float(acc[i]);
}

// x is (N,C,H,W), y is (N,C,OH,OW)
void avg_pool2d_forward(const Pool2DGeometry &g, bool countIncludePad, const float *x,
                        float *y) {
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const float *plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        double sum = 0.0;
        for (int64_t kh = 0; kh < g.kernelH; ++kh) {
          const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, 1);
          if (!inBounds(ih, g.H))
            continue;
          for (int64_t kw = 0; kw < g.kernelW; ++kw) {
            const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, 1);
            if (inBounds(iw, g.W))
              sum += plane[ih * g.W + iw];
          }
        }
        const int64_t divisor = avgDivisor(g, countIncludePad, oh, ow);
        y[(nc * g.OH + oh) * g.OW + ow] = divisor == 0 ? 0.0f : float(sum / double(divisor));
      }
  }
}

// dy is (N,C,OH,OW), dx is (N,C,H,W)
void avg_pool2d_backward(const Pool2DGeometry &g, bool countIncludePad, const float *dy,
                         float *dx) {
  std::vector<double> acc(g.N * g.C * g.H * g.W, 0.0);
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    double *plane = acc.data() + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t divisor = avgDivisor(g, countIncludePad, oh, ow);
        if (divisor == 0)
          continue;
        const double share = double(dy[(nc * g.OH + oh) * g.OW + ow]) / double(divisor);
        for (int64_t kh = 0; kh < g.kernelH; ++kh) {
          const int64_t ih = inputCoord(oh, kh, g.strideH, g.padH, 1);
          if (!inBounds(ih, g.H))
            continue;
          for (int64_t kw = 0; kw < g.kernelW; ++kw) {
            const int64_t iw = inputCoord(ow, kw, g.strideW, g.padW, 1);
            if (inBounds(iw, g.W))
              plane[ih * g.W + iw] += share;
          }
        }
      }
  }
  for (size_t i = 0; i < acc.size(); ++i)
    dx[i] = float(acc[i]);
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

// x, y are (N,C,S); gamma, beta, mean, var are (C)
void batch_norm_forward_training(const BatchNormGeometry &g, const float *x, const float *gamma,
                                 const float *beta, double epsilon, float *y, float *mean,
                                 float *var) {
  const double count = double(g.N * g.S);
  for (int64_t c = 0; c < g.C; ++c) {
    // Two passes (mean, then squared deviations) rather than E[x^2]-E[x]^2, which
    // cancels catastrophically when the mean is large against the spread.
    double sum = 0.0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s)
        sum += x[(n * g.C + c) * g.S + s];
    const double mu = sum / count;
    double squares = 0.0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s) {
        const double d = x[(n * g.C + c) * g.S + s] - mu;
        squares += d * d;
      }
    const double sigma2 = squares / count; // biased, as the contract says
    const double invStd = 1.0 / std::sqrt(sigma2 + epsilon);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = (n * g.C + c) * g.S + s;
        y[i] = float(double(gamma[c]) * (x[i] - mu) * invStd + double(beta[c]));
      }
    mean[c] = float(mu);
    var[c] = float(sigma2);
  }
}

// x, y are (N,C,S); gamma, beta, runningMean, runningVar are (C)
void batch_norm_forward_inference(const BatchNormGeometry &g, const float *x,
                                  const float *gamma, const float *beta,
                                  const float *runningMean, const float *runningVar,
                                  double epsilon, float *y) {
  for (int64_t c = 0; c < g.C; ++c) {
    const double invStd = 1.0 / std::sqrt(double(runningVar[c]) + epsilon);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = (n * g.C + c) * g.S + s;
        y[i] = float(double(gamma[c]) * (x[i] - double(runningMean[c])) * invStd +
                     double(beta[c]));
      }
  }
}

// dy, x, dx are (N,C,S); gamma, mean, var, dgamma, dbeta are (C)
void batch_norm_backward(const BatchNormGeometry &g, const float *dy, const float *x,
                         const float *gamma, const float *mean, const float *var,
                         double epsilon, float *dx, float *dgamma, float *dbeta) {
  // With xhat = (x-mean)*invStd and M = N*S, differentiating through the batch mean and
  // variance gives dx = gamma*invStd/M * (M*dy - sum(dy) - xhat*sum(dy*xhat)).
  const double count = double(g.N * g.S);
  for (int64_t c = 0; c < g.C; ++c) {
    const double mu = mean[c];
    const double invStd = 1.0 / std::sqrt(double(var[c]) + epsilon);
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = (n * g.C + c) * g.S + s;
        sumDy += dy[i];
        sumDyXhat += double(dy[i]) * (x[i] - mu) * invStd;
      }
    const double scale = double(gamma[c]) * invStd / count;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t i = (n * g.C + c) * g.S + s;
        const double xhat = (x[i] - mu) * invStd;
        dx[i] = float(scale * (count * dy[i] - sumDy - xhat * sumDyXhat));
      }
    dgamma[c] = float(sumDyXhat);
    dbeta[c] = float(sumDy);
  }
}

//===----------------------------------------------------------------------===//
// Dense
//===----------------------------------------------------------------------===//

// x is (M,K), w is (units,K), b is (units) or nullptr, y is (M,units)
void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, DenseEpilogue epilogue) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t u = 0; u < units; ++u) {
      double acc = b ? b[u] : 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(x[m * K + k]) * double(w[u * K + k]);
      if (epilogue.kind == DenseEpilogue::relu)
        acc = acc < 0 ? 0.0 : acc;
      else if (epilogue.kind == DenseEpilogue::gelu)
        acc = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
      y[m * units + u] = float(acc);
    }
}

// dy is (M,units), x is (M,K), w is (units,K); dx is (M,K), dw is (units,K), db is (units)
// or nullptr
void dense_backward(int64_t M, int64_t K, int64_t units, const float *dy, const float *x,
                    const float *w, float *dx, float *dw, float *db) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (int64_t u = 0; u < units; ++u)
        acc += double(dy[m * units + u]) * double(w[u * K + k]);
      dx[m * K + k] = float(acc);
    }
  for (int64_t u = 0; u < units; ++u)
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (int64_t m = 0; m < M; ++m)
        acc += double(dy[m * units + u]) * double(x[m * K + k]);
      dw[u * K + k] = float(acc);
    }
  if (!db)
    return;
  for (int64_t u = 0; u < units; ++u) {
    double acc = 0.0;
    for (int64_t m = 0; m < M; ++m)
      acc += dy[m * units + u];
    db[u] = float(acc);
  }
}

//===----------------------------------------------------------------------===//
// Softmax cross-entropy
//===----------------------------------------------------------------------===//

namespace {

// Rejects a label outside [0, C) before anything is read at its index.
void checkLabel(int64_t row, int64_t C, int64_t label) {
  if (label < 0 || label >= C)
    throw dlc::ValueError("softmax_cross_entropy: label " + std::to_string(label) + " of row " +
                          std::to_string(row) + " is outside [0, " + std::to_string(C) + ") for " +
                          std::to_string(C) + " classes");
}

// Max of the row and sum of exp(logit - max): subtracting the max keeps every exponent
// <= 0, so large logits cannot overflow.
void rowSoftmaxTerms(int64_t C, const float *row, double &maxLogit, double &sumExp) {
  maxLogit = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c)
    maxLogit = std::max(maxLogit, double(row[c]));
  sumExp = 0.0;
  for (int64_t c = 0; c < C; ++c)
    sumExp += std::exp(double(row[c]) - maxLogit);
}

} // namespace

// logits is (N,C), labels (N), loss (N)
void softmax_cross_entropy_forward(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *loss) {
  for (int64_t n = 0; n < N; ++n)
    checkLabel(n, C, labels[n]);
  for (int64_t n = 0; n < N; ++n) {
    const float *row = logits + n * C;
    double maxLogit, sumExp;
    rowSoftmaxTerms(C, row, maxLogit, sumExp);
    // -log softmax[label] = log(sum exp(row)) - row[label]
    loss[n] = float(std::log(sumExp) + maxLogit - double(row[labels[n]]));
  }
}

// dloss is (N), logits is (N,C), labels (N); dlogits is (N,C)
void softmax_cross_entropy_backward(int64_t N, int64_t C, const float *dloss,
                                    const float *logits, const int64_t *labels,
                                    float *dlogits) {
  for (int64_t n = 0; n < N; ++n)
    checkLabel(n, C, labels[n]);
  for (int64_t n = 0; n < N; ++n) {
    const float *row = logits + n * C;
    double maxLogit, sumExp;
    rowSoftmaxTerms(C, row, maxLogit, sumExp);
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(double(row[c]) - maxLogit) / sumExp;
      dlogits[n * C + c] = float((p - (c == labels[n] ? 1.0 : 0.0)) * double(dloss[n]));
    }
  }
}

} // namespace dlc::cpu_kernels::ref
