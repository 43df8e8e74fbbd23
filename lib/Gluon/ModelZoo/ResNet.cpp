//===- ResNet.cpp - ResNet v1 and v2, 18 to 152 layers (MXNet's model zoo) ----===//
//
// v1 (He et al. 2015): stem, four stages of residual blocks, ReLU after each sum; v2
// (He et al. 2016, pre-activation): batch norm and ReLU before each convolution, the
// shortcut taken after the first of them, a parameter-free batch norm on the input.
// 18 and 34 layers use basic blocks (two 3x3 convolutions), 50 and more bottlenecks
// (1x1, 3x3, 1x1 with four times the channels). Children names are MXNet's: body and
// downsample (v1), bn1/conv1/bn2/conv2/bn3/conv3 and downsample (v2).
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include "dlc/Core/Error.h"

#include <map>

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

namespace {

std::shared_ptr<nn::Conv2D> conv3x3(int64_t channels, int64_t stride) {
  return conv(channels, 3, stride, 1, /*use_bias=*/false);
}

/// v1: relu(body(x) + downsample(x)).
class ResidualV1 : public HybridBlock {
public:
  ResidualV1(bool bottleneck, int64_t channels, int64_t stride, bool downsample) {
    body_ = register_child("body", std::make_shared<HybridSequential>());
    if (bottleneck)
      // MXNet's BottleneckV1 gives its two 1x1 convolutions a bias.
      body_->add(conv(channels / 4, 1, stride), norm(), activation(), conv3x3(channels / 4, 1),
                 norm(), activation(), conv(channels, 1, 1), norm());
    else
      body_->add(conv3x3(channels, stride), norm(), activation(), conv3x3(channels, 1), norm());
    if (downsample) {
      downsample_ = register_child("downsample", std::make_shared<HybridSequential>());
      downsample_->add(conv(channels, 1, stride, 0, false), norm());
    }
  }
  Tensor forward(const Tensor &x) override {
    Tensor residual = downsample_ ? downsample_->forward(x) : x;
    return nn::activate("relu", body_->forward(x) + residual);
  }
  std::string kind() const override { return "ResidualV1"; }

private:
  std::shared_ptr<HybridSequential> body_, downsample_;
};

/// v2: the pre-activated input goes through the convolutions and (when the shape
/// changes) the 1x1 shortcut; the sum is not activated.
class ResidualV2 : public HybridBlock {
public:
  ResidualV2(bool bottleneck, int64_t channels, int64_t stride, bool downsample) {
    const int64_t inner = bottleneck ? channels / 4 : channels;
    layers_.push_back({register_child("bn1", norm()), nullptr});
    if (bottleneck) {
      layers_.back().conv = register_child("conv1", conv(inner, 1, 1, 0, false));
      layers_.push_back({register_child("bn2", norm()), register_child("conv2", conv3x3(inner, stride))});
      layers_.push_back({register_child("bn3", norm()), register_child("conv3", conv(channels, 1, 1, 0, false))});
    } else {
      layers_.back().conv = register_child("conv1", conv3x3(inner, stride));
      layers_.push_back({register_child("bn2", norm()), register_child("conv2", conv3x3(channels, 1))});
    }
    if (downsample)
      downsample_ = register_child("downsample", conv(channels, 1, stride, 0, false));
  }
  Tensor forward(const Tensor &x) override {
    Tensor residual = x, y = x;
    for (size_t i = 0; i < layers_.size(); ++i) {
      y = nn::activate("relu", layers_[i].norm->forward(y));
      if (i == 0 && downsample_)
        residual = downsample_->forward(y);
      y = layers_[i].conv->forward(y);
    }
    return y + residual;
  }
  std::string kind() const override { return "ResidualV2"; }

private:
  struct NormThenConv {
    std::shared_ptr<nn::BatchNorm> norm;
    std::shared_ptr<nn::Conv2D> conv;
  };
  std::vector<NormThenConv> layers_;
  std::shared_ptr<nn::Conv2D> downsample_;
};

struct ResNetSpec {
  bool bottleneck;
  std::array<int64_t, 4> blocks;
  std::array<int64_t, 5> channels;
};

const std::map<int, ResNetSpec> &specs() {
  static const std::map<int, ResNetSpec> table = {
      {18, {false, {2, 2, 2, 2}, {64, 64, 128, 256, 512}}},
      {34, {false, {3, 4, 6, 3}, {64, 64, 128, 256, 512}}},
      {50, {true, {3, 4, 6, 3}, {64, 256, 512, 1024, 2048}}},
      {101, {true, {3, 4, 23, 3}, {64, 256, 512, 1024, 2048}}},
      {152, {true, {3, 8, 36, 3}, {64, 256, 512, 1024, 2048}}},
  };
  return table;
}

} // namespace

std::shared_ptr<HybridBlock> resnet(int version, int layers, int64_t classes) {
  auto spec = specs().find(layers);
  if (spec == specs().end())
    throw ValueError("resnet: no " + std::to_string(layers) +
                     "-layer ResNet; expected 18, 34, 50, 101 or 152");
  if (version != 1 && version != 2)
    throw ValueError("resnet: no version " + std::to_string(version) + "; expected 1 or 2");
  const ResNetSpec &s = spec->second;
  auto features = std::make_shared<HybridSequential>();
  if (version == 2) {
    nn::BatchNormOptions plain; // normalizes the input with its statistics only
    plain.scale = plain.center = false;
    features->add(std::make_shared<nn::BatchNorm>(plain));
  }
  features->add(conv(s.channels[0], 7, 2, 3, false), norm(), activation(), max_pool(3, 2, 1));
  int64_t in = s.channels[0];
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t channels = s.channels[stage + 1], stride = stage == 0 ? 1 : 2;
    auto blocks = std::make_shared<HybridSequential>();
    for (int64_t b = 0; b < s.blocks[stage]; ++b) {
      const bool first = b == 0;
      const int64_t blockStride = first ? stride : 1;
      const bool downsample = first && channels != in;
      if (version == 1)
        blocks->add(std::make_shared<ResidualV1>(s.bottleneck, channels, blockStride, downsample));
      else
        blocks->add(std::make_shared<ResidualV2>(s.bottleneck, channels, blockStride, downsample));
    }
    features->add(blocks);
    in = channels;
  }
  if (version == 2)
    features->add(norm(), activation());
  features->add(std::make_shared<nn::GlobalAvgPool2D>());
  if (version == 2)
    features->add(std::make_shared<nn::Flatten>());
  return std::make_shared<FeaturesThenOutput>(
      "ResNetV" + std::to_string(version) + "(" + std::to_string(layers) + ")", features,
      dense(classes));
}

} // namespace dlc::gluon::model_zoo::vision
