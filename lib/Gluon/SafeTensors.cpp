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

std::vector<std::pair<std::string, Tensor>> load(const std::string &path, Device device) {
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
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    fail(path, "the header is not valid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *header = parsed->getAsObject();
  if (!header)
    fail(path, "the header is not a JSON object");
  uint64_t dataBytes = fileSize - 8 - headerBytes;

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto &[key, value] : *header) {
    std::string name = key.str();
    if (name == "__metadata__")
      continue;
    const llvm::json::Object *info = value.getAsObject();
    if (!info)
      fail(path, "entry '" + name + "' is not an object");
    Entry entry{name, DType::f32, {}, 0, 0};
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
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end)
      fail(path, "entries '" + entries[i - 1].name + "' and '" + entries[i].name + "' overlap");

  std::vector<std::pair<std::string, Tensor>> tensors;
  uint64_t dataStart = 8 + headerBytes;
  for (const Entry &entry : entries) {
    Tensor host = Tensor::empty(entry.shape, entry.dtype, cpu());
    file.seekg(std::streamoff(dataStart + entry.begin));
    file.read(static_cast<char *>(host.data()), std::streamsize(entry.end - entry.begin));
    if (!file)
      fail(path, "reading the data of '" + entry.name + "' failed");
    tensors.emplace_back(entry.name, host.to(device));
  }
  return tensors;
}

} // namespace dlc::safetensors
