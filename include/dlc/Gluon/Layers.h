//===- Layers.h - the layers of gluon.nn --------------------------------------===//
//
// Input sizes (in_channels, in_units) are inferred at the first forward, as Gluon's
// deferred initialization does. Activations: "relu", "sigmoid", "tanh", "softrelu",
// "softsign", "gelu", "relu6", "silu" (or "swish"), "selu" or "" (none); the layers with
// parameters of their own (LeakyReLU, PReLU, ELU, ...) are in Activations.h.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_LAYERS_H
#define DLC_GLUON_LAYERS_H

#include "dlc/Frontend/NN.h"
#include "dlc/Gluon/Block.h"

#include <array>
#include <functional>
#include <string>

namespace dlc::gluon::nn {

/// Applies a named activation ("" is the identity); throws for an unknown name.
Tensor activate(const std::string &activation, const Tensor &x);

struct Conv2DOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool use_bias = true;
  int64_t in_channels = 0; ///< 0: inferred at the first forward
  init::InitializerPtr weight_initializer, bias_initializer;
};

/// 2-D convolution on NCHW input, OIHW weight named "weight", bias named "bias".
class Conv2D : public HybridBlock {
public:
  Conv2D(int64_t channels, int64_t kernel_size, std::string activation = "",
         Conv2DOptions options = {});
  Conv2D(int64_t channels, std::array<int64_t, 2> kernel_size, std::string activation = "",
         Conv2DOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;
  ParameterPtr weight, bias;

private:
  int64_t channels_;
  std::array<int64_t, 2> kernel_;
  std::string activation_;
  Conv2DOptions options_;
};

/// Conv2D's settings (of the convolution it transposes) and the output padding.
struct Conv2DTransposeOptions : Conv2DOptions {
  std::array<int64_t, 2> output_padding{0, 0}; ///< below the strides
};

/// Transposed 2-D convolution (MXNet's Conv2DTranspose, "deconvolution") on NCHW input:
/// weight "weight" (in_channels, channels/groups, KH, KW), bias "bias" (channels). Each
/// output side is (in - 1) * stride - 2 * padding + dilation * (kernel - 1) +
/// output_padding + 1: it undoes a Conv2D's shape change (up-sampling in decoders and GANs).
class Conv2DTranspose : public HybridBlock {
public:
  Conv2DTranspose(int64_t channels, int64_t kernel_size, std::string activation = "",
                  Conv2DTransposeOptions options = {});
  Conv2DTranspose(int64_t channels, std::array<int64_t, 2> kernel_size,
                  std::string activation = "", Conv2DTransposeOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;
  ParameterPtr weight, bias;

private:
  int64_t channels_;
  std::array<int64_t, 2> kernel_;
  std::string activation_;
  Conv2DTransposeOptions options_;
};

struct PoolOptions {
  std::array<int64_t, 2> strides{0, 0}; ///< 0: the pool size (Gluon's strides=None)
  std::array<int64_t, 2> padding{0, 0};
  bool ceil_mode = false;               ///< pooling_convention='full'
  /// average pooling only; MXNet's default, which is the dialect's
  bool count_include_pad = op_attrs::avg_pool2d::count_include_pad.value;
};

class MaxPool2D : public HybridBlock {
public:
  explicit MaxPool2D(int64_t pool_size = 2, int64_t strides = 0, PoolOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "MaxPool2D"; }

private:
  npx::PoolOptions pool_;
};

class AvgPool2D : public HybridBlock {
public:
  explicit AvgPool2D(int64_t pool_size = 2, int64_t strides = 0, PoolOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "AvgPool2D"; }

private:
  npx::PoolOptions pool_;
};

/// Pools each channel's whole plane: (N, C, H, W) -> (N, C, 1, 1), as MXNet's
/// GlobalAvgPool2D and GlobalMaxPool2D do (a pooling whose window is the input's plane,
/// so compiled programs keep the blocked layouts and the pooling kernels).
class GlobalAvgPool2D : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "GlobalAvgPool2D"; }
};

class GlobalMaxPool2D : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "GlobalMaxPool2D"; }
};

struct BatchNormOptions {
  int64_t axis = 1; ///< the channel axis (negative counts from the end)
  double momentum = 0.9;
  double epsilon = 1e-5;
  bool center = true; ///< learn beta
  bool scale = true;  ///< learn gamma; false: gamma counts as 1 (MXNet's fix_gamma)
  /// Normalize with the running statistics in training too (and leave them as they
  /// are): a fine-tuned network's frozen batch norms.
  bool use_global_stats = false;
  int64_t in_channels = 0;
};

/// Batch normalization over the channel axis. In training mode (autograd::Record with
/// train_mode, or TrainMode) it normalizes with the batch statistics and folds them into
/// running_mean / running_var with `momentum`; otherwise, or with use_global_stats, it
/// uses the running ones.
class BatchNorm : public HybridBlock {
public:
  explicit BatchNorm(BatchNormOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "BatchNorm"; }
  /// Keeps float32 parameters for float16 and bfloat16 data (see Block::cast).
  void cast(DType dtype) override;
  ParameterPtr gamma, beta, running_mean, running_var;

private:
  /// forward with the channels on axis 1.
  Tensor normalize(const Tensor &x);
  BatchNormOptions options_;
};

struct DenseOptions {
  bool use_bias = true;
  bool flatten = true; ///< (N, d1, d2...) is first flattened to (N, d1*d2*...)
  int64_t in_units = 0;
  init::InitializerPtr weight_initializer, bias_initializer;
};

/// Fully connected: x·Wᵀ + b with W of shape (units, in_units), MXNet's layout.
class Dense : public HybridBlock {
public:
  explicit Dense(int64_t units, std::string activation = "", DenseOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;
  ParameterPtr weight, bias;

private:
  int64_t units_;
  std::string activation_;
  DenseOptions options_;
};

/// Zeroes elements with probability `rate` in training mode; the identity otherwise.
class Dropout : public HybridBlock {
public:
  explicit Dropout(double rate);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "Dropout(" + std::to_string(rate_) + ")"; }

private:
  double rate_;
};

class Flatten : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "Flatten"; }
};

/// Returns its input (a branch of a HybridConcatenate that passes x through).
class Identity : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override { return x; }
  std::string kind() const override { return "Identity"; }
};

/// Applies a function of tensors (MXNet's HybridLambda): no parameters of its own;
/// hybridized, the function is traced into the program like any forward.
class HybridLambda : public HybridBlock {
public:
  using Function = std::function<Tensor(const Tensor &)>;
  explicit HybridLambda(Function function, std::string name = "HybridLambda");
  Tensor forward(const Tensor &x) override { return function_(x); }
  std::string kind() const override { return name_; }

private:
  Function function_;
  std::string name_;
};

/// Nearest-neighbour up-sampling by an integer `scale` (MXNet's UpSampling with
/// sample_type='nearest'): each pixel becomes a scale x scale block.
class UpSampling2D : public HybridBlock {
public:
  explicit UpSampling2D(int64_t scale);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "UpSampling2D(" + std::to_string(scale_) + ")"; }

private:
  int64_t scale_;
};

/// Pads the two spatial axes of NCHW input by `padding` on every side with the values
/// mirrored at the edges (MXNet's ReflectionPad2D).
class ReflectionPad2D : public HybridBlock {
public:
  explicit ReflectionPad2D(int64_t padding = 0);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override {
    return "ReflectionPad2D(" + std::to_string(padding_) + ")";
  }

private:
  int64_t padding_;
};

class Activation : public HybridBlock {
public:
  explicit Activation(std::string activation);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "Activation(" + activation_ + ")"; }

private:
  std::string activation_;
};

} // namespace dlc::gluon::nn

#endif // DLC_GLUON_LAYERS_H
