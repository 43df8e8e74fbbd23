//===- CompileCache.h - compiled programs by signature (internal) -------------===//
//
// hybridize() and the compiled training step both keep what they compiled per input
// signature, count compiles and reuses, and keep the latest compile's IR for users to
// read. One class does it for both, so that their statistics mean the same.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_HYBRIDIZE_COMPILECACHE_H
#define DLC_LIB_HYBRIDIZE_COMPILECACHE_H

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace dlc::detail {

/// The latest compile's texts: the module as traced, after the pipeline, and the
/// runtime programs it was lowered to.
struct CompiledTexts {
  std::string traced_ir, compiled_ir, programs;
};

/// Under `DLC_DUMP_IR=dir`: writes `texts` as dir/<name>.<number>.traced.mlir,
/// .compiled.mlir and .programs.txt (the name made a file name); otherwise nothing.
void dump_texts(const std::string &name, int64_t number, const CompiledTexts &texts);

/// Compiled entries by signature key. Not synchronized: its owner holds its own lock
/// around every call (it guards more than the cache).
template <typename Compiled> class CompileCache {
public:
  /// The entry for `key`, made by `compile()` when there is none (a compile, timed) or
  /// reused (a hit). `compile` returns the entry and fills the texts, which are dumped
  /// under `name` (dump_texts).
  template <typename CompileFn>
  std::shared_ptr<Compiled> get(const std::string &key, const std::string &name,
                                CompileFn &&compile, bool &compiled) {
    auto it = entries_.find(key);
    compiled = it == entries_.end();
    if (!compiled) {
      ++hits_;
      return it->second;
    }
    auto start = std::chrono::steady_clock::now();
    std::shared_ptr<Compiled> entry = compile(texts_);
    last_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++compiles_;
    dump_texts(name, compiles_, texts_);
    entries_[key] = entry;
    return entry;
  }

  void clear() { entries_.clear(); }
  const std::map<std::string, std::shared_ptr<Compiled>> &entries() const { return entries_; }

  int64_t compiles() const { return compiles_; }
  int64_t hits() const { return hits_; }
  double last_compile_seconds() const { return last_seconds_; }
  const CompiledTexts &texts() const { return texts_; }

private:
  std::map<std::string, std::shared_ptr<Compiled>> entries_;
  int64_t compiles_ = 0, hits_ = 0;
  double last_seconds_ = 0;
  CompiledTexts texts_;
};

} // namespace dlc::detail

#endif // DLC_LIB_HYBRIDIZE_COMPILECACHE_H
