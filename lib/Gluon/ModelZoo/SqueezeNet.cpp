//===- SqueezeNet.cpp - SqueezeNet 1.0 and 1.1 (Iandola et al. 2016) ----------===//
//
// Fire modules: a 1x1 "squeeze" convolution, then 1x1 and 3x3 "expand" convolutions
// side by side, concatenated along the channels; max pooling with ceil_mode between
// them; a 1x1 convolution to the classes, ReLU and a 13x13 average as the classifier
// (so inputs are 224x224). 1.1 starts with a 3x3 convolution of 64 channels instead
// of 1.0's 7x7 of 96 and pools earlier.
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include "dlc/Core/Error.h"

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

namespace {

std::shared_ptr<HybridSequential> convRelu(int64_t channels, int64_t kernel, int64_t padding = 0) {
  auto out = std::make_shared<HybridSequential>();
  out->add(conv(channels, kernel, 1, padding), activation());
  return out;
}

std::shared_ptr<HybridSequential> fire(int64_t squeeze, int64_t expand1x1, int64_t expand3x3) {
  auto paths = std::make_shared<HybridConcatenate>(1);
  paths->add(convRelu(expand1x1, 1), convRelu(expand3x3, 3, 1));
  auto out = std::make_shared<HybridSequential>();
  out->add(convRelu(squeeze, 1), paths);
  return out;
}

} // namespace

std::shared_ptr<HybridBlock> squeezenet(const std::string &version, int64_t classes) {
  auto features = std::make_shared<HybridSequential>();
  auto pool = [] { return max_pool(3, 2, 0, /*ceil_mode=*/true); };
  if (version == "1.0") {
    features->add(conv(96, 7, 2), activation(), pool(), fire(16, 64, 64), fire(16, 64, 64),
                  fire(32, 128, 128), pool(), fire(32, 128, 128), fire(48, 192, 192),
                  fire(48, 192, 192), fire(64, 256, 256), pool(), fire(64, 256, 256));
  } else if (version == "1.1") {
    features->add(conv(64, 3, 2), activation(), pool(), fire(16, 64, 64), fire(16, 64, 64),
                  pool(), fire(32, 128, 128), fire(32, 128, 128), pool(), fire(48, 192, 192),
                  fire(48, 192, 192), fire(64, 256, 256), fire(64, 256, 256));
  } else {
    throw ValueError("squeezenet: no version '" + version + "'; expected 1.0 or 1.1");
  }
  features->add(std::make_shared<nn::Dropout>(0.5));
  auto output = std::make_shared<HybridSequential>();
  output->add(conv(classes, 1), activation(), avg_pool(13), std::make_shared<nn::Flatten>());
  return std::make_shared<FeaturesThenOutput>("SqueezeNet" + version, features, output);
}

} // namespace dlc::gluon::model_zoo::vision
