//===- CompiledLayouts.h - whether compiled programs get blocked layouts (internal) -===//
#ifndef DLC_LIB_FRONTEND_COMPILEDLAYOUTS_H
#define DLC_LIB_FRONTEND_COMPILEDLAYOUTS_H

#include "dlc/Runtime/Kernel.h"

namespace dlc::detail {

/// Whether programs compiled now run dlc-assign-layouts: the eager switch is on and the
/// reference kernels (which read plain tensors only) are off. Part of the compile caches'
/// keys, so that a program runs under the setting it was compiled for.
inline bool compiled_layouts_enabled() {
  return blocked_layouts_enabled() && !reference_kernels_enabled();
}

} // namespace dlc::detail

#endif // DLC_LIB_FRONTEND_COMPILEDLAYOUTS_H
