//===- ModelFile.cpp - the .dlc container: header, checked sections -----------===//
#include "dlc/Runtime/Files/ModelFile.h"

#include "ByteCoding.h"
#include "dlc/Core/AtomicFile.h"
#include "dlc/Core/Error.h"

#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <iterator>
#include <sstream>

namespace dlc {

namespace {

using bytes::Reader;
using bytes::Writer;

constexpr char kMagic[8] = {'D', 'L', 'C', 'M', 'O', 'D', 'E', 'L'};
enum class Section : uint32_t { metadata = 1, program = 2, weights = 3, host_code = 4 };
constexpr uint32_t kLastSection = 4;
constexpr size_t kHeaderBytes = 16, kEntryBytes = 32;
constexpr uint32_t kMaxSections = 16;

uint32_t crc32Of(const char *data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large sections in pieces.
  while (size > 0) {
    uInt piece = uInt(std::min<size_t>(size, size_t(1) << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef *>(data), piece);
    data += piece;
    size -= piece;
  }
  return uint32_t(crc);
}

void writeTensors(Writer &w, const std::vector<ModelTensor> &list) {
  w.count(list.size());
  for (const ModelTensor &t : list) {
    w.text(t.name);
    w.put(int32_t(t.index));
    w.put(int32_t(t.dtype));
    w.count(t.shape.size());
    for (int64_t d : t.shape)
      w.put(int64_t(d));
  }
}

DType readDType(Reader &r, const char *field) {
  int32_t dtype = r.get<int32_t>(field);
  if (r.ok() && (dtype < 0 || dtype > int32_t(DType::boolean)))
    r.fail(std::string(field) + ": dtype " + std::to_string(dtype) + " is unknown");
  return DType(dtype);
}

shape_rules::Shape readShape(Reader &r, const char *field) {
  shape_rules::Shape shape(r.count(field, 8));
  for (int64_t &d : shape) {
    d = r.get<int64_t>(field);
    if (r.ok() && d < 0)
      r.fail(std::string(field) + ": extent " + std::to_string(d) + " is negative");
  }
  return shape;
}

std::vector<ModelTensor> readTensors(Reader &r, const char *field) {
  std::vector<ModelTensor> list(r.count(field, 16));
  for (ModelTensor &t : list) {
    t.name = r.text(field);
    t.index = r.get<int32_t>(field);
    t.dtype = readDType(r, field);
    t.shape = readShape(r, field);
    if (r.ok() && t.index < 0)
      r.fail(std::string(field) + " '" + t.name + "': index " + std::to_string(t.index));
  }
  return list;
}

std::string encodeMetadata(const ModelFile &m) {
  Writer w;
  w.text(m.target);
  w.text(m.dlc_version);
  writeTensors(w, m.inputs);
  writeTensors(w, m.outputs);
  return w.take();
}

std::string encodeWeights(const ModelFile &m) {
  Writer w;
  w.count(m.weights.size());
  for (const ModelWeight &weight : m.weights) {
    w.put(int32_t(weight.argument));
    w.text(weight.name);
    w.put(int32_t(weight.dtype));
    w.count(weight.shape.size());
    for (int64_t d : weight.shape)
      w.put(int64_t(d));
    w.put(uint64_t(weight.bytes.size()));
    w.raw(weight.bytes.data(), weight.bytes.size());
  }
  return w.take();
}

} // namespace

std::string encode_model_file(const ModelFile &model) {
  std::vector<std::pair<Section, std::string>> sections = {
      {Section::metadata, encodeMetadata(model)},
      {Section::program, model.program},
      {Section::weights, encodeWeights(model)}};
  if (!model.host_code.empty() && model.version >= 2) {
    Writer code;
    code.text(model.host_target);
    code.put(uint64_t(model.host_code.size()));
    code.raw(model.host_code.data(), model.host_code.size());
    sections.push_back({Section::host_code, code.take()});
  }
  Writer w;
  w.raw(kMagic, sizeof(kMagic));
  w.put(model.version);
  w.put(uint32_t(sections.size()));
  uint64_t offset = kHeaderBytes + kEntryBytes * sections.size();
  for (const auto &[kind, payload] : sections) {
    offset = (offset + 7) / 8 * 8;
    w.put(uint32_t(kind));
    w.put(uint32_t(0));
    w.put(offset);
    w.put(uint64_t(payload.size()));
    w.put(crc32Of(payload.data(), payload.size()));
    w.put(uint32_t(0));
    offset += payload.size();
  }
  std::string out = w.take();
  for (const auto &[kind, payload] : sections) {
    out.resize((out.size() + 7) / 8 * 8, '\0');
    out += payload;
  }
  return out;
}

bool decode_model_file(const std::string &data, ModelFile &model, std::string &error) {
  error.clear();
  model = ModelFile{};
  if (data.size() < kHeaderBytes || data.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) {
    error = data.size() < sizeof(kMagic) ? "it is too short to be a dlc model ("
                                             + std::to_string(data.size()) + " bytes)"
                                         : "it is not a dlc model (no DLCMODEL magic)";
    return false;
  }
  Reader header(data.data() + sizeof(kMagic), data.size() - sizeof(kMagic), error);
  uint32_t version = header.get<uint32_t>("the format version");
  uint32_t count = header.get<uint32_t>("the section count");
  if (header.ok() && (version < 1 || version > kModelFileVersion)) {
    error = "format version " + std::to_string(version) + ", this dlc reads versions 1 to " +
            std::to_string(kModelFileVersion);
    return false;
  }
  model.version = version;
  // Version 1 files have no host code section.
  const uint32_t lastKind = version >= 2 ? kLastSection : 3;
  if (header.ok() && count > kMaxSections)
    header.fail(std::to_string(count) + " sections, at most " + std::to_string(kMaxSections));
  std::string parts[kLastSection + 1];
  bool seen[kLastSection + 1] = {};
  for (uint32_t i = 0; i < count && header.ok(); ++i) {
    uint32_t kind = header.get<uint32_t>("the section table");
    header.get<uint32_t>("the section table");
    uint64_t offset = header.get<uint64_t>("the section table");
    uint64_t size = header.get<uint64_t>("the section table");
    uint32_t crc = header.get<uint32_t>("the section table");
    header.get<uint32_t>("the section table");
    if (!header.ok())
      break;
    std::string name = "section " + std::to_string(i) + " (kind " + std::to_string(kind) + ")";
    if (kind < 1 || kind > lastKind || seen[kind]) {
      header.fail(name + " is unknown or repeated");
      break;
    }
    if (offset > data.size() || size > data.size() - offset) {
      header.fail(name + " lies outside the file (bytes " + std::to_string(offset) + " to " +
                  std::to_string(offset + size) + " of " + std::to_string(data.size()) +
                  "): the file is truncated or damaged");
      break;
    }
    if (crc32Of(data.data() + offset, size) != crc) {
      header.fail(name + " fails its checksum: the file is damaged");
      break;
    }
    seen[kind] = true;
    parts[kind] = data.substr(size_t(offset), size_t(size));
  }
  if (!header.ok())
    return false;
  for (uint32_t kind = 1; kind <= 3; ++kind)
    if (!seen[kind]) {
      error = "section kind " + std::to_string(kind) + " is missing";
      return false;
    }

  Reader meta(parts[1], error);
  model.target = meta.text("the target");
  model.dlc_version = meta.text("the dlc version");
  model.inputs = readTensors(meta, "an input");
  model.outputs = readTensors(meta, "an output");
  if (meta.ok() && !meta.done())
    meta.fail("bytes follow the metadata");
  if (meta.ok() && model.target != "cpu" && model.target != "cuda")
    meta.fail("target '" + model.target + "' is neither cpu nor cuda");
  if (!meta.ok())
    return false;
  model.program = std::move(parts[2]);

  Reader weights(parts[3], error);
  model.weights.resize(weights.count("the weight count", 20));
  for (ModelWeight &w : model.weights) {
    w.argument = weights.get<int32_t>("a weight's argument");
    w.name = weights.text("a weight's name");
    w.dtype = readDType(weights, "a weight's dtype");
    w.shape = readShape(weights, "a weight's shape");
    uint64_t size = weights.get<uint64_t>("a weight's size");
    if (weights.ok() && w.argument < 0)
      weights.fail("weight '" + w.name + "' is bound to argument " + std::to_string(w.argument));
    int64_t bytes = shape_rules::byteSize(w.shape, int64_t(dtype_size(w.dtype)));
    if (weights.ok() && (bytes < 0 || uint64_t(bytes) != size))
      weights.fail("weight '" + w.name + "' has " + std::to_string(size) + " bytes for " +
                   dtype_name(w.dtype) + " " + shape_rules::str(w.shape));
    const char *raw = weights.raw(size_t(size), "a weight's bytes");
    if (raw)
      w.bytes.assign(raw, size_t(size));
  }
  if (weights.ok() && !weights.done())
    weights.fail("bytes follow the weights");
  if (!weights.ok() || !seen[uint32_t(Section::host_code)])
    return weights.ok();

  Reader code(parts[uint32_t(Section::host_code)], error);
  model.host_target = code.text("the host code's target");
  uint64_t size = code.get<uint64_t>("the host code's size");
  const char *raw = code.ok() ? code.raw(size_t(size), "the host code") : nullptr;
  if (raw)
    model.host_code.assign(raw, size_t(size));
  if (code.ok() && model.host_code.empty())
    code.fail("the host code section holds no code");
  if (code.ok() && !code.done())
    code.fail("bytes follow the host code");
  return code.ok();
}

void write_model_file(const std::string &path, const ModelFile &model) {
  std::string data = encode_model_file(model);
  write_file_atomically(
      path, [&](std::ostream &out) { out.write(data.data(), std::streamsize(data.size())); },
      "writing a model file");
}

namespace {

/// Appends up to `want` more bytes of `in` to `data` (fewer at the end of the stream).
void readMore(std::istream &in, std::string &data, uint64_t want) {
  constexpr size_t kPiece = size_t(1) << 24;
  while (want > 0 && in) {
    size_t piece = size_t(std::min<uint64_t>(want, kPiece));
    size_t had = data.size();
    data.resize(had + piece);
    in.read(data.data() + had, std::streamsize(piece));
    data.resize(had + size_t(in.gcount()));
    want -= uint64_t(in.gcount());
  }
}

/// Where the last section of a model file ends, from its header and section table
/// (`data` holds at least both); 0 when they do not say (decoding then reports why).
uint64_t sectionsEnd(const std::string &data) {
  uint32_t count = 0;
  std::memcpy(&count, data.data() + sizeof(kMagic) + 4, 4);
  uint64_t end = 0;
  for (uint32_t i = 0; i < count && kHeaderBytes + (i + 1) * kEntryBytes <= data.size(); ++i) {
    uint64_t offset = 0, size = 0;
    const char *entry = data.data() + kHeaderBytes + i * kEntryBytes;
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    if (size > UINT64_MAX - offset)
      return 0;
    end = std::max(end, offset + size);
  }
  return end;
}

} // namespace

ModelFile read_model_file(const std::string &path) {
  struct stat status {};
  if (stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode))
    throw Error("the model " + path + " is a directory, not a model file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("the model " + path + " cannot be opened: " + std::strerror(errno));
  // Only as many bytes as the header says the sections take: a stream that never ends
  // (/dev/zero, a pipe) is read no further than that, not until memory runs out.
  std::string data;
  try {
    readMore(in, data, kHeaderBytes);
    if (data.size() == kHeaderBytes && data.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) == 0) {
      uint32_t count = 0;
      std::memcpy(&count, data.data() + sizeof(kMagic) + 4, 4);
      readMore(in, data, uint64_t(std::min(count, kMaxSections)) * kEntryBytes);
      uint64_t end = sectionsEnd(data);
      if (end > data.size())
        readMore(in, data, end - data.size());
    }
  } catch (const std::bad_alloc &) {
    throw OutOfMemoryError("the model " + path + " claims sections of more bytes than fit in "
                           "memory (" + std::to_string(data.size()) + " read)");
  }
  if (in.bad())
    throw Error("the model " + path + " cannot be read: " + std::strerror(errno));
  ModelFile model;
  std::string error;
  if (!decode_model_file(data, model, error))
    throw Error("the model " + path + " is unusable: " + error);
  return model;
}

} // namespace dlc
