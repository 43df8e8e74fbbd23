//===- ProgramLayouts.cpp - blocked layouts inside compiled programs ----------===//
//
// Compiled programs keep activations in oneDNN's blocked layout by the same rules as
// eager dispatch (the dialect ops' DLC_LayoutRule, dlc/Core/LayoutRules.h): the steps
// are walked in order, each kernel step's rule plans its layouts from its inputs'
// present ones, and a
// conversion step (eager.reorder_layout) goes in front of a step that wants an input in
// the other layout. What a view, a copy or a collective reads stays plain, and so do
// arguments, results and written-back values unless the caller says otherwise (a
// hybridized forward hands its saved activations to its backward as they are). When a
// rule would write such a value blocked, the step writes a new blocked value instead and
// a conversion after it fills the plain one. The memory plan is made again afterwards.
//
//===----------------------------------------------------------------------===//
#include "OpDefinitions.h"
#include "ProgramLayouts.h"

#include "dlc/Runtime/Kernel.h"

#include <algorithm>
#include <map>

namespace dlc::detail {

namespace {

// What differs between the two kinds of program.
bool isKernel(const ProgramStep &s) { return !s.copy && !s.fused; }
bool isKernel(const ShardedStep &s) { return s.kind == ShardedStep::Kind::kernel && !s.fused; }
Device deviceOf(const Program &p, const ProgramStep &) { return p.device; }
Device deviceOf(const ShardedProgram &, const ShardedStep &s) { return s.device; }
// Where a conversion of value `id` runs: where the value lives (a copy step runs on its
// target, which may have no conversion kernel).
Device valueDevice(const Program &p, int) { return p.device; }
Device valueDevice(const ShardedProgram &p, int id) { return p.values[size_t(id)].device; }

int addValueLike(Program &p, int id) {
  ProgramValue v;
  v.shape = p.values[size_t(id)].shape;
  v.dtype = p.values[size_t(id)].dtype;
  p.values.push_back(v);
  return int(p.values.size()) - 1;
}

int addValueLike(ShardedProgram &p, int id) {
  ShardedValue v;
  v.shape = p.values[size_t(id)].shape;
  v.dtype = p.values[size_t(id)].dtype;
  v.device = p.values[size_t(id)].device;
  p.values.push_back(v);
  return int(p.values.size()) - 1;
}

template <typename StepT> StepT conversion(Device device, int from, int to, Layout layout) {
  StepT step;
  step.op = "eager.reorder_layout";
  step.kernels = *find_kernel(step.op, device);
  step.attrs.set("layout", int64_t(layout));
  step.inputs = {from};
  step.outputs = {to};
  if constexpr (std::is_same_v<StepT, ShardedStep>)
    step.device = device;
  return step;
}

/// An element-wise region: like elementwise_layouts, its scalar inputs aside (they are
/// broadcast, one element, and stay plain).
template <typename ValueT>
LayoutPlan fusedPlan(const FusedElementwise &body, const std::vector<int> &inputs,
                     const std::vector<int> &outputs, const std::vector<ValueT> &values,
                     const std::vector<Layout> &layouts) {
  auto meta = [&](int id) { return TensorMeta{values[size_t(id)].shape, values[size_t(id)].dtype}; };
  std::vector<Layout> current;
  std::vector<TensorMeta> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!body.scalar[i]) {
      current.push_back(layouts[size_t(inputs[i])]);
      ins.push_back(meta(inputs[i]));
    }
  for (int out : outputs)
    outs.push_back(meta(out));
  LayoutPlan plan = plain_layouts(inputs.size(), outputs.size());
  if (ins.empty() || outs.empty())
    return plan;
  LayoutPlan tensors = elementwise_layouts(current, ins, outs, Attrs(), true);
  for (size_t i = 0, t = 0; i < inputs.size(); ++i)
    if (!body.scalar[i])
      plan.inputs[i] = tensors.inputs[t++];
  plan.outputs = tensors.outputs;
  return plan;
}

template <typename ProgramT>
bool assignLayouts(ProgramT &p, const std::vector<Layout> &argumentLayouts, bool blockedResults) {
  using StepT = typename decltype(p.steps)::value_type;
  std::vector<bool> pinned(p.values.size(), false);
  for (int a : p.arguments)
    pinned[size_t(a)] = true;
  if (!blockedResults)
    for (int r : p.results)
      pinned[size_t(r)] = true;
  for (const auto &[value, argument] : p.updates)
    pinned[size_t(value)] = true;
  // A view (reshape, split part) reads its root's bytes as plain, with no step in
  // between to convert them: views and everything viewed stay plain.
  std::vector<bool> viewed(p.values.size(), false);
  for (size_t v = 0; v < p.values.size(); ++v)
    for (int id = int(v); p.values[size_t(id)].alias_of >= 0; id = p.values[size_t(id)].alias_of) {
      pinned[size_t(id)] = true;
      pinned[size_t(p.values[size_t(id)].alias_of)] = true;
      viewed[size_t(p.values[size_t(id)].alias_of)] = true;
    }

  std::vector<Layout> layouts(p.values.size(), Layout::plain);
  std::vector<bool> updated(p.arguments.size(), false);
  for (const auto &[value, argument] : p.updates)
    updated[size_t(argument)] = true; // its storage takes a plain value's bytes
  for (size_t i = 0; i < argumentLayouts.size() && i < p.arguments.size(); ++i) {
    const auto &v = p.values[size_t(p.arguments[i])];
    if (!updated[i] && v.alias_of < 0 && !viewed[size_t(p.arguments[i])] &&
        blockable(v.shape, v.dtype))
      layouts[size_t(p.arguments[i])] = argumentLayouts[i];
  }
  bool anyBlocked = std::any_of(layouts.begin(), layouts.end(),
                                [](Layout l) { return l != Layout::plain; });
  std::map<std::pair<int, Layout>, int> converted; // (value, layout) -> its converted copy
  auto newValue = [&](int like, Layout layout) {
    int id = addValueLike(p, like);
    layouts.push_back(layout);
    pinned.push_back(false);
    return id;
  };
  const std::vector<StepT> original = p.steps;
  std::vector<StepT> steps;
  for (StepT step : original) {
    const Device device = deviceOf(p, step);
    LayoutPlan plan = plain_layouts(step.inputs.size(), step.outputs.size());
    if (device.is_host() && step.fused) {
      plan = fusedPlan(*step.fused, step.inputs, step.outputs, p.values, layouts);
    } else if (device.is_host() && isKernel(step)) {
      // A fused library step ("dlc.conv2d+relu") follows its op's rule.
      if (LayoutFn rule = layout_rule_of(step.op.substr(0, step.op.find('+')))) {
        std::vector<Layout> current;
        std::vector<TensorMeta> ins, outs;
        for (int in : step.inputs) {
          current.push_back(layouts[size_t(in)]);
          ins.push_back({p.values[size_t(in)].shape, p.values[size_t(in)].dtype});
        }
        for (int out : step.outputs)
          outs.push_back({p.values[size_t(out)].shape, p.values[size_t(out)].dtype});
        plan = rule(current, ins, outs, step.attrs, true);
      }
    }
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      int in = step.inputs[i];
      if (layouts[size_t(in)] == plan.inputs[i])
        continue;
      auto key = std::make_pair(in, plan.inputs[i]);
      auto known = converted.find(key);
      if (known == converted.end()) {
        int copy = newValue(in, plan.inputs[i]);
        steps.push_back(conversion<StepT>(valueDevice(p, in), in, copy, plan.inputs[i]));
        known = converted.emplace(key, copy).first;
      }
      step.inputs[i] = known->second;
    }
    std::vector<std::pair<int, int>> fillAfter; // (blocked value written, plain one to fill)
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      int out = step.outputs[k];
      Layout layout = plan.outputs[k];
      anyBlocked |= layout != Layout::plain;
      if (layout != Layout::plain && pinned[size_t(out)]) {
        int blocked = newValue(out, layout);
        step.outputs[k] = blocked;
        fillAfter.push_back({blocked, out});
      } else {
        layouts[size_t(out)] = layout;
      }
    }
    steps.push_back(step);
    for (const auto &[blocked, out] : fillAfter)
      steps.push_back(conversion<StepT>(device, blocked, out, Layout::plain));
  }
  if (!anyBlocked)
    return false;
  p.steps = std::move(steps);
  for (size_t v = 0; v < p.values.size(); ++v)
    p.values[v].layout = layouts[v];
  p.plan();
  return true;
}

} // namespace

bool compiled_layouts_enabled() {
  return blocked_layouts_enabled() && !reference_kernels_enabled();
}

bool assign_program_layouts(Program &program, const std::vector<Layout> &argument_layouts,
                            bool blocked_results) {
  return compiled_layouts_enabled() && assignLayouts(program, argument_layouts, blocked_results);
}

bool assign_program_layouts(ShardedProgram &program) {
  return compiled_layouts_enabled() && assignLayouts(program, {}, false);
}

} // namespace dlc::detail
