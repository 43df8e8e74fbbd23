//===- Layout.h - plain and blocked memory layouts of tensors -----------------===//
#ifndef DLC_CORE_LAYOUT_H
#define DLC_CORE_LAYOUT_H

#include "dlc/Core/DType.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Core/ShapeRules.h"

#include <cstdint>

namespace dlc {

/// How a tensor's elements are laid out in memory. Tensors are plain (row-major, NCHW
/// for images) everywhere a user or a compiled program sees them. Between eager CPU ops,
/// 4-D float32 activations whose channel count is a multiple of 16 may instead stay in
/// oneDNN's nChw16c blocked layout (as MXNet's MKL-DNN arrays do), which oneDNN's
/// convolutions and batch norm run several times faster on, and which would otherwise
/// be converted to and from around every call. Same size in bytes as plain: element
/// (n, c, h, w) sits at ((n*C/16 + c/16)*H + h)*W*16 + w*16 + c%16. The op dispatcher
/// decides layouts (dlc/Frontend/OpRegistry.h); a kernel only sees a blocked tensor if
/// its op accepts one.
enum class Layout : uint8_t { plain, nChw16c };

// The dialect's #dlc.layout spells the same values (DLCAttrs.td).
static_assert(int(Layout::plain) == int(op_enums::Layout::plain) &&
                  int(Layout::nChw16c) == int(op_enums::Layout::nChw16c),
              "dlc::Layout and the dialect's layout enum must agree");

/// Channels per block of Layout::nChw16c.
constexpr int64_t kChannelBlock = 16;

/// Whether a tensor of `shape` and `dtype` may take the blocked layout.
inline bool blockable(const shape_rules::Shape &shape, DType dtype) {
  return dtype == DType::f32 && shape.size() == 4 && shape[1] > 0 &&
         shape[1] % kChannelBlock == 0 && shape_rules::numElements(shape) > 0;
}

/// "plain" or "nChw16c", for messages.
inline const char *layout_name(Layout layout) {
  return layout == Layout::plain ? "plain" : "nChw16c";
}

} // namespace dlc

#endif // DLC_CORE_LAYOUT_H
