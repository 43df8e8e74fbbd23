//===- OpsResize.cpp - ONNX's Resize as one matrix product per resized axis ----===//
//
// ONNX's Resize is separable: each output element along an axis is a weighted sum of a
// few input elements along it, with weights that depend only on the sizes, the scale
// and the attributes. So each resized axis becomes one (out x in) matrix, made on the
// host from what the import knows and held by the block (OpContext::derived), and the
// resize is a matrix product per axis: every mode (nearest, linear, cubic, antialiased),
// coordinate transform and rounding, any scale, any axis, differentiable as a product.
// dlc's own up-sampling kernels still run the cases they compute exactly (PyTorch's
// integer nearest up-sampling, bilinear resizes between whole sizes).
//
//===----------------------------------------------------------------------===//
#include "Ops.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <cmath>
#include <cstdio>
#include <numeric>

namespace dlc::onnx::detail {
namespace {

using Tensors = std::vector<Tensor>;

/// How a node samples: its mode and the attributes that shape the weights.
struct Filter {
  std::string mode, coordinates, rounding, aspect;
  double cubicA = -0.75;
  bool antialias = false, excludeOutside = false;
  double extrapolation = 0;
};

/// One resized axis: sizes, scale (ONNX's, which maps coordinates) and crop window.
struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1;
  double roiStart = 0, roiEnd = 1;
};

/// The input coordinate output index `o` samples, per coordinate_transformation_mode.
double sourceOf(const OpContext &c, const Filter &f, const Axis &a, double o) {
  double outWidth = a.scale * double(a.in); // fractional where the scale is given
  const std::string &m = f.coordinates;
  if (m == "half_pixel")
    return (o + 0.5) / a.scale - 0.5;
  if (m == "pytorch_half_pixel")
    return outWidth == 1 ? -0.5 : (o + 0.5) / a.scale - 0.5;
  if (m == "align_corners")
    return outWidth == 1 ? 0.0 : o * double(a.in - 1) / (outWidth - 1);
  if (m == "asymmetric")
    return o / a.scale;
  if (m == "tf_half_pixel_for_nn")
    return (o + 0.5) / a.scale;
  if (m == "half_pixel_symmetric") {
    double adjustment = double(a.out) / outWidth, center = double(a.in) / 2;
    return center * (1 - adjustment) + (o + 0.5) / a.scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    double span = (a.roiEnd - a.roiStart) * double(a.in - 1);
    double at = outWidth == 1 ? span / 2 : o * span / (outWidth - 1);
    return at + a.roiStart * double(a.in - 1);
  }
  c.fail("coordinate_transformation_mode='" + m + "'");
}

double cubicKernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1)
    return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2)
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/// The weights of the taps around a source coordinate whose distance past the tap on its
/// left is `ratio` (in (0, 1]; 1 on a whole coordinate, whose own tap is then the second).
std::vector<double> tapWeights(const OpContext &c, const Filter &f, double ratio, double scale) {
  if (f.mode == "nearest") {
    if (ratio == 1)
      return {0, 1};
    const std::string &r = f.rounding;
    if (r == "round_prefer_floor")
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (r == "round_prefer_ceil")
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (r == "floor")
      return {1, 0};
    if (r == "ceil")
      return {0, 1};
    c.fail("nearest_mode='" + r + "'");
  }
  // Antialiasing widens the filter by 1/scale when down-sampling.
  double stretch = f.antialias ? std::min(scale, 1.0) : 1.0;
  int64_t reach = f.mode == "linear" ? 1 : 2;
  int64_t first = int64_t(std::floor(-double(reach) / stretch)) + 1;
  std::vector<double> w;
  for (int64_t i = first; i < 2 - first; ++i) {
    double x = stretch * (double(i) - ratio);
    w.push_back(f.mode == "linear" ? std::max(0.0, 1 - std::fabs(x)) : cubicKernel(x, f.cubicA));
  }
  if (f.antialias) {
    double sum = std::accumulate(w.begin(), w.end(), 0.0);
    for (double &v : w)
      v /= sum;
  }
  return w;
}

/// The (out x in) resampling matrix of one axis, row-major, and which output rows lie
/// outside the crop (tf_crop_and_resize gives them the extrapolation value).
struct AxisWeights {
  std::vector<double> matrix;
  std::vector<double> outside;
  bool anyOutside = false;
};

AxisWeights axisWeights(const OpContext &c, const Filter &f, const Axis &a) {
  AxisWeights r;
  r.matrix.assign(size_t(a.out * a.in), 0.0);
  r.outside.assign(size_t(a.out), 0.0);
  for (int64_t o = 0; o < a.out; ++o) {
    double x = sourceOf(c, f, a, double(o));
    if (f.coordinates == "tf_crop_and_resize" && (x < 0 || x > double(a.in - 1))) {
      r.outside[size_t(o)] = 1;
      r.anyOutside = true;
      continue;
    }
    double left = std::floor(x);
    std::vector<double> w = tapWeights(c, f, x == left ? 1.0 : x - left, a.scale);
    int64_t n = int64_t(w.size());
    // The n taps nearest x, ties to the smaller index (ONNX's reference picks them on
    // the edge-padded axis; the padding is the clamping below).
    double frac = x - left;
    int64_t start;
    if (n % 2 == 0)
      start = int64_t(left) - n / 2 + (frac == 0 ? 0 : 1);
    else
      start = int64_t(left) - (n - 1) / 2 + (frac <= 0.5 ? 0 : 1);
    if (f.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        int64_t i = start + k;
        if (i < 0 || i >= a.in)
          w[size_t(k)] = 0;
        sum += w[size_t(k)];
      }
      for (double &v : w)
        v /= sum == 0 ? 1 : sum;
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = std::clamp<int64_t>(start + k, 0, a.in - 1);
      r.matrix[size_t(o * a.in + i)] += w[size_t(k)];
    }
  }
  return r;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// `x` resampled along `axis` (a matrix product with the axis's weights, held by the
/// block under a key that names everything they depend on).
Tensor resampleAxis(const OpContext &c, const Filter &f, const Axis &a, Tensor x, int64_t axis) {
  int64_t rank = x.ndim();
  bool last = axis == rank - 1;
  std::string key = "resize" + std::to_string(axis) + "." + std::to_string(a.in) + "to" +
                    std::to_string(a.out) + ".scale" + number(a.scale) + ".roi" +
                    number(a.roiStart) + "_" + number(a.roiEnd) + "." + dtype_name(x.dtype());
  AxisWeights weights; // made once, only where the block holds neither matrix yet
  bool made = false;
  auto make = [&]() -> const AxisWeights & {
    if (!made)
      weights = axisWeights(c, f, a), made = true;
    return weights;
  };
  DType dtype = x.dtype();
  Tensor matrix = c.derived(key, [&] {
    const std::vector<double> &m = make().matrix;
    if (!last)
      return np::array(m, Shape{a.out, a.in}, dtype, npx::cpu(0));
    // The last axis multiplies from the right, by the transpose.
    std::vector<double> t(m.size());
    for (int64_t o = 0; o < a.out; ++o)
      for (int64_t i = 0; i < a.in; ++i)
        t[size_t(i * a.out + o)] = m[size_t(o * a.in + i)];
    return np::array(t, Shape{a.in, a.out}, dtype, npx::cpu(0));
  });
  Tensor y;
  if (last) {
    Tensor rows = rank == 1 ? np::reshape(x, {1, a.in}) : x;
    y = np::matmul(rows, matrix);
    if (rank == 1)
      y = np::reshape(y, {a.out});
  } else {
    std::vector<int64_t> order(static_cast<size_t>(rank));
    std::iota(order.begin(), order.end(), 0);
    std::swap(order[size_t(axis)], order[size_t(rank - 2)]);
    bool moved = axis != rank - 2;
    y = np::matmul(matrix, moved ? np::transpose(x, order) : x);
    if (moved)
      y = np::transpose(y, order);
  }
  if (f.extrapolation != 0 && f.coordinates == "tf_crop_and_resize") {
    Shape along(size_t(rank), 1);
    along[size_t(axis)] = a.out;
    Tensor outside = c.derived(key + ".outside", [&] {
      return np::array(make().outside, along, dtype, npx::cpu(0));
    });
    y = y + outside * np::full({}, f.extrapolation, dtype, y.device());
  }
  return y;
}

/// Per-axis sizes and scales from the node's scales or sizes, axes and aspect policy.
std::vector<Axis> resizedAxes(const OpContext &c, const Filter &f, const Shape &shape) {
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> axes;
  if (c.has_attr("axes")) {
    for (int64_t a : c.attr_ints("axes"))
      axes.push_back(c.axis(a, rank, "axes"));
  } else {
    axes.resize(size_t(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<Axis> result(static_cast<size_t>(rank));
  for (int64_t a = 0; a < rank; ++a)
    result[size_t(a)].in = result[size_t(a)].out = shape[size_t(a)];
  size_t n = axes.size();
  auto count = [&](const std::vector<double> &v, size_t want, const char *what) {
    if (v.size() != want)
      c.fail(std::string(what) + " of " + std::to_string(v.size()) + " values for " +
             std::to_string(n) + " axes of an input of shape " + shape_rules::str(shape));
  };
  if (c.has(1) && f.coordinates == "tf_crop_and_resize") {
    std::vector<double> roi = c.floats(1);
    count(roi, 2 * n, "roi");
    for (size_t i = 0; i < n; ++i)
      result[size_t(axes[i])].roiStart = roi[i], result[size_t(axes[i])].roiEnd = roi[n + i];
  }
  bool bySizes = c.has(3) && !c.shape(3).empty() && shape_rules::numElements(c.shape(3)) > 0;
  if (bySizes) {
    std::vector<int64_t> sizes = c.ints(3);
    count(std::vector<double>(sizes.begin(), sizes.end()), n, "sizes");
    std::vector<double> scales(n);
    for (size_t i = 0; i < n; ++i) {
      if (sizes[i] < 1)
        c.fail("output size " + std::to_string(sizes[i]) + " for axis " +
               std::to_string(axes[i]));
      scales[i] = double(sizes[i]) / double(shape[size_t(axes[i])]);
    }
    if (f.aspect != "stretch") {
      if (f.aspect != "not_larger" && f.aspect != "not_smaller")
        c.fail("keep_aspect_ratio_policy='" + f.aspect + "'");
      double one = f.aspect == "not_larger" ? *std::min_element(scales.begin(), scales.end())
                                            : *std::max_element(scales.begin(), scales.end());
      for (size_t i = 0; i < n; ++i) {
        scales[i] = one;
        sizes[i] = int64_t(one * double(shape[size_t(axes[i])]) + 0.5);
      }
    }
    for (size_t i = 0; i < n; ++i)
      result[size_t(axes[i])].out = sizes[i], result[size_t(axes[i])].scale = scales[i];
  } else if (c.has(2)) {
    std::vector<double> scales = c.floats(2);
    count(scales, n, "scales");
    for (size_t i = 0; i < n; ++i) {
      double out = scales[i] * double(shape[size_t(axes[i])]);
      if (!(scales[i] > 0) || !(out >= 1) || !(out < 9.0e15))
        c.fail("scale " + number(scales[i]) + " of axis " + std::to_string(axes[i]) +
               " (size " + std::to_string(shape[size_t(axes[i])]) + ")");
      result[size_t(axes[i])].out = int64_t(out), result[size_t(axes[i])].scale = scales[i];
    }
  } else {
    c.fail("neither scales nor sizes given");
  }
  Shape out;
  for (const Axis &a : result)
    out.push_back(a.out);
  c.creatable(out);
  return result;
}

/// Whether resizing `a` changes anything (an identity axis is skipped, as ONNX's
/// reference does).
bool changes(const Filter &f, const Axis &a) {
  bool crops = f.coordinates == "tf_crop_and_resize" && (a.roiStart != 0 || a.roiEnd != 1);
  return a.out != a.in || std::fabs(a.scale - 1) > 1e-9 || crops;
}

Tensor resize(const OpContext &c) {
  Tensor x = c.in(0);
  Filter f;
  f.mode = c.attr_string("mode", "nearest");
  f.coordinates = c.attr_string("coordinate_transformation_mode", "half_pixel");
  f.rounding = c.attr_string("nearest_mode", "round_prefer_floor");
  f.aspect = c.attr_string("keep_aspect_ratio_policy", "stretch");
  f.cubicA = c.attr_float("cubic_coeff_a", -0.75);
  f.antialias = c.attr_int("antialias", 0) != 0;
  f.excludeOutside = c.attr_int("exclude_outside", 0) != 0;
  f.extrapolation = c.attr_float("extrapolation_value", 0);
  if (f.mode != "nearest" && f.mode != "linear" && f.mode != "cubic")
    c.fail("mode='" + f.mode + "' (ONNX has nearest, linear and cubic)");
  if (!is_floating(x.dtype()))
    c.fail(std::string("input of dtype ") + dtype_name(x.dtype()) + ": dlc resizes floating tensors");
  if (x.ndim() == 0)
    c.fail("a scalar input (nothing to resize)"); // and no axis for `axes` to name
  std::vector<Axis> axes = resizedAxes(c, f, x.shape());

  // dlc's kernels where they compute exactly what ONNX asks.
  if (x.ndim() == 4 && !changes(f, axes[0]) && !changes(f, axes[1]) && !f.antialias) {
    const Axis &h = axes[2], &w = axes[3];
    bool whole = h.out == int64_t(h.scale * double(h.in)) && w.out == int64_t(w.scale * double(w.in)) &&
                 h.scale == double(h.out) / double(h.in) && w.scale == double(w.out) / double(w.in);
    int64_t factor = h.out / h.in;
    if (f.mode == "nearest" && whole && factor >= 1 && h.out == factor * h.in &&
        w.out == factor * w.in && f.coordinates == "asymmetric" && f.rounding == "floor")
      return factor == 1 ? x : npx::upsampling_nearest(x, factor);
    if (f.mode == "linear" && whole && f.coordinates == "align_corners")
      return npx::bilinear_resize(x, h.out, w.out, true);
    if (f.mode == "linear" && whole &&
        (f.coordinates == "half_pixel" ||
         (f.coordinates == "pytorch_half_pixel" && h.out > 1 && w.out > 1)))
      return npx::bilinear_resize(x, h.out, w.out, false);
  }
  for (int64_t a = 0; a < x.ndim(); ++a) {
    const Axis &axis = axes[size_t(a)];
    if (!changes(f, axis))
      continue;
    c.creatable({axis.out, axis.in});
    x = resampleAxis(c, f, axis, x, a);
  }
  return x;
}

} // namespace

void add_resize_ops(std::vector<OpSpec> &specs) {
  specs.push_back({"Resize", 11, [](OpContext &c) { return Tensors{resize(c)}; }, {1, 2, 3},
                   {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                    "exclude_outside", "extrapolation_value", "antialias", "axes",
                    "keep_aspect_ratio_policy"},
                   OpKind::pure, {}, "floating inputs"});
}

} // namespace dlc::onnx::detail
