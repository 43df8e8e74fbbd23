//===- NN.h - neural-network ops and their gradients (MXNet's npx) -----------===//
//
// Forward ops as MXNet's npx exposes them, and the backward ops autograd composes
// gradients from. Layouts: NCHW activations, OIHW convolution weights, dense weights
// (units, in_units). float32 on the CPU (oneDNN, with plain-loop references).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_NN_H
#define DLC_FRONTEND_NN_H

#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/Tensor.h"

#include <array>
#include <optional>

namespace dlc::npx {

struct ConvOptions {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  /// max(y, 0) in the same pass over y (Gluon's Conv2D(activation='relu')); the same as
  /// npx::relu on the result, one pass over the activations fewer. Forward only.
  bool relu = false;
};

/// x (N,C,H,W) * weight (O,C/groups,KH,KW) + bias (O); `bias` may be undefined.
Tensor convolution(const Tensor &x, const Tensor &weight, const Tensor &bias,
                   const ConvOptions &options = {});
/// Gradient of convolution with respect to x, whose shape is `input_shape`.
Tensor convolution_backward_data(const Tensor &dy, const Tensor &weight,
                                 const Shape &input_shape, const ConvOptions &options = {});
/// Gradient with respect to the weight, whose shape is `weight_shape`.
Tensor convolution_backward_filter(const Tensor &dy, const Tensor &x, const Shape &weight_shape,
                                   const ConvOptions &options = {});
struct DeconvOptions {
  ConvOptions conv; ///< stride, padding, dilation, groups of the convolution it transposes
  /// Added to the bottom and right (MXNet's `adj`), below the stride: it picks one of
  /// the input sizes a strided convolution maps to the same output size.
  std::array<int64_t, 2> output_padding{0, 0};
};
/// The transposed convolution (MXNet's Deconvolution): x (N, C_in, H, W) and weight
/// (C_in, C_out/groups, KH, KW) give (N, C_out, (H-1)*stride - 2*padding +
/// dilation*(KH-1) + output_padding + 1, ...), plus bias (C_out) where it is defined.
/// It is the gradient of a convolution's input (dlc.conv2d_backward_data).
Tensor deconvolution(const Tensor &x, const Tensor &weight, const Tensor &bias,
                     const DeconvOptions &options = {});

/// Layer normalization (MXNet's LayerNorm): x standardized over `axis`, then
/// * gamma + beta along that axis (either may be undefined: no scale, no shift). One
/// dlc.layer_norm, statistics in float32 whatever x's dtype.
Tensor layer_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta, int64_t axis = -1,
                  double eps = 1e-5);
/// dlc.layer_norm itself: (y, mean, var) with float32 gamma and beta, the statistics of
/// each row along `axis` (x's shape without the axis, float32).
struct LayerNormResult {
  Tensor output, mean, var;
};
LayerNormResult layer_norm_with_stats(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                                      int64_t axis = -1, double eps = 1e-5);
struct LayerNormGrads {
  Tensor input, gamma, beta;
};
/// layer_norm's gradients from the output gradient `dy` and the forward's statistics.
LayerNormGrads layer_norm_backward(const Tensor &dy, const Tensor &x, const Tensor &gamma,
                                   const Tensor &mean, const Tensor &var, int64_t axis = -1,
                                   double eps = 1e-5);
/// Instance normalization: each (sample, channel) standardized over its spatial axes,
/// then the per-channel gamma (C) and beta (C).
Tensor instance_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                     double eps = 1e-5);
/// Group normalization as MXNet 1.x computes it: the channels (axis 1) split into
/// `num_groups` groups, each (sample, group) standardized over its channels and spatial
/// axes, then gamma and beta per group (shape (num_groups)).
Tensor group_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                  int64_t num_groups, double eps = 1e-5);

/// Nearest-neighbour up-sampling of (N, C, H, W) by an integer `scale` on both axes:
/// (N, C, H * scale, W * scale). A broadcast between two reshapes, so its gradient sums
/// each block (broadcast_to's) and it compiles like any other chain of ops.
Tensor upsampling_nearest(const Tensor &x, int64_t scale);

/// Bilinear resizing of (N, C, H, W) to (N, C, height, width) (MXNet's
/// contrib.BilinearResize2D): with align_corners the corner pixels of input and output
/// coincide (MXNet's default), without it pixel centres are scaled (PyTorch's default).
/// Two matrix products with the interpolation weights, whose gradients give its own.
Tensor bilinear_resize(const Tensor &x, int64_t height, int64_t width, bool align_corners = true);

/// How npx::pad fills the border: with a constant, with the edge's values repeated, or
/// with the values mirrored at the edge (not repeating it), as numpy's and MXNet's pad.
enum class PadMode { constant, edge, reflect };
/// Pads each axis d by pad_width[2d] before and pad_width[2d+1] after (MXNet's
/// pad_width layout). Made of split, concatenate and broadcast_to, whose gradients give
/// its own; reflect needs each width below its axis' size.
Tensor pad(const Tensor &x, PadMode mode, const std::vector<int64_t> &pad_width,
           double constant_value = 0);

struct ConvWeightGrads {
  Tensor weight, bias; ///< bias: dy summed over axes 0, 2, 3
};
/// Gradients with respect to the weight and the bias, from one pass over dy where the
/// kernels can (the bias gradient is otherwise a second read of all of dy).
ConvWeightGrads convolution_backward_weights(const Tensor &dy, const Tensor &x,
                                             const Shape &weight_shape,
                                             const ConvOptions &options = {});

struct PoolOptions {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  bool ceil_mode = false;         ///< MXNet's pooling_convention='full'
  /// average pooling only; MXNet's default, which is the dialect's
  bool count_include_pad = op_attrs::avg_pool2d::count_include_pad.value;
};

Tensor max_pool2d(const Tensor &x, const PoolOptions &options);
Tensor max_pool2d_backward(const Tensor &dy, const Tensor &x, const PoolOptions &options);
Tensor avg_pool2d(const Tensor &x, const PoolOptions &options);
Tensor avg_pool2d_backward(const Tensor &dy, const Shape &input_shape,
                           const PoolOptions &options);

struct BatchNormResult {
  Tensor output, mean, var; ///< the batch statistics (var is biased)
};
/// Normalizes over axis 1 with the batch statistics, and returns them.
BatchNormResult batch_norm_training(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                                    double epsilon = 1e-5);
/// Normalizes over axis 1 with the running statistics.
Tensor batch_norm_inference(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                            const Tensor &running_mean, const Tensor &running_var,
                            double epsilon = 1e-5);
struct BatchNormGrads {
  Tensor input, gamma, beta;
};
BatchNormGrads batch_norm_backward(const Tensor &dy, const Tensor &x, const Tensor &gamma,
                                   const Tensor &mean, const Tensor &var, double epsilon = 1e-5);

/// x (..., in_units) · weightᵀ (units, in_units) + bias (units); `bias` may be undefined.
Tensor fully_connected(const Tensor &x, const Tensor &weight, const Tensor &bias);

/// Options of scaled_dot_product_attention (PyTorch's arguments).
struct AttentionOptions {
  /// Broadcasts to the scores (..., Lq, Lk): boolean (true: may attend) or of the
  /// queries' dtype (added to the scores); undefined: none.
  Tensor mask;
  bool causal = false; ///< query i attends keys j <= i
  double dropout = 0;  ///< probability of dropping an attention weight
  std::optional<double> scale; ///< default 1 / sqrt(features)
  std::optional<uint64_t> seed; ///< the dropout's; default a fresh draw (np::random::seed)
};
struct AttentionResult {
  Tensor output;
  Tensor logsumexp; ///< of each query's scaled, masked scores: float32 (..., Lq)
  Tensor used_seed; ///< the dropout's seed, 0-d int64
};
/// softmax(query · keyᵀ · scale + mask) · value for query (..., Lq, D), key (..., Lk, D)
/// and value (..., Lk, Dv) with the same leading dimensions: one dlc.attention, whose
/// kernels never hold the (Lq, Lk) scores whole. A query that may attend no key gets 0.
Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key, const Tensor &value,
                                    const AttentionOptions &options = {});
/// The same, with the log-sum-exp and the seed the backward reads.
AttentionResult attention(const Tensor &query, const Tensor &key, const Tensor &value,
                          const AttentionOptions &options = {});

struct DropoutResult {
  Tensor output, mask; ///< mask: bool, true where kept
};
/// Zeroes each element with probability `ratio`, scales the rest by 1/(1-ratio). The
/// seed defaults to a fresh draw from the device's generator (np::random::seed).
DropoutResult dropout(const Tensor &x, double ratio, std::optional<uint64_t> seed = {});

/// Per-sample loss of logits (N, C) against class indices (N) (int32 or int64).
Tensor softmax_cross_entropy(const Tensor &logits, const Tensor &labels);
/// (softmax(logits) - onehot(labels)) * dloss[:, None]
Tensor softmax_cross_entropy_backward(const Tensor &dloss, const Tensor &logits,
                                      const Tensor &labels);

/// One Adam step of a float32 parameter in one pass (MXNet's adam_update), with `rate` a
/// 0-d float32 tensor (the bias-corrected learning rate):
///   mean' = beta1*mean + (1-beta1)*grad,  var' = beta2*var + (1-beta2)*grad²,
///   weight' = weight - rate*mean' / (sqrt(var') + epsilon).
/// The same bits as those formulas written with separate ops. `rescale_grad` multiplies the
/// gradient first (MXNet's rescale_grad, 1/batch size), as `grad * rescale_grad` would.
/// Also a dialect op (`dlc.adam_update`): Trainer traces it into compiled steps for GPUs;
/// on CPUs they write the separate ops, which the compiler fuses.
struct AdamUpdate {
  Tensor weight, mean, var;
};
AdamUpdate adam_update(const Tensor &weight, const Tensor &grad, const Tensor &mean,
                       const Tensor &var, const Tensor &rate, double beta1 = 0.9,
                       double beta2 = 0.999, double epsilon = 1e-8, double rescale_grad = 1.0);

/// One SGD step with momentum (MXNet's sgd_mom_update; Nesterov's variant with
/// `nesterov`): momentum' = mu*momentum + grad, weight' = weight - rate*d, with
/// d = grad + mu*momentum' (Nesterov) or momentum'; grad multiplied by `rescale_grad`
/// first. Traced as adam_update.
struct MomentumUpdate {
  Tensor weight, momentum;
};
MomentumUpdate sgd_momentum_update(const Tensor &weight, const Tensor &grad,
                                   const Tensor &momentum, const Tensor &rate, double mu,
                                   bool nesterov = false, double rescale_grad = 1.0);

/// One plain SGD step (MXNet's sgd_update; the seed's optimizer): weight - rate*grad, grad
/// multiplied by `rescale_grad` first. The same bits as the separate ops. Traced as
/// adam_update.
Tensor sgd_update(const Tensor &weight, const Tensor &grad, const Tensor &rate,
                  double rescale_grad = 1.0);

/// The three updates above, written into `weight` and the state tensors themselves
/// (MXNet's `out=weight`): no new tensors and no copy back, what Trainer.step uses. The
/// tensors must be plain (not in a blocked layout), and neither autograd::Record nor
/// hybridize may be active (invoke_into).
void adam_update_in_place(const Tensor &weight, const Tensor &grad, const Tensor &mean,
                          const Tensor &var, const Tensor &rate, double beta1 = 0.9,
                          double beta2 = 0.999, double epsilon = 1e-8,
                          double rescale_grad = 1.0);
void sgd_momentum_update_in_place(const Tensor &weight, const Tensor &grad,
                                  const Tensor &momentum, const Tensor &rate, double mu,
                                  bool nesterov = false, double rescale_grad = 1.0);
void sgd_update_in_place(const Tensor &weight, const Tensor &grad, const Tensor &rate,
                         double rescale_grad = 1.0);

} // namespace dlc::npx

#endif // DLC_FRONTEND_NN_H
