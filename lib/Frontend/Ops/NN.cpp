//===- NN.cpp - convolution, pooling, batch norm, dense, dropout, loss --------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/Trace.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>

namespace dlc {

namespace {

using detail::checked;

using detail::require_float32;
using detail::require_one_float_dtype;

std::array<int64_t, 2> pairAttr(const Attrs &attrs, const char *name, int64_t fallback) {
  std::vector<int64_t> values = attrs.get_ints(name, {fallback, fallback});
  if (values.size() != 2)
    throw ShapeError(std::string(name) + " must have 2 entries (H, W), got " +
                     std::to_string(values.size()));
  return {values[0], values[1]};
}

shape_rules::Conv2DParams convParams(const Attrs &a) {
  return {pairAttr(a, "stride", 1), pairAttr(a, "padding", 0), pairAttr(a, "dilation", 1),
          a.get_int("groups", 1)};
}

shape_rules::Pool2DParams poolParams(const Attrs &a) {
  return {pairAttr(a, "kernel", 1), pairAttr(a, "stride", 1), pairAttr(a, "padding", 0),
          a.get_bool("ceil_mode", false)};
}

/// Checks that the forward op maps `forwardInput` to `gradOutput`'s shape.
void requireForwardShape(const shape_rules::Inferred &forward, const Shape &gradOutput) {
  Shape expected = checked(forward);
  if (expected != gradOutput)
    throw ShapeError("the output gradient is " + shape_rules::str(gradOutput) +
                     " but the forward op gives " + shape_rules::str(expected));
}

std::vector<TensorMeta> inferConv(const std::vector<TensorMeta> &in, const Attrs &a) {
  DType dtype = require_one_float_dtype(in);
  const Shape *bias = in.size() > 2 ? &in[2].shape : nullptr;
  return {{checked(shape_rules::conv2d(in[0].shape, in[1].shape, bias, convParams(a))),
           dtype}};
}

// (dy, w) -> dx of shape attr input_shape
std::vector<TensorMeta> inferConvBackwardData(const std::vector<TensorMeta> &in,
                                              const Attrs &a) {
  DType dtype = require_one_float_dtype(in);
  Shape input = a.get_ints("input_shape", {});
  requireForwardShape(shape_rules::conv2d(input, in[1].shape, nullptr, convParams(a)),
                      in[0].shape);
  return {{input, dtype}};
}

// (dy, x) -> dw of shape attr weight_shape, and db (O) too with attr with_bias
std::vector<TensorMeta> inferConvBackwardFilter(const std::vector<TensorMeta> &in,
                                                const Attrs &a) {
  DType dtype = require_one_float_dtype(in);
  Shape weight = a.get_ints("weight_shape", {});
  requireForwardShape(shape_rules::conv2d(in[1].shape, weight, nullptr, convParams(a)),
                      in[0].shape);
  if (a.get_bool("with_bias", false))
    return {{weight, dtype}, {{weight[0]}, dtype}};
  return {{weight, dtype}};
}

std::vector<TensorMeta> inferPool(const std::vector<TensorMeta> &in, const Attrs &a) {
  DType dtype = require_one_float_dtype(in);
  return {{checked(shape_rules::pool2d(in[0].shape, poolParams(a))), dtype}};
}

// (dy, x) -> dx like x
std::vector<TensorMeta> inferMaxPoolBackward(const std::vector<TensorMeta> &in,
                                             const Attrs &a) {
  require_one_float_dtype(in);
  requireForwardShape(shape_rules::pool2d(in[1].shape, poolParams(a)), in[0].shape);
  return {in[1]};
}

// dy -> dx of shape attr input_shape
std::vector<TensorMeta> inferAvgPoolBackward(const std::vector<TensorMeta> &in,
                                             const Attrs &a) {
  DType dtype = require_one_float_dtype(in);
  Shape input = a.get_ints("input_shape", {});
  requireForwardShape(shape_rules::pool2d(input, poolParams(a)), in[0].shape);
  return {{input, dtype}};
}

void requireChannelVectors(const std::vector<TensorMeta> &in, size_t first,
                           std::initializer_list<const char *> names) {
  size_t i = first;
  for (const char *name : names)
    checked(shape_rules::batchNormStats(in[0].shape, 1, in[i++].shape, name));
}

// x (and dy) of any floating-point dtype; the per-channel vectors (gamma, beta, the
// statistics) float32, as MXNet keeps them for float16 data and cuDNN requires.
void requireBatchNormDTypes(const std::vector<TensorMeta> &in, size_t channelVectorsFrom) {
  DType data = require_one_float_dtype({in.begin(), in.begin() + long(channelVectorsFrom)});
  for (size_t i = channelVectorsFrom; i < in.size(); ++i)
    if (in[i].dtype != DType::f32)
      throw DTypeError(std::string("needs float32 gamma, beta and statistics (also for ") +
                       dtype_name(data) + " data), got " + dtype_name(in[i].dtype) +
                       " for operand #" + std::to_string(i));
}

// training: (x, gamma, beta) -> (y, mean, var); inference: (x, gamma, beta, rm, rv) -> y
std::vector<TensorMeta> inferBatchNorm(const std::vector<TensorMeta> &in, const Attrs &a) {
  requireBatchNormDTypes(in, 1);
  if (a.get_bool("training", false)) {
    requireChannelVectors(in, 1, {"gamma", "beta"});
    return {in[0], in[1], in[1]};
  }
  requireChannelVectors(in, 1, {"gamma", "beta", "running_mean", "running_var"});
  return {in[0]};
}

// (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta)
std::vector<TensorMeta> inferBatchNormBackward(const std::vector<TensorMeta> &in,
                                               const Attrs &) {
  requireBatchNormDTypes(in, 2);
  if (in[0].shape != in[1].shape)
    throw ShapeError("the output gradient " + shape_rules::str(in[0].shape) +
                     " must have the input's shape " + shape_rules::str(in[1].shape));
  std::vector<TensorMeta> shifted(in.begin() + 1, in.end());
  requireChannelVectors(shifted, 1, {"gamma", "mean", "var"});
  return {in[1], in[2], in[2]};
}

std::vector<TensorMeta> inferDense(const std::vector<TensorMeta> &in, const Attrs &) {
  DType dtype = require_one_float_dtype(in);
  const Shape *bias = in.size() > 2 ? &in[2].shape : nullptr;
  return {{checked(shape_rules::dense(in[0].shape, in[1].shape, bias)), dtype}};
}

std::vector<TensorMeta> inferDropout(const std::vector<TensorMeta> &in, const Attrs &a) {
  require_one_float_dtype(in);
  double ratio = a.get_float("ratio", 0.5);
  if (!(ratio >= 0 && ratio < 1))
    throw ShapeError("ratio must be in [0, 1), got " + std::to_string(ratio));
  return {in[0], {in[0].shape, DType::boolean}};
}

void requireLabels(const TensorMeta &labels) {
  if (labels.dtype != DType::i32 && labels.dtype != DType::i64)
    throw DTypeError(std::string("labels must be int32 or int64 class indices, got ") +
                     dtype_name(labels.dtype));
}

std::vector<TensorMeta> inferLoss(const std::vector<TensorMeta> &in, const Attrs &) {
  DType dtype = require_one_float_dtype({in[0]});
  requireLabels(in[1]);
  return {{checked(shape_rules::softmaxCrossEntropy(in[0].shape, in[1].shape)), dtype}};
}

std::vector<TensorMeta> inferLossBackward(const std::vector<TensorMeta> &in, const Attrs &) {
  require_one_float_dtype({in[0], in[1]});
  requireLabels(in[2]);
  Shape loss = checked(shape_rules::softmaxCrossEntropy(in[1].shape, in[2].shape));
  if (loss != in[0].shape)
    throw ShapeError("the loss gradient " + shape_rules::str(in[0].shape) +
                     " must have the loss shape " + shape_rules::str(loss));
  return {in[1]};
}

Attrs convAttrs(const npx::ConvOptions &o) {
  return Attrs{{"stride", std::vector<int64_t>{o.stride[0], o.stride[1]}},
               {"padding", std::vector<int64_t>{o.padding[0], o.padding[1]}},
               {"dilation", std::vector<int64_t>{o.dilation[0], o.dilation[1]}},
               {"groups", o.groups}};
}

Attrs poolAttrs(const npx::PoolOptions &o) {
  return Attrs{{"kernel", std::vector<int64_t>{o.kernel[0], o.kernel[1]}},
               {"stride", std::vector<int64_t>{o.stride[0], o.stride[1]}},
               {"padding", std::vector<int64_t>{o.padding[0], o.padding[1]}},
               {"ceil_mode", o.ceil_mode},
               {op_attrs::avg_pool2d::count_include_pad.name, o.count_include_pad}};
}

npx::ConvOptions convOptionsOf(const Attrs &a) {
  shape_rules::Conv2DParams p = convParams(a);
  return {p.stride, p.padding, p.dilation, p.groups};
}

npx::PoolOptions poolOptionsOf(const Attrs &a) {
  shape_rules::Pool2DParams p = poolParams(a);
  return {p.kernel, p.stride, p.padding, p.ceilMode, a.get(op_attrs::avg_pool2d::count_include_pad)};
}

std::vector<Tensor> vjpConv(const VjpContext &c) {
  const Tensor &x = c.inputs[0], &w = c.inputs[1];
  // With the fused ReLU, the gradient first passes where the output is positive.
  const bool relu = c.attrs.get_string("activation", "") == "relu";
  Tensor g = relu ? npx::relu_backward(c.output_grads[0], c.outputs[0]) : c.output_grads[0];
  npx::ConvOptions options = convOptionsOf(c.attrs);
  Tensor dx = c.wants_grad(0) ? npx::convolution_backward_data(g, w, x.shape(), options) : Tensor();
  bool hasBias = c.inputs.size() > 2;
  if (!c.wants_grad(1) && !(hasBias && c.wants_grad(2))) {
    std::vector<Tensor> grads(c.inputs.size());
    grads[0] = dx;
    return grads;
  }
  if (!hasBias)
    return {dx, npx::convolution_backward_filter(g, x, w.shape(), options)};
  npx::ConvWeightGrads weights = npx::convolution_backward_weights(g, x, w.shape(), options);
  return {dx, weights.weight, weights.bias};
}

// The gradient of a convolution's input is linear in both of its operands, and is the
// forward of a transposed convolution: d/d(dy) is the convolution of the incoming
// gradient with the same weight, d/d(weight) the filter gradient with the two roles
// swapped (dy as the "output gradient", the incoming gradient as the "input").
std::vector<Tensor> vjpConvBackwardData(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &dy = c.inputs[0], &w = c.inputs[1];
  npx::ConvOptions options = convOptionsOf(c.attrs);
  Tensor ddy = c.wants_grad(0) ? npx::convolution(g, w, Tensor(), options) : Tensor();
  Tensor dw = c.wants_grad(1) ? npx::convolution_backward_filter(dy, g, w.shape(), options)
                              : Tensor();
  return {ddy, dw};
}

std::vector<Tensor> vjpMaxPool(const VjpContext &c) {
  return {npx::max_pool2d_backward(c.output_grads[0], c.inputs[0], poolOptionsOf(c.attrs))};
}

std::vector<Tensor> vjpAvgPool(const VjpContext &c) {
  return {npx::avg_pool2d_backward(c.output_grads[0], c.inputs[0].shape(),
                                   poolOptionsOf(c.attrs))};
}

/// Per-channel (C) vector shaped to broadcast over (N, C, ...) of rank `rank`.
Tensor perChannel(const Tensor &v, int64_t rank) {
  Shape shape(size_t(rank), 1);
  shape[1] = v.size();
  return v.reshape(shape);
}

std::vector<int64_t> allButChannels(int64_t rank) {
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

// Training: the batch statistics depend on x, which batch_norm_backward accounts for.
// Inference: an affine map per channel, y = (x - mean) * gamma / sqrt(var + eps) + beta.
std::vector<Tensor> vjpBatchNorm(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &x = c.inputs[0], &gamma = c.inputs[1];
  double epsilon = c.attrs.get_float("epsilon", 1e-5);
  if (c.attrs.get_bool("training", false)) {
    for (size_t k = 1; k < c.output_grads.size(); ++k)
      if (c.output_grads[k].defined())
        throw UnsupportedError("backward: gradients through the batch statistics that "
                               "batch_norm returns are not supported");
    if (!g.defined())
      return {Tensor(), Tensor(), Tensor()};
    npx::BatchNormGrads grads =
        npx::batch_norm_backward(g, x, gamma, c.outputs[1], c.outputs[2], epsilon);
    return {grads.input, grads.gamma, grads.beta};
  }
  int64_t rank = x.ndim();
  // float16/bfloat16 x: per-channel math in float32, dx rounded back to x's dtype.
  auto as = [](const Tensor &t, DType dtype) { return t.dtype() == dtype ? t : t.astype(dtype); };
  Tensor invStd = np::rsqrt(c.inputs[4] + epsilon);
  Tensor wide = as(g, DType::f32);
  Tensor normalized = (as(x, DType::f32) - perChannel(c.inputs[3], rank)) * perChannel(invStd, rank);
  std::vector<int64_t> axes = allButChannels(rank);
  return {as(wide * perChannel(gamma * invStd, rank), x.dtype()), np::sum(wide * normalized, axes),
          np::sum(wide, axes), Tensor(), Tensor()};
}

// y (..., U) = x (..., K)·wᵀ + b: dx = g·w, dw = gᵀ·x and db = Σ g over all rows.
std::vector<Tensor> vjpDense(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &x = c.inputs[0], &w = c.inputs[1];
  int64_t units = w.shape()[0], features = w.shape()[1];
  Tensor rows = g.reshape({-1, units}), inputs = x.reshape({-1, features});
  std::vector<Tensor> grads(c.inputs.size());
  if (c.wants_grad(0))
    grads[0] = np::matmul(rows, w).reshape(x.shape());
  if (c.wants_grad(1))
    grads[1] = np::matmul(rows, inputs, /*transpose_a=*/true);
  if (c.inputs.size() > 2 && c.wants_grad(2))
    grads[2] = np::sum(rows, {0});
  return grads;
}

// Kept elements pass the gradient, scaled like the forward.
std::vector<Tensor> vjpDropout(const VjpContext &c) {
  double scale = 1.0 / (1.0 - c.attrs.get_float("ratio", 0.5));
  const Tensor &g = c.output_grads[0];
  if (g.dtype() == DType::f32)
    return {g * c.outputs[1].astype(DType::f32) * scale};
  // 16-bit: scaled in float32 and rounded once, like the forward (1/(1-ratio) itself
  // would round in the 16-bit type).
  return {(g.astype(DType::f32) * c.outputs[1].astype(DType::f32) * scale).astype(g.dtype())};
}

std::vector<Tensor> vjpLoss(const VjpContext &c) {
  return {npx::softmax_cross_entropy_backward(c.output_grads[0], c.inputs[0], c.inputs[1]),
          Tensor()};
}

/// The inputs with an optional trailing bias.
std::vector<Tensor> withBias(std::vector<Tensor> inputs, const Tensor &bias) {
  if (bias.defined())
    inputs.push_back(bias);
  return inputs;
}

} // namespace

void detail::register_nn_ops() {
  register_op({"convolution", ops::conv2d, inferConv, vjpConv});
  register_op({"convolution_backward_data", ops::conv2d_backward_data, inferConvBackwardData,
               vjpConvBackwardData});
  register_op({"convolution_backward_filter", ops::conv2d_backward_filter,
               inferConvBackwardFilter, vjp_not_implemented});
  register_op({"max_pool2d", ops::max_pool2d, inferPool, vjpMaxPool});
  register_op({"max_pool2d_backward", ops::max_pool2d_backward, inferMaxPoolBackward,
               vjp_not_implemented});
  register_op({"avg_pool2d", ops::avg_pool2d, inferPool, vjpAvgPool});
  register_op({"avg_pool2d_backward", ops::avg_pool2d_backward, inferAvgPoolBackward,
               vjp_not_implemented});
  register_op({"batch_norm", ops::batch_norm, inferBatchNorm, vjpBatchNorm});
  register_op({"batch_norm_backward", ops::batch_norm_backward, inferBatchNormBackward,
               vjp_not_implemented});
  register_op({"fully_connected", ops::dense, inferDense, vjpDense});
  register_op(caller_runnable({"dropout", ops::dropout, inferDropout, vjpDropout}));
  register_op(caller_runnable(
      {"softmax_cross_entropy", ops::softmax_cross_entropy, inferLoss, vjpLoss}));
  register_op(caller_runnable({"softmax_cross_entropy_backward",
                               ops::softmax_cross_entropy_backward, inferLossBackward,
                               vjp_not_implemented}));
}

Tensor npx::convolution(const Tensor &x, const Tensor &weight, const Tensor &bias,
                        const ConvOptions &options) {
  static const OpDef &op = find_op("convolution");
  if (options.relu && trace::active()) {
    // A trace records the two ops: the dialect's conv2d has no epilogue, and dlc-fuse
    // fuses them again into the same kernel.
    ConvOptions unfused = options;
    unfused.relu = false;
    return relu(convolution(x, weight, bias, unfused));
  }
  Attrs attrs = convAttrs(options);
  if (options.relu)
    attrs.set("activation", std::string("relu")); // the kernels' fused-epilogue attribute
  return invoke1(op, withBias({x, weight}, bias), attrs);
}

Tensor npx::convolution_backward_data(const Tensor &dy, const Tensor &weight,
                                      const Shape &input_shape, const ConvOptions &options) {
  static const OpDef &op = find_op("convolution_backward_data");
  return invoke1(op, {dy, weight}, convAttrs(options).set("input_shape", input_shape));
}

Tensor npx::deconvolution(const Tensor &x, const Tensor &weight, const Tensor &bias,
                          const DeconvOptions &options) {
  const ConvOptions &conv = options.conv;
  if (x.ndim() != 4 || weight.ndim() != 4)
    throw ShapeError("deconvolution: expects an NCHW input and a (C_in, C_out/groups, KH, KW) "
                     "weight, got " + shape_rules::str(x.shape()) + " and " +
                     shape_rules::str(weight.shape()));
  if (conv.groups < 1 || weight.shape()[0] != x.shape()[1])
    throw ShapeError("deconvolution: the weight " + shape_rules::str(weight.shape()) +
                     " must have the input's " + std::to_string(x.shape()[1]) +
                     " channels first (input " + shape_rules::str(x.shape()) + ")");
  Shape out{x.shape()[0], weight.shape()[1] * conv.groups, 0, 0};
  for (size_t d = 0; d < 2; ++d) {
    int64_t pad = options.output_padding[d];
    if (pad < 0 || pad >= conv.stride[d])
      throw ValueError("deconvolution: output_padding " + std::to_string(pad) +
                       " must be at least 0 and below the stride (" +
                       std::to_string(conv.stride[d]) + ")");
    out[2 + d] = (x.shape()[2 + d] - 1) * conv.stride[d] - 2 * conv.padding[d] +
                 conv.dilation[d] * (weight.shape()[2 + d] - 1) + pad + 1;
    if (out[2 + d] < 1)
      throw ShapeError("deconvolution: input " + shape_rules::str(x.shape()) + " with weight " +
                       shape_rules::str(weight.shape()) + " gives an empty output (padding " +
                       std::to_string(conv.padding[d]) + " too large)");
  }
  Tensor y = convolution_backward_data(x, weight, out, conv);
  if (bias.defined())
    y = y + bias.reshape({bias.size(), 1, 1});
  return y;
}

Tensor npx::upsampling_nearest(const Tensor &x, int64_t scale) {
  if (x.ndim() != 4)
    throw ShapeError("upsampling: expects NCHW input, got " + shape_rules::str(x.shape()));
  if (scale < 1)
    throw ValueError("upsampling: scale must be at least 1, got " + std::to_string(scale));
  const Shape &s = x.shape();
  Tensor blocks = np::broadcast_to(x.reshape({s[0], s[1], s[2], 1, s[3], 1}),
                                   {s[0], s[1], s[2], scale, s[3], scale});
  return blocks.reshape({s[0], s[1], s[2] * scale, s[3] * scale});
}

namespace {
/// The (out, in) matrix of 1-D linear interpolation weights from `in` samples to `out`.
Tensor interpolationWeights(int64_t in, int64_t out, bool alignCorners, const Tensor &like) {
  std::vector<double> weights(size_t(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    double source = alignCorners ? (out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0)
                                 : std::max(0.0, (double(i) + 0.5) * double(in) / double(out) - 0.5);
    int64_t low = std::min(int64_t(source), in - 1), high = std::min(low + 1, in - 1);
    double fraction = source - double(low);
    weights[size_t(i * in + low)] += 1 - fraction;
    weights[size_t(i * in + high)] += fraction;
  }
  return np::array(weights, Shape{out, in}, like.dtype(), like.device());
}
} // namespace

Tensor npx::bilinear_resize(const Tensor &x, int64_t height, int64_t width, bool align_corners) {
  if (x.ndim() != 4)
    throw ShapeError("bilinear_resize: expects NCHW input, got " + shape_rules::str(x.shape()));
  if (height < 1 || width < 1 || x.shape()[2] < 1 || x.shape()[3] < 1)
    throw ShapeError("bilinear_resize: cannot resize " + shape_rules::str(x.shape()) + " to " +
                     std::to_string(height) + "x" + std::to_string(width));
  const Shape &s = x.shape();
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  // Along the width: (N*C*H, W) x (W, width); then along the height on the transposed
  // planes: (N*C*width, H) x (H, height).
  Tensor rows = np::matmul(x.reshape({n * c * h, w}),
                           interpolationWeights(w, width, align_corners, x), false, true);
  Tensor columns = np::transpose(rows.reshape({n * c, h, width}), {0, 2, 1});
  Tensor both = np::matmul(columns.reshape({n * c * width, h}),
                           interpolationWeights(h, height, align_corners, x), false, true);
  return np::transpose(both.reshape({n, c, width, height}), {0, 1, 3, 2});
}

namespace {
/// The border of one side of `axis` for npx::pad: `width` slices, taken from the side
/// `before` (true) or after.
Tensor padBorder(const Tensor &x, npx::PadMode mode, int64_t axis, int64_t width, bool before,
                 double value) {
  int64_t n = x.shape()[size_t(axis)];
  Shape border = x.shape();
  border[size_t(axis)] = width;
  if (mode == npx::PadMode::constant)
    return np::full(border, value, x.dtype(), x.device());
  if (mode == npx::PadMode::edge) {
    Tensor edge = np::split_sizes(x, before ? std::vector<int64_t>{1, n - 1}
                                            : std::vector<int64_t>{n - 1, 1},
                                  axis)[before ? 0 : 1];
    return np::broadcast_to(edge, border);
  }
  // Mirrored: before, elements width..1 (in that order); after, n-2 down to n-1-width.
  // Single elements where the border reads, the rest (when there is one) in one piece.
  std::vector<int64_t> sizes(size_t(width + 1), 1);
  int64_t rest = n - width - 1;
  if (rest > 0)
    sizes.insert(before ? sizes.end() : sizes.begin(), rest);
  std::vector<Tensor> parts = np::split_sizes(x, sizes, axis);
  std::vector<Tensor> mirrored;
  for (int64_t i = 0; i < width; ++i)
    mirrored.push_back(before ? parts[size_t(width - i)] : parts[parts.size() - 2 - size_t(i)]);
  return mirrored.size() == 1 ? mirrored[0] : np::concatenate(mirrored, axis);
}
} // namespace

Tensor npx::pad(const Tensor &x, PadMode mode, const std::vector<int64_t> &pad_width,
                double constant_value) {
  int64_t rank = x.ndim();
  if (int64_t(pad_width.size()) != 2 * rank)
    throw ShapeError("pad: pad_width has " + std::to_string(pad_width.size()) +
                     " values, the input " + shape_rules::str(x.shape()) + " needs " +
                     std::to_string(2 * rank) + " (before and after each axis)");
  Tensor y = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t before = pad_width[size_t(2 * axis)], after = pad_width[size_t(2 * axis + 1)];
    int64_t n = x.shape()[size_t(axis)];
    if (before < 0 || after < 0)
      throw ValueError("pad: widths must be at least 0, got " + std::to_string(before) + " and " +
                       std::to_string(after) + " for axis " + std::to_string(axis));
    if (before == 0 && after == 0)
      continue;
    if (mode != PadMode::constant && n == 0)
      throw ShapeError("pad: cannot extend the empty axis " + std::to_string(axis) + " of " +
                       shape_rules::str(x.shape()) + " from its edge");
    if (mode == PadMode::reflect && (before >= n || after >= n))
      throw ShapeError("pad: reflect widths (" + std::to_string(before) + ", " +
                       std::to_string(after) + ") must be below the size " + std::to_string(n) +
                       " of axis " + std::to_string(axis) + " of " + shape_rules::str(x.shape()));
    std::vector<Tensor> pieces;
    if (before > 0)
      pieces.push_back(padBorder(y, mode, axis, before, true, constant_value));
    pieces.push_back(y);
    if (after > 0)
      pieces.push_back(padBorder(y, mode, axis, after, false, constant_value));
    y = np::concatenate(pieces, axis);
  }
  return y;
}

Tensor npx::convolution_backward_filter(const Tensor &dy, const Tensor &x,
                                        const Shape &weight_shape, const ConvOptions &options) {
  static const OpDef &op = find_op("convolution_backward_filter");
  return invoke1(op, {dy, x}, convAttrs(options).set("weight_shape", weight_shape));
}

npx::ConvWeightGrads npx::convolution_backward_weights(const Tensor &dy, const Tensor &x,
                                                       const Shape &weight_shape,
                                                       const ConvOptions &options) {
  static const OpDef &op = find_op("convolution_backward_filter");
  std::vector<Tensor> out = invoke(
      op, {dy, x}, convAttrs(options).set("weight_shape", weight_shape).set("with_bias", true));
  return {out[0], out[1]};
}

Tensor npx::max_pool2d(const Tensor &x, const PoolOptions &options) {
  static const OpDef &op = find_op("max_pool2d");
  return invoke1(op, {x}, poolAttrs(options));
}

Tensor npx::max_pool2d_backward(const Tensor &dy, const Tensor &x, const PoolOptions &options) {
  static const OpDef &op = find_op("max_pool2d_backward");
  return invoke1(op, {dy, x}, poolAttrs(options));
}

Tensor npx::avg_pool2d(const Tensor &x, const PoolOptions &options) {
  static const OpDef &op = find_op("avg_pool2d");
  return invoke1(op, {x}, poolAttrs(options));
}

Tensor npx::avg_pool2d_backward(const Tensor &dy, const Shape &input_shape,
                                const PoolOptions &options) {
  static const OpDef &op = find_op("avg_pool2d_backward");
  return invoke1(op, {dy}, poolAttrs(options).set("input_shape", input_shape));
}

npx::BatchNormResult npx::batch_norm_training(const Tensor &x, const Tensor &gamma,
                                              const Tensor &beta, double epsilon) {
  static const OpDef &op = find_op("batch_norm");
  std::vector<Tensor> out =
      invoke(op, {x, gamma, beta}, Attrs{{"training", true}, {"epsilon", epsilon}});
  return {out[0], out[1], out[2]};
}

Tensor npx::batch_norm_inference(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                                 const Tensor &running_mean, const Tensor &running_var,
                                 double epsilon) {
  static const OpDef &op = find_op("batch_norm");
  return invoke1(op, {x, gamma, beta, running_mean, running_var},
                 Attrs{{"training", false}, {"epsilon", epsilon}});
}

npx::BatchNormGrads npx::batch_norm_backward(const Tensor &dy, const Tensor &x,
                                             const Tensor &gamma, const Tensor &mean,
                                             const Tensor &var, double epsilon) {
  static const OpDef &op = find_op("batch_norm_backward");
  std::vector<Tensor> out = invoke(op, {dy, x, gamma, mean, var}, Attrs{{"epsilon", epsilon}});
  return {out[0], out[1], out[2]};
}

Tensor npx::fully_connected(const Tensor &x, const Tensor &weight, const Tensor &bias) {
  static const OpDef &op = find_op("fully_connected");
  return invoke1(op, withBias({x, weight}, bias));
}

npx::DropoutResult npx::dropout(const Tensor &x, double ratio, std::optional<uint64_t> seed) {
  static const OpDef &op = find_op("dropout");
  int64_t kernelSeed = seed ? int64_t(*seed) : detail::next_kernel_seed(x.device());
  std::vector<Tensor> out = invoke(op, {x}, Attrs{{"ratio", ratio}, {"seed", kernelSeed}});
  return {out[0], out[1]};
}

Tensor npx::softmax_cross_entropy(const Tensor &logits, const Tensor &labels) {
  static const OpDef &op = find_op("softmax_cross_entropy");
  return invoke1(op, {logits, labels});
}

Tensor npx::softmax_cross_entropy_backward(const Tensor &dloss, const Tensor &logits,
                                           const Tensor &labels) {
  static const OpDef &op = find_op("softmax_cross_entropy_backward");
  return invoke1(op, {dloss, logits, labels});
}

} // namespace dlc
