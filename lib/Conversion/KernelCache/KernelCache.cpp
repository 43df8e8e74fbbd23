//===- KernelCache.cpp - object code of generated kernels, on disk -------------===//
//
// An entry is one file, `<directory>/kernels/<key>.o`:
//   "DLCKOBJ1"                 8 bytes of magic (the 1 is the format's version)
//   key                        64 hex digits, the digest it was written for
//   object size                8 bytes, little-endian
//   SHA-256 of the object      32 bytes
//   object                     an ELF relocatable of the host
// A reader checks every field against what it expects and the file's size against
// the header, so a truncated, overwritten or foreign file is never loaded.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/KernelCache/KernelCache.h"

#include "dlc/Config.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdlib>
#include <cstring>

namespace dlc::conversion {

namespace {
constexpr char magic[8] = {'D', 'L', 'C', 'K', 'O', 'B', 'J', '1'};
constexpr size_t keySize = 64, digestSize = 32;
constexpr size_t headerSize = sizeof(magic) + keySize + 8 + digestSize;

std::array<uint8_t, 32> digest(llvm::ArrayRef<char> bytes) {
  return llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}
} // namespace

namespace detail {

KernelCacheCounters &counters() {
  static KernelCacheCounters shared;
  return shared;
}

std::string cachedObjectPath(const std::string &directory, const std::string &key) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "kernels", key + ".o");
  return std::string(path);
}

std::optional<std::vector<char>> readCachedObject(const std::string &directory,
                                                  const std::string &key) {
  std::string path = cachedObjectPath(directory, key);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt; // no entry yet
  llvm::StringRef bytes = (*file)->getBuffer();
  auto reject = [&]() -> std::optional<std::vector<char>> {
    ++counters().rejected;
    return std::nullopt;
  };
  if (key.size() != keySize || bytes.size() < headerSize ||
      std::memcmp(bytes.data(), magic, sizeof(magic)) != 0 ||
      bytes.substr(sizeof(magic), keySize) != key)
    return reject();
  const char *cursor = bytes.data() + sizeof(magic) + keySize;
  uint64_t size = llvm::support::endian::read64le(cursor);
  if (size != bytes.size() - headerSize)
    return reject();
  std::vector<char> object(bytes.begin() + headerSize, bytes.end());
  std::array<uint8_t, 32> expected = digest(object);
  if (std::memcmp(cursor + 8, expected.data(), digestSize) != 0)
    return reject();
  return object;
}

std::string writeCachedObject(const std::string &directory, const std::string &key,
                              const std::vector<char> &object) {
  std::string path = cachedObjectPath(directory, key);
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  if (std::error_code error = llvm::sys::fs::create_directories(parent))
    return "cannot create " + parent.str() + ": " + error.message();
  // A file of our own, renamed over the entry once whole: readers see the old entry,
  // none, or the new one, never a part.
  int fd = -1;
  llvm::SmallString<256> temporary;
  if (std::error_code error =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temporary))
    return "cannot write in " + parent.str() + ": " + error.message();
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    char size[8];
    llvm::support::endian::write64le(size, object.size());
    std::array<uint8_t, 32> sum = digest(object);
    out.write(magic, sizeof(magic));
    out << key;
    out.write(size, sizeof(size));
    out.write(reinterpret_cast<const char *>(sum.data()), sum.size());
    out.write(object.data(), object.size());
    out.close();
    if (out.has_error()) {
      std::string why = out.error().message();
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      return "cannot write " + temporary.str().str() + ": " + why;
    }
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return "cannot rename " + temporary.str().str() + " to " + path + ": " + error.message();
  }
  return "";
}

} // namespace detail

std::string kernelCacheKey(mlir::Operation *module, llvm::StringRef target) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "dlc " << DLC_VERSION << "; LLVM " << LLVM_VERSION_STRING << "; " << target << "\n";
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(false).printGenericOpForm());
  return llvm::toHex(digest(llvm::ArrayRef<char>(text.data(), text.size())), /*LowerCase=*/true);
}

KernelCacheStats kernelCacheStats() {
  const detail::KernelCacheCounters &c = detail::counters();
  KernelCacheStats stats;
  stats.compiled = c.compiled;
  stats.loaded = c.loaded;
  stats.reused = c.reused;
  stats.rejected = c.rejected;
  stats.ptx_compiled = c.ptxCompiled;
  stats.ptx_loaded = c.ptxLoaded;
  return stats;
}

} // namespace dlc::conversion
