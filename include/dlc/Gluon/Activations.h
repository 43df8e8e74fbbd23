//===- Activations.h - gluon.nn's activation layers ---------------------------===//
//
// MXNet's activation blocks, each over one dialect op (or a short chain of them, which
// dlc-fuse turns into one generated kernel when hybridized): LeakyReLU and PReLU share
// dlc.leaky_relu (a constant slope, a learned one), ELU is dlc.elu, SELU dlc.selu,
// Swish with beta = 1 and SiLU dlc.silu, GELU dlc.gelu; HardSigmoid is a clip of
// alpha * x + beta and HardSwish dlc.hard_swish. Activation("...") stays for the named
// ones (activate() in Layers.h).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_ACTIVATIONS_H
#define DLC_GLUON_ACTIVATIONS_H

#include "dlc/Gluon/Block.h"

#include <string>

namespace dlc::gluon::nn {

/// x > 0 ? x : alpha * x, with a constant alpha.
class LeakyReLU : public HybridBlock {
public:
  explicit LeakyReLU(double alpha);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;

private:
  double alpha_;
};

/// LeakyReLU with a learned slope "alpha": one for every element (in_channels = 1) or
/// one per channel (axis 1). MXNet's default initializer is Constant(0.25).
class PReLU : public HybridBlock {
public:
  explicit PReLU(init::InitializerPtr alpha_initializer = nullptr, int64_t in_channels = 1);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;
  ParameterPtr alpha;

private:
  int64_t in_channels_;
};

/// x > 0 ? x : alpha * (e^x - 1)
class ELU : public HybridBlock {
public:
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;

private:
  double alpha_;
};

/// ELU scaled, with the fixed constants of self-normalizing networks.
class SELU : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "SELU"; }
};

/// GELU: exact ("erf", dlc.gelu) or its tanh approximation ("tanh", GPT-2's).
class GELU : public HybridBlock {
public:
  explicit GELU(std::string approximation = "erf");
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return tanh_ ? "GELU(tanh)" : "GELU"; }

private:
  bool tanh_ = false;
};

/// x * sigmoid(beta * x); beta = 1 is SiLU.
class Swish : public HybridBlock {
public:
  explicit Swish(double beta = 1.0);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;

private:
  double beta_;
};

/// x * sigmoid(x)
class SiLU : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "SiLU"; }
};

/// clip(alpha * x + beta, 0, 1); MXNet's defaults alpha = 0.2, beta = 0.5.
class HardSigmoid : public HybridBlock {
public:
  explicit HardSigmoid(double alpha = 0.2, double beta = 0.5);
  Tensor forward(const Tensor &x) override;
  std::string kind() const override;

private:
  double alpha_, beta_;
};

/// x * relu6(x + 3) / 6 (MobileNetV3's).
class HardSwish : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "HardSwish"; }
};

} // namespace dlc::gluon::nn

#endif // DLC_GLUON_ACTIVATIONS_H
