//===- Normalization.cpp - layer, instance and group norm as chains of ops ----===//
//
// Each is a mean and a variance over some axes, a normalization and a per-channel (or
// per-group) affine map: existing ops (reductions, element-wise arithmetic, rsqrt) whose
// VJP rules give the gradient, and which dlc-fuse fuses into generated kernels when
// hybridized. 16-bit inputs compute their statistics in float32, as batch norm does.
//
//===----------------------------------------------------------------------===//
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <numeric>

namespace dlc {

namespace {

/// (x - mean) / sqrt(var + eps) over `axes` (kept), in float32 for 16-bit x.
Tensor standardize(const Tensor &x, const std::vector<int64_t> &axes, double eps) {
  bool narrow = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  Tensor wide = narrow ? x.astype(DType::f32) : x;
  Tensor mean = np::mean(wide, axes, /*keepdims=*/true);
  Tensor centered = wide - mean;
  Tensor var = np::mean(centered * centered, axes, /*keepdims=*/true);
  Tensor y = centered * np::rsqrt(var + eps);
  return narrow ? y.astype(x.dtype()) : y;
}

/// `v` (one value per index of `axis` of a rank-`rank` tensor) shaped to broadcast there.
Tensor alongAxis(const Tensor &v, int64_t axis, int64_t rank) {
  Shape shape(size_t(rank), 1);
  shape[size_t(axis)] = v.size();
  return v.reshape(shape);
}

int64_t normalizedAxis(const char *op, int64_t axis, const Tensor &x) {
  int64_t rank = x.ndim();
  if (axis < -rank || axis >= rank)
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for an input of shape " + shape_rules::str(x.shape()));
  return axis < 0 ? axis + rank : axis;
}

void requireVector(const char *op, const char *name, const Tensor &v, int64_t size,
                   const Tensor &x, const std::string &of) {
  if (v.defined() && (v.ndim() != 1 || v.size() != size))
    throw ShapeError(std::string(op) + ": " + name + " " + shape_rules::str(v.shape()) +
                     " must hold " + std::to_string(size) + " values, one per " + of +
                     " of the input " + shape_rules::str(x.shape()));
}

Tensor affine(Tensor y, const Tensor &gamma, const Tensor &beta, int64_t axis, int64_t rank) {
  if (gamma.defined())
    y = y * alongAxis(gamma.astype(y.dtype()), axis, rank);
  if (beta.defined())
    y = y + alongAxis(beta.astype(y.dtype()), axis, rank);
  return y;
}

} // namespace

Tensor npx::layer_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta, int64_t axis,
                       double eps) {
  int64_t a = normalizedAxis("layer_norm", axis, x);
  requireVector("layer_norm", "gamma", gamma, x.shape()[size_t(a)], x, "index of axis " + std::to_string(a));
  requireVector("layer_norm", "beta", beta, x.shape()[size_t(a)], x, "index of axis " + std::to_string(a));
  return affine(standardize(x, {a}, eps), gamma, beta, a, x.ndim());
}

Tensor npx::instance_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta, double eps) {
  if (x.ndim() < 3)
    throw ShapeError("instance_norm: expects (N, C, spatial...) input, got " +
                     shape_rules::str(x.shape()));
  requireVector("instance_norm", "gamma", gamma, x.shape()[1], x, "channel");
  requireVector("instance_norm", "beta", beta, x.shape()[1], x, "channel");
  std::vector<int64_t> spatial(size_t(x.ndim() - 2));
  std::iota(spatial.begin(), spatial.end(), 2);
  return affine(standardize(x, spatial, eps), gamma, beta, 1, x.ndim());
}

Tensor npx::group_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                       int64_t num_groups, double eps) {
  if (x.ndim() < 2 || num_groups < 1 || x.shape()[1] % num_groups != 0)
    throw ShapeError("group_norm: the " + std::string(x.ndim() < 2 ? "input " : "channels of ") +
                     shape_rules::str(x.shape()) + " must split into " +
                     std::to_string(num_groups) + " groups (axis 1)");
  requireVector("group_norm", "gamma", gamma, num_groups, x, "group");
  requireVector("group_norm", "beta", beta, num_groups, x, "group");
  // (N, G, C/G * spatial): each group's statistics over its last axis.
  Shape grouped{x.shape()[0], num_groups, -1};
  Tensor y = standardize(x.reshape(grouped), {2}, eps);
  return affine(y, gamma, beta, 1, 3).reshape(x.shape());
}

} // namespace dlc
