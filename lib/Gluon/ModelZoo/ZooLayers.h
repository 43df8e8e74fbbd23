//===- ZooLayers.h - the layer makers the model zoo's networks share ----------===//
#ifndef DLC_LIB_GLUON_MODELZOO_ZOOLAYERS_H
#define DLC_LIB_GLUON_MODELZOO_ZOOLAYERS_H

#include "dlc/Gluon/Layers.h"
#include "dlc/Gluon/ModelZoo.h"
#include "dlc/Frontend/NumPy.h"

#include <array>
#include <memory>

namespace dlc::gluon::model_zoo::vision::detail {

using Pair = std::array<int64_t, 2>;

/// MXNet's nn.Conv2D(channels, kernel, strides, padding, groups, use_bias).
inline std::shared_ptr<nn::Conv2D> conv(int64_t channels, Pair kernel, Pair strides = {1, 1},
                                        Pair padding = {0, 0}, bool use_bias = true,
                                        int64_t groups = 1, const std::string &activation = "") {
  nn::Conv2DOptions o;
  o.strides = strides;
  o.padding = padding;
  o.use_bias = use_bias;
  o.groups = groups;
  return std::make_shared<nn::Conv2D>(channels, kernel, activation, o);
}
inline std::shared_ptr<nn::Conv2D> conv(int64_t channels, int64_t kernel, int64_t stride = 1,
                                        int64_t padding = 0, bool use_bias = true,
                                        int64_t groups = 1, const std::string &activation = "") {
  return conv(channels, Pair{kernel, kernel}, Pair{stride, stride}, Pair{padding, padding},
              use_bias, groups, activation);
}

inline std::shared_ptr<nn::BatchNorm> norm(double epsilon = 1e-5) {
  nn::BatchNormOptions o;
  o.epsilon = epsilon;
  return std::make_shared<nn::BatchNorm>(o);
}

inline std::shared_ptr<nn::Activation> activation(const std::string &name = "relu") {
  return std::make_shared<nn::Activation>(name);
}

inline std::shared_ptr<nn::MaxPool2D> max_pool(int64_t size, int64_t stride, int64_t padding = 0,
                                               bool ceil_mode = false) {
  nn::PoolOptions o;
  o.padding = {padding, padding};
  o.ceil_mode = ceil_mode;
  return std::make_shared<nn::MaxPool2D>(size, stride, o);
}

inline std::shared_ptr<nn::AvgPool2D> avg_pool(int64_t size, int64_t stride = 0, int64_t padding = 0) {
  nn::PoolOptions o;
  o.padding = {padding, padding};
  return std::make_shared<nn::AvgPool2D>(size, stride, o);
}

inline std::shared_ptr<nn::Dense> dense(int64_t units, const std::string &activation = "") {
  return std::make_shared<nn::Dense>(units, activation);
}

/// A network of MXNet's usual shape: `features`, then `output` (each looked up when
/// called, so that fine-tuning can replace `output`).
class FeaturesThenOutput : public HybridBlock {
public:
  FeaturesThenOutput(std::string kind, std::shared_ptr<Block> features, std::shared_ptr<Block> output)
      : kind_(std::move(kind)) {
    register_child("features", std::move(features));
    register_child("output", std::move(output));
  }
  Tensor forward(const Tensor &x) override {
    return child("output")->forward(child("features")->forward(x));
  }
  std::string kind() const override { return kind_; }

private:
  std::string kind_;
};

} // namespace dlc::gluon::model_zoo::vision::detail

#endif // DLC_LIB_GLUON_MODELZOO_ZOOLAYERS_H
