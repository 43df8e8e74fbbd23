//===- VGG.cpp - VGG 11/13/16/19 (with and without batch norm) and AlexNet ----===//
//
// Both are plain stacks: convolutions (VGG: 3x3, padding 1; stages ending in 2x2 max
// pooling), then two dense layers of 4096 with dropout 0.5, then the classifier. VGG's
// own initializers are MXNet's (Xavier gaussian over the fan-out, magnitude 2, for the
// convolutions; normal for the dense layers): a parameter's own initializer wins over
// the one initialize() is given, as in Gluon.
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include "dlc/Core/Error.h"
#include "dlc/Gluon/Initializer.h"

#include <map>

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

std::shared_ptr<HybridBlock> vgg(int layers, bool batch_norm, int64_t classes) {
  static const std::map<int, std::array<int64_t, 5>> convsPerStage = {
      {11, {1, 1, 2, 2, 2}}, {13, {2, 2, 2, 2, 2}}, {16, {2, 2, 3, 3, 3}}, {19, {2, 2, 4, 4, 4}}};
  const int64_t filters[] = {64, 128, 256, 512, 512};
  auto spec = convsPerStage.find(layers);
  if (spec == convsPerStage.end())
    throw ValueError("vgg: no " + std::to_string(layers) + "-layer VGG; expected 11, 13, 16 or 19");
  auto convInit = std::make_shared<init::Xavier>(init::Xavier::Distribution::gaussian,
                                                 init::Xavier::Factor::out, 2.0);
  auto zeros = std::make_shared<init::Zero>();
  auto features = std::make_shared<HybridSequential>();
  for (int stage = 0; stage < 5; ++stage) {
    for (int64_t i = 0; i < spec->second[stage]; ++i) {
      nn::Conv2DOptions o;
      o.padding = {1, 1};
      o.weight_initializer = convInit;
      o.bias_initializer = zeros;
      features->add(std::make_shared<nn::Conv2D>(filters[stage], 3, "", o));
      if (batch_norm)
        features->add(norm());
      features->add(activation());
    }
    features->add(std::make_shared<nn::MaxPool2D>(2, 2));
  }
  auto denseLayer = [&](int64_t units, const std::string &act) {
    nn::DenseOptions o;
    o.weight_initializer = std::make_shared<init::Normal>();
    o.bias_initializer = zeros;
    return std::make_shared<nn::Dense>(units, act, o);
  };
  features->add(denseLayer(4096, "relu"), std::make_shared<nn::Dropout>(0.5),
                denseLayer(4096, "relu"), std::make_shared<nn::Dropout>(0.5));
  return std::make_shared<FeaturesThenOutput>(
      "VGG" + std::to_string(layers) + (batch_norm ? "_bn" : ""), features, denseLayer(classes, ""));
}

std::shared_ptr<HybridBlock> alexnet(int64_t classes) {
  auto features = std::make_shared<HybridSequential>();
  features->add(conv(64, 11, 4, 2, true, 1, "relu"), max_pool(3, 2),
                conv(192, 5, 1, 2, true, 1, "relu"), max_pool(3, 2),
                conv(384, 3, 1, 1, true, 1, "relu"), conv(256, 3, 1, 1, true, 1, "relu"),
                conv(256, 3, 1, 1, true, 1, "relu"), max_pool(3, 2),
                std::make_shared<nn::Flatten>(), dense(4096, "relu"),
                std::make_shared<nn::Dropout>(0.5), dense(4096, "relu"),
                std::make_shared<nn::Dropout>(0.5));
  return std::make_shared<FeaturesThenOutput>("AlexNet", features, dense(classes));
}

} // namespace dlc::gluon::model_zoo::vision
