//===- DLCToOnnx.h - a traced dlc function as an ONNX graph --------------------===//
//
// The translation behind HybridBlock export to ONNX (dlc/Onnx/Export.h): each dlc op of
// a traced forward becomes the ONNX nodes that compute the same (opset 17), read
// through the op's ODS accessors. Arguments named `data`/`dataN` become the graph's
// inputs, the others (parameters) initializers the caller fills, dlc.constant values
// initializers of their own. Ops with no ONNX form (gradients, optimizer updates, random
// numbers) are refused by name.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CONVERSION_DLCTOONNX_DLCTOONNX_H
#define DLC_CONVERSION_DLCTOONNX_DLCTOONNX_H

#include "dlc/Core/DType.h"
#include "dlc/Core/ShapeRules.h"

#include <map>
#include <vector>

#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace mlir::dlc {

/// The ONNX opset the translation writes.
constexpr int64_t kOnnxExportOpset = 17;

/// A graph's constant: its elements' bytes, or none for a parameter (the caller's).
struct OnnxInitializer {
  std::string name;
  ::dlc::DType dtype = ::dlc::DType::f32;
  ::dlc::shape_rules::Shape shape;
  std::string bytes;
  bool parameter = false;
};

/// The attributes the translation writes: an int, a float or a list of ints.
struct OnnxAttribute {
  enum class Kind { int_, float_, ints };
  Kind kind = Kind::int_;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints;
};

/// An ONNX node (dlc/Onnx/Export.h writes it with protobuf; the compiler, built without
/// exceptions, holds no tensors).
struct OnnxNode {
  std::string name, op_type;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, OnnxAttribute> attributes;
};

/// A graph input or output: its name, dtype and dimensions.
struct OnnxValue {
  std::string name;
  ::dlc::DType dtype = ::dlc::DType::f32;
  ::dlc::shape_rules::Shape dims;
};

/// The translated graph.
struct OnnxGraph {
  std::string name;
  std::vector<OnnxValue> inputs, outputs;
  std::vector<OnnxNode> nodes;
  std::vector<OnnxInitializer> initializers;
};

/// Fills `out` with `function` as ONNX nodes. Returns "" or the problem, naming the op
/// (its location: the traced op's name) and what ONNX lacks.
std::string translateToOnnx(mlir::func::FuncOp function, OnnxGraph &out);

} // namespace mlir::dlc

#endif // DLC_CONVERSION_DLCTOONNX_DLCTOONNX_H
