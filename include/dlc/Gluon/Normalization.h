//===- Normalization.h - gluon.nn's LayerNorm, InstanceNorm and GroupNorm -----===//
//
// MXNet 1.9.1's layers, with its parameter names and shapes so that its `.params`
// files load: gamma and beta of shape (in_channels) for LayerNorm (along `axis`) and
// InstanceNorm (along axis 1), (num_groups) for GroupNorm. `scale=false` keeps gamma
// (ones, saved) without learning it; `center=false` likewise for beta, as MXNet does.
// BatchNorm is in Layers.h.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_NORMALIZATION_H
#define DLC_GLUON_NORMALIZATION_H

#include "dlc/Gluon/Block.h"

namespace dlc::gluon::nn {

struct NormOptions {
  double epsilon = 1e-5;
  bool center = true; ///< learn beta
  bool scale = true;  ///< learn gamma
  int64_t in_channels = 0; ///< 0: inferred at the first forward
};

/// Each sample standardized along `axis` (the last by default), then * gamma + beta.
class LayerNorm : public HybridBlock {
public:
  explicit LayerNorm(int64_t axis = -1, NormOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "LayerNorm"; }
  ParameterPtr gamma, beta;

private:
  int64_t axis_;
  NormOptions options_;
};

/// Each (sample, channel) standardized over its spatial axes; MXNet's default is
/// scale = false.
class InstanceNorm : public HybridBlock {
public:
  explicit InstanceNorm(NormOptions options = defaults());
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "InstanceNorm"; }
  ParameterPtr gamma, beta;
  /// MXNet's defaults for InstanceNorm (scale off).
  static NormOptions defaults() {
    NormOptions o;
    o.scale = false;
    return o;
  }

private:
  NormOptions options_;
};

/// Channels in `num_groups` groups, each (sample, group) standardized.
class GroupNorm : public HybridBlock {
public:
  explicit GroupNorm(int64_t num_groups = 1, NormOptions options = {});
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "GroupNorm(" + std::to_string(groups_) + ")"; }
  ParameterPtr gamma, beta;

private:
  int64_t groups_;
  NormOptions options_;
};

} // namespace dlc::gluon::nn

#endif // DLC_GLUON_NORMALIZATION_H
