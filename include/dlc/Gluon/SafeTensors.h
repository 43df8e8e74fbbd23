//===- SafeTensors.h - reading and writing the safetensors format -------------===//
//
// The format: an 8-byte little-endian header size, a JSON header mapping each name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that follows),
// then the raw little-endian data. Safe to read from untrusted files: every size and
// offset is checked before anything is read.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_SAFETENSORS_H
#define DLC_GLUON_SAFETENSORS_H

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

/// Reads every tensor of `path` onto `device`. Throws dlc::Error naming the file and what
/// is wrong with it (truncated, header too large, offsets out of range, unknown dtype, ...).
std::vector<std::pair<std::string, Tensor>> load(const std::string &path,
                                                 Device device = cpu());

} // namespace dlc::safetensors

#endif // DLC_GLUON_SAFETENSORS_H
