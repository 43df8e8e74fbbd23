//===- Attention.cpp - scaled dot-product attention, fused, and its gradient ---===//
#include "../OpDefinitions.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

#include <cmath>

namespace dlc {

namespace {

/// The mask's checks: boolean, or of the queries' dtype (additive).
void requireMask(const TensorMeta &mask, DType queries) {
  if (mask.dtype != DType::boolean && mask.dtype != queries)
    throw DTypeError(std::string("the mask must be boolean (true: may attend) or ") +
                     dtype_name(queries) + " like the queries (added to the scores), got " +
                     dtype_name(mask.dtype));
}

// (q, k, v[, mask]) -> (output, logsumexp, used_seed)
std::vector<TensorMeta> inferAttention(const std::vector<TensorMeta> &in, const Attrs &) {
  DType dtype = detail::require_one_float_dtype({in[0], in[1], in[2]});
  const Shape *mask = nullptr;
  if (in.size() > 3) {
    requireMask(in[3], dtype);
    mask = &in[3].shape;
  }
  Shape out = detail::checked(shape_rules::attention(in[0].shape, in[1].shape, in[2].shape, mask));
  Shape lse(in[0].shape.begin(), in[0].shape.end() - 1);
  return {{out, dtype}, {lse, DType::f32}, {{}, DType::i64}};
}

// (dy, q, k, v, output, logsumexp, used_seed[, mask]) -> (dq, dk, dv)
std::vector<TensorMeta> inferAttentionBackward(const std::vector<TensorMeta> &in,
                                               const Attrs &attrs) {
  std::vector<TensorMeta> forwardIn(in.begin() + 1, in.begin() + 4);
  if (in.size() > 7)
    forwardIn.push_back(in[7]);
  std::vector<TensorMeta> forward = inferAttention(forwardIn, attrs);
  for (auto [k, what] : {std::pair{size_t(0), "the output gradient"}, {size_t(4), "the output"},
                         {size_t(5), "logsumexp"}, {size_t(6), "used_seed"}}) {
    const TensorMeta &want = forward[k == 0 || k == 4 ? 0 : k - 4];
    if (in[k].shape != want.shape || in[k].dtype != want.dtype)
      throw ShapeError(std::string(what) + " must be " + dtype_name(want.dtype) + " " +
                       shape_rules::str(want.shape) + ", the forward's, got " +
                       dtype_name(in[k].dtype) + " " + shape_rules::str(in[k].shape));
  }
  return {in[1], in[2], in[3]};
}

std::vector<Tensor> vjpAttention(const VjpContext &c) {
  // Only the outputs that received a gradient have a slot.
  if (c.output_grads.size() > 1 && c.output_grads[1].defined())
    throw UnsupportedError("backward: gradients through attention's log-sum-exp are not "
                           "supported");
  std::vector<Tensor> grads(c.inputs.size());
  if (!c.output_grads[0].defined())
    return grads;
  static const OpDef &op = find_op("attention_backward");
  std::vector<Tensor> operands{c.output_grads[0], c.inputs[0], c.inputs[1], c.inputs[2],
                               c.outputs[0],      c.outputs[1], c.outputs[2]};
  if (c.inputs.size() > 3)
    operands.push_back(c.inputs[3]);
  Attrs attrs;
  attrs.set("scale", c.attrs.get_float("scale", 1.0));
  attrs.set("causal", c.attrs.get_bool("causal", false));
  attrs.set("dropout", c.attrs.get(op_attrs::attention::dropout));
  std::vector<Tensor> d = invoke(op, operands, attrs);
  grads[0] = d[0];
  grads[1] = d[1];
  grads[2] = d[2];
  return grads; // the mask gets none
}

} // namespace

void detail::register_attention_ops() {
  register_op({"attention", ops::attention, inferAttention, vjpAttention});
  register_op({"attention_backward", ops::attention_backward, inferAttentionBackward,
               vjp_not_implemented});
}

npx::AttentionResult npx::attention(const Tensor &query, const Tensor &key, const Tensor &value,
                                    const AttentionOptions &options) {
  static const OpDef &op = find_op("attention");
  if (query.ndim() < 2)
    throw ShapeError("scaled_dot_product_attention: the query must be (..., length, features), "
                     "got " + shape_rules::str(query.shape()));
  if (!(options.dropout >= 0 && options.dropout < 1))
    throw ValueError("scaled_dot_product_attention: dropout must be in [0, 1), got " +
                     std::to_string(options.dropout));
  double scale = options.scale ? *options.scale : 1.0 / std::sqrt(double(query.shape().back()));
  if (!(scale > 0) || !std::isfinite(scale))
    throw ValueError("scaled_dot_product_attention: scale must be finite and > 0, got " +
                     std::to_string(scale));
  std::vector<Tensor> operands{query, key, value};
  if (options.mask.defined())
    operands.push_back(options.mask);
  Attrs attrs{{"scale", scale}, {"causal", options.causal}, {"dropout", options.dropout}};
  if (options.dropout > 0)
    attrs.set("seed", options.seed ? int64_t(*options.seed)
                                   : detail::next_kernel_seed(query.device()));
  std::vector<Tensor> out = invoke(op, operands, attrs);
  return {out[0], out[1], out[2]};
}

Tensor npx::scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                         const Tensor &value, const AttentionOptions &options) {
  return attention(query, key, value, options).output;
}

} // namespace dlc
