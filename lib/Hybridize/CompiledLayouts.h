//===- CompiledLayouts.h - whether compiled programs get blocked layouts (internal) -===//
#ifndef DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H
#define DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/Layout.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <optional>
#include <string>
#include <utility>

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

/// A compiled function's options as the user gave them, and resolved with the key part
/// they add to each signature's key. The resolved value and its key are made again only
/// when the options or the process's layout change, not on every call. Not synchronized:
/// its owner's lock guards it, as the cache's.
class KeyedOptions {
public:
  explicit KeyedOptions(CompileOptions given) : given_(std::move(given)) {}
  void set(CompileOptions given) {
    given_ = std::move(given);
    resolved_.reset();
  }
  const CompileOptions &given() const { return given_; }
  /// The options a compile now is handed (resolved()) and options.key().
  const std::pair<CompileOptions, std::string> &now() {
    Layout layout = given_.blocked_layout.value_or(compiled_blocked_layout());
    if (!resolved_ || *resolved_->first.blocked_layout != layout) {
      CompileOptions options = given_;
      options.blocked_layout = layout;
      std::string key = options.key();
      resolved_.emplace(std::move(options), std::move(key));
    }
    return *resolved_;
  }

private:
  CompileOptions given_;
  std::optional<std::pair<CompileOptions, std::string>> resolved_;
};

} // namespace dlc::detail

#endif // DLC_LIB_HYBRIDIZE_COMPILEDLAYOUTS_H
