//===- VisionTransformer.cpp - ViT: patches, a [CLS] token, pre-norm layers ----===//
//
// Hugging Face's ViTForImageClassification, layer for layer. The patch embedding is a
// convolution whose kernel and stride are the patch size; its (B, units, g, g) output
// becomes the (B, g*g, units) sequence row-major over the grid, the order Hugging Face
// and torchvision flatten it in, so their position tables line up.
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/VisionTransformer.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Gluon/ModelZoo.h"
#include "TextModelParts.h"

namespace dlc::gluon::model_zoo::vision {

ViTConfig ViTConfig::b16() { return ViTConfig{}; }

VisionTransformer::VisionTransformer(ViTConfig config) : config_(config) {
  text::requirePositive("VisionTransformer",
                        {{"image_size", config.image_size}, {"patch_size", config.patch_size},
                         {"channels", config.channels}, {"units", config.units},
                         {"hidden_size", config.hidden_size}, {"num_layers", config.num_layers},
                         {"num_heads", config.num_heads}});
  if (config.classes < 0)
    throw ValueError("VisionTransformer: classes must be positive (or 0 for no classifier), "
                     "got " + std::to_string(config.classes));
  if (config.image_size % config.patch_size != 0)
    throw ValueError("VisionTransformer: image_size " + std::to_string(config.image_size) +
                     " is not a multiple of patch_size " + std::to_string(config.patch_size));
  auto tokenInit = std::make_shared<init::Normal>(0.02);
  cls_token = register_parameter(
      "cls_token",
      std::make_shared<Parameter>("cls_token", Shape{1, 1, config.units}, DType::f32, tokenInit));
  position_embed = register_parameter(
      "position_embed", std::make_shared<Parameter>(
                            "position_embed", Shape{1, 1 + patches(), config.units}, DType::f32,
                            tokenInit));
  nn::Conv2DOptions conv;
  conv.strides = {config.patch_size, config.patch_size};
  conv.in_channels = config.channels;
  patch_embed = register_child(
      "patch_embed", std::make_shared<nn::Conv2D>(
                         config.units, std::array<int64_t, 2>{config.patch_size, config.patch_size},
                         "", conv));
  nn::TransformerLayerOptions layer;
  layer.pre_norm = true;
  layer.activation = config.activation;
  layer.gelu_tanh = config.gelu_tanh;
  layer.dropout = config.dropout;
  layer.attention_dropout = config.attention_dropout;
  layer.layer_norm_eps = config.layer_norm_eps;
  layers = register_child("layers", text::layerStack(config.num_layers, config.units,
                                                  config.hidden_size, config.num_heads, layer));
  final_norm = register_child("final_norm", text::layerNorm(config.units, config.layer_norm_eps));
  if (config.classes > 0) {
    nn::DenseOptions dense;
    dense.flatten = false;
    dense.in_units = config.units;
    head = register_child("head", std::make_shared<nn::Dense>(config.classes, "", dense));
  }
}

int64_t VisionTransformer::patches() const {
  int64_t side = config_.image_size / config_.patch_size;
  return side * side;
}

Tensor VisionTransformer::features(const Tensor &images) {
  const Shape &s = images.shape();
  if (images.ndim() != 4 || s[1] != config_.channels || s[2] != config_.image_size ||
      s[3] != config_.image_size)
    throw ShapeError("VisionTransformer: images must be batch x " +
                     std::to_string(config_.channels) + " x " +
                     std::to_string(config_.image_size) + " x " +
                     std::to_string(config_.image_size) + ", got " + shape_rules::str(s) +
                     " (" + dtype_name(images.dtype()) + ")");
  int64_t batch = s[0], units = config_.units;
  Device device = images.device();
  Tensor grid = (*patch_embed)(images); // (B, units, g, g)
  Tensor sequence = np::transpose(grid.reshape({batch, units, patches()}), {0, 2, 1});
  Tensor cls = np::broadcast_to(cls_token->data(device), {batch, 1, units});
  Tensor x = np::concatenate({cls, sequence}, 1) + position_embed->data(device);
  x = text::dropoutWhileTraining(x, config_.dropout);
  x = text::runLayers("VisionTransformer", *layers, x, Tensor());
  return (*final_norm)(x);
}

Tensor VisionTransformer::forward(const Tensor &images) {
  Tensor x = features(images);
  Tensor first = npx::slice_axis(x, 1, 0, 1).reshape({x.shape()[0], config_.units});
  return head ? (*head)(first) : first;
}

std::string VisionTransformer::kind() const {
  return "VisionTransformer(patch=" + std::to_string(config_.patch_size) +
         ", image=" + std::to_string(config_.image_size) +
         ", layers=" + std::to_string(config_.num_layers) +
         ", units=" + std::to_string(config_.units) +
         ", heads=" + std::to_string(config_.num_heads) +
         ", classes=" + std::to_string(config_.classes) + ")";
}

void VisionTransformer::load_huggingface(const std::string &path,
                                         const std::vector<Device> &devices) {
  text::loadHuggingFace(*this, "vit", path, devices);
}

std::shared_ptr<HybridBlock> vit(ViTConfig config) {
  return std::make_shared<VisionTransformer>(config);
}

} // namespace dlc::gluon::model_zoo::vision
