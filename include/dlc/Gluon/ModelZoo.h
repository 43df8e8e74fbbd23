//===- ModelZoo.h - gluon.model_zoo.vision: MXNet 1.9.1's vision networks -----===//
//
// The networks of MXNet's Gluon model zoo, built from dlc's layers with the structure
// and parameter names MXNet 1.9.1 gives them, so that `load_parameters` reads the
// `.params` file MXNet saved for the same network (its own training, or the model
// store's published weights). The layer tree, children names and layer options follow
// MXNet's; only the code is dlc's.
//
//   auto net = model_zoo::vision::get_model("resnet50_v1", /*classes=*/10);
//   net->initialize(init::Xavier());
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_MODELZOO_H
#define DLC_GLUON_MODELZOO_H

#include "dlc/Gluon/Block.h"

#include <memory>
#include <string>
#include <vector>

namespace dlc::gluon::model_zoo::vision {

struct ModelOptions {
  int64_t classes = 1000;
  /// Load MXNet's published weights from `root` (see pretrained_file); nothing is
  /// downloaded: without the file, get_model says which file to put where.
  bool pretrained = false;
  /// The model store, MXNet's default: $MXNET_HOME/models, else ~/.mxnet/models.
  std::string root;
  /// The images' side, for a network built for one size (vit_b_16: a multiple of its
  /// 16-pixel patch; 0: its own 224). The convolutional networks take every size their
  /// pooling allows whatever this says.
  int64_t image_size = 0;
};

/// Every name get_model takes, in MXNet's spelling (resnet50_v1, mobilenet0.25,
/// mobilenetv2_1.0, squeezenet1.1, ...), and vit_b_16 (see VisionTransformer.h).
const std::vector<std::string> &model_names();
/// The names of MXNet 1.9.1's own zoo (all but vit_b_16): the networks whose `.params`
/// files MXNet writes and publishes.
const std::vector<std::string> &mxnet_model_names();

/// The network `name` (one of model_names()), its parameters not yet initialized
/// (deferred, as Gluon's) unless `pretrained` loads them. Unknown names are a
/// ValueError listing the known ones.
std::shared_ptr<HybridBlock> get_model(const std::string &name, const ModelOptions &options = {});
/// get_model with `classes` outputs and random (not yet initialized) weights.
inline std::shared_ptr<HybridBlock> get_model(const std::string &name, int64_t classes) {
  ModelOptions options;
  options.classes = classes;
  return get_model(name, options);
}

/// Where `pretrained` looks for `name`'s weights: root/NAME-SHORTHASH.params, MXNet's
/// file name (the first 8 hex digits of the file's SHA-1).
std::string pretrained_file(const std::string &name, const std::string &root = "");

// The families, as MXNet's constructors take them.
std::shared_ptr<HybridBlock> resnet(int version, int layers, int64_t classes = 1000);
std::shared_ptr<HybridBlock> vgg(int layers, bool batch_norm, int64_t classes = 1000);
std::shared_ptr<HybridBlock> alexnet(int64_t classes = 1000);
std::shared_ptr<HybridBlock> densenet(int layers, int64_t classes = 1000);
/// version "1.0" or "1.1".
std::shared_ptr<HybridBlock> squeezenet(const std::string &version, int64_t classes = 1000);
/// 299x299 inputs.
std::shared_ptr<HybridBlock> inception_v3(int64_t classes = 1000);
std::shared_ptr<HybridBlock> mobilenet(double multiplier, int64_t classes = 1000);
std::shared_ptr<HybridBlock> mobilenet_v2(double multiplier, int64_t classes = 1000);

} // namespace dlc::gluon::model_zoo::vision

#endif // DLC_GLUON_MODELZOO_H
