//===- Inception.cpp - Inception v3 (Szegedy et al. 2015) ---------------------===//
//
// A stem of convolutions and poolings, then the A (x3), B, C (x4), D and E (x2) mixing
// blocks: branches of convolutions (1x1, factorized 1x7/7x1 and 1x3/3x1, 3x3) and
// poolings side by side, concatenated along the channels; every convolution is followed
// by batch norm (epsilon 0.001) and ReLU. An 8x8 average and dropout before the
// classifier, so inputs are 299x299.
//
//===----------------------------------------------------------------------===//
#include "ZooLayers.h"

#include <initializer_list>

namespace dlc::gluon::model_zoo::vision {

using namespace detail;

namespace {

/// One convolution of a branch: channels, kernel, strides, padding.
struct ConvSetting {
  int64_t channels;
  Pair kernel;
  Pair strides{1, 1};
  Pair padding{0, 0};
};

std::shared_ptr<HybridSequential> basicConv(const ConvSetting &c) {
  auto out = std::make_shared<HybridSequential>();
  out->add(conv(c.channels, c.kernel, c.strides, c.padding, false), norm(0.001), activation());
  return out;
}

enum class Pool { none, avg, max };

std::shared_ptr<HybridSequential> branch(Pool pool, std::initializer_list<ConvSetting> convs) {
  auto out = std::make_shared<HybridSequential>();
  if (pool == Pool::avg)
    out->add(avg_pool(3, 1, 1));
  else if (pool == Pool::max)
    out->add(max_pool(3, 2));
  for (const ConvSetting &c : convs)
    out->add(basicConv(c));
  return out;
}

std::shared_ptr<HybridConcatenate> concat() { return std::make_shared<HybridConcatenate>(1); }

const Pair k1{1, 1}, k3{3, 3}, k5{5, 5}, k1x7{1, 7}, k7x1{7, 1}, k1x3{1, 3}, k3x1{3, 1};
const Pair s2{2, 2}, s1{1, 1};

std::shared_ptr<HybridConcatenate> blockA(int64_t poolFeatures) {
  auto out = concat();
  out->add(branch(Pool::none, {{64, k1}}),
           branch(Pool::none, {{48, k1}, {64, k5, s1, {2, 2}}}),
           branch(Pool::none, {{64, k1}, {96, k3, s1, {1, 1}}, {96, k3, s1, {1, 1}}}),
           branch(Pool::avg, {{poolFeatures, k1}}));
  return out;
}

std::shared_ptr<HybridConcatenate> blockB() {
  auto out = concat();
  out->add(branch(Pool::none, {{384, k3, s2}}),
           branch(Pool::none, {{64, k1}, {96, k3, s1, {1, 1}}, {96, k3, s2}}),
           branch(Pool::max, {}));
  return out;
}

std::shared_ptr<HybridConcatenate> blockC(int64_t c7) {
  auto out = concat();
  out->add(branch(Pool::none, {{192, k1}}),
           branch(Pool::none, {{c7, k1}, {c7, k1x7, s1, {0, 3}}, {192, k7x1, s1, {3, 0}}}),
           branch(Pool::none, {{c7, k1},
                               {c7, k7x1, s1, {3, 0}},
                               {c7, k1x7, s1, {0, 3}},
                               {c7, k7x1, s1, {3, 0}},
                               {192, k1x7, s1, {0, 3}}}),
           branch(Pool::avg, {{192, k1}}));
  return out;
}

std::shared_ptr<HybridConcatenate> blockD() {
  auto out = concat();
  out->add(branch(Pool::none, {{192, k1}, {320, k3, s2}}),
           branch(Pool::none, {{192, k1},
                               {192, k1x7, s1, {0, 3}},
                               {192, k7x1, s1, {3, 0}},
                               {192, k3, s2}}),
           branch(Pool::max, {}));
  return out;
}

/// Two 1x3 / 3x1 convolutions side by side after `stem`.
std::shared_ptr<HybridSequential> splitAfter(std::shared_ptr<HybridSequential> stem) {
  auto split = concat();
  split->add(branch(Pool::none, {{384, k1x3, s1, {0, 1}}}),
             branch(Pool::none, {{384, k3x1, s1, {1, 0}}}));
  auto out = std::make_shared<HybridSequential>();
  out->add(stem, split);
  return out;
}

std::shared_ptr<HybridConcatenate> blockE() {
  auto out = concat();
  out->add(branch(Pool::none, {{320, k1}}), splitAfter(branch(Pool::none, {{384, k1}})),
           splitAfter(branch(Pool::none, {{448, k1}, {384, k3, s1, {1, 1}}})),
           branch(Pool::avg, {{192, k1}}));
  return out;
}

} // namespace

std::shared_ptr<HybridBlock> inception_v3(int64_t classes) {
  auto features = std::make_shared<HybridSequential>();
  features->add(basicConv({32, k3, s2}), basicConv({32, k3}), basicConv({64, k3, s1, {1, 1}}),
                max_pool(3, 2), basicConv({80, k1}), basicConv({192, k3}), max_pool(3, 2),
                blockA(32), blockA(64), blockA(64), blockB(), blockC(128), blockC(160),
                blockC(160), blockC(192), blockD(), blockE(), blockE(), avg_pool(8),
                std::make_shared<nn::Dropout>(0.5));
  return std::make_shared<FeaturesThenOutput>("Inception3", features, dense(classes));
}

} // namespace dlc::gluon::model_zoo::vision
