//===- KernelCache.h - generated kernels kept on disk between processes --------===//
//
// Compiling a program's kernel module (LLVM's O2 and code generation; for GPUs, NVVM to
// PTX with libdevice) is most of what code generation costs; its object code depends
// only on the module, the target it is for and the compiler's versions. So the object code is kept
// in a cache directory, one file per key, and loaded from there by the next process that compiles
// the same kernels. An entry is trusted only after its magic, key, size and checksum are checked;
// anything else is compiled again and the entry rewritten. Entries are written to a temporary file
// and renamed into place, so concurrent processes never see a partial one. The directory is
// CompileOptions::cache_dir (dlc/Core/CompileOptions.h): the compiler is handed it, and an empty
// one means no cache.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CONVERSION_KERNELCACHE_KERNELCACHE_H
#define DLC_CONVERSION_KERNELCACHE_KERNELCACHE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlc::conversion {

/// What the kernel loader did since the process started (for tests and benchmarks).
struct KernelCacheStats {
  int64_t compiled = 0;     ///< host object code made by LLVM
  int64_t loaded = 0;       ///< host object code read from a valid cache entry
  int64_t reused = 0;       ///< kernels already loaded in this process
  int64_t rejected = 0;     ///< cache entries found corrupt or stale (then rebuilt)
  int64_t ptx_compiled = 0; ///< GPU kernel modules serialized to PTX
  int64_t ptx_loaded = 0;   ///< GPU kernel modules whose PTX came from the cache
};
KernelCacheStats kernelCacheStats();

/// The key of `module`'s compiled form (64 hex digits): SHA-256 of the versions of dlc
/// and LLVM, `target` (what the code is for and how it is made), and the module's text
/// in generic form without locations.
std::string kernelCacheKey(mlir::Operation *module, llvm::StringRef target);

namespace detail {

/// The process's counters, behind kernelCacheStats().
struct KernelCacheCounters {
  std::atomic<int64_t> compiled{0}, loaded{0}, reused{0}, rejected{0}, ptxCompiled{0},
      ptxLoaded{0};
};
KernelCacheCounters &counters();

/// The object code of the entry for `key` (a hex digest) in `directory`, if the entry
/// exists and is whole: magic, key, size and checksum match. An entry that exists but
/// fails a check counts as rejected.
std::optional<std::vector<char>> readCachedObject(const std::string &directory,
                                                  const std::string &key);
/// Writes the entry for `key`; "" or why it could not (the caller goes on without).
std::string writeCachedObject(const std::string &directory, const std::string &key,
                              const std::vector<char> &object);
/// The entry's path, for messages and tests.
std::string cachedObjectPath(const std::string &directory, const std::string &key);

} // namespace detail
} // namespace dlc::conversion

#endif // DLC_CONVERSION_KERNELCACHE_KERNELCACHE_H
