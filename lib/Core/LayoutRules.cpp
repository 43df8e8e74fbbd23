//===- LayoutRules.cpp - the layout rules the dialect's ops name ---------------===//
//
// Activations stay blocked through convolution, max pooling, batch norm, per-channel
// reductions and element-wise ops, whose CPU kernels read and write the blocked layouts
// (nChw16c, nChw8c); weights, statistics and everything else are plain. A call may use
// one blocked layout, the one the CPU's kernels want: a tensor blocked otherwise is read
// through a conversion.
//
//===----------------------------------------------------------------------===//
#include "dlc/Core/LayoutRules.h"

namespace dlc {

LayoutPlan plain_layouts(size_t inputs, size_t outputs) {
  return {std::vector<Layout>(inputs, Layout::plain), std::vector<Layout>(outputs, Layout::plain)};
}

Layout keep_if_blockable(Layout current, const TensorMeta &meta, Layout blocked) {
  return current == blocked && blockable(meta.shape, meta.dtype, blocked) ? current
                                                                          : Layout::plain;
}

Layout blocked_if_blockable(const TensorMeta &meta, Layout blocked) {
  return blockable(meta.shape, meta.dtype, blocked) ? blocked : Layout::plain;
}

LayoutPlan elementwise_layouts(const std::vector<Layout> &current,
                               const std::vector<TensorMeta> &inputs,
                               const std::vector<TensorMeta> &outputs, const Attrs &,
                               Layout blocked) {
  bool anyBlocked = false, allBlockable = blocked != Layout::plain;
  for (size_t i = 0; i < inputs.size(); ++i) {
    anyBlocked |= current[i] == blocked;
    allBlockable &= blockable(inputs[i].shape, inputs[i].dtype, blocked) &&
                    inputs[i].shape == outputs[0].shape;
  }
  for (const TensorMeta &out : outputs)
    allBlockable &= blockable(out.shape, out.dtype, blocked);
  Layout layout = anyBlocked && allBlockable ? blocked : Layout::plain;
  return {std::vector<Layout>(inputs.size(), layout), std::vector<Layout>(outputs.size(), layout)};
}

namespace {

// The rules run in the compiler too, which has no exceptions: they read attributes
// without Attrs' throwing getters. A missing or mistyped attribute reads as the fallback
// (the op's shape rule or verifier is the one to report it).
int64_t intOr(const Attrs &attrs, const AttrFact<int64_t> &fact) {
  auto it = attrs.items().find(fact.name);
  const int64_t *value = it == attrs.items().end() ? nullptr : std::get_if<int64_t>(&it->second);
  return value ? *value : fact.value;
}

std::vector<int64_t> intsOr(const Attrs &attrs, const std::string &name) {
  auto it = attrs.items().find(name);
  const auto *value =
      it == attrs.items().end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
  return value ? *value : std::vector<int64_t>{};
}

/// `allow` where a convolution with weights of shape `weights` (O, C/groups, KH, KW) has
/// blocked kernels: ungrouped ones, depthwise ones (one input and one output channel per
/// group: MobileNet's) and groups of whole blocks; plain otherwise (other grouped
/// convolutions have only reference kernels on blocked activations).
Layout blockedForGroups(const Attrs &a, const shape_rules::Shape &weights, Layout allow) {
  int64_t groups = intOr(a, op_attrs::conv2d::groups);
  if (groups == 1)
    return allow;
  if (weights.size() != 4 || groups < 1 || weights[0] % groups != 0)
    return Layout::plain;
  int64_t inPerGroup = weights[1], outPerGroup = weights[0] / groups;
  int64_t block = channel_block(allow);
  bool depthwise = inPerGroup == 1 && outPerGroup == 1;
  bool wholeBlocks = inPerGroup % block == 0 && outPerGroup % block == 0;
  return depthwise || wholeBlocks ? allow : Layout::plain;
}

// (x, w[, b]) -> y, and (dy, w) -> dx alike: the activation read as it is, the one
// written blocked.
LayoutPlan convLayouts(const std::vector<Layout> &current, const std::vector<TensorMeta> &in,
                       const std::vector<TensorMeta> &out, const Attrs &a, Layout allow) {
  allow = in.size() > 1 ? blockedForGroups(a, in[1].shape, allow) : Layout::plain;
  LayoutPlan plan = plain_layouts(in.size(), out.size());
  plan.inputs[0] = keep_if_blockable(current[0], in[0], allow);
  plan.outputs[0] = blocked_if_blockable(out[0], allow);
  return plan;
}

// (dy, x) -> dw: both as they are, dw plain.
LayoutPlan convBackwardFilterLayouts(const std::vector<Layout> &current,
                                     const std::vector<TensorMeta> &in,
                                     const std::vector<TensorMeta> &out, const Attrs &a,
                                     Layout allow) {
  allow = !out.empty() ? blockedForGroups(a, out[0].shape, allow) : Layout::plain;
  LayoutPlan plan = plain_layouts(in.size(), out.size());
  plan.inputs[0] = keep_if_blockable(current[0], in[0], allow);
  plan.inputs[1] = keep_if_blockable(current[1], in[1], allow);
  return plan;
}

// Ops whose activations all share the layout of the one at `source` (max pooling, batch
// norm and their gradients): that input's layout where every activation can take it,
// else plain; the other inputs and outputs (statistics, scales) are plain.
LayoutPlan followActivation(const std::vector<Layout> &current,
                            const std::vector<TensorMeta> &in,
                            const std::vector<TensorMeta> &out, size_t source,
                            std::initializer_list<size_t> otherInputs, size_t outputs,
                            Layout allow) {
  Layout layout = keep_if_blockable(current[source], in[source], allow);
  for (size_t i : otherInputs)
    if (!blockable(in[i].shape, in[i].dtype, layout))
      layout = Layout::plain;
  for (size_t k = 0; k < outputs; ++k)
    if (!blockable(out[k].shape, out[k].dtype, layout))
      layout = Layout::plain;
  LayoutPlan plan = plain_layouts(in.size(), out.size());
  plan.inputs[source] = layout;
  for (size_t i : otherInputs)
    plan.inputs[i] = layout;
  for (size_t k = 0; k < outputs; ++k)
    plan.outputs[k] = layout;
  return plan;
}

// (x) -> y[, indices]
LayoutPlan maxPoolLayouts(const std::vector<Layout> &current, const std::vector<TensorMeta> &in,
                          const std::vector<TensorMeta> &out, const Attrs &, Layout allow) {
  return followActivation(current, in, out, 0, {}, out.size(), allow);
}

// (dy, x) -> dx, and (dy, indices) -> dx
LayoutPlan maxPoolBackwardLayouts(const std::vector<Layout> &current,
                                  const std::vector<TensorMeta> &in,
                                  const std::vector<TensorMeta> &out, const Attrs &, Layout allow) {
  return followActivation(current, in, out, 1, {0}, 1, allow);
}

// (x, gamma, beta[, running_mean, running_var]) -> y[, mean, var]
LayoutPlan batchNormLayouts(const std::vector<Layout> &current,
                            const std::vector<TensorMeta> &in,
                            const std::vector<TensorMeta> &out, const Attrs &, Layout allow) {
  return followActivation(current, in, out, 0, {}, 1, allow);
}

// (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta)
LayoutPlan batchNormBackwardLayouts(const std::vector<Layout> &current,
                                    const std::vector<TensorMeta> &in,
                                    const std::vector<TensorMeta> &out, const Attrs &,
                                    Layout allow) {
  return followActivation(current, in, out, 1, {0}, 1, allow);
}

// Per-channel sums and means of a 4-D tensor (axes 0, 2, 3: a bias gradient, batch
// statistics) read a blocked input as it is; other reductions read plain ones.
LayoutPlan channelReduceLayouts(const std::vector<Layout> &current,
                                const std::vector<TensorMeta> &in,
                                const std::vector<TensorMeta> &out, const Attrs &attrs,
                                Layout allow) {
  using op_enums::ReduceKind;
  LayoutPlan plan = plain_layouts(in.size(), out.size());
  // A reduction always names its kind; sum where it does not read as one.
  auto kind = ReduceKind(intOr(attrs, {"kind", int64_t(ReduceKind::sum)}));
  std::vector<int64_t> axes = intsOr(attrs, "axes");
  if (in[0].shape.size() != 4 || (kind != ReduceKind::sum && kind != ReduceKind::mean))
    return plan;
  std::vector<bool> reduced(4, false);
  for (int64_t axis : axes) {
    int64_t d = axis < 0 ? axis + 4 : axis;
    if (d < 0 || d > 3 || reduced[size_t(d)])
      return plan; // the shape rule reports it
    reduced[size_t(d)] = true;
  }
  if (reduced == std::vector<bool>{true, false, true, true})
    plan.inputs[0] = keep_if_blockable(current[0], in[0], allow);
  return plan;
}

} // namespace

LayoutFn layout_rule_function(LayoutRule rule) {
  switch (rule) {
  case LayoutRule::none:
    return nullptr;
  case LayoutRule::elementwise:
    return elementwise_layouts;
  case LayoutRule::conv:
    return convLayouts;
  case LayoutRule::conv_backward_filter:
    return convBackwardFilterLayouts;
  case LayoutRule::max_pool:
    return maxPoolLayouts;
  case LayoutRule::max_pool_backward:
    return maxPoolBackwardLayouts;
  case LayoutRule::batch_norm:
    return batchNormLayouts;
  case LayoutRule::batch_norm_backward:
    return batchNormBackwardLayouts;
  case LayoutRule::channel_reduce:
    return channelReduceLayouts;
  }
  return nullptr;
}

LayoutFn layout_rule_of(std::string_view dialect_op) {
  const op_facts::OpInfo *op = op_facts::find(dialect_op);
  return op ? layout_rule_function(op->layout_rule) : nullptr;
}

} // namespace dlc
