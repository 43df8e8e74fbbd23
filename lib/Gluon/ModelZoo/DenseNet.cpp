//===- DenseNet.cpp - DenseNet 121/161/169/201 (Huang et al. 2017) ------------===//
//
// Each dense layer (batch norm, ReLU, 1x1 convolution to 4 x growth channels, batch
// norm, ReLU, 3x3 convolution to `growth` channels) concatenates its output to its input
// (HybridConcatenate of Identity and the layer, as MXNet writes it); transitions halve
// the channels (1x1) and the size (2x2 average). The classifier averages a 7x7 plane,
// so inputs are 224x224.
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include "dlc/Core/Error.h"

#include <map>

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

namespace {

std::shared_ptr<HybridConcatenate> denseLayer(int64_t growth, int64_t bottleneckFactor) {
  auto layer = std::make_shared<HybridSequential>();
  layer->add(norm(), activation(), conv(bottleneckFactor * growth, 1, 1, 0, false), norm(),
             activation(), conv(growth, 3, 1, 1, false));
  auto out = std::make_shared<HybridConcatenate>(1);
  out->add(std::make_shared<nn::Identity>(), layer);
  return out;
}

std::shared_ptr<HybridSequential> transition(int64_t channels) {
  auto out = std::make_shared<HybridSequential>();
  out->add(norm(), activation(), conv(channels, 1, 1, 0, false), avg_pool(2, 2));
  return out;
}

struct DenseNetSpec {
  int64_t initialFeatures, growth;
  std::array<int64_t, 4> layers;
};

} // namespace

std::shared_ptr<HybridBlock> densenet(int layers, int64_t classes) {
  static const std::map<int, DenseNetSpec> specs = {{121, {64, 32, {6, 12, 24, 16}}},
                                                    {161, {96, 48, {6, 12, 36, 24}}},
                                                    {169, {64, 32, {6, 12, 32, 32}}},
                                                    {201, {64, 32, {6, 12, 48, 32}}}};
  auto spec = specs.find(layers);
  if (spec == specs.end())
    throw ValueError("densenet: no " + std::to_string(layers) +
                     "-layer DenseNet; expected 121, 161, 169 or 201");
  const DenseNetSpec &s = spec->second;
  auto features = std::make_shared<HybridSequential>();
  features->add(conv(s.initialFeatures, 7, 2, 3, false), norm(), activation(), max_pool(3, 2, 1));
  int64_t channels = s.initialFeatures;
  for (size_t stage = 0; stage < s.layers.size(); ++stage) {
    auto block = std::make_shared<HybridSequential>();
    for (int64_t i = 0; i < s.layers[stage]; ++i)
      block->add(denseLayer(s.growth, 4));
    features->add(block);
    channels += s.layers[stage] * s.growth;
    if (stage + 1 < s.layers.size()) {
      features->add(transition(channels / 2));
      channels /= 2;
    }
  }
  features->add(norm(), activation(), avg_pool(7), std::make_shared<nn::Flatten>());
  return std::make_shared<FeaturesThenOutput>("DenseNet" + std::to_string(layers), features,
                                              dense(classes));
}

} // namespace dlc::gluon::model_zoo::vision
