//===- SafeTensors.cpp - safetensors files, header parsed with llvm::json -----===//
#include "dlc/Gluon/SafeTensors.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/OpRegistry.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
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

bool dtypeOf(llvm::StringRef code, DType &dtype) {
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
  llvm::json::Object header;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto &[name, tensor] : tensors) {
    if (!names.insert(name).second)
      throw Error("safetensors::save: the name '" + name + "' appears twice");
    if (name == "__metadata__")
      throw Error("safetensors::save: '__metadata__' is reserved by the format");
    llvm::json::Array shape;
    for (int64_t d : tensor.shape())
      shape.push_back(d);
    uint64_t bytes = tensor.nbytes();
    header[name] = llvm::json::Object{{"dtype", codeOf(tensor.dtype())},
                                      {"shape", std::move(shape)},
                                      {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) {
    llvm::json::Object meta;
    for (const auto &[key, value] : metadata)
      meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(header));
  os.flush();
  text.append((8 - text.size() % 8) % 8, ' '); // the data starts 8-byte aligned

  std::string temporary = path + ".tmp" + std::to_string(std::random_device()());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error("safetensors::save: cannot create '" + temporary + "': " +
                  std::strerror(errno));
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
    file.flush();
    if (!file) {
      std::remove(temporary.c_str());
      throw Error("safetensors::save: writing '" + temporary + "' failed");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("safetensors::save: cannot rename '" + temporary + "' to '" + path + "': " + why);
  }
}

namespace {

// llvm::json parses recursively, so a header nested tens of thousands deep (an 80 KB
// file) would overflow the stack. A real header nests three deep (the header, an entry,
// its lists); anything past this is refused before parsing.
constexpr int kMaxNesting = 32;

/// The deepest nesting of arrays and objects in `text`, brackets inside strings aside;
/// stops counting past `limit`.
int nestingDepth(llvm::StringRef text, int limit) {
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
  std::optional<llvm::json::Value> parsed;
  try {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
    if (!value)
      fail(path, "the header is not valid JSON: " + llvm::toString(value.takeError()));
    parsed = std::move(*value);
  } catch (const std::bad_alloc &) {
    throw OutOfMemoryError("safetensors file '" + path + "': out of memory parsing its " +
                           std::to_string(headerBytes) + "-byte header");
  }
  const llvm::json::Object *header = parsed->getAsObject();
  if (!header)
    fail(path, "the header is not a JSON object");
  dataStart_ = 8 + headerBytes;
  uint64_t dataBytes = fileSize - dataStart_;

  for (const auto &[key, value] : *header) {
    std::string name = key.str();
    if (name == "__metadata__") {
      if (const llvm::json::Object *meta = value.getAsObject())
        for (const auto &[metaKey, metaValue] : *meta)
          if (std::optional<llvm::StringRef> text = metaValue.getAsString())
            metadata_[metaKey.str()] = text->str();
      continue;
    }
    const llvm::json::Object *info = value.getAsObject();
    if (!info)
      fail(path, "entry '" + name + "' is not an object");
    TensorInfo entry{name, DType::f32, {}, 0, 0};
    std::optional<llvm::StringRef> code = info->getString("dtype");
    if (!code || !dtypeOf(*code, entry.dtype))
      fail(path, "entry '" + name + "' has an unsupported dtype '" +
                     (code ? code->str() : std::string("(none)")) +
                     "'; dlc reads F32, F16, BF16, I32, I64, U8, BOOL");
    const llvm::json::Array *shape = info->getArray("shape");
    const llvm::json::Array *offsets = info->getArray("data_offsets");
    if (!shape || !offsets || offsets->size() != 2)
      fail(path, "entry '" + name + "' needs a 'shape' list and two 'data_offsets'");
    uint64_t elements = 1;
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> dim = d.getAsInteger();
      if (!dim || *dim < 0 || *dim > (int64_t(1) << 40))
        fail(path, "entry '" + name + "' has an invalid dimension");
      entry.shape.push_back(*dim);
      elements *= uint64_t(*dim);
      if (elements > (uint64_t(1) << 40))
        fail(path, "entry '" + name + "' is impossibly large");
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger(), end = (*offsets)[1].getAsInteger();
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
  // The data's order (the JSON object's own is lost in parsing), in which overlaps show.
  // Ties go to the shorter entry first: an empty tensor ([b, b]) overlaps nothing,
  // wherever its name sorts.
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  for (size_t i = 1; i < tensors_.size(); ++i)
    if (tensors_[i].begin < tensors_[i - 1].end)
      fail(path, "entries '" + tensors_[i - 1].name + "' and '" + tensors_[i].name + "' overlap");
}

Tensor Reader::read(const TensorInfo &entry, Device device) const {
  std::ifstream file(path_, std::ios::binary);
  if (!file)
    fail(path_, std::string("cannot open: ") + std::strerror(errno));
  Tensor host = Tensor::empty(entry.shape, entry.dtype, cpu());
  file.seekg(std::streamoff(dataStart_ + entry.begin));
  file.read(static_cast<char *>(host.data()), std::streamsize(entry.end - entry.begin));
  if (!file)
    fail(path_, "reading the data of '" + entry.name + "' failed");
  return host.to(device);
}

std::vector<std::pair<std::string, Tensor>> load(const std::string &path, Device device) {
  Reader reader(path);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorInfo &entry : reader.tensors())
    tensors.emplace_back(entry.name, reader.read(entry, device));
  return tensors;
}

} // namespace dlc::safetensors
