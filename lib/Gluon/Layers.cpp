//===- Layers.cpp - gluon.nn layers over the eager ops ------------------------===//
#include "dlc/Gluon/Layers.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/OpRegistry.h"

namespace dlc::gluon::nn {

Tensor activate(const std::string &activation, const Tensor &x) {
  if (activation.empty())
    return x;
  if (activation == "relu")
    return npx::relu(x);
  if (activation == "sigmoid")
    return npx::sigmoid(x);
  if (activation == "tanh")
    return np::tanh(x);
  if (activation == "gelu")
    return npx::gelu(x);
  if (activation == "softrelu")
    return npx::softrelu(x);
  if (activation == "relu6")
    return npx::relu6(x);
  if (activation == "softsign")
    return npx::softsign(x);
  if (activation == "silu" || activation == "swish")
    return npx::silu(x);
  if (activation == "selu")
    return npx::selu(x);
  throw ValueError("unknown activation '" + activation +
                   "'; expected relu, sigmoid, tanh, softrelu, softsign, gelu, relu6, silu, "
                   "selu or none");
}

namespace {
void requireRank(const char *layer, const Tensor &x, int64_t rank, const char *layout) {
  if (x.ndim() != rank)
    throw ShapeError(std::string(layer) + ": expects " + layout + " input (rank " +
                     std::to_string(rank) + "), got " + shape_rules::str(x.shape()));
}

std::array<int64_t, 2> orPool(std::array<int64_t, 2> strides, std::array<int64_t, 2> pool) {
  return {strides[0] > 0 ? strides[0] : pool[0], strides[1] > 0 ? strides[1] : pool[1]};
}

/// Refuses a window setting below `least` when the layer is made, not at its first call
/// (Conv2D(4, 0) was accepted and failed only when run).
void requireAtLeast(const char *layer, const char *what, std::array<int64_t, 2> value,
                    int64_t least) {
  if (value[0] < least || value[1] < least)
    throw ValueError(std::string(layer) + ": " + what + " (" + std::to_string(value[0]) + ", " +
                     std::to_string(value[1]) + ") must be at least " + std::to_string(least));
}

/// What Conv2D and Conv2DTranspose both check when they are made.
void checkConvSettings(const char *layer, int64_t channels, std::array<int64_t, 2> kernel,
                       const Conv2DOptions &o) {
  if (channels <= 0 || o.groups <= 0 || channels % o.groups != 0)
    throw ValueError(std::string(layer) + ": channels (" + std::to_string(channels) +
                     ") must be positive and divisible by groups (" + std::to_string(o.groups) +
                     ")");
  requireAtLeast(layer, "kernel_size", kernel, 1);
  requireAtLeast(layer, "strides", o.strides, 1);
  requireAtLeast(layer, "padding", o.padding, 0);
  requireAtLeast(layer, "dilation", o.dilation, 1);
  if (o.in_channels < 0 || o.in_channels % o.groups != 0)
    throw ValueError(std::string(layer) + ": in_channels (" + std::to_string(o.in_channels) +
                     ") must be 0 (inferred) or a positive multiple of groups (" +
                     std::to_string(o.groups) + ")");
}

/// The input's channel count, checked against the layer's groups.
void checkGroupedInput(const char *layer, const Tensor &x, int64_t groups) {
  requireRank(layer, x, 4, "NCHW");
  if (x.shape()[1] % groups != 0)
    throw ShapeError(std::string(layer) + ": input " + shape_rules::str(x.shape()) + " has " +
                     std::to_string(x.shape()[1]) + " channels, not divisible by groups=" +
                     std::to_string(groups));
}

init::InitializerPtr zeros() { return std::make_shared<init::Zero>(); }
init::InitializerPtr ones() { return std::make_shared<init::One>(); }
} // namespace

//===----------------------------------------------------------------------===//
// Conv2D
//===----------------------------------------------------------------------===//

Conv2D::Conv2D(int64_t channels, int64_t kernel_size, std::string activation,
               Conv2DOptions options)
    : Conv2D(channels, {kernel_size, kernel_size}, std::move(activation), std::move(options)) {}

Conv2D::Conv2D(int64_t channels, std::array<int64_t, 2> kernel_size, std::string activation,
               Conv2DOptions options)
    : channels_(channels), kernel_(kernel_size), activation_(std::move(activation)),
      options_(std::move(options)) {
  checkConvSettings("Conv2D", channels, kernel_, options_);
  int64_t inPerGroup = options_.in_channels > 0 ? options_.in_channels / options_.groups : 0;
  weight = register_parameter(
      "weight", std::make_shared<Parameter>(
                    "weight", Shape{channels, inPerGroup, kernel_[0], kernel_[1]}, DType::f32,
                    options_.weight_initializer));
  if (options_.use_bias)
    bias = register_parameter(
        "bias", std::make_shared<Parameter>("bias", Shape{channels}, DType::f32,
                                            options_.bias_initializer ? options_.bias_initializer
                                                                      : zeros()));
}

Tensor Conv2D::forward(const Tensor &x) {
  checkGroupedInput("Conv2D", x, options_.groups);
  weight->set_shape({channels_, x.shape()[1] / options_.groups, kernel_[0], kernel_[1]});
  npx::ConvOptions conv{options_.strides, options_.padding, options_.dilation, options_.groups};
  conv.relu = activation_ == "relu"; // fused into the convolution's pass over y
  Device device = x.device();
  Tensor y = npx::convolution(x, weight->data(device), bias ? bias->data(device) : Tensor(), conv);
  return conv.relu ? y : activate(activation_, y);
}

std::string Conv2D::kind() const {
  return "Conv2D(" + std::to_string(channels_) + ", kernel_size=(" + std::to_string(kernel_[0]) +
         ", " + std::to_string(kernel_[1]) + ")" +
         (activation_.empty() ? "" : ", Activation(" + activation_ + ")") + ")";
}

Conv2DTranspose::Conv2DTranspose(int64_t channels, int64_t kernel_size, std::string activation,
                                 Conv2DTransposeOptions options)
    : Conv2DTranspose(channels, {kernel_size, kernel_size}, std::move(activation),
                      std::move(options)) {}

Conv2DTranspose::Conv2DTranspose(int64_t channels, std::array<int64_t, 2> kernel_size,
                                 std::string activation, Conv2DTransposeOptions options)
    : channels_(channels), kernel_(kernel_size), activation_(std::move(activation)),
      options_(std::move(options)) {
  checkConvSettings("Conv2DTranspose", channels, kernel_, options_);
  requireAtLeast("Conv2DTranspose", "output_padding", options_.output_padding, 0);
  for (size_t d = 0; d < 2; ++d)
    if (options_.output_padding[d] >= options_.strides[d])
      throw ValueError("Conv2DTranspose: output_padding (" +
                       std::to_string(options_.output_padding[d]) +
                       ") must be below strides (" + std::to_string(options_.strides[d]) + ")");
  activate(activation_, np::zeros({1})); // rejects unknown names now
  weight = register_parameter(
      "weight", std::make_shared<Parameter>(
                    "weight",
                    Shape{options_.in_channels, channels / options_.groups, kernel_[0], kernel_[1]},
                    DType::f32, options_.weight_initializer));
  if (options_.use_bias)
    bias = register_parameter(
        "bias", std::make_shared<Parameter>("bias", Shape{channels}, DType::f32,
                                            options_.bias_initializer ? options_.bias_initializer
                                                                      : zeros()));
}

Tensor Conv2DTranspose::forward(const Tensor &x) {
  checkGroupedInput("Conv2DTranspose", x, options_.groups);
  weight->set_shape({x.shape()[1], channels_ / options_.groups, kernel_[0], kernel_[1]});
  npx::DeconvOptions deconv;
  deconv.conv = {options_.strides, options_.padding, options_.dilation, options_.groups};
  deconv.output_padding = options_.output_padding;
  Device device = x.device();
  return activate(activation_, npx::deconvolution(x, weight->data(device),
                                                  bias ? bias->data(device) : Tensor(), deconv));
}

std::string Conv2DTranspose::kind() const {
  return "Conv2DTranspose(" + std::to_string(channels_) + ", kernel_size=(" +
         std::to_string(kernel_[0]) + ", " + std::to_string(kernel_[1]) + ")" +
         (activation_.empty() ? "" : ", Activation(" + activation_ + ")") + ")";
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {
npx::PoolOptions poolOptions(const char *layer, int64_t pool_size, int64_t strides,
                             const PoolOptions &o) {
  requireAtLeast(layer, "pool_size", {pool_size, pool_size}, 1);
  requireAtLeast(layer, "strides", {strides, strides}, 0);
  requireAtLeast(layer, "strides", o.strides, 0);
  requireAtLeast(layer, "padding", o.padding, 0);
  npx::PoolOptions pool;
  pool.kernel = {pool_size, pool_size};
  pool.stride = orPool(strides > 0 ? std::array<int64_t, 2>{strides, strides} : o.strides,
                       pool.kernel);
  pool.padding = o.padding;
  pool.ceil_mode = o.ceil_mode;
  pool.count_include_pad = o.count_include_pad;
  return pool;
}
} // namespace

MaxPool2D::MaxPool2D(int64_t pool_size, int64_t strides, PoolOptions options)
    : pool_(poolOptions("MaxPool2D", pool_size, strides, options)) {}

Tensor MaxPool2D::forward(const Tensor &x) {
  requireRank("MaxPool2D", x, 4, "NCHW");
  return npx::max_pool2d(x, pool_);
}

AvgPool2D::AvgPool2D(int64_t pool_size, int64_t strides, PoolOptions options)
    : pool_(poolOptions("AvgPool2D", pool_size, strides, options)) {}

Tensor AvgPool2D::forward(const Tensor &x) {
  requireRank("AvgPool2D", x, 4, "NCHW");
  return npx::avg_pool2d(x, pool_);
}

namespace {
/// A pooling whose window is x's whole plane.
npx::PoolOptions wholePlane(const char *layer, const Tensor &x) {
  requireRank(layer, x, 4, "NCHW");
  npx::PoolOptions options;
  options.kernel = {x.shape()[2], x.shape()[3]};
  options.stride = options.kernel;
  return options;
}
} // namespace

Tensor GlobalAvgPool2D::forward(const Tensor &x) {
  return npx::avg_pool2d(x, wholePlane("GlobalAvgPool2D", x));
}

Tensor GlobalMaxPool2D::forward(const Tensor &x) {
  return npx::max_pool2d(x, wholePlane("GlobalMaxPool2D", x));
}

//===----------------------------------------------------------------------===//
// BatchNorm
//===----------------------------------------------------------------------===//

BatchNorm::BatchNorm(BatchNormOptions options) : options_(options) {
  int64_t c = options_.in_channels;
  gamma = register_parameter("gamma", std::make_shared<Parameter>(
                                          "gamma", Shape{c}, DType::f32, ones(),
                                          options_.scale ? GradReq::write : GradReq::null));
  beta = register_parameter("beta", std::make_shared<Parameter>(
                                        "beta", Shape{c}, DType::f32, zeros(),
                                        options_.center ? GradReq::write : GradReq::null));
  running_mean = register_parameter(
      "running_mean",
      std::make_shared<Parameter>("running_mean", Shape{c}, DType::f32, zeros(), GradReq::null));
  running_var = register_parameter(
      "running_var",
      std::make_shared<Parameter>("running_var", Shape{c}, DType::f32, ones(), GradReq::null));
}

void BatchNorm::cast(DType dtype) {
  HybridBlock::cast(dtype == DType::f16 || dtype == DType::bf16 ? DType::f32 : dtype);
}

Tensor BatchNorm::forward(const Tensor &input) {
  int64_t rank = input.ndim();
  if (rank < 2)
    throw ShapeError("BatchNorm: expects (N, C, ...) input, got " +
                     shape_rules::str(input.shape()));
  if (options_.axis < -rank || options_.axis >= rank)
    throw ShapeError("BatchNorm: axis " + std::to_string(options_.axis) +
                     " is out of range for an input of shape " + shape_rules::str(input.shape()));
  int64_t axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (axis != 1) {
    // The kernels normalize axis 1: the channels are moved there and back.
    std::vector<int64_t> order;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        order.push_back(d);
    order.insert(order.begin() + 1, axis);
    std::vector<int64_t> back(order.size());
    for (size_t i = 0; i < order.size(); ++i)
      back[size_t(order[i])] = int64_t(i);
    return np::transpose(normalize(np::transpose(input, order)), back);
  }
  return normalize(input);
}

Tensor BatchNorm::normalize(const Tensor &x) {
  Shape channels{x.shape()[1]};
  for (const ParameterPtr &p : {gamma, beta, running_mean, running_var})
    p->set_shape(channels);
  Device device = x.device();
  // scale=false is MXNet's fix_gamma: gamma is kept (and saved) but counts as 1.
  Tensor g = gamma->data(device), b = beta->data(device);
  if (!options_.scale)
    g = np::ones(channels, g.dtype(), device);
  if (!autograd::is_training() || options_.use_global_stats)
    return npx::batch_norm_inference(x, g, b, running_mean->data(device),
                                     running_var->data(device), options_.epsilon);
  npx::BatchNormResult result = npx::batch_norm_training(x, g, b, options_.epsilon);
  {
    // running = momentum * running + (1 - momentum) * batch, outside the recording.
    autograd::Pause pause(/*train_mode=*/true);
    double m = options_.momentum;
    Tensor mean = running_mean->data(device), var = running_var->data(device);
    // Eagerly the sums are written into the statistics themselves (no copy back, on a GPU
    // a launch less each); a trace records the copy back as the program's update.
    static const OpDef &add = find_op("add");
    bool inPlace = !is_tracing() && detail::layout_of(mean) == Layout::plain &&
                   detail::layout_of(var) == Layout::plain;
    for (auto [running, batch] : {std::pair{mean, result.mean}, std::pair{var, result.var}}) {
      Tensor kept = running * m, added = batch * (1 - m);
      if (inPlace)
        invoke_into(add, {kept, added}, {}, {running});
      else
        (kept + added).copyto(running);
    }
  }
  return result.output;
}

//===----------------------------------------------------------------------===//
// Dense, Dropout, Flatten, Activation
//===----------------------------------------------------------------------===//

Dense::Dense(int64_t units, std::string activation, DenseOptions options)
    : units_(units), activation_(std::move(activation)), options_(std::move(options)) {
  if (units <= 0)
    throw ValueError("Dense: units must be positive, got " + std::to_string(units));
  weight = register_parameter("weight", std::make_shared<Parameter>(
                                            "weight", Shape{units, options_.in_units},
                                            DType::f32, options_.weight_initializer));
  if (options_.use_bias)
    bias = register_parameter(
        "bias", std::make_shared<Parameter>("bias", Shape{units}, DType::f32,
                                            options_.bias_initializer ? options_.bias_initializer
                                                                      : zeros()));
}

Tensor Dense::forward(const Tensor &x) {
  if (x.ndim() < 1)
    throw ShapeError("Dense: expects at least a 1-d input, got a scalar");
  Tensor in = options_.flatten && x.ndim() != 2 ? x.reshape({x.shape()[0], -1}) : x;
  weight->set_shape({units_, in.shape().back()});
  Device device = x.device();
  Tensor y = npx::fully_connected(in, weight->data(device), bias ? bias->data(device) : Tensor());
  return activate(activation_, y);
}

std::string Dense::kind() const {
  return "Dense(" + std::to_string(units_) +
         (activation_.empty() ? "" : ", Activation(" + activation_ + ")") + ")";
}

Dropout::Dropout(double rate) : rate_(rate) {
  if (!(rate >= 0 && rate < 1))
    throw ValueError("Dropout: rate must be in [0, 1), got " + std::to_string(rate));
}

Tensor Dropout::forward(const Tensor &x) {
  if (!autograd::is_training() || rate_ == 0)
    return x;
  return npx::dropout(x, rate_).output;
}

Tensor Flatten::forward(const Tensor &x) {
  if (x.ndim() < 1)
    throw ShapeError("Flatten: expects at least a 1-d input, got a scalar");
  return x.reshape({x.shape()[0], -1});
}

HybridLambda::HybridLambda(Function function, std::string name)
    : function_(std::move(function)), name_(std::move(name)) {
  if (!function_)
    throw ValueError("HybridLambda: the function is empty");
}

UpSampling2D::UpSampling2D(int64_t scale) : scale_(scale) {
  if (scale < 1)
    throw ValueError("UpSampling2D: scale must be at least 1, got " + std::to_string(scale));
}

Tensor UpSampling2D::forward(const Tensor &x) { return npx::upsampling_nearest(x, scale_); }

ReflectionPad2D::ReflectionPad2D(int64_t padding) : padding_(padding) {
  if (padding < 0)
    throw ValueError("ReflectionPad2D: padding must be at least 0, got " + std::to_string(padding));
}

Tensor ReflectionPad2D::forward(const Tensor &x) {
  requireRank("ReflectionPad2D", x, 4, "NCHW");
  int64_t p = padding_;
  return npx::pad(x, npx::PadMode::reflect, {0, 0, 0, 0, p, p, p, p});
}

Activation::Activation(std::string activation) : activation_(std::move(activation)) {
  activate(activation_, np::zeros({1})); // rejects unknown names now, not at first use
}

Tensor Activation::forward(const Tensor &x) { return activate(activation_, x); }

} // namespace dlc::gluon::nn
