//===- OpsPool.cpp - ONNX's pools: dlc's kernels, or a maximum or sum of taps ---===//
//
// dlc's pool kernels are two-dimensional without dilation; 1-D and 2-D pools of that
// form run on them (unequal padding as an explicit pad before). Any other pool (dilated,
// 3-D and more, integer inputs) is what it is by definition: the element-wise maximum,
// or the sum divided by the count, of its window's taps, each tap one strided slice of
// the padded input. That is kernel-size slices of work, which these rarer pools afford,
// and it differentiates as the slices and maximum do.
//
//===----------------------------------------------------------------------===//
#include "Ops.h"
#include "Window.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <cmath>
#include <limits>

namespace dlc::onnx::detail {
namespace {

using Tensors = std::vector<Tensor>;

/// The most taps a window may have to run as slices.
constexpr int64_t kMostTaps = 4096;

/// Output size of one axis, as ONNX's reference computes it (a ceil-mode window that
/// would start in the end padding is dropped).
int64_t outputSize(const OpContext &c, int64_t in, int64_t k, int64_t s, int64_t d,
                   int64_t begin, int64_t end, bool ceil) {
  int64_t reach = (k - 1) * d + 1, span = in + begin + end - reach;
  if (span < 0)
    c.fail("a window reaching " + std::to_string(reach) + " elements over an axis of " +
           std::to_string(in) + " padded by " + std::to_string(begin) + " and " +
           std::to_string(end));
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + begin)
    --out;
  return out;
}

/// How many of the window's taps at output `o` land in [low, high) along one axis.
int64_t tapsInside(int64_t o, int64_t k, int64_t s, int64_t d, int64_t low, int64_t high) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; ++i) {
    int64_t at = o * s + i * d;
    n += at >= low && at < high;
  }
  return n;
}

/// The pool as the maximum, or mean, of its taps (see the file's comment).
Tensor poolByTaps(const OpContext &c, const Tensor &x, const Geometry &g, bool max, bool ceil,
                  bool includePad) {
  size_t spatial = g.kernel.size();
  int64_t taps = 1;
  for (int64_t k : g.kernel) {
    taps *= k;
    if (taps > kMostTaps)
      c.fail("a window of " + shape_rules::str(g.kernel) + " with dilations " +
             shape_rules::str(g.dilation) + " (dlc pools such windows as up to " +
             std::to_string(kMostTaps) + " slices)");
  }
  if (!max && !is_floating(x.dtype()))
    c.fail(std::string("an average of ") + dtype_name(x.dtype()) + " elements");
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), out(spatial);
  std::vector<int64_t> widths{0, 0, 0, 0};
  for (size_t a = 0; a < spatial; ++a) {
    out[a] = outputSize(c, in[a], g.kernel[a], g.stride[a], g.dilation[a], g.begin[a],
                        g.end[a], ceil);
    int64_t needed = (out[a] - 1) * g.stride[a] + (g.kernel[a] - 1) * g.dilation[a] + 1;
    widths.push_back(g.begin[a]);
    widths.push_back(std::max<int64_t>(needed - in[a] - g.begin[a], 0));
  }
  Shape paddedShape{x.shape()[0], x.shape()[1]};
  for (size_t a = 0; a < spatial; ++a)
    paddedShape.push_back(in[a] + widths[4 + 2 * a] + widths[5 + 2 * a]);
  c.creatable(paddedShape);
  double fill = max ? -std::numeric_limits<double>::infinity() : 0.0;
  Tensor padded = npx::pad(x, npx::PadMode::constant, widths, fill);

  Tensor y;
  std::vector<int64_t> tap(spatial, 0); // the window offset, as an odometer
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<npx::SliceRange> ranges{{}, {}};
    for (size_t a = 0; a < spatial; ++a) {
      int64_t first = tap[a] * g.dilation[a];
      ranges.push_back({first, first + (out[a] - 1) * g.stride[a] + 1, g.stride[a]});
    }
    Tensor slice = npx::slice(padded, ranges);
    y = !y.defined() ? slice : max ? np::maximum(y, slice) : y + slice;
    for (size_t a = spatial; a-- > 0;) {
      if (++tap[a] < g.kernel[a])
        break;
      tap[a] = 0;
    }
  }
  if (max)
    return y;
  // The divisor at each output: the taps inside the input (and its declared padding,
  // with count_include_pad), a product over the axes.
  std::string key = "pool_divisor";
  for (int64_t n : in)
    key += "." + std::to_string(n);
  Shape divisorShape{1, 1};
  divisorShape.insert(divisorShape.end(), out.begin(), out.end());
  Tensor divisor = c.derived(key + "." + dtype_name(x.dtype()), [&] {
    std::vector<double> counts(size_t(shape_rules::numElements(divisorShape)), 1.0);
    int64_t inner = 1;
    for (size_t a = spatial; a-- > 0;) {
      int64_t low = includePad ? 0 : g.begin[a];
      int64_t high = includePad ? in[a] + g.begin[a] + g.end[a] : in[a] + g.begin[a];
      for (size_t e = 0; e < counts.size(); ++e) {
        int64_t o = (int64_t(e) / inner) % out[a];
        counts[e] *= double(tapsInside(o, g.kernel[a], g.stride[a], g.dilation[a], low, high));
      }
      inner *= out[a];
    }
    return np::array(counts, divisorShape, x.dtype(), npx::cpu(0));
  });
  return y / divisor;
}

Tensor pool(const OpContext &c, bool max) {
  Tensor x = c.in(0);
  if (x.ndim() < 3)
    c.fail("input of shape " + shape_rules::str(x.shape()) + ", expected (N, C, ...)");
  size_t spatial = size_t(x.ndim() - 2);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  if (kernel.size() != spatial)
    c.fail("kernel_shape " + shape_rules::str(kernel) + " for input " +
           shape_rules::str(x.shape()));
  std::vector<int64_t> sizes(x.shape().begin() + 2, x.shape().end());
  Geometry g = readGeometry(c, spatial, kernel, sizes);
  checkCreates(c, x.shape(), x.shape()[1], g, false);
  if (max && c.attr_int("storage_order", 0) != 0)
    c.fail("storage_order=1 (column-major indices)");
  if (c.node().outputs.size() > 1 && !c.node().outputs[1].empty())
    c.fail("the Indices output (dlc's max pool gives values only)");
  bool ceil = c.attr_int("ceil_mode", 0) != 0;
  bool includePad = c.attr_int("count_include_pad", 0) != 0;
  bool dilated = std::any_of(g.dilation.begin(), g.dilation.end(), [](int64_t d) { return d != 1; });
  if (spatial > 2 || dilated || !is_floating(x.dtype()))
    return poolByTaps(c, x, g, max, ceil, includePad);

  Window w = toWindow(g);
  x = as2d(x);
  npx::PoolOptions options;
  options.kernel = w.kernel;
  options.stride = w.stride;
  options.ceil_mode = ceil;
  options.count_include_pad = includePad;
  if (w.symmetric()) {
    options.padding = w.begin;
    return back(max ? npx::max_pool2d(x, options) : npx::avg_pool2d(x, options), spatial);
  }
  if (max)
    return back(npx::max_pool2d(padSpatial(x, w, -std::numeric_limits<double>::infinity()),
                                options),
                spatial);
  options.count_include_pad = true;
  Tensor sums = npx::avg_pool2d(padSpatial(x, w, 0), options);
  if (includePad)
    return back(sums, spatial);
  // Averages over the input's elements only: the same pool of a padded plane of ones
  // counts them.
  Tensor ones = np::ones({1, 1, x.shape()[2], x.shape()[3]}, x.dtype(), x.device());
  return back(sums / npx::avg_pool2d(padSpatial(ones, w, 0), options), spatial);
}

Tensor globalPool(const OpContext &c, bool max) {
  Tensor x = c.in(0);
  if (x.ndim() < 3)
    c.fail("input of shape " + shape_rules::str(x.shape()) + ", expected (N, C, ...)");
  if (x.ndim() == 4) {
    npx::PoolOptions options;
    options.kernel = {x.shape()[2], x.shape()[3]};
    return max ? npx::max_pool2d(x, options) : npx::avg_pool2d(x, options);
  }
  std::vector<int64_t> axes;
  for (int64_t a = 2; a < x.ndim(); ++a)
    axes.push_back(a);
  return max ? np::max(x, axes, true) : np::mean(x, axes, true);
}

} // namespace

void add_pool_ops(std::vector<OpSpec> &specs) {
  specs.push_back({"MaxPool", 11, [](OpContext &c) { return Tensors{pool(c, true)}; }, {},
                   with_window_attributes({"ceil_mode", "storage_order"}), OpKind::pure, {},
                   "no Indices output"});
  specs.push_back({"AveragePool", 11, [](OpContext &c) { return Tensors{pool(c, false)}; }, {},
                   with_window_attributes({"ceil_mode", "count_include_pad"})});
  specs.push_back({"GlobalAveragePool", 11,
                   [](OpContext &c) { return Tensors{globalPool(c, false)}; }});
  specs.push_back({"GlobalMaxPool", 11, [](OpContext &c) { return Tensors{globalPool(c, true)}; }});
}

} // namespace dlc::onnx::detail
