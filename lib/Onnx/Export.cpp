//===- Export.cpp - a block's trace written as an ONNX file --------------------===//
#include "dlc/Onnx/Export.h"

#include "dlc/Compiler/Compiler.h"
#include "dlc/Conversion/DLCToOnnx/DLCToOnnx.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Hybridize/CompiledFunction.h"
#include "dlc/Onnx/OnnxFile.h"

#include <cstring>

namespace dlc::onnx {

void export_module(const std::string &module_text, const std::string &source,
                   const std::function<Tensor(const std::string &)> &parameter,
                   const std::string &path, const std::string &function) {
  mlir::dlc::OnnxGraph translated;
  std::string error =
      compiler::translate_exported_to_onnx(module_text, source, function, translated);
  if (!error.empty())
    throw UnsupportedError("export to ONNX: " + error);
  Model model;
  model.ir_version = 8;
  model.opset = mlir::dlc::kOnnxExportOpset;
  model.producer_name = "dlc";
  model.graph.name = translated.name;
  auto valueInfo = [](const mlir::dlc::OnnxValue &v) {
    ValueInfo info;
    info.name = v.name;
    info.dtype = v.dtype;
    info.onnx_dtype = onnx_dtype_of(v.dtype);
    info.has_shape = true;
    info.dims = v.dims;
    info.dim_names.assign(v.dims.size(), "");
    return info;
  };
  for (const mlir::dlc::OnnxValue &v : translated.inputs)
    model.graph.inputs.push_back(valueInfo(v));
  for (const mlir::dlc::OnnxValue &v : translated.outputs)
    model.graph.outputs.push_back(valueInfo(v));
  for (mlir::dlc::OnnxNode &n : translated.nodes) {
    Node node;
    node.name = std::move(n.name);
    node.op_type = std::move(n.op_type);
    node.inputs = std::move(n.inputs);
    node.outputs = std::move(n.outputs);
    for (auto &[name, a] : n.attributes) {
      Attribute attribute;
      using Kind = mlir::dlc::OnnxAttribute::Kind;
      attribute.kind = a.kind == Kind::int_     ? Attribute::Kind::int_
                       : a.kind == Kind::float_ ? Attribute::Kind::float_
                                                : Attribute::Kind::ints;
      attribute.i = a.i;
      attribute.f = a.f;
      attribute.ints = std::move(a.ints);
      node.attributes[name] = std::move(attribute);
    }
    model.graph.nodes.push_back(std::move(node));
  }
  for (mlir::dlc::OnnxInitializer &init : translated.initializers) {
    if (init.parameter) {
      Tensor value = parameter(init.name);
      if (value.shape() != init.shape || value.dtype() != init.dtype)
        throw Error("export to ONNX: parameter '" + init.name + "' is " +
                    dtype_name(value.dtype()) + " " + shape_rules::str(value.shape()) +
                    ", the trace took " + dtype_name(init.dtype) + " " +
                    shape_rules::str(init.shape));
      model.graph.initializers.emplace_back(init.name, value);
      continue;
    }
    Tensor value = Tensor::empty(init.shape, init.dtype, npx::cpu(0));
    if (!init.bytes.empty())
      std::memcpy(value.data(), init.bytes.data(), init.bytes.size());
    model.graph.initializers.emplace_back(init.name, value);
  }
  write_model(model, path);
}

void export_onnx(gluon::HybridBlock &block, const std::string &path,
                 const std::vector<Tensor> &inputs) {
  // A fresh trace of these inputs: hybridize() starts with an empty cache, so the call
  // below compiles, and traced_ir() is its module whatever the block compiled before.
  bool was = block.hybridized();
  block.hybridize(true, block.compile_options());
  {
    autograd::Pause predicting;
    block(inputs);
  }
  std::string traced = block.compiled()->traced_ir();
  if (!was)
    block.hybridize(false);
  gluon::ParameterDict params = block.collect_params();
  export_module(traced, block.kind(), [&](const std::string &name) {
    return params[name]->data(params[name]->list_devices().front());
  }, path);
}

void export_onnx(gluon::HybridBlock &block, const std::string &path,
                 const std::vector<Shape> &shapes, const std::vector<DType> &dtypes) {
  std::vector<Tensor> inputs;
  Device device = npx::cpu(0);
  gluon::ParameterDict params = block.collect_params();
  if (params.size() > 0 && params.values()[0]->initialized())
    device = params.values()[0]->list_devices().front();
  for (size_t i = 0; i < shapes.size(); ++i)
    inputs.push_back(np::zeros(shapes[i], i < dtypes.size() ? dtypes[i] : DType::f32, device));
  export_onnx(block, path, inputs);
}

} // namespace dlc::onnx
