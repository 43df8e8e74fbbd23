//===- OnnxFile.cpp - ONNX protobuf messages -> dlc's plain structs -------------===//
//
// Protobuf checks the wire format; everything a message claims beyond it is checked
// here before a byte is copied: element counts against the data present, dimensions
// against overflow, external data against the folder and the file's size.
//
//===----------------------------------------------------------------------===//
#include "dlc/Onnx/OnnxFile.h"

#include "dlc/Core/AtomicFile.h"
#include "dlc/Core/InputFile.h"
#include "dlc/Frontend/NumPy.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace dlc::onnx {
namespace {

namespace fs = std::filesystem;
using proto = ::onnx::TensorProto;

/// Files above protobuf's 2 GiB message limit keep their weights in external data.
constexpr size_t kMaxMessageBytes = size_t(std::numeric_limits<int>::max());

std::string readWhole(const std::string &path, const char *what) {
  if (std::string problem = regular_file_problem(path); !problem.empty())
    throw FileError(std::string(what) + " " + path + ": " + problem);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof())
    throw FileError(std::string(what) + " " + path + ": read failed");
  return bytes.str();
}

int64_t checkedElements(const std::vector<int64_t> &dims, const std::string &what) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0)
      throw FileError(what + ": dimension " + std::to_string(d) + " is negative");
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / 16 / d)
      throw FileError(what + ": dimensions " + shape_rules::str(dims) + " overflow");
    count *= d;
  }
  return count;
}

/// Where a tensor's bytes are when they are not in the message: a file in `folder`.
std::string externalBytes(const proto &t, const std::string &what, const std::string &folder,
                          size_t wanted) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : t.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      throw FileError(what + ": external data '" + entry.key() + "' is '" + entry.value() +
                      "', not a number");
    }
  }
  if (folder.empty())
    throw FileError(what + ": its data is in an external file ('" + location +
                    "'), which a model parsed from memory cannot name; read the model from "
                    "its file");
  fs::path relative(location);
  if (location.empty() || relative.is_absolute())
    throw FileError(what + ": external data location '" + location +
                    "' must be a file name relative to the model's folder");
  for (const fs::path &part : relative)
    if (part == "..")
      throw FileError(what + ": external data location '" + location +
                      "' leaves the model's folder");
  std::string path = (fs::path(folder) / relative).string();
  if (std::string problem = regular_file_problem(path); !problem.empty())
    throw FileError(what + ": external data " + path + ": " + problem);
  uintmax_t size = fs::file_size(path);
  if (length < 0)
    length = int64_t(wanted);
  if (offset < 0 || uintmax_t(offset) > size || uintmax_t(length) > size - uintmax_t(offset))
    throw FileError(what + ": external data " + path + " holds " + std::to_string(size) +
                    " bytes, the tensor claims " + std::to_string(length) + " at offset " +
                    std::to_string(offset));
  if (size_t(length) != wanted)
    throw FileError(what + ": external data has " + std::to_string(length) +
                    " bytes, its shape and dtype need " + std::to_string(wanted));
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string bytes(wanted, '\0');
  in.read(bytes.data(), std::streamsize(wanted));
  if (size_t(in.gcount()) != wanted)
    throw FileError(what + ": external data " + path + ": read failed");
  return bytes;
}

/// Copies `count` values of a repeated field into `out` (of `dtype`), converting.
template <typename Field>
void copyField(const Field &field, DType dtype, int64_t count, void *out, const std::string &what,
               const char *fieldName) {
  if (int64_t(field.size()) != count)
    throw FileError(what + ": " + fieldName + " holds " + std::to_string(field.size()) +
                    " values, its shape needs " + std::to_string(count));
  for (int64_t i = 0; i < count; ++i) {
    auto v = field.Get(int(i));
    switch (dtype) {
    case DType::f32: static_cast<float *>(out)[i] = float(v); break;
    case DType::i32: static_cast<int32_t *>(out)[i] = int32_t(v); break;
    case DType::i64: static_cast<int64_t *>(out)[i] = int64_t(v); break;
    case DType::u8: static_cast<uint8_t *>(out)[i] = uint8_t(v); break;
    case DType::boolean: static_cast<bool *>(out)[i] = v != 0; break;
    // 16-bit floats travel as their bits in int32_data.
    case DType::f16:
    case DType::bf16: static_cast<uint16_t *>(out)[i] = uint16_t(v); break;
    }
  }
}

Tensor toTensor(const proto &t, const std::string &what, const std::string &folder) {
  std::optional<DType> dtype = dtype_from_onnx(t.data_type());
  if (!dtype)
    throw FileError(what + ": dtype " + onnx_dtype_name(t.data_type()) +
                    " is not one dlc has (float32, float16, bfloat16, int32, int64, uint8, "
                    "bool)");
  if (t.has_segment())
    throw FileError(what + ": segmented tensors are not read");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t count = checkedElements(dims, what);
  size_t bytes = size_t(count) * dtype_size(*dtype);
  std::string external;
  const std::string *raw = nullptr;
  if (t.data_location() == proto::EXTERNAL) {
    external = externalBytes(t, what, folder, bytes);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  if (raw && raw->size() != bytes)
    throw FileError(what + ": raw data has " + std::to_string(raw->size()) + " bytes, " +
                    dtype_name(*dtype) + " " + shape_rules::str(dims) + " needs " +
                    std::to_string(bytes));
  Tensor host = Tensor::empty(Shape(dims), *dtype, npx::cpu(0));
  void *out = host.data();
  if (raw) {
    if (bytes)
      std::memcpy(out, raw->data(), bytes);
    return host;
  }
  switch (*dtype) {
  case DType::f32: copyField(t.float_data(), *dtype, count, out, what, "float_data"); break;
  case DType::i64: copyField(t.int64_data(), *dtype, count, out, what, "int64_data"); break;
  default: copyField(t.int32_data(), *dtype, count, out, what, "int32_data"); break;
  }
  return host;
}

ValueInfo toValueInfo(const ::onnx::ValueInfoProto &v) {
  ValueInfo info;
  info.name = v.name();
  if (v.has_type() && v.type().has_tensor_type()) {
    const auto &tensor = v.type().tensor_type();
    info.onnx_dtype = tensor.elem_type();
    info.dtype = dtype_from_onnx(tensor.elem_type());
    if (tensor.has_shape()) {
      info.has_shape = true;
      for (const auto &d : tensor.shape().dim()) {
        info.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
        info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
      }
    }
  }
  return info;
}

Attribute toAttribute(const ::onnx::AttributeProto &a, const std::string &what,
                      const std::string &folder) {
  using A = ::onnx::AttributeProto;
  Attribute out;
  switch (a.type()) {
  case A::FLOAT: out.kind = Attribute::Kind::float_; out.f = a.f(); break;
  case A::INT: out.kind = Attribute::Kind::int_; out.i = a.i(); break;
  case A::STRING: out.kind = Attribute::Kind::string; out.s = a.s(); break;
  case A::TENSOR:
    out.kind = Attribute::Kind::tensor;
    out.tensor = toTensor(a.t(), what + " attribute '" + a.name() + "'", folder);
    break;
  case A::FLOATS:
    out.kind = Attribute::Kind::floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case A::INTS:
    out.kind = Attribute::Kind::ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case A::STRINGS:
    out.kind = Attribute::Kind::strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  case A::GRAPH:
  case A::GRAPHS: out.kind = Attribute::Kind::graph; break;
  default: out.kind = Attribute::Kind::other; break;
  }
  return out;
}

Model toModel(const ::onnx::ModelProto &m, const std::string &name, const std::string &folder) {
  Model model;
  model.ir_version = m.ir_version();
  model.producer_name = m.producer_name();
  model.producer_version = m.producer_version();
  for (const auto &opset : m.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      model.opset = opset.version();
    else
      model.other_opsets[opset.domain()] = opset.version();
  }
  if (!m.has_graph())
    throw FileError(name + ": holds no graph (is it an ONNX model file?)");
  const ::onnx::GraphProto &g = m.graph();
  Graph &graph = model.graph;
  graph.name = g.name();
  for (const auto &t : g.initializer())
    graph.initializers.emplace_back(
        t.name(), toTensor(t, name + ": initializer '" + t.name() + "'", folder));
  if (g.sparse_initializer_size() > 0)
    throw FileError(name + ": sparse initializers ('" + g.sparse_initializer(0).values().name() +
                    "') are not read");
  for (const auto &v : g.input())
    graph.inputs.push_back(toValueInfo(v));
  for (const auto &v : g.output())
    graph.outputs.push_back(toValueInfo(v));
  for (const auto &n : g.node()) {
    Node node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto &a : n.attribute())
      node.attributes[a.name()] = toAttribute(a, name + ": " + node.label(), folder);
    graph.nodes.push_back(std::move(node));
  }
  return model;
}

} // namespace

const char *attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
  case Attribute::Kind::float_: return "float";
  case Attribute::Kind::int_: return "int";
  case Attribute::Kind::string: return "string";
  case Attribute::Kind::tensor: return "tensor";
  case Attribute::Kind::floats: return "floats";
  case Attribute::Kind::ints: return "ints";
  case Attribute::Kind::strings: return "strings";
  case Attribute::Kind::graph: return "graph";
  case Attribute::Kind::other: break;
  }
  return "other";
}

std::string Node::label() const {
  std::string who = !name.empty() ? name : !outputs.empty() ? outputs[0] : std::string("?");
  return "node '" + who + "' (" + (domain.empty() ? "" : domain + ".") + op_type + ")";
}

int64_t op_version(const std::string &op_type, int64_t opset) {
  if (opset < 1 || opset > std::numeric_limits<int>::max())
    return 0;
  const ::onnx::OpSchema *schema =
      ::onnx::OpSchemaRegistry::Schema(op_type, int(opset), ::onnx::ONNX_DOMAIN);
  return schema ? schema->SinceVersion() : 0;
}

std::string onnx_dtype_name(int32_t code) {
  if (::onnx::TensorProto_DataType_IsValid(code))
    return ::onnx::TensorProto_DataType_Name(::onnx::TensorProto_DataType(code));
  return "code " + std::to_string(code);
}

static_assert(onnx_code::float32 == proto::FLOAT && onnx_code::uint8 == proto::UINT8 &&
                  onnx_code::int32 == proto::INT32 && onnx_code::int64 == proto::INT64 &&
                  onnx_code::boolean == proto::BOOL && onnx_code::float16 == proto::FLOAT16 &&
                  onnx_code::bfloat16 == proto::BFLOAT16,
              "dlc/Onnx/DTypes.h must give TensorProto.DataType's numbers");

Model parse_model(const void *bytes, size_t size, const std::string &name,
                  const std::string &folder) {
  if (size > kMaxMessageBytes)
    throw FileError(name + ": " + std::to_string(size) +
                    " bytes, above protobuf's 2 GiB limit (larger models keep their weights "
                    "in external data files)");
  ::onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes, int(size)))
    throw FileError(name + ": not an ONNX model (its " + std::to_string(size) +
                    " bytes do not parse as an onnx.ModelProto)");
  return toModel(proto, name, folder);
}

Model read_model(const std::string &path) {
  std::string bytes = readWhole(path, "ONNX model");
  std::string folder = fs::path(path).parent_path().string();
  return parse_model(bytes.data(), bytes.size(), path, folder.empty() ? "." : folder);
}

namespace {

void toProto(const std::string &name, const Tensor &tensor, proto &t) {
  t.set_name(name);
  t.set_data_type(onnx_dtype_of(tensor.dtype()));
  for (int64_t d : tensor.shape())
    t.add_dims(d);
  Tensor host = tensor.device().is_host() && tensor.impl()->layout == Layout::plain
                    ? tensor
                    : tensor.copyto(npx::cpu(0));
  host.wait_to_read();
  t.set_raw_data(std::string(static_cast<const char *>(host.data()), host.nbytes()));
}

void toProto(const ValueInfo &info, ::onnx::ValueInfoProto &v) {
  v.set_name(info.name);
  auto *type = v.mutable_type()->mutable_tensor_type();
  type->set_elem_type(info.dtype ? onnx_dtype_of(*info.dtype) : info.onnx_dtype);
  if (!info.has_shape)
    return;
  auto *shape = type->mutable_shape();
  for (size_t a = 0; a < info.dims.size(); ++a) {
    auto *dim = shape->add_dim();
    if (info.dims[a] >= 0)
      dim->set_dim_value(info.dims[a]);
    else if (a < info.dim_names.size() && !info.dim_names[a].empty())
      dim->set_dim_param(info.dim_names[a]);
  }
}

void toProto(const std::string &name, const Attribute &a, ::onnx::AttributeProto &p) {
  using A = ::onnx::AttributeProto;
  p.set_name(name);
  switch (a.kind) {
  case Attribute::Kind::float_: p.set_type(A::FLOAT); p.set_f(float(a.f)); break;
  case Attribute::Kind::int_: p.set_type(A::INT); p.set_i(a.i); break;
  case Attribute::Kind::string: p.set_type(A::STRING); p.set_s(a.s); break;
  case Attribute::Kind::tensor: p.set_type(A::TENSOR); toProto(name, a.tensor, *p.mutable_t()); break;
  case Attribute::Kind::floats:
    p.set_type(A::FLOATS);
    for (double f : a.floats)
      p.add_floats(float(f));
    break;
  case Attribute::Kind::ints:
    p.set_type(A::INTS);
    for (int64_t i : a.ints)
      p.add_ints(i);
    break;
  case Attribute::Kind::strings:
    p.set_type(A::STRINGS);
    for (const std::string &s : a.strings)
      p.add_strings(s);
    break;
  case Attribute::Kind::graph:
  case Attribute::Kind::other:
    throw FileError("attribute '" + name + "' of kind " + attribute_kind_name(a.kind) +
                    " cannot be written");
  }
}

} // namespace

void write_model(const Model &model, const std::string &path) {
  ::onnx::ModelProto m;
  m.set_ir_version(model.ir_version ? model.ir_version : 8);
  m.set_producer_name(model.producer_name.empty() ? "dlc" : model.producer_name);
  m.set_producer_version(model.producer_version);
  auto *opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(model.opset);
  for (const auto &[domain, version] : model.other_opsets) {
    auto *other = m.add_opset_import();
    other->set_domain(domain);
    other->set_version(version);
  }
  ::onnx::GraphProto &g = *m.mutable_graph();
  g.set_name(model.graph.name.empty() ? "dlc" : model.graph.name);
  for (const ValueInfo &v : model.graph.inputs)
    toProto(v, *g.add_input());
  for (const ValueInfo &v : model.graph.outputs)
    toProto(v, *g.add_output());
  for (const auto &[name, tensor] : model.graph.initializers)
    toProto(name, tensor, *g.add_initializer());
  for (const Node &node : model.graph.nodes) {
    ::onnx::NodeProto &n = *g.add_node();
    n.set_name(node.name);
    n.set_op_type(node.op_type);
    n.set_domain(node.domain);
    for (const std::string &i : node.inputs)
      n.add_input(i);
    for (const std::string &o : node.outputs)
      n.add_output(o);
    for (const auto &[name, attribute] : node.attributes)
      toProto(name, attribute, *n.add_attribute());
  }
  if (m.ByteSizeLong() > kMaxMessageBytes)
    throw FileError(path + ": the model is " + std::to_string(m.ByteSizeLong()) +
                    " bytes, above protobuf's 2 GiB limit");
  write_file_atomically(path, [&](std::ostream &out) {
    if (!m.SerializeToOstream(&out))
      throw FileError(path + ": the model could not be serialized");
  }, "ONNX export");
}

Tensor read_tensor_file(const std::string &path) {
  std::string bytes = readWhole(path, "ONNX tensor");
  proto t;
  if (bytes.size() > kMaxMessageBytes || !t.ParseFromArray(bytes.data(), int(bytes.size())))
    throw FileError(path + ": not a serialized onnx.TensorProto");
  std::string folder = fs::path(path).parent_path().string();
  return toTensor(t, path, folder.empty() ? "." : folder);
}

} // namespace dlc::onnx
