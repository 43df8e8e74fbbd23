//===- MemoryLayouts.cpp - conversions between plain and blocked layouts ------===//
//
// The dispatcher keeps 4-D float32 activations in oneDNN's blocked layout between the
// ops that can read it (dlc/Core/Layout.h says why) and converts them where anything
// else reads them: an op without a layout rule, a view, a copy, a host read, a compiled
// program. The conversion is an op of its own ("to_layout", the dialect's dlc.to_layout,
// which compiled programs use too), so that it is queued, ordered and profiled like the
// others.
//
//===----------------------------------------------------------------------===//
#include "OpDefinitions.h"

#include "dlc/Frontend/Trace.h"

namespace dlc {

namespace {

// (x) -> x in the layout of attribute "layout"
std::vector<TensorMeta> inferToLayout(const std::vector<TensorMeta> &in, const Attrs &a) {
  const Layout layout = Layout(a.get_int("layout", 0));
  if (layout != Layout::plain && !blockable(in[0].shape, in[0].dtype, layout))
    throw ShapeError("only 4-D float32 tensors with a multiple of " +
                     std::to_string(channel_block(layout)) + " channels have the " +
                     layout_name(layout) + " layout");
  return {in[0]};
}

// The one op that reads any layout whatever the device or kernels: it is the way out.
LayoutPlan toLayoutPlan(const std::vector<Layout> &current, const std::vector<TensorMeta> &,
                        const std::vector<TensorMeta> &, const Attrs &a, Layout) {
  return {{current[0]}, {Layout(a.get_int("layout", 0))}};
}

} // namespace

void detail::register_memory_layout_ops() {
  register_op({"to_layout", ops::to_layout, inferToLayout, nullptr, toLayoutPlan});
}

Layout detail::layout_of(const Tensor &tensor) {
  return tensor.defined() ? tensor.impl()->layout : Layout::plain;
}

void detail::make_plain_in_place(const Tensor &tensor) {
  if (layout_of(tensor) == Layout::plain)
    return;
  Tensor converted = plain(tensor);
  Tensor::Impl &impl = *tensor.impl();
  impl.buffer = converted.impl()->buffer;
  impl.offset = converted.impl()->offset;
  impl.layout = Layout::plain;
}

Tensor detail::in_layout(const Tensor &tensor, Layout layout) {
  if (layout_of(tensor) == layout)
    return tensor;
  // Same values, another arrangement: nothing for a trace to record (and, the op having
  // no VJP, nothing for autograd either).
  trace::Pause notTraced;
  static const OpDef &op = find_op("to_layout");
  return invoke1(op, {tensor}, Attrs{{"layout", int64_t(layout)}});
}

} // namespace dlc
