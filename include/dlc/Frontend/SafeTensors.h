//===- SafeTensors.h - reading and writing the safetensors format -------------===//
//
// The format: an 8-byte little-endian header size, a JSON header mapping each name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that follows),
// then the raw little-endian data. Safe to read from untrusted files: every size and
// offset is checked before anything is read.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_SAFETENSORS_H
#define DLC_FRONTEND_SAFETENSORS_H

#include "dlc/Frontend/Tensor.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dlc::safetensors {

/// Writes `tensors` (in that order) to `path` atomically: a temporary file in the same
/// folder, flushed, then renamed over `path`. On failure `path` is untouched.
void save(const std::string &path, const std::vector<std::pair<std::string, Tensor>> &tensors,
          const std::map<std::string, std::string> &metadata = {});

/// One tensor's entry in a file's header: where its bytes lie in the data section.
struct TensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

/// A file whose header has been read and checked (sizes, offsets, dtypes, overlaps) and
/// whose tensors are read one by one on request, so that a caller can vet names and
/// shapes before any tensor costs memory. Throws dlc::Error naming the file and what is
/// wrong with it.
class Reader {
public:
  explicit Reader(const std::string &path);
  /// The entries in the order of their data (offset, then name).
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  /// The header's "__metadata__" (string values only, as the format requires).
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  /// The tensor of `entry` (one of tensors()) on `device`.
  Tensor read(const TensorInfo &entry, Device device = cpu()) const;

private:
  std::string path_;
  uint64_t dataStart_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// The tensor of `entry`, whose bytes lie at `base` + [begin, end) of `path`, on `device`
/// (the readers of other parameter formats share it).
Tensor read_entry(const std::string &path, uint64_t base, const TensorInfo &entry,
                  Device device = cpu());

/// Reads every tensor of `path` onto `device`, in the order of their data. Throws
/// dlc::Error naming the file and what is wrong with it (truncated, header too large or
/// too deep, offsets out of range, unknown dtype, ...).
std::vector<std::pair<std::string, Tensor>> load(const std::string &path,
                                                 Device device = cpu());

} // namespace dlc::safetensors

#endif // DLC_FRONTEND_SAFETENSORS_H
