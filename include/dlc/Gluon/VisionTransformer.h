//===- VisionTransformer.h - gluon.model_zoo.vision's ViT ---------------------===//
//
// The Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words"), laid
// out as Hugging Face's ViTForImageClassification so that its `model.safetensors` loads
// through a name map (model_zoo::text::huggingface_name, family "vit"):
//
//   auto vit = model_zoo::vision::get_model("vit_b_16", /*classes=*/10);
//   vit->initialize(init::Normal(0.02));
//   auto hf = model_zoo::text::from_pretrained("vit-base-patch16-224/");  // config.json too
//
// Images are (batch, channels, image_size, image_size), as the vision zoo's other
// networks take them.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_VISIONTRANSFORMER_H
#define DLC_GLUON_VISIONTRANSFORMER_H

#include "dlc/Gluon/Layers.h"
#include "dlc/Gluon/Transformer.h"

namespace dlc::gluon::model_zoo::vision {

/// Hugging Face's ViTConfig fields, in dlc's words (its defaults: ViT-B/16 at 224x224).
struct ViTConfig {
  int64_t image_size = 224;
  int64_t patch_size = 16;
  int64_t channels = 3;      ///< num_channels
  int64_t units = 768;       ///< hidden_size
  int64_t hidden_size = 3072; ///< intermediate_size: the feed-forward's hidden layer
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  /// Outputs of the classifier on the first ([CLS]) token; 0: no classifier, forward
  /// gives that token's features (Hugging Face's ViTModel without its pooler).
  int64_t classes = 1000;
  /// Hugging Face's checkpoints use 1e-12; torchvision's ViTs 1e-6.
  double layer_norm_eps = 1e-12;
  double dropout = 0;           ///< hidden_dropout_prob
  double attention_dropout = 0; ///< attention_probs_dropout_prob
  std::string activation = "gelu";
  bool gelu_tanh = false;
  /// ViT-B/16: 12 pre-norm layers of 768 units, 12 heads, 16x16 patches of 224x224 images.
  static ViTConfig b16();
};

/// Patches embedded by a strided convolution, a learned [CLS] token in front, learned
/// position embeddings added, pre-norm transformer layers (exact GELU), a final layer
/// norm, and the classifier on the [CLS] token.
///   forward(images) -> (B, classes) logits, or (B, units) without a classifier
///   features(images) -> (B, 1 + patches, units): the final layer norm's output
class VisionTransformer : public HybridBlock {
public:
  explicit VisionTransformer(ViTConfig config = {});
  Tensor forward(const Tensor &images) override;
  std::string kind() const override;
  Tensor features(const Tensor &images);
  const ViTConfig &config() const { return config_; }
  int64_t patches() const;
  /// Reads a Hugging Face ViTForImageClassification (or ViTModel, given classes = 0)
  /// safetensors file of this configuration onto `devices`.
  void load_huggingface(const std::string &path, const std::vector<Device> &devices = {cpu()});

  ParameterPtr cls_token;      ///< (1, 1, units)
  ParameterPtr position_embed; ///< (1, 1 + patches, units)
  std::shared_ptr<nn::Conv2D> patch_embed;
  std::shared_ptr<HybridSequential> layers; ///< of nn::TransformerEncoderLayer
  std::shared_ptr<nn::LayerNorm> final_norm;
  std::shared_ptr<nn::Dense> head; ///< null when classes is 0

private:
  ViTConfig config_;
};

/// A VisionTransformer of `config` (get_model("vit_b_16", classes) is ViTConfig::b16()).
std::shared_ptr<HybridBlock> vit(ViTConfig config);

} // namespace dlc::gluon::model_zoo::vision

#endif // DLC_GLUON_VISIONTRANSFORMER_H
