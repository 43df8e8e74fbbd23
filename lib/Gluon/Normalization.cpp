//===- Normalization.cpp - gluon.nn's LayerNorm, InstanceNorm and GroupNorm ---===//
#include "dlc/Gluon/Normalization.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

namespace dlc::gluon::nn {

namespace {
/// gamma (ones) and beta (zeros) of `size` values, learned as `options` say.
std::pair<ParameterPtr, ParameterPtr> affineParameters(Block &block, int64_t size,
                                                       const NormOptions &options,
                                                       const char *layer) {
  if (!(options.epsilon > 0))
    throw ValueError(std::string(layer) + ": epsilon must be positive, got " +
                     std::to_string(options.epsilon));
  if (options.in_channels < 0)
    throw ValueError(std::string(layer) + ": in_channels must be 0 (inferred) or positive, got " +
                     std::to_string(options.in_channels));
  auto gamma = block.register_parameter(
      "gamma", std::make_shared<Parameter>("gamma", Shape{size}, DType::f32,
                                           std::make_shared<init::One>(),
                                           options.scale ? GradReq::write : GradReq::null));
  auto beta = block.register_parameter(
      "beta", std::make_shared<Parameter>("beta", Shape{size}, DType::f32,
                                          std::make_shared<init::Zero>(),
                                          options.center ? GradReq::write : GradReq::null));
  return {gamma, beta};
}
} // namespace

LayerNorm::LayerNorm(int64_t axis, NormOptions options) : axis_(axis), options_(options) {
  std::tie(gamma, beta) = affineParameters(*this, options_.in_channels, options_, "LayerNorm");
}

Tensor LayerNorm::forward(const Tensor &x) {
  int64_t rank = x.ndim();
  if (axis_ < -rank || axis_ >= rank)
    throw ShapeError("LayerNorm: axis " + std::to_string(axis_) +
                     " is out of range for an input of shape " + shape_rules::str(x.shape()));
  Shape size{x.shape()[size_t(axis_ < 0 ? axis_ + rank : axis_)]};
  gamma->set_shape(size);
  beta->set_shape(size);
  Device device = x.device();
  return npx::layer_norm(x, gamma->data(device), beta->data(device), axis_, options_.epsilon);
}

InstanceNorm::InstanceNorm(NormOptions options) : options_(options) {
  std::tie(gamma, beta) = affineParameters(*this, options_.in_channels, options_, "InstanceNorm");
}

Tensor InstanceNorm::forward(const Tensor &x) {
  if (x.ndim() < 3)
    throw ShapeError("InstanceNorm: expects (N, C, spatial...) input, got " +
                     shape_rules::str(x.shape()));
  gamma->set_shape({x.shape()[1]});
  beta->set_shape({x.shape()[1]});
  Device device = x.device();
  return npx::instance_norm(x, gamma->data(device), beta->data(device), options_.epsilon);
}

GroupNorm::GroupNorm(int64_t num_groups, NormOptions options)
    : groups_(num_groups), options_(options) {
  if (num_groups < 1)
    throw ValueError("GroupNorm: num_groups must be at least 1, got " + std::to_string(num_groups));
  std::tie(gamma, beta) = affineParameters(*this, num_groups, options_, "GroupNorm");
}

Tensor GroupNorm::forward(const Tensor &x) {
  Device device = x.device();
  return npx::group_norm(x, gamma->data(device), beta->data(device), groups_, options_.epsilon);
}

} // namespace dlc::gluon::nn
