//===- Import.h - ONNX models as dlc blocks (MXNet's SymbolBlock.imports) -----===//
//
// dlc::onnx::import reads a model file and gives a HybridBlock that runs it: eagerly,
// op by op with dlc's own ops, or hybridized, traced into the dlc dialect like any block
// (so dlc-compile and dlc-run serve it). Its initializers are the block's parameters
// (fine-tuning trains them); each ONNX node is converted by one function written with
// dlc's eager ops (lib/Onnx/Ops*.cpp), the only place an ONNX op's meaning is spelled.
//
// Shape computations (Shape, Gather on shapes, Concat, Reshape's target, ...) are not
// tensors of the program: they run on the host while the block is traced, so a compiled
// program holds their results as constants (docs/design/onnx.md).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_ONNX_IMPORT_H
#define DLC_ONNX_IMPORT_H

#include "dlc/Gluon/Block.h"
#include "dlc/Onnx/OnnxFile.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlc::onnx {

/// The opsets of ONNX's own domain that dlc imports (and older ones where none of the
/// model's ops has changed definition since kOldestOpset).
constexpr int64_t kOldestOpset = 11;
constexpr int64_t kNewestOpset = 21;

struct ImportOptions {
  /// Dimensions for inputs whose declared shape leaves some open (`-1` keeps one open),
  /// by input name. dlc-import-onnx and dlc-compile need every dimension known to trace.
  std::map<std::string, Shape> input_shapes;
  /// Inputs given their values now, by name: they become constants of the block (and
  /// leave its inputs), for models that take a shape, axes or bounds as an input.
  std::map<std::string, Tensor> input_values;
  /// The most elements a conversion creates from a file's numbers (ConstantOfShape,
  /// Expand, Tile, Range, Pad, Resize); beyond, the node is refused before any
  /// allocation. A cap for untrusted files (the fuzzer sets a small one).
  int64_t max_created_elements = int64_t(1) << 31;
};

/// An imported ONNX model: forward_multi takes the graph's inputs in order (those that
/// are not initializers) and returns its outputs in order.
class OnnxBlock : public gluon::HybridBlock {
public:
  OnnxBlock(Model model, std::string source, const ImportOptions &options);
  ~OnnxBlock() override;

  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override;
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "OnnxBlock"; }
  std::string str(int indent = 0) const override;

  /// The graph's inputs (initializers left out) with the shapes ImportOptions gave.
  const std::vector<ValueInfo> &inputs() const { return inputs_; }
  const std::vector<ValueInfo> &outputs() const { return model_.graph.outputs; }
  const Model &model() const { return model_; }
  /// Zero tensors of the inputs' shapes and dtypes, on `device`: a call to trace the
  /// block with. Throws naming an input whose shape is left open.
  std::vector<Tensor> example_inputs(Device device) const;

private:
  /// The parameter `name` that holds what OpContext::derived makes, on `device`.
  Tensor derivedParameter(const std::string &name, const std::function<Tensor()> &make,
                          Device device);

  struct Plan;
  Model model_;
  std::string source_;
  std::vector<ValueInfo> inputs_;
  int64_t maxCreated_;
  /// The opset the conversions read: the model's, or kOldestOpset for an older model
  /// whose ops have not changed since (checked per node at construction).
  int64_t opset_ = kOldestOpset;
  std::unique_ptr<Plan> plan_;
};

/// Reads and imports `path`. Throws onnx::FileError for a file that is not a readable
/// model, UnsupportedError naming every node dlc cannot import (op type, opset, what is
/// missing) and ValueError for inconsistent graphs.
std::shared_ptr<OnnxBlock> import(const std::string &path, const ImportOptions &options = {});
/// The same for a model already read; `source` names it in errors.
std::shared_ptr<OnnxBlock> import(Model model, const std::string &source,
                                  const ImportOptions &options = {});

/// Traces `block` for predicting on zero inputs of its declared shapes (every dimension
/// must be known: ImportOptions::input_shapes) and writes `prefix`.mlir and
/// `prefix`.safetensors as HybridBlock::export_model does: what dlc-compile compiles.
void export_traced(OnnxBlock &block, const std::string &prefix);

/// One row of the table of supported ops (docs/onnx.md is generated from it).
struct SupportedOp {
  std::string type;
  int64_t since = kOldestOpset; ///< the first opset dlc imports it at
  std::vector<std::string> attributes;
  std::string note; ///< what is not covered
};
std::vector<SupportedOp> supported_ops();

/// Parses "name=1x3x224x224" (dlc-import-onnx's --input-shape) into `into`.
void parse_input_shape(const std::string &text, std::map<std::string, Shape> &into);

} // namespace dlc::onnx

#endif // DLC_ONNX_IMPORT_H
