//===- Layout.h - plain and blocked memory layouts of tensors -----------------===//
#ifndef DLC_CORE_LAYOUT_H
#define DLC_CORE_LAYOUT_H

#include "dlc/Core/DType.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Core/ShapeRules.h"

#include <cstdint>

namespace dlc {

/// How a tensor's elements are laid out in memory. Tensors are plain (row-major, NCHW
/// for images) everywhere a user or a compiled program sees them. Between CPU ops, 4-D
/// float32 activations whose channel count is a multiple of the block may instead stay
/// in one of oneDNN's blocked layouts (as MXNet's MKL-DNN arrays do), which oneDNN's
/// convolutions and batch norm run several times faster on, and which would otherwise
/// be converted to and from around every call: nChw16c, whose blocks are one AVX-512
/// register, or nChw8c, one AVX2 register (oneDNN's kernels for the other width run its
/// reference loops). Same size in bytes as plain: with B channels per block, element
/// (n, c, h, w) sits at ((n*C/B + c/B)*H + h)*W*B + w*B + c%B. The op dispatcher and
/// dlc-assign-layouts decide layouts (dlc/Core/LayoutRules.h); a kernel only sees a
/// blocked tensor if its op accepts one.
enum class Layout : uint8_t { plain, nChw16c, nChw8c };

// The dialect's #dlc.layout spells the same values (DLCAttrs.td).
static_assert(int(Layout::plain) == int(op_enums::Layout::plain) &&
                  int(Layout::nChw16c) == int(op_enums::Layout::nChw16c) &&
                  int(Layout::nChw8c) == int(op_enums::Layout::nChw8c),
              "dlc::Layout and the dialect's layout enum must agree");

/// The last Layout value (for readers of stored layouts).
constexpr Layout kLastLayout = Layout::nChw8c;

/// Channels per block of `layout`; 1 for plain.
constexpr int64_t channel_block(Layout layout) {
  return layout == Layout::nChw16c ? 16 : layout == Layout::nChw8c ? 8 : 1;
}

/// The blocked layout of `channels` channels per block (16 or 8); plain otherwise.
constexpr Layout blocked_layout_of(int64_t channels) {
  return channels == 16 ? Layout::nChw16c : channels == 8 ? Layout::nChw8c : Layout::plain;
}

/// Whether a tensor of `shape` and `dtype` may take the blocked `layout`: float32
/// activations, and the uint8 indices a max pooling writes beside its output (in the
/// output's layout; the pooling's kernels are the only ones that read them).
inline bool blockable(const shape_rules::Shape &shape, DType dtype, Layout layout) {
  return layout != Layout::plain && (dtype == DType::f32 || dtype == DType::u8) &&
         shape.size() == 4 &&
         shape[1] > 0 && shape[1] % channel_block(layout) == 0 &&
         shape_rules::numElements(shape) > 0;
}

/// "plain", "nChw16c" or "nChw8c", for messages.
inline const char *layout_name(Layout layout) {
  return layout == Layout::plain ? "plain" : layout == Layout::nChw16c ? "nChw16c" : "nChw8c";
}

} // namespace dlc

#endif // DLC_CORE_LAYOUT_H
