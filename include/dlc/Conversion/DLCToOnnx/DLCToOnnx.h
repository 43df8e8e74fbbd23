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

#include "dlc/Onnx/OnnxFile.h"

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
  ::dlc::Shape shape;
  std::string bytes;
  bool parameter = false;
};

/// The translated graph: ONNX nodes, inputs and outputs as dlc's reader has them.
struct OnnxGraph {
  std::string name;
  std::vector<::dlc::onnx::ValueInfo> inputs, outputs;
  std::vector<::dlc::onnx::Node> nodes;
  std::vector<OnnxInitializer> initializers;
};

/// Fills `out` with `function` as ONNX nodes. Returns "" or the problem, naming the op
/// (its location: the traced op's name) and what ONNX lacks.
std::string translateToOnnx(mlir::func::FuncOp function, OnnxGraph &out);

} // namespace mlir::dlc

#endif // DLC_CONVERSION_DLCTOONNX_DLCTOONNX_H
