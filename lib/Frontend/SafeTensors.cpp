//===- SafeTensors.cpp - safetensors files, header parsed with nlohmann::json --===//
//
// nlohmann::json rather than llvm::json: this file is part of the runtime side that
// model runners and embedders link, which links no LLVM (docs/design/model-file.md).
//
//===----------------------------------------------------------------------===//
#include "dlc/Frontend/SafeTensors.h"

#include "dlc/Core/AtomicFile.h"
#include "dlc/Core/InputFile.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/OpRegistry.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <climits>
#include <cstring>
#include <optional>
#include <fstream>
#include <set>
#include <tuple>

namespace dlc::safetensors {

namespace {

// The header of a hostile file could claim any size; real ones are far smaller.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

const char *codeOf(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "F32";
  case DType::f16:
    return "F16";
  case DType::bf16:
    return "BF16";
  case DType::i32:
    return "I32";
  case DType::i64:
    return "I64";
  case DType::u8:
    return "U8";
  case DType::boolean:
    return "BOOL";
  }
  return "?";
}

bool dtypeOf(const std::string &code, DType &dtype) {
  for (DType candidate : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8,
                          DType::boolean})
    if (code == codeOf(candidate)) {
      dtype = candidate;
      return true;
    }
  return false;
}

[[noreturn]] void fail(const std::string &path, const std::string &why) {
  throw Error("safetensors file '" + path + "': " + why);
}

} // namespace

void save(const std::string &path, const std::vector<std::pair<std::string, Tensor>> &tensors,
          const std::map<std::string, std::string> &metadata) {
  autograd::Pause pause;
  // Kept in the order given (ordered_json): the data follows it, and readers that list
  // a file's entries show them as they were saved.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto &[name, tensor] : tensors) {
    if (!names.insert(name).second)
      throw Error("safetensors::save: the name '" + name + "' appears twice");
    if (name == "__metadata__")
      throw Error("safetensors::save: '__metadata__' is reserved by the format");
    uint64_t bytes = tensor.nbytes();
    header[name] = {{"dtype", codeOf(tensor.dtype())},
                    {"shape", std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // the data starts 8-byte aligned

  write_file_atomically(
      path,
      [&](std::ostream &file) {
        unsigned char size[8];
        uint64_t n = text.size();
        for (int i = 0; i < 8; ++i)
          size[i] = static_cast<unsigned char>(n >> (8 * i)); // little-endian
        file.write(reinterpret_cast<const char *>(size), 8);
        file.write(text.data(), std::streamsize(text.size()));
        for (const auto &[name, tensor] : tensors) {
          Tensor host = tensor.device().is_host() ? detail::plain(tensor) : tensor.copyto(cpu());
          host.wait_to_read();
          file.write(static_cast<const char *>(host.data()), std::streamsize(host.nbytes()));
        }
      },
      "safetensors::save");
}

namespace {

// nlohmann::json parses recursively, so a header nested tens of thousands deep (an 80 KB
// file) would overflow the stack. A real header nests three deep (the header, an entry,
// its lists); anything past this is refused before parsing.
constexpr int kMaxNesting = 32;

/// The deepest nesting of arrays and objects in `text`, brackets inside strings aside;
/// stops counting past `limit`.
int nestingDepth(const std::string &text, int limit) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit)
        return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

} // namespace

Reader::Reader(const std::string &path) : path_(path) {
  if (std::string problem = regular_file_problem(path); !problem.empty())
    fail(path, problem);
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  uint64_t fileSize = uint64_t(file.tellg());
  file.seekg(0);
  if (fileSize < 8)
    fail(path, "truncated: " + std::to_string(fileSize) + " bytes, less than the 8-byte header size");
  unsigned char size[8];
  file.read(reinterpret_cast<char *>(size), 8);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | size[i];
  if (headerBytes > kMaxHeaderBytes || headerBytes > fileSize - 8)
    fail(path, "the header claims " + std::to_string(headerBytes) + " bytes but the file has " +
                   std::to_string(fileSize - 8) + " after the size field (limit " +
                   std::to_string(kMaxHeaderBytes) + ")");
  std::string text(headerBytes, '\0');
  file.read(text.data(), std::streamsize(headerBytes));
  if (!file)
    fail(path, "reading the header failed");
  if (int depth = nestingDepth(text, kMaxNesting); depth > kMaxNesting)
    fail(path, "the header nests arrays and objects more than " + std::to_string(kMaxNesting) +
                   " deep; a safetensors header nests three deep");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    fail(path, std::string("the header is not valid JSON: ") + e.what());
  } catch (const std::bad_alloc &) {
    throw OutOfMemoryError("safetensors file '" + path + "': out of memory parsing its " +
                           std::to_string(headerBytes) + "-byte header");
  }
  if (!header.is_object())
    fail(path, "the header is not a JSON object");
  dataStart_ = 8 + headerBytes;
  uint64_t dataBytes = fileSize - dataStart_;

  /// A JSON integer that fits an int64_t, or nothing.
  auto integer = [](const nlohmann::json &v) -> std::optional<int64_t> {
    if (v.is_number_unsigned())
      return v.get<uint64_t>() <= uint64_t(INT64_MAX) ? std::optional<int64_t>(v.get<int64_t>())
                                                      : std::nullopt;
    if (v.is_number_integer())
      return v.get<int64_t>();
    return std::nullopt;
  };
  for (const auto &[name, value] : header.items()) {
    if (name == "__metadata__") {
      if (value.is_object())
        for (const auto &[metaKey, metaValue] : value.items())
          if (metaValue.is_string())
            metadata_[metaKey] = metaValue.get<std::string>();
      continue;
    }
    if (!value.is_object())
      fail(path, "entry '" + name + "' is not an object");
    TensorInfo entry{name, DType::f32, {}, 0, 0};
    auto code = value.find("dtype");
    bool known = code != value.end() && code->is_string();
    if (!known || !dtypeOf(code->get<std::string>(), entry.dtype))
      fail(path, "entry '" + name + "' has an unsupported dtype '" +
                     (known ? code->get<std::string>() : std::string("(none)")) +
                     "'; dlc reads F32, F16, BF16, I32, I64, U8, BOOL");
    auto shape = value.find("shape");
    auto offsets = value.find("data_offsets");
    if (shape == value.end() || !shape->is_array() || offsets == value.end() ||
        !offsets->is_array() || offsets->size() != 2)
      fail(path, "entry '" + name + "' needs a 'shape' list and two 'data_offsets'");
    uint64_t elements = 1;
    for (const nlohmann::json &d : *shape) {
      std::optional<int64_t> dim = integer(d);
      if (!dim || *dim < 0 || *dim > (int64_t(1) << 40))
        fail(path, "entry '" + name + "' has an invalid dimension");
      entry.shape.push_back(*dim);
      elements *= uint64_t(*dim);
      if (elements > (uint64_t(1) << 40))
        fail(path, "entry '" + name + "' is impossibly large");
    }
    std::optional<int64_t> begin = integer((*offsets)[0]), end = integer((*offsets)[1]);
    if (!begin || !end || *begin < 0 || *end < *begin || uint64_t(*end) > dataBytes)
      fail(path, "entry '" + name + "' has data_offsets outside the " +
                     std::to_string(dataBytes) + " bytes of data");
    entry.begin = uint64_t(*begin);
    entry.end = uint64_t(*end);
    if (entry.end - entry.begin != elements * dtype_size(entry.dtype))
      fail(path, "entry '" + name + "' holds " + std::to_string(entry.end - entry.begin) +
                     " bytes but its shape " + shape_rules::str(entry.shape) + " and dtype " +
                     codeOf(entry.dtype) + " need " +
                     std::to_string(elements * dtype_size(entry.dtype)));
    tensors_.push_back(std::move(entry));
  }
  // The data's order (the JSON object's own is not kept by parsing), in which overlaps show.
  // Ties go to the shorter entry first: an empty tensor ([b, b]) overlaps nothing,
  // wherever its name sorts.
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  for (size_t i = 1; i < tensors_.size(); ++i)
    if (tensors_[i].begin < tensors_[i - 1].end)
      fail(path, "entries '" + tensors_[i - 1].name + "' and '" + tensors_[i].name + "' overlap");
}

Tensor read_entry(const std::string &path, uint64_t base, const TensorInfo &entry,
                  Device device) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error("'" + path + "': cannot open: " + std::strerror(errno));
  Tensor host = Tensor::empty(entry.shape, entry.dtype, cpu());
  file.seekg(std::streamoff(base + entry.begin));
  file.read(static_cast<char *>(host.data()), std::streamsize(entry.end - entry.begin));
  if (!file)
    throw Error("'" + path + "': reading the data of '" + entry.name + "' failed");
  return host.to(device);
}

Tensor Reader::read(const TensorInfo &entry, Device device) const {
  return read_entry(path_, dataStart_, entry, device);
}

std::vector<std::pair<std::string, Tensor>> load(const std::string &path, Device device) {
  Reader reader(path);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorInfo &entry : reader.tensors())
    tensors.emplace_back(entry.name, reader.read(entry, device));
  return tensors;
}

} // namespace dlc::safetensors
