//===- LayoutRules.h - which operands and results of an op may be blocked -----===//
//
// On CPUs, 4-D float32 activations may stay in one of oneDNN's blocked layouts between
// the ops whose kernels read them (dlc/Core/Layout.h says why). Each op names its rule in
// the dialect's ODS (DLC_LayoutRule); the rules themselves are here, in plain C++, so
// that the eager dispatcher and the compiler's layout assignment decide alike. A rule
// sees the layouts the inputs have now and the tensors' shapes and attributes, and says
// which layout each input must be read in (a conversion goes first where it differs)
// and which layout each output is written in.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_LAYOUTRULES_H
#define DLC_CORE_LAYOUTRULES_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/Layout.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Core/ShapeRules.h"

#include <string_view>
#include <vector>

namespace dlc {

/// A tensor's shape and dtype, without its data.
struct TensorMeta {
  shape_rules::Shape shape;
  DType dtype = DType::f32;
};

/// The memory layouts an op's kernels read and write.
struct LayoutPlan {
  std::vector<Layout> inputs;  ///< each input is converted to this first when it differs
  std::vector<Layout> outputs; ///< each output is written in this
};

/// Chooses the layouts of one call from the inputs' present ones. `blocked` is the one
/// blocked layout the call may use (the CPU's: nChw16c or nChw8c); with Layout::plain (a
/// GPU, the reference kernels, blocked layouts off) a rule must plan plain tensors only.
using LayoutFn = LayoutPlan (*)(const std::vector<Layout> &current,
                                const std::vector<TensorMeta> &inputs,
                                const std::vector<TensorMeta> &outputs, const Attrs &attrs,
                                Layout blocked);

/// The function of `rule`; null for LayoutRule::none (plain in, plain out).
LayoutFn layout_rule_function(LayoutRule rule);
/// The rule function of the dialect op `dialect_op` ("dlc.conv2d"), or null when it has
/// none or is no dialect op.
LayoutFn layout_rule_of(std::string_view dialect_op);

/// Plain in, plain out.
LayoutPlan plain_layouts(size_t inputs, size_t outputs);
/// LayoutRule::elementwise: when an input is in `blocked` and every input and output has
/// the same blockable shape, all of them in `blocked` (plain ones converted, as the blocked one is
/// likely to be the big chain of activations); else all plain.
LayoutPlan elementwise_layouts(const std::vector<Layout> &current,
                               const std::vector<TensorMeta> &inputs,
                               const std::vector<TensorMeta> &outputs, const Attrs &attrs,
                               Layout blocked);
/// `current` where it is `blocked` and the meta can take it, else plain.
Layout keep_if_blockable(Layout current, const TensorMeta &meta, Layout blocked);
/// `blocked` where the meta can take it, else plain.
Layout blocked_if_blockable(const TensorMeta &meta, Layout blocked);

} // namespace dlc

#endif // DLC_CORE_LAYOUTRULES_H
