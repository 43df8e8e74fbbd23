//===- MobileNet.cpp - MobileNet v1 and v2 at width multipliers 1, 0.75, 0.5, 0.25 ===//
//
// v1 (Howard et al. 2017): a 3x3 convolution, then 13 depthwise-separable pairs (a 3x3
// convolution with one group per channel, a 1x1 convolution), each convolution followed
// by batch norm and ReLU. v2 (Sandler et al. 2018): inverted residual blocks (1x1
// expansion by t, 3x3 depthwise, linear 1x1 projection; the input added back where the
// shape allows) with ReLU6, and a 1x1 convolution as the classifier. Channel counts are
// MXNet's: int(c * multiplier), v2's last 1280 only grows with multipliers above 1.
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include "dlc/Core/Error.h"

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

namespace {

/// MXNet's _add_conv: convolution without bias, batch norm, then ReLU or ReLU6 (or none).
void addConv(HybridSequential &out, int64_t channels, int64_t kernel = 1, int64_t stride = 1,
             int64_t padding = 0, int64_t groups = 1, const std::string &act = "relu") {
  out.add(conv(channels, kernel, stride, padding, false, groups), norm());
  if (!act.empty())
    out.add(activation(act));
}

int64_t scaled(int64_t channels, double multiplier) { return int64_t(channels * multiplier); }

/// v2's inverted residual block; its layers are the child "out", as in MXNet.
class LinearBottleneck : public HybridBlock {
public:
  LinearBottleneck(int64_t in, int64_t channels, int64_t t, int64_t stride)
      : shortcut_(stride == 1 && in == channels) {
    out_ = register_child("out", std::make_shared<HybridSequential>());
    addConv(*out_, in * t, 1, 1, 0, 1, "relu6");
    addConv(*out_, in * t, 3, stride, 1, in * t, "relu6");
    addConv(*out_, channels, 1, 1, 0, 1, "");
  }
  Tensor forward(const Tensor &x) override {
    Tensor y = out_->forward(x);
    return shortcut_ ? y + x : y;
  }
  std::string kind() const override { return "LinearBottleneck"; }

private:
  bool shortcut_;
  std::shared_ptr<HybridSequential> out_;
};

void requireMultiplier(const char *family, double multiplier) {
  if (!(multiplier > 0) || multiplier > 4)
    throw ValueError(std::string(family) + ": width multiplier " + std::to_string(multiplier) +
                     " is out of range; expected (0, 4] (the zoo has 1.0, 0.75, 0.5 and 0.25)");
}

} // namespace

std::shared_ptr<HybridBlock> mobilenet(double multiplier, int64_t classes) {
  requireMultiplier("mobilenet", multiplier);
  auto features = std::make_shared<HybridSequential>();
  addConv(*features, scaled(32, multiplier), 3, 2, 1);
  const int64_t depthwise[] = {32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024};
  const int64_t pointwise[] = {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
  const int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
  for (int i = 0; i < 13; ++i) {
    const int64_t dw = scaled(depthwise[i], multiplier);
    addConv(*features, dw, 3, strides[i], 1, dw);
    addConv(*features, scaled(pointwise[i], multiplier));
  }
  features->add(std::make_shared<nn::GlobalAvgPool2D>(), std::make_shared<nn::Flatten>());
  return std::make_shared<FeaturesThenOutput>("MobileNet(" + std::to_string(multiplier) + ")",
                                              features, dense(classes));
}

std::shared_ptr<HybridBlock> mobilenet_v2(double multiplier, int64_t classes) {
  requireMultiplier("mobilenet_v2", multiplier);
  auto features = std::make_shared<HybridSequential>();
  addConv(*features, scaled(32, multiplier), 3, 2, 1, 1, "relu6");
  const int64_t ins[] = {32, 16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160};
  const int64_t outs[] = {16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320};
  const int64_t strides[] = {1, 2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1};
  for (int i = 0; i < 17; ++i)
    features->add(std::make_shared<LinearBottleneck>(scaled(ins[i], multiplier),
                                                     scaled(outs[i], multiplier), i == 0 ? 1 : 6,
                                                     strides[i]));
  addConv(*features, multiplier > 1.0 ? scaled(1280, multiplier) : 1280, 1, 1, 0, 1, "relu6");
  features->add(std::make_shared<nn::GlobalAvgPool2D>());
  auto output = std::make_shared<HybridSequential>();
  output->add(conv(classes, 1, 1, 0, false), std::make_shared<nn::Flatten>());
  return std::make_shared<FeaturesThenOutput>("MobileNetV2(" + std::to_string(multiplier) + ")",
                                              features, output);
}

} // namespace dlc::gluon::model_zoo::vision
