//===- Export.h - dlc blocks written as ONNX files -----------------------------===//
//
// A hybridized block's trace, translated op by op into ONNX (opset 17) by
// dlc/Conversion/DLCToOnnx/DLCToOnnx.h, with the block's parameters as initializers: the
// file ONNX Runtime and other ONNX consumers run. MXNet's mx.onnx.export_model; an op
// with no ONNX form is refused by name and nothing is written.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_ONNX_EXPORT_H
#define DLC_ONNX_EXPORT_H

#include "dlc/Gluon/Block.h"

#include <functional>
#include <string>
#include <vector>

namespace dlc::onnx {

/// Traces `block` for predicting on `inputs` and writes the trace as an ONNX model at
/// `path`. Inputs are named `data` (or `data0`, `data1`, ...) and outputs `output`,
/// `output1`, ..., as in model files. The trace is a fresh one: a hybridized block's
/// compiled programs are compiled again on their next call.
void export_onnx(gluon::HybridBlock &block, const std::string &path,
                 const std::vector<Tensor> &inputs);
/// The same on zero inputs of `shapes` and `dtypes` (float32 where `dtypes` is shorter).
void export_onnx(gluon::HybridBlock &block, const std::string &path,
                 const std::vector<Shape> &shapes, const std::vector<DType> &dtypes = {});

/// Writes `function` of an exported module (export_model's .mlir, as text; `source` names
/// it) as an ONNX model at `path`, each parameter argument's value from `parameter(name)`.
void export_module(const std::string &module_text, const std::string &source,
                   const std::function<Tensor(const std::string &)> &parameter,
                   const std::string &path, const std::string &function = "forward");

} // namespace dlc::onnx

#endif // DLC_ONNX_EXPORT_H
