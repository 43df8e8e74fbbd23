//===- OpsNN.cpp - ONNX's convolutions, norms, products and softmax ------------===//
//
// dlc's convolutions are two-dimensional with the same padding on both sides of an
// axis. One-dimensional ones run as two-dimensional ones of height 1; unequal
// padding (SAME_UPPER on an even window, exporters' asymmetric pads) is an explicit
// npx::pad before them.
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

Tensor conv(const OpContext &c) {
  Tensor x = c.in(0), weight = c.in(1);
  size_t spatial = spatialAxes(c, x.shape());
  if (weight.ndim() != x.ndim())
    c.fail("weight " + shape_rules::str(weight.shape()) + " for input " +
           shape_rules::str(x.shape()));
  std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel)
    c.fail("kernel_shape " + shape_rules::str(c.attr_ints("kernel_shape")) +
           " differs from the weight's " + shape_rules::str(kernel));
  std::vector<int64_t> sizes(x.shape().begin() + 2, x.shape().end());
  Geometry g = readGeometry(c, spatial, kernel, sizes);
  checkCreates(c, x.shape(), std::max(x.shape()[1], weight.shape()[0]), g, false);
  Window w = toWindow(g);
  x = as2d(x);
  weight = as2d(weight);
  npx::ConvOptions options;
  options.stride = w.stride;
  options.dilation = w.dilation;
  options.groups = c.attr_int("group", 1);
  if (w.symmetric())
    options.padding = w.begin;
  else
    x = padSpatial(x, w, 0);
  return back(npx::convolution(x, weight, c.optional(2), options), spatial);
}

Tensor convTranspose(const OpContext &c) {
  Tensor x = c.in(0), weight = c.in(1);
  size_t spatial = spatialAxes(c, x.shape());
  if (weight.ndim() != x.ndim())
    c.fail("weight " + shape_rules::str(weight.shape()) + " for input " +
           shape_rules::str(x.shape()));
  std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  std::vector<int64_t> sizes(x.shape().begin() + 2, x.shape().end());
  Geometry g = readGeometry(c, spatial, kernel, sizes, /*transposed=*/true);
  Window w = toWindow(g);
  int64_t groups = c.attr_int("group", 1);
  std::vector<int64_t> outPad = c.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (outPad.size() != spatial)
    c.fail("attribute 'output_padding' has " + std::to_string(outPad.size()) + " values");
  for (int64_t p : outPad)
    if (p < 0 || p > kMostWindow)
      c.fail("output_padding " + std::to_string(p) + " (expected 0 to 2^31)");
  if (groups < 1 || groups > kMostWindow)
    c.fail("group " + std::to_string(groups));
  checkCreates(c, x.shape(), weight.shape()[1] * groups, g, true, outPad);
  std::array<int64_t, 2> extra{0, 0};
  size_t first = 2 - spatial;
  for (size_t a = 0; a < spatial; ++a)
    extra[first + a] = outPad[a];
  if (c.has_attr("output_shape")) {
    std::vector<int64_t> target = c.attr_ints("output_shape");
    if (target.size() != spatial)
      c.fail("attribute 'output_shape' has " + std::to_string(target.size()) + " values");
    for (int64_t t : target)
      if (t < 1 || t > kMostWindow)
        c.fail("output_shape " + shape_rules::str(target) + " (sizes from 1 to 2^31)");
    bool upper = c.attr_string("auto_pad", "NOTSET") == "SAME_UPPER";
    for (size_t a = 0; a < spatial; ++a) {
      size_t k = first + a;
      int64_t total = w.stride[k] * (sizes[a] - 1) + extra[k] +
                      (kernel[a] - 1) * w.dilation[k] + 1 - target[a];
      // Floor division, as ONNX's reference computes it (a negative total pads the end).
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.begin[k] = upper ? half : total - half;
      w.end[k] = total - w.begin[k];
    }
  }
  x = as2d(x);
  weight = as2d(weight);
  npx::DeconvOptions options;
  options.conv.stride = w.stride;
  options.conv.dilation = w.dilation;
  options.conv.groups = groups;
  bool direct = w.symmetric() && w.begin[0] >= 0 && w.begin[1] >= 0 &&
                extra[0] < w.stride[0] && extra[1] < w.stride[1];
  if (direct) {
    options.conv.padding = w.begin;
    options.output_padding = extra;
    return back(npx::deconvolution(x, weight, c.optional(2), options), spatial);
  }
  // Unequal (or negative) padding: the whole transposed convolution, then the window of
  // it the padding keeps (zeros past its end), then the bias.
  Tensor full = npx::deconvolution(x, weight, Tensor(), options);
  std::vector<int64_t> widths{0, 0, 0, 0};
  std::vector<npx::SliceRange> ranges{{}, {}};
  for (size_t k = 0; k < 2; ++k) {
    int64_t length = full.shape()[2 + k] + extra[k] - w.begin[k] - w.end[k];
    int64_t before = std::max<int64_t>(-w.begin[k], 0);
    int64_t start = std::max<int64_t>(w.begin[k], 0);
    int64_t after = std::max<int64_t>(start + length - before - full.shape()[2 + k], 0);
    widths.push_back(before);
    widths.push_back(after);
    ranges.push_back({start, start + length - before, 1});
  }
  Tensor y = npx::slice(npx::pad(full, npx::PadMode::constant, widths, 0), ranges);
  if (c.has(2))
    y = y + np::reshape(c.in(2), {1, y.shape()[1], 1, 1});
  return back(y, spatial);
}

Tensor batchNorm(const OpContext &c) {
  if (c.attr_int("training_mode", 0) != 0)
    c.fail("training_mode=1 (dlc imports batch normalization for inference, with the "
           "running statistics)");
  if (c.node().outputs.size() > 1)
    c.fail("the running mean and variance outputs (training mode)");
  Tensor x = c.in(0);
  if (x.ndim() < 2)
    c.fail("input of shape " + shape_rules::str(x.shape()) + ", expected (N, C, ...)");
  Shape shape = x.shape();
  int64_t rest = 1;
  for (size_t a = 2; a < shape.size(); ++a)
    rest *= shape[a];
  Tensor x4 = x.ndim() == 4 ? x : np::reshape(x, {shape[0], shape[1], rest, 1});
  Tensor y = npx::batch_norm_inference(x4, c.in(1), c.in(2), c.in(3), c.in(4),
                                       c.attr_float("epsilon", 1e-5));
  return x.ndim() == 4 ? y : np::reshape(y, shape);
}

Tensors layerNorm(const OpContext &c) {
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim());
  if (c.attr_int("stash_type", 1) != 1)
    c.fail("stash_type " + std::to_string(c.attr_int("stash_type", 1)) +
           " (dlc keeps the statistics in float32)");
  Shape shape = x.shape();
  int64_t rows = 1, width = 1;
  for (int64_t a = 0; a < x.ndim(); ++a)
    (a < axis ? rows : width) *= shape[size_t(a)];
  bool lastAxis = axis == x.ndim() - 1;
  Tensor flat = lastAxis ? x : np::reshape(x, {rows, width});
  Tensor gamma = c.in(1), beta = c.optional(2);
  if (!lastAxis) {
    gamma = np::reshape(np::broadcast_to(gamma, Shape(shape.begin() + axis, shape.end())), {width});
    if (beta.defined())
      beta = np::reshape(np::broadcast_to(beta, Shape(shape.begin() + axis, shape.end())), {width});
  } else if (gamma.ndim() != 1) {
    gamma = np::reshape(np::broadcast_to(gamma, {width}), {width});
    if (beta.defined())
      beta = np::reshape(np::broadcast_to(beta, {width}), {width});
  }
  double eps = c.attr_float("epsilon", 1e-5);
  npx::LayerNormResult r = npx::layer_norm_with_stats(flat, gamma, beta, -1, eps);
  Tensors out{lastAxis ? r.output : np::reshape(r.output, shape)};
  if (c.node().outputs.size() > 1) {
    // Mean and 1/sqrt(var + eps), of shape x.shape[:axis] + [1] * (rank - axis).
    Shape stats(shape.begin(), shape.begin() + axis);
    stats.resize(shape.size(), 1);
    out.push_back(np::reshape(r.mean, stats));
    Tensor var = np::reshape(r.var, stats);
    out.push_back(np::rsqrt(var + np::full({}, eps, var.dtype(), var.device())));
  }
  return out;
}

Tensor gemm(const OpContext &c) {
  Tensor a = c.in(0), b = c.in(1);
  bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (a.ndim() != 2 || b.ndim() != 2)
    c.fail("operands " + shape_rules::str(a.shape()) + " and " + shape_rules::str(b.shape()) +
           ", expected matrices");
  Tensor bias = c.optional(2);
  // PyTorch's Linear: A·Bᵀ + C with a row of biases, dlc's fully connected layer (and
  // A·B with B a weight: on Bᵀ, which compiled programs transpose once).
  bool row = !bias.defined() || (bias.ndim() == 1 && bias.shape()[0] == b.shape()[tb ? 0 : 1]);
  if (!ta && alpha == 1.0 && beta == 1.0 && row && (tb || c.parameter(1)))
    return npx::fully_connected(a, tb ? b : np::transpose(b, {1, 0}), bias);
  Tensor y = np::matmul(a, b, ta, tb);
  if (alpha != 1.0)
    y = y * alpha;
  if (bias.defined())
    y = y + (beta == 1.0 ? bias : bias * beta);
  return y;
}

Tensor matmul(const OpContext &c) {
  Tensor a = c.in(0), b = c.in(1);
  if (a.ndim() == 0 || b.ndim() == 0)
    c.fail("0-d operands (MatMul needs vectors or matrices)");
  bool vectorA = a.ndim() == 1, vectorB = b.ndim() == 1;
  if (vectorA)
    a = np::reshape(a, {1, a.shape()[0]});
  if (vectorB)
    b = np::reshape(b, {b.shape()[0], 1});
  Tensor y;
  if (b.ndim() == 2 && !vectorB && c.parameter(1)) {
    // x · W with W a weight (PyTorch's Linear on more than two axes): dlc's dense layer
    // on Wᵀ, a transpose of the weight alone, which compiled programs do once.
    y = npx::fully_connected(a, np::transpose(b, {1, 0}), Tensor());
  } else if (b.ndim() == 2 && a.ndim() > 2) {
    // (..., K) · (K, N): one product of all rows.
    Shape lead(a.shape().begin(), a.shape().end() - 1);
    int64_t k = a.shape().back();
    y = np::matmul(np::reshape(a, {-1, k}), b);
    lead.push_back(b.shape()[1]);
    y = np::reshape(y, lead);
  } else {
    y = np::matmul(a, b);
  }
  Shape out = y.shape();
  if (vectorA)
    out.erase(out.end() - 2);
  if (vectorB)
    out.erase(out.end() - 1);
  return out == y.shape() ? y : np::reshape(y, out);
}

Tensor softmax(const OpContext &c, bool log) {
  Tensor x = c.in(0);
  if (c.opset() >= 13) {
    int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim());
    return log ? npx::log_softmax(x, axis) : npx::softmax(x, axis);
  }
  // Before opset 13: over all axes from `axis` on (default 1), as one row per sample.
  int64_t axis = c.axis(c.attr_int("axis", 1), x.ndim());
  int64_t rows = 1, cols = 1;
  for (int64_t a = 0; a < x.ndim(); ++a)
    (a < axis ? rows : cols) *= x.shape()[size_t(a)];
  Tensor flat = np::reshape(x, {rows, cols});
  Tensor y = log ? npx::log_softmax(flat, 1) : npx::softmax(flat, 1);
  return np::reshape(y, x.shape());
}

} // namespace

void add_nn_ops(std::vector<OpSpec> &specs) {
  specs.push_back({"Conv", 11, [](OpContext &c) { return Tensors{conv(c)}; }, {},
                   with_window_attributes({"group"}), OpKind::pure, {}, "1-D and 2-D"});
  specs.push_back({"ConvTranspose", 11, [](OpContext &c) { return Tensors{convTranspose(c)}; },
                   {}, with_window_attributes({"group", "output_padding", "output_shape"}), OpKind::pure, {},
                   "1-D and 2-D; no auto_pad SAME_*"});
  specs.push_back({"BatchNormalization", 11, [](OpContext &c) { return Tensors{batchNorm(c)}; },
                   {}, {"epsilon", "momentum", "training_mode"}, OpKind::pure, {3, 4},
                   "inference (running statistics)"});
  specs.push_back({"LayerNormalization", 17, layerNorm, {}, {"axis", "epsilon", "stash_type"},
                   OpKind::pure, {}, "stash_type 1"});
  specs.push_back({"InstanceNormalization", 11,
                   [](OpContext &c) {
                     if (c.in(0).ndim() != 4)
                       c.fail("input of shape " + shape_rules::str(c.shape(0)) +
                              ", dlc normalizes (N, C, H, W) instances");
                     return Tensors{npx::instance_norm(c.in(0), c.in(1), c.in(2),
                                                       c.attr_float("epsilon", 1e-5))};
                   },
                   {}, {"epsilon"}, OpKind::pure, {}, "4-D inputs"});
  specs.push_back({"Gemm", 11, [](OpContext &c) { return Tensors{gemm(c)}; }, {},
                   {"alpha", "beta", "transA", "transB"}});
  specs.push_back({"MatMul", 11, [](OpContext &c) { return Tensors{matmul(c)}; }});
  specs.push_back({"Softmax", 11, [](OpContext &c) { return Tensors{softmax(c, false)}; }, {},
                   {"axis"}});
  specs.push_back({"LogSoftmax", 11, [](OpContext &c) { return Tensors{softmax(c, true)}; }, {},
                   {"axis"}});
}

} // namespace dlc::onnx::detail
