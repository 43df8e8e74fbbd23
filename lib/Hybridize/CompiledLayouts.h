//===- CompiledLayouts.h - whether compiled programs get blocked layouts (internal) -===//
#ifndef DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H
#define DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/Layout.h"
#include "dlc/Runtime/Engine/Kernel.h"

namespace dlc::detail {

/// The blocked layout dlc-assign-layouts gives programs compiled now: the eager one
/// while the reference kernels (which read plain tensors only) are off; plain (the pass
/// left out) otherwise. Part of the compile caches' keys, so that a program runs under
/// the setting it was compiled for.
inline Layout compiled_blocked_layout() {
  return reference_kernels_enabled() ? Layout::plain : blocked_layout();
}

/// `options` with an unset blocked layout resolved to compiled_blocked_layout(): what a
/// compile now is handed, and what its cache key holds.
inline CompileOptions resolved(CompileOptions options) {
  if (!options.blocked_layout)
    options.blocked_layout = compiled_blocked_layout();
  return options;
}

} // namespace dlc::detail

#endif // DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H
