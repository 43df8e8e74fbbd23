//===- MXNetParams.h - reading parameter files MXNet saved (.params) -----------===//
//
// MXNet's `nd.save`, Gluon's `save_parameters` (1.x and 2.x) and `export` write one
// format, the NDArray list: a u64 magic 0x112 and a reserved u64, the arrays (a u64 count,
// then each array), the names (a u64 count, then each name as a u64 length and its
// bytes). An array is a u32 magic (0xF993FAC8 version 1, 0xF993FAC9 version 2 with a
// storage type, 0xF993FACA version 3, MXNet 2's numpy shapes), for versions 2 and 3 an
// i32 storage type (0: dense), the shape (ndim, then i64 extents; ndim is u32 in
// version 1 and 2, i32 in 3), the context it was saved from (i32 device type, i32 id),
// an i32 mshadow type flag and the elements, little-endian. Every count, extent and
// size is checked against the file before anything is read, so a truncated or hostile
// file is an error naming the file, the entry and the problem.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_MXNETPARAMS_H
#define DLC_FRONTEND_MXNETPARAMS_H

#include "dlc/Frontend/SafeTensors.h"

#include <string>
#include <vector>

namespace dlc::mxnet_params {

/// Whether `path` begins as an MXNet NDArray list (its first eight bytes are the magic).
bool is_params_file(const std::string &path);

/// A file whose arrays' headers have been read and checked; each array's data is read on
/// request, as safetensors::Reader does (entries are that reader's, with offsets from
/// the start of the file). Names keep what MXNet wrote, less the "arg:" and "aux:"
/// prefixes of files written by `export`. Throws dlc::Error naming the file and what is
/// wrong with it.
class Reader {
public:
  explicit Reader(const std::string &path);
  /// The entries in the file's order.
  const std::vector<safetensors::TensorInfo> &tensors() const { return tensors_; }
  /// The tensor of `entry` (one of tensors()) on `device`.
  Tensor read(const safetensors::TensorInfo &entry, Device device = cpu()) const;

private:
  std::string path_;
  std::vector<safetensors::TensorInfo> tensors_;
};

} // namespace dlc::mxnet_params

#endif // DLC_FRONTEND_MXNETPARAMS_H
