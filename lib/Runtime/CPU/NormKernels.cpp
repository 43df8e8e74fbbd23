//===- NormKernels.cpp - layer norm and its gradient on the CPU ---------------===//
//
// The input is seen as (outer, N, inner) around the normalized axis: each of the
// outer * inner rows has N elements, `inner` apart, and one mean and variance. The fast
// kernels give each thread whole rows and sum in float32 with vector lanes (two passes,
// so the variance is of centred values); the reference sums in double, one element at a
// time. gamma's and beta's gradients add over rows: the fast kernel adds a fixed number
// of row chunks, then the chunks in order, so its sums do not depend on the thread
// count.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

#include <cmath>

namespace dlc::cpu_kernels {

namespace {

/// One normalized row: its first element and the distance between its elements.
struct Row {
  int64_t base, stride;
};

Row rowOf(const AxisSplit &g, int64_t r) {
  return {(r / g.inner) * g.axis * g.inner + r % g.inner, g.inner};
}

AxisSplit geometryOf(const Shape &input, int64_t axis) {
  return split_at_axis(input, shape_rules::normalizeAxis(axis, int64_t(input.size())));
}

/// layer_norm's operands: (x, gamma, beta) -> (y, mean, var).
struct Forward {
  AxisSplit g;
  double eps;
  const float *gamma, *beta;
  float *mean, *var;
};

Forward forwardOf(const KernelArgs &k) {
  const Attrs &a = *k.attrs;
  return {geometryOf(k.inputs[0].shape, a.get(op_attrs::layer_norm::axis)),
          a.get(op_attrs::layer_norm::epsilon), k.inputs[1].as<const float>(),
          k.inputs[2].as<const float>(), k.outputs[1].as<float>(), k.outputs[2].as<float>()};
}

/// layer_norm_backward's operands: (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta).
struct Backward {
  AxisSplit g;
  double eps;
  const float *gamma, *mean, *var;
  float *dgamma, *dbeta;
};

Backward backwardOf(const KernelArgs &k) {
  const Attrs &a = *k.attrs;
  return {geometryOf(k.inputs[1].shape, a.get(op_attrs::layer_norm_backward::axis)),
          a.get(op_attrs::layer_norm_backward::epsilon),
          k.inputs[2].as<const float>(),
          k.inputs[3].as<const float>(),
          k.inputs[4].as<const float>(),
          k.outputs[1].as<float>(),
          k.outputs[2].as<float>()};
}

template <typename T> void forwardFast(const T *x, T *y, const Forward &f) {
  const AxisSplit &g = f.g;
  const int64_t n = g.axis, rows = g.outer * g.inner;
  parallel_for(rows, rows * n, [&](int64_t r) {
    const Row row = rowOf(g, r);
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j)
      sum += load(x[row.base + j * row.stride]);
    const float mean = n ? sum / float(n) : 0.f;
    float squares = 0.f;
#pragma omp simd reduction(+ : squares)
    for (int64_t j = 0; j < n; ++j) {
      float centred = load(x[row.base + j * row.stride]) - mean;
      squares += centred * centred;
    }
    const float var = n ? squares / float(n) : 0.f;
    const float rstd = 1.f / std::sqrt(var + float(f.eps));
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = row.base + j * row.stride;
      y[at] = store<T>((load(x[at]) - mean) * rstd * f.gamma[j] + f.beta[j]);
    }
    f.mean[r] = mean;
    f.var[r] = var;
  });
}

template <typename T> void forwardReference(const T *x, T *y, const Forward &f) {
  const AxisSplit &g = f.g;
  const int64_t n = g.axis;
  for (int64_t r = 0; r < g.outer * g.inner; ++r) {
    const Row row = rowOf(g, r);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j)
      sum += double(load(x[row.base + j * row.stride]));
    const double mean = n ? sum / double(n) : 0;
    double squares = 0;
    for (int64_t j = 0; j < n; ++j) {
      double centred = double(load(x[row.base + j * row.stride])) - mean;
      squares += centred * centred;
    }
    const double var = n ? squares / double(n) : 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = row.base + j * row.stride;
      y[at] = store<T>(float((double(load(x[at])) - mean) / std::sqrt(var + f.eps) *
                                 double(f.gamma[j]) +
                             double(f.beta[j])));
    }
    f.mean[r] = float(mean);
    f.var[r] = float(var);
  }
}

/// Row chunks whose gamma and beta gradients the fast kernel adds separately: fixed, so
/// that the sums do not depend on the threads.
constexpr int64_t kChunks = 64;

// dx = rstd * (gamma dy - mean(gamma dy) - xhat * mean(gamma dy xhat)), xhat the
// normalized x; dgamma = sum over rows of dy xhat, dbeta = sum of dy.
template <typename T> void backwardFast(const T *dy, const T *x, T *dx, const Backward &b) {
  const AxisSplit &g = b.g;
  const int64_t n = g.axis, rows = g.outer * g.inner;
  const int64_t chunks = std::min(kChunks, rows);
  std::vector<float> partial(size_t(std::max<int64_t>(chunks, 1) * 2 * n), 0.f);
  parallel_for(chunks, rows * n, [&](int64_t c) {
    float *pg = partial.data() + c * 2 * n, *pb = pg + n;
    for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) {
      const Row row = rowOf(g, r);
      const float mean = b.mean[r], rstd = 1.f / std::sqrt(b.var[r] + float(b.eps));
      float sumG = 0.f, sumGX = 0.f;
#pragma omp simd reduction(+ : sumG, sumGX)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = row.base + j * row.stride;
        const float xhat = (load(x[at]) - mean) * rstd, d = load(dy[at]);
        const float gd = b.gamma[j] * d;
        sumG += gd;
        sumGX += gd * xhat;
        pg[j] += d * xhat;
        pb[j] += d;
      }
      const float meanG = sumG / float(n), meanGX = sumGX / float(n);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = row.base + j * row.stride;
        const float xhat = (load(x[at]) - mean) * rstd;
        dx[at] = store<T>(rstd * (b.gamma[j] * load(dy[at]) - meanG - xhat * meanGX));
      }
    }
  });
  for (int64_t j = 0; j < n; ++j) {
    float sg = 0.f, sb = 0.f;
    for (int64_t c = 0; c < chunks; ++c) {
      sg += partial[size_t(c * 2 * n + j)];
      sb += partial[size_t(c * 2 * n + n + j)];
    }
    b.dgamma[j] = sg;
    b.dbeta[j] = sb;
  }
}

template <typename T>
void backwardReference(const T *dy, const T *x, T *dx, const Backward &b) {
  const AxisSplit &g = b.g;
  const int64_t n = g.axis;
  std::vector<double> dgamma(size_t(n), 0.0), dbeta(size_t(n), 0.0);
  for (int64_t r = 0; r < g.outer * g.inner; ++r) {
    const Row row = rowOf(g, r);
    const double mean = b.mean[r], rstd = 1.0 / std::sqrt(double(b.var[r]) + b.eps);
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = row.base + j * row.stride;
      const double xhat = (double(load(x[at])) - mean) * rstd, d = double(load(dy[at]));
      sumG += double(b.gamma[j]) * d;
      sumGX += double(b.gamma[j]) * d * xhat;
      dgamma[size_t(j)] += d * xhat;
      dbeta[size_t(j)] += d;
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = row.base + j * row.stride;
      const double xhat = (double(load(x[at])) - mean) * rstd;
      dx[at] = store<T>(float(rstd * (double(b.gamma[j]) * double(load(dy[at])) -
                                      sumG / double(n) - xhat * sumGX / double(n))));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    b.dgamma[j] = float(dgamma[size_t(j)]);
    b.dbeta[j] = float(dbeta[size_t(j)]);
  }
}

template <bool Fast> void layerNorm(const KernelArgs &k) {
  Forward f = forwardOf(k);
  dispatch_float_dtype(k.inputs[0].dtype, "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    const T *x = k.inputs[0].as<const T>();
    T *y = k.outputs[0].as<T>();
    Fast ? forwardFast(x, y, f) : forwardReference(x, y, f);
  });
}

template <bool Fast> void layerNormBackward(const KernelArgs &k) {
  Backward b = backwardOf(k);
  dispatch_float_dtype(k.inputs[1].dtype, "layer_norm_backward", [&](auto zero) {
    using T = decltype(zero);
    const T *dy = k.inputs[0].as<const T>(), *x = k.inputs[1].as<const T>();
    T *dx = k.outputs[0].as<T>();
    Fast ? backwardFast(dy, x, dx, b) : backwardReference(dy, x, dx, b);
  });
}

} // namespace

void register_norm_kernels() {
  register_kernel(ops::layer_norm, DeviceKind::cpu, {layerNorm<true>, layerNorm<false>});
  register_kernel(ops::layer_norm_backward, DeviceKind::cpu,
                  {layerNormBackward<true>, layerNormBackward<false>});
}

} // namespace dlc::cpu_kernels
