//===- OnnxFile.h - an ONNX model as dlc reads it, without protobuf -----------===//
//
// The one place dlc touches ONNX's protobuf messages is the reader behind this header
// (lib/Onnx/OnnxFile.cpp, through Debian's libonnx): it checks what a file claims
// (element counts against data sizes, external data inside the model's folder, dtypes
// dlc has) and hands over plain structs whose tensors are dlc host tensors. A damaged or
// hostile file is an onnx::FileError, never a crash (fuzz/OnnxFuzzer.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_ONNX_ONNXFILE_H
#define DLC_ONNX_ONNXFILE_H

#include "dlc/Frontend/Tensor.h"
#include "dlc/Onnx/DTypes.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlc::onnx {

/// A file that is not a readable ONNX model (or tensor): names the file and what is wrong.
class FileError : public Error {
public:
  using Error::Error;
};

/// One attribute of a node. Graph attributes (If, Loop) are kept as their kind only:
/// dlc imports no op that has one.
struct Attribute {
  enum class Kind { float_, int_, string, tensor, floats, ints, strings, graph, other };
  Kind kind = Kind::other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor tensor; ///< on the host
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};
const char *attribute_kind_name(Attribute::Kind kind);

struct Node {
  std::string name, op_type, domain; ///< domain "" is ONNX's own ("ai.onnx")
  std::vector<std::string> inputs;   ///< "" where an optional input is left out
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;
  /// How errors name it: "node 'conv1' (Conv)", or by its first output when unnamed.
  std::string label() const;
};

/// A graph input or output as declared: its dtype and dimensions (-1 where the file
/// leaves one open, with the symbolic name it gives, if any).
struct ValueInfo {
  std::string name;
  std::optional<DType> dtype; ///< empty: undeclared or a type dlc does not have
  int32_t onnx_dtype = 0;     ///< TensorProto.DataType as declared (0: none)
  bool has_shape = false;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
};

struct Graph {
  std::string name;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<Node> nodes;
  std::vector<std::pair<std::string, Tensor>> initializers; ///< in file order
};

struct Model {
  int64_t ir_version = 0;
  /// The opset of ONNX's own domain; other domains and their opsets in `other_opsets`.
  int64_t opset = 0;
  std::map<std::string, int64_t> other_opsets;
  std::string producer_name, producer_version;
  Graph graph;
};

/// Reads `path`; external data files are looked up next to it (and only there: a
/// location that leaves the folder is refused).
Model read_model(const std::string &path);
/// Parses a model held in memory; `name` is how errors call it. External data is read
/// from `folder`, or refused when `folder` is empty.
Model parse_model(const void *bytes, size_t size, const std::string &name,
                  const std::string &folder = "");
/// Writes `model` as an ONNX file at `path` (whole or not at all): tensors as raw data,
/// the opset of ONNX's domain and the others as given.
void write_model(const Model &model, const std::string &path);

/// Reads one serialized TensorProto (the ONNX backend tests' input_0.pb, output_0.pb).
Tensor read_tensor_file(const std::string &path);

/// The version of `op_type`'s definition (in ONNX's own domain) that a model of `opset`
/// uses: the opset that last changed it, per libonnx's schema registry; 0 where ONNX has
/// no such op at that opset. Two opsets with the same version mean the same node.
int64_t op_version(const std::string &op_type, int64_t opset);

/// ONNX's TensorProto.DataType name ("FLOAT", "DOUBLE", ...) of a code.
std::string onnx_dtype_name(int32_t code);

} // namespace dlc::onnx

#endif // DLC_ONNX_ONNXFILE_H
