//===- Onnx.cpp - dlc.onnx: ONNX models as hybridizable blocks -----------------===//
#include "Bindings.h"

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
}

} // namespace dlc::python
