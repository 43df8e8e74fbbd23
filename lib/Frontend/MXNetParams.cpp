//===- MXNetParams.cpp - MXNet's NDArray-list files, checked as they are read -===//
#include "dlc/Frontend/MXNetParams.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

namespace dlc::mxnet_params {

namespace {

constexpr uint64_t kListMagic = 0x112;
constexpr uint32_t kArrayMagicV1 = 0xF993FAC8, kArrayMagicV2 = 0xF993FAC9,
                   kArrayMagicV3 = 0xF993FACA;
constexpr int32_t kMaxDims = 32;          // MXNet's own limit
constexpr uint64_t kMaxNameBytes = 1 << 16;

[[noreturn]] void fail(const std::string &path, const std::string &problem) {
  throw Error("MXNet parameter file '" + path + "': " + problem);
}

/// dlc's dtype of an mshadow type flag, or why there is none.
bool dtypeOf(int32_t flag, DType &dtype, std::string &name) {
  switch (flag) {
  case 0: dtype = DType::f32; return true;
  case 2: dtype = DType::f16; return true;
  case 3: dtype = DType::u8; return true;
  case 4: dtype = DType::i32; return true;
  case 6: dtype = DType::i64; return true;
  case 7: dtype = DType::boolean; return true;
  case 12: dtype = DType::bf16; return true;
  case 1: name = "float64"; return false;
  case 5: name = "int8"; return false;
  default: name = "type flag " + std::to_string(flag); return false;
  }
}

/// Little-endian fields of a file whose size is known, each read checked against it.
class Cursor {
public:
  explicit Cursor(const std::string &path) : path_(path) {
    if (std::string problem = regular_file_problem(path); !problem.empty())
      fail(path, problem);
    in_.open(path, std::ios::binary);
    if (!in_)
      fail(path, std::string("cannot open: ") + std::strerror(errno));
    in_.seekg(0, std::ios::end);
    size_ = uint64_t(in_.tellg());
    in_.seekg(0);
  }
  template <typename T> T get(const std::string &field) {
    T value{};
    need(sizeof(T), field);
    in_.read(reinterpret_cast<char *>(&value), sizeof(T));
    if (!in_)
      fail(path_, "reading " + field + " failed");
    at_ += sizeof(T);
    return value;
  }
  std::string bytes(uint64_t n, const std::string &field) {
    need(n, field);
    std::string text(size_t(n), '\0');
    in_.read(text.data(), std::streamsize(n));
    if (!in_)
      fail(path_, "reading " + field + " failed");
    at_ += n;
    return text;
  }
  /// Moves past `n` bytes (an array's data).
  void skip(uint64_t n, const std::string &field) {
    need(n, field);
    at_ += n;
    in_.seekg(std::streamoff(at_));
  }
  uint64_t at() const { return at_; }
  uint64_t left() const { return size_ - at_; }

private:
  void need(uint64_t n, const std::string &field) {
    if (n > size_ - at_)
      fail(path_, field + " needs " + std::to_string(n) + " bytes at offset " +
                      std::to_string(at_) + ", the file has " + std::to_string(size_ - at_) +
                      " left: it is truncated or damaged");
  }
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0, at_ = 0;
};

/// One array's header; its data is skipped and recorded as [begin, end).
safetensors::TensorInfo readArray(Cursor &c, const std::string &path, size_t index) {
  const std::string what = "array " + std::to_string(index);
  safetensors::TensorInfo entry;
  uint32_t magic = c.get<uint32_t>(what + "'s magic");
  if (magic != kArrayMagicV1 && magic != kArrayMagicV2 && magic != kArrayMagicV3)
    fail(path, what + " has no array magic (0x" + [&] {
      char hex[16];
      std::snprintf(hex, sizeof hex, "%08X", magic);
      return std::string(hex);
    }() + "): it is damaged, or written by an MXNet older than 0.9, which dlc does not read");
  if (magic != kArrayMagicV1) {
    int32_t storage = c.get<int32_t>(what + "'s storage type");
    if (storage != 0)
      fail(path, what + " is a sparse array (storage type " + std::to_string(storage) +
                     "); dlc reads dense arrays only");
  }
  int32_t ndim = magic == kArrayMagicV3 ? c.get<int32_t>(what + "'s rank")
                                        : int32_t(c.get<uint32_t>(what + "'s rank"));
  if (ndim < 0 || ndim > kMaxDims || (ndim == 0 && magic != kArrayMagicV3))
    fail(path, what + " has rank " + std::to_string(ndim) +
                   (ndim == 0 || ndim == -1 ? " (an empty array, which holds no parameter)"
                                            : ", expected 1 to " + std::to_string(kMaxDims)));
  int64_t elements = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    int64_t extent = c.get<int64_t>(what + "'s shape");
    if (extent < 0 || (extent > 0 && elements > INT64_MAX / extent))
      fail(path, what + " has extent " + std::to_string(extent) + " in its shape");
    entry.shape.push_back(extent);
    elements *= extent;
  }
  c.get<int32_t>(what + "'s device type"); // where it was saved from: not where it goes
  c.get<int32_t>(what + "'s device id");
  int32_t flag = c.get<int32_t>(what + "'s dtype");
  std::string unsupported;
  if (!dtypeOf(flag, entry.dtype, unsupported))
    fail(path, what + " is " + unsupported + ", which dlc has no dtype for");
  const uint64_t size = dtype_size(entry.dtype);
  if (uint64_t(elements) > c.left() / size)
    fail(path, what + " (" + dtype_name(entry.dtype) + " " + shape_rules::str(entry.shape) +
                   ") needs " + std::to_string(elements) + " elements, more than the file's " +
                   std::to_string(c.left()) + " bytes left: it is truncated or damaged");
  entry.begin = c.at();
  c.skip(uint64_t(elements) * size, what + "'s data");
  entry.end = c.at();
  return entry;
}

} // namespace

bool is_params_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t magic = 0;
  return in.read(reinterpret_cast<char *>(&magic), sizeof magic) && magic == kListMagic;
}

Reader::Reader(const std::string &path) : path_(path) {
  Cursor c(path);
  if (c.get<uint64_t>("the file's magic") != kListMagic)
    fail(path, "it is not an MXNet NDArray list (no 0x112 magic)");
  c.get<uint64_t>("the reserved field");
  uint64_t count = c.get<uint64_t>("the array count");
  // An array takes 24 bytes at least (magic, storage, rank, device, dtype).
  if (count > c.left() / 24)
    fail(path, "it says " + std::to_string(count) + " arrays, more than its " +
                   std::to_string(c.left()) + " bytes can hold");
  for (uint64_t i = 0; i < count; ++i)
    tensors_.push_back(readArray(c, path, size_t(i)));
  uint64_t names = c.get<uint64_t>("the name count");
  if (names != 0 && names != count)
    fail(path, std::to_string(names) + " names for " + std::to_string(count) + " arrays");
  std::set<std::string> seen;
  for (uint64_t i = 0; i < count; ++i) {
    std::string name = std::to_string(i); // a list saved without names
    if (names) {
      uint64_t length = c.get<uint64_t>("name " + std::to_string(i) + "'s length");
      if (length > kMaxNameBytes)
        fail(path, "name " + std::to_string(i) + " is " + std::to_string(length) +
                       " bytes long, at most " + std::to_string(kMaxNameBytes));
      name = c.bytes(length, "name " + std::to_string(i));
    }
    // export() and the Module API prefix arguments and auxiliary states.
    if (name.rfind("arg:", 0) == 0 || name.rfind("aux:", 0) == 0)
      name = name.substr(4);
    if (!seen.insert(name).second)
      fail(path, "the name '" + name + "' appears twice");
    tensors_[size_t(i)].name = name;
  }
  if (c.left() != 0)
    fail(path, std::to_string(c.left()) + " bytes follow the names");
}

Tensor Reader::read(const safetensors::TensorInfo &entry, Device device) const {
  return safetensors::read_entry(path_, 0, entry, device);
}

} // namespace dlc::mxnet_params
