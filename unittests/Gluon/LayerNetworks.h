//===- LayerNetworks.h - small networks of the zoo's layers, and 3 training steps ===//
//
// Shared by the CPU layer tests and the GPU training tests: every activation layer, a
// transposed convolution and the normalization layers, each in a network that trains
// three SGD steps eagerly, hybridized or as the compiled step.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_UNITTESTS_GLUON_LAYERNETWORKS_H
#define DLC_UNITTESTS_GLUON_LAYERNETWORKS_H

#include "../Frontend/GradientCheck.h"

#include <dlc/gluon.h>

#include <functional>
#include <memory>
#include <vector>

namespace dlc::testing {

using namespace dlc::gluon;

/// Every activation layer in one small network, after convolutions so that PReLU has
/// channels (and the slopes something to learn).
inline std::shared_ptr<HybridSequential> activationNetwork() {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(6, 3), std::make_shared<nn::PReLU>(nullptr, 6),
           std::make_shared<nn::Conv2D>(6, 3), std::make_shared<nn::LeakyReLU>(0.1),
           std::make_shared<nn::ELU>(0.7), std::make_shared<nn::SELU>(),
           std::make_shared<nn::Swish>(1.5), std::make_shared<nn::SiLU>(),
           std::make_shared<nn::PReLU>(), std::make_shared<nn::HardSigmoid>(0.3, 0.4),
           std::make_shared<nn::HardSwish>(), std::make_shared<nn::Activation>("softsign"),
           std::make_shared<nn::GELU>(), std::make_shared<nn::Dense>(3));
  return net;
}

/// A convolution down and a transposed convolution back up (a decoder's shape), with
/// output padding, groups and a bias; reflection padding, a bilinear and a nearest
/// resize; then a classifier.
inline std::shared_ptr<HybridSequential> upSamplingNetwork() {
  auto net = std::make_shared<HybridSequential>();
  nn::Conv2DOptions down;
  down.strides = {2, 2};
  down.padding = {1, 1};
  nn::Conv2DTransposeOptions up;
  up.strides = {2, 2};
  up.padding = {1, 1};
  up.output_padding = {1, 1};
  up.groups = 2;
  net->add(std::make_shared<nn::Conv2D>(6, 3, "relu", down),
           std::make_shared<nn::Conv2DTranspose>(4, 3, "tanh", up),
           std::make_shared<nn::ReflectionPad2D>(1),
           std::make_shared<nn::HybridLambda>(
               [](const Tensor &x) { return npx::bilinear_resize(x, 7, 6); }, "Resize"),
           std::make_shared<nn::UpSampling2D>(2), std::make_shared<nn::Dense>(3));
  return net;
}

/// The normalization layers: frozen batch norm statistics, group, instance and layer
/// norm, and a batch norm over the last axis.
inline std::shared_ptr<HybridSequential> normalizationNetwork() {
  auto net = std::make_shared<HybridSequential>();
  nn::BatchNormOptions frozen;
  frozen.use_global_stats = true;
  nn::BatchNormOptions lastAxis;
  lastAxis.axis = -1;
  nn::NormOptions scaled = nn::InstanceNorm::defaults();
  scaled.scale = true;
  net->add(std::make_shared<nn::Conv2D>(6, 3), std::make_shared<nn::BatchNorm>(frozen),
           std::make_shared<nn::GroupNorm>(3), std::make_shared<nn::Activation>("tanh"),
           std::make_shared<nn::InstanceNorm>(scaled), std::make_shared<nn::LayerNorm>(),
           std::make_shared<nn::BatchNorm>(lastAxis), std::make_shared<nn::Dense>(3));
  return net;
}

/// Slices of values computed inside the forward (dlc.slice when hybridized): strided,
/// reversed and clamped ranges of a convolution's output, and the batch's halves swapped
/// with Tensor::slice along axis 0.
inline std::shared_ptr<HybridSequential> slicingNetwork() {
  using R = npx::SliceRange;
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(6, 3),
           std::make_shared<nn::HybridLambda>(
               [](const Tensor &x) {
                 Tensor y = npx::slice(x, {R{}, R{1, std::nullopt, 2},
                                           R{-1, std::nullopt, -2}, R{1, 99, 1}});
                 int64_t half = y.shape()[0] / 2;
                 Tensor swapped = np::concatenate({y.slice(half, y.shape()[0]), y.slice(0, half)}, 0);
                 return swapped + npx::slice_axis(y, 1, 0, 1);
               },
               "Slices"),
           std::make_shared<nn::Dense>(3));
  return net;
}

/// Fused attention inside the forward: a convolution's channels as 6 tokens of 49
/// features, attending to themselves causally, then layer norm over the features.
inline std::shared_ptr<HybridSequential> attentionNetwork() {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(6, 3),
           std::make_shared<nn::HybridLambda>(
               [](const Tensor &x) {
                 Tensor tokens = x.reshape({x.shape()[0], 6, 49});
                 npx::AttentionOptions causal;
                 causal.causal = true;
                 return npx::scaled_dot_product_attention(tokens, tokens * 0.5, tokens, causal);
               },
               "Attention"),
           std::make_shared<nn::LayerNorm>(), std::make_shared<nn::Dense>(3));
  return net;
}

/// A decoder layer whose memory is its own input (one input, as a HybridSequential's
/// children take): causal self-attention, then attention over the same tokens.
class DecoderOverItsInput : public HybridBlock {
public:
  DecoderOverItsInput(int64_t units, int64_t hidden, int64_t heads) {
    register_child("decoder", std::make_shared<nn::TransformerDecoderLayer>(units, hidden, heads));
  }
  Tensor forward(const Tensor &x) override { return child("decoder")->forward_multi({x, x})[0]; }
  std::string kind() const override { return "DecoderOverItsInput"; }
};

/// Two transformer layers over a convolution's channels as 6 tokens: GPT-2's kind
/// (pre-norm, causal, one fused projection, tanh GELU) then BERT's (post-norm), then
/// the original transformer's decoder layer.
inline std::shared_ptr<HybridSequential> transformerNetwork() {
  nn::TransformerLayerOptions gpt;
  gpt.pre_norm = true;
  gpt.causal = true;
  gpt.fused_qkv = true;
  gpt.gelu_tanh = true;
  gpt.layer_norm_eps = 1e-5;
  nn::DenseOptions tokens;
  tokens.flatten = false;
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(6, 3),
           std::make_shared<nn::HybridLambda>(
               [](const Tensor &x) { return x.reshape({x.shape()[0], 6, 49}); }, "Tokens"),
           std::make_shared<nn::Dense>(16, "", tokens),
           std::make_shared<nn::TransformerEncoderLayer>(16, 32, 4, gpt),
           std::make_shared<nn::TransformerEncoderLayer>(16, 32, 2),
           std::make_shared<DecoderOverItsInput>(16, 32, 2), std::make_shared<nn::Dense>(3));
  return net;
}

/// Per-sample losses of each step, then the parameters, after `steps` SGD-with-momentum
/// steps of `net` on one batch: eagerly (record, backward, Trainer::step; hybridized or
/// not, as the net is) or as the compiled TrainStep with `options` (its compiled IR into
/// `ir`, where given).
inline std::vector<std::vector<float>> trainSteps(Block &net, const Tensor &images,
                                                  const Tensor &labels, bool compiledStep,
                                                  const CompileOptions &options,
                                                  double learningRate = 0.05, int steps = 3,
                                                  std::string *ir = nullptr) {
  Device device = images.device();
  Trainer trainer(net.collect_params(), "sgd",
                  {{"learning_rate", learningRate}, {"momentum", 0.9}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  TrainStep step(net, lossFn, trainer, {device}, false, options);
  std::vector<std::vector<float>> out;
  for (int i = 0; i < steps; ++i) {
    if (compiledStep) {
      out.push_back(step(images, labels).to_vector<float>());
      continue;
    }
    Tensor loss;
    {
      autograd::Record record;
      loss = lossFn(net(images), labels);
    }
    loss.backward();
    trainer.step(images.shape()[0]);
    out.push_back(loss.to_vector<float>());
  }
  for (const ParameterPtr &p : net.collect_params().values())
    out.push_back(p->data(device).to_vector<float>());
  if (ir && compiledStep)
    *ir = step.compiled().compiled_ir();
  return out;
}

/// trainSteps of `makeNetwork()`'s network on 4 random 9x9 images on `device`: eager
/// (mode 0), hybridized (1), or the compiled step (2).
inline std::vector<std::vector<float>>
threeSteps(int mode, const std::function<std::shared_ptr<HybridSequential>()> &makeNetwork,
           Device device = cpu()) {
  np::random::seed(4);
  auto net = makeNetwork();
  net->initialize(init::Xavier(), {cpu()}); // drawn on the CPU, then moved
  {
    autograd::Pause shapes;
    (*net)(np::zeros({1, 2, 9, 9}));
  }
  net->collect_params().reset_device({device});
  if (mode == 1)
    net->hybridize();
  Tensor images = (dlc::testing::randomTensor({4, 2, 9, 9}, 31) * 2.0).copyto(device);
  Tensor labels = np::array(std::vector<int64_t>{0, 2, 1, 2}).copyto(device);
  return trainSteps(*net, images, labels, mode == 2, compile_options_from_environment());
}

/// The ids embeddingSteps feeds: repeats (their rows' gradients add up), and rows 2, 4,
/// 6, 8, 9 and 10 of the 12 never named.
inline const std::vector<int64_t> &embeddingIds() {
  static const std::vector<int64_t> ids = {3, 7, 3, 0, 11, 3, 7, 7, 1, 0, 0, 5};
  return ids;
}

/// An embedding table (12 x 5) under a classifier, Xavier-initialized from the current seed.
inline std::shared_ptr<HybridSequential> embeddingNetwork() {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Embedding>(12, 5), std::make_shared<nn::Dense>(3));
  net->initialize(init::Xavier(), {cpu()});
  autograd::Pause shapes; // the classifier's input size, drawn on the CPU
  (*net)(np::zeros({1, 3}, DType::i64));
  return net;
}

/// trainSteps of embeddingNetwork() on a (4, 3) batch of embeddingIds() of `idType` on
/// `device`: eager (mode 0), hybridized (1), or the compiled step (2).
inline std::vector<std::vector<float>> embeddingSteps(int mode, DType idType,
                                                      Device device = cpu()) {
  np::random::seed(6);
  auto net = embeddingNetwork();
  net->collect_params().reset_device({device});
  if (mode == 1)
    net->hybridize();
  Tensor batch = np::array(embeddingIds()).reshape({4, 3}).astype(idType).copyto(device);
  Tensor labels = np::array(std::vector<int64_t>{0, 2, 1, 2}).copyto(device);
  return trainSteps(*net, batch, labels, mode == 2, compile_options_from_environment());
}

} // namespace dlc::testing

#endif // DLC_UNITTESTS_GLUON_LAYERNETWORKS_H
