//===- TextModelParts.h - what BERT and GPT-2 share ---------------------------===//
#ifndef DLC_LIB_GLUON_MODELZOO_TEXTMODELPARTS_H
#define DLC_LIB_GLUON_MODELZOO_TEXTMODELPARTS_H

#include "dlc/Gluon/TextModels.h"

#include <initializer_list>
#include <utility>

namespace dlc::gluon::model_zoo::text {

/// A ValueError naming `model`'s first setting that is not positive.
void requirePositive(const char *model,
                     std::initializer_list<std::pair<const char *, int64_t>> settings);

std::shared_ptr<nn::LayerNorm> layerNorm(int64_t units, double epsilon);

/// Checks that `ids` are (batch, length) integers (or floats, truncated) with length at
/// most `maxLength`; returns the length.
int64_t requireIds(const char *model, const Tensor &ids, int64_t maxLength);

/// The first `length` rows of the position table, (length, units): positions 0...
Tensor positionRows(const nn::Embedding &table, int64_t length, Device device);

Tensor dropoutWhileTraining(const Tensor &x, double rate);

/// Hugging Face's attention_mask (B, L), nonzero or true where a token is real, as the
/// boolean (B, 1, 1, L) mask dlc.attention takes; undefined stays undefined.
Tensor keyMask(const char *model, const Tensor &mask, const Shape &idsShape);

/// `count` TransformerEncoderLayers of one shape and `options`, children "0", "1", ...
/// of a HybridSequential (the `layers` of BERT, GPT-2 and the ViT).
std::shared_ptr<HybridSequential> layerStack(int64_t count, int64_t units, int64_t hiddenSize,
                                             int64_t heads,
                                             const nn::TransformerLayerOptions &options);

/// x through the children of `layers` in order, each a TransformerEncoderLayer given
/// `mask` (the children are read at every call, so one replaced with replace_child runs;
/// a child of another kind is a ValueError naming it).
Tensor runLayers(const char *model, const HybridSequential &layers, Tensor x, const Tensor &mask);

/// Loads Hugging Face's safetensors file `path` into `model` through the name map of
/// `family` (huggingface_name), every parameter required; 16-bit files are converted.
void loadHuggingFace(Block &model, const std::string &family, const std::string &path,
                     const std::vector<Device> &devices);

} // namespace dlc::gluon::model_zoo::text

#endif // DLC_LIB_GLUON_MODELZOO_TEXTMODELPARTS_H
