//===- Onnx.cpp - dlc.onnx: ONNX models as hybridizable blocks -----------------===//
#include "Bindings.h"

#include "dlc/Onnx/Export.h"
#include "dlc/Onnx/Import.h"

namespace dlc::python {

namespace {

py::dict value_info(const onnx::ValueInfo &v) {
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = v.dtype ? py::cast(std::string(dtype_name(*v.dtype))) : py::none();
  if (v.has_shape) {
    py::list dims;
    for (size_t a = 0; a < v.dims.size(); ++a)
      dims.append(v.dims[a] >= 0 ? py::cast(v.dims[a])
                                 : (v.dim_names[a].empty() ? py::none() : py::cast(v.dim_names[a])));
    d["shape"] = py::tuple(dims);
  } else {
    d["shape"] = py::none();
  }
  return d;
}

/// One shape or a list of them (one per input); dtypes likewise, float32 by default.
void export_block(gluon::HybridBlock &block, const std::string &path,
                  const py::object &input_shapes, const py::object &input_types) {
  std::vector<Shape> shapes;
  py::list listed = py::list(input_shapes);
  bool one = listed.size() > 0 && py::isinstance<py::int_>(listed[0]);
  for (const py::handle &item : one ? py::list(py::make_tuple(input_shapes)) : listed) {
    Shape shape;
    for (const py::handle &d : item)
      shape.push_back(d.cast<int64_t>());
    shapes.push_back(shape);
  }
  std::vector<DType> dtypes;
  if (!input_types.is_none()) {
    bool single = py::isinstance<py::str>(input_types) || !py::isinstance<py::sequence>(input_types);
    for (const py::handle &t : single ? py::list(py::make_tuple(input_types)) : py::list(input_types))
      dtypes.push_back(to_dtype(t));
  }
  py::gil_scoped_release release;
  onnx::export_onnx(block, path, shapes, dtypes);
}

constexpr const char *kExportDoc =
    "Traces the block for predicting on zero inputs of input_shapes (one shape, or one per "
    "input) and input_types (default float32) and writes the trace as an ONNX file "
    "(opset 17; inputs data/data0.., outputs output/output1..). An op with no ONNX form is "
    "refused by name and nothing is written.";

} // namespace

void bind_onnx(py::module_ &parent) {
  py::module_ m = parent.def_submodule("onnx", "ONNX models in dlc (dlc.onnx).");
  py::class_<onnx::OnnxBlock, gluon::HybridBlock, std::shared_ptr<onnx::OnnxBlock>>(
      m, "OnnxBlock",
      "An imported ONNX model: call it with the model's inputs in order; it returns its "
      "output, or a tuple of them. Hybridize it to compile it; its initializers are its "
      "parameters.")
      .def_property_readonly("inputs",
                             [](const onnx::OnnxBlock &b) {
                               py::list l;
                               for (const onnx::ValueInfo &v : b.inputs())
                                 l.append(value_info(v));
                               return l;
                             },
                             "The model's inputs: dicts of name, dtype and shape (None or a "
                             "symbolic name where a dimension is open).")
      .def_property_readonly("outputs", [](const onnx::OnnxBlock &b) {
        py::list l;
        for (const onnx::ValueInfo &v : b.outputs())
          l.append(value_info(v));
        return l;
      });
  m.def(
      "import_model",
      [](const std::string &path, const py::object &input_shapes) {
        onnx::ImportOptions options;
        if (!input_shapes.is_none())
          for (auto item : input_shapes.cast<py::dict>()) {
            Shape shape;
            for (const py::handle &d : item.second)
              shape.push_back(d.is_none() ? -1 : d.cast<int64_t>());
            options.input_shapes[item.first.cast<std::string>()] = shape;
          }
        py::gil_scoped_release release;
        return onnx::import(path, options);
      },
      py::arg("path"), py::arg("input_shapes") = py::none(),
      "Imports an ONNX model file as a block (MXNet's SymbolBlock.imports of an ONNX file): "
      "input_shapes={'input': (1, 3, 224, 224)} fixes dimensions the model leaves open.");
  m.def("export_model",
        [](gluon::HybridBlock &block, const std::string &path, const py::object &input_shapes,
           const py::object &input_types) { export_block(block, path, input_shapes, input_types); },
        py::arg("block"), py::arg("path"), py::arg("input_shapes"),
        py::arg("input_types") = py::none(), kExportDoc);
  // HybridBlock.export_onnx(path, input_shapes, input_types=None), on every hybrid block.
  py::object hybrid = parent.attr("gluon").attr("HybridBlock");
  hybrid.attr("export_onnx") = py::cpp_function(
      [](gluon::HybridBlock &block, const std::string &path, const py::object &input_shapes,
         const py::object &input_types) { export_block(block, path, input_shapes, input_types); },
      py::name("export_onnx"), py::is_method(hybrid), py::arg("path"), py::arg("input_shapes"),
      py::arg("input_types") = py::none(), kExportDoc);
}

} // namespace dlc::python
