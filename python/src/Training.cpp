//===- Training.cpp - Trainer, losses, metrics, split_and_load, compiled runs --===//
#include "Bindings.h"

#include "dlc/Frontend/MXNetParams.h"
#include "dlc/Frontend/SafeTensors.h"

namespace dlc::python {

namespace {

using namespace gluon;

ParameterDict parameter_dict(const py::object &params) {
  ParameterDict dict;
  if (py::isinstance<py::dict>(params) || py::hasattr(params, "items")) {
    for (py::handle item : params.attr("items")()) {
      py::tuple pair = item.cast<py::tuple>();
      dict.add(pair[0].cast<std::string>(), pair[1].cast<ParameterPtr>());
    }
    return dict;
  }
  for (py::handle p : params) {
    ParameterPtr parameter = p.cast<ParameterPtr>();
    dict.add(parameter->name(), parameter);
  }
  return dict;
}

/// A loss as the compiled training step calls it: dlc's own losses directly (no Python in
/// the traced step), anything else through Python.
TrainStep::LossFn loss_function(const py::object &loss) {
  py::object impl = py::getattr(loss, "_impl", py::none());
  if (py::isinstance<loss::SoftmaxCrossEntropyLoss>(impl)) {
    auto fn = impl.cast<loss::SoftmaxCrossEntropyLoss>();
    return [fn](const Tensor &p, const Tensor &l) { return fn(p, l); };
  }
  if (py::isinstance<loss::L2Loss>(impl)) {
    auto fn = impl.cast<loss::L2Loss>();
    return [fn](const Tensor &p, const Tensor &l) { return fn(p, l); };
  }
  std::shared_ptr<py::object> held(new py::object(loss), [](py::object *p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [held](const Tensor &p, const Tensor &l) {
    py::gil_scoped_acquire gil;
    return (*held)(p, l).cast<Tensor>();
  };
}

/// A TrainStep with what it refers to kept alive by the Python objects it holds.
struct PyTrainStep {
  py::object net, trainer;
  std::unique_ptr<TrainStep> step;
};

/// A model loaded for running, shared by every thread that runs it.
struct PyCompiledModel {
  std::shared_ptr<const CompiledModel> model;
};

py::list describe(const std::vector<ModelTensor> &tensors) {
  py::list out;
  for (const ModelTensor &t : tensors) {
    py::dict d;
    d["name"] = t.name;
    d["shape"] = shape_tuple(t.shape);
    d["dtype"] = dtype_object(t.dtype);
    out.append(d);
  }
  return out;
}

} // namespace

void bind_training(py::module_ &m) {
  m.def("load_arrays", [](const std::string &path, const py::object &device) {
    Device where = to_device(device);
    std::vector<std::pair<std::string, Tensor>> arrays;
    {
      py::gil_scoped_release release;
      if (mxnet_params::is_params_file(path)) {
        mxnet_params::Reader reader(path);
        for (const safetensors::TensorInfo &entry : reader.tensors())
          arrays.emplace_back(entry.name, reader.read(entry, where));
      } else {
        arrays = safetensors::load(path, where);
      }
    }
    py::dict out;
    for (auto &[name, tensor] : arrays)
      out[py::str(name)] = tensor;
    return out;
  }, py::arg("path"), py::arg("device") = py::none(),
     "The arrays of a safetensors file, or of a .params file MXNet saved, by name.");
  m.def("save_arrays", [](const std::string &path, const py::dict &arrays) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (auto [name, value] : arrays)
      tensors.emplace_back(name.cast<std::string>(), to_tensor(value));
    py::gil_scoped_release release;
    safetensors::save(path, tensors);
  }, py::arg("path"), py::arg("arrays"), "Writes arrays by name as a safetensors file (atomically).");

  py::module_ gluon_module = m.attr("gluon").cast<py::module_>();

  py::class_<Trainer>(gluon_module, "_Trainer")
      .def(py::init([](const py::object &params, const std::string &optimizer,
                       const std::map<std::string, double> &options) {
             return std::make_unique<Trainer>(parameter_dict(params), optimizer, options);
           }))
      .def("step", &Trainer::step, py::arg("batch_size"), py::arg("ignore_stale_grad") = false,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("learning_rate", &Trainer::learning_rate)
      .def("set_learning_rate", &Trainer::set_learning_rate, py::arg("lr"))
      .def_property_readonly("optimizer", &Trainer::optimizer)
      .def("save_states", [](const Trainer &t, const std::string &path) { t.save_states(path); },
           py::arg("fname"), py::call_guard<py::gil_scoped_release>())
      .def("load_states", &Trainer::load_states, py::arg("fname"),
           py::call_guard<py::gil_scoped_release>());

  py::module_ loss_module = gluon_module.def_submodule("loss", "losses (gluon.loss).");
  py::class_<loss::SoftmaxCrossEntropyLoss>(loss_module, "_SoftmaxCrossEntropyLoss")
      .def(py::init<int64_t, bool, bool>(), py::arg("axis") = -1, py::arg("sparse_label") = true,
           py::arg("from_logits") = false)
      .def("__call__", &loss::SoftmaxCrossEntropyLoss::operator(), py::call_guard<py::gil_scoped_release>());
  py::class_<loss::L2Loss>(loss_module, "_L2Loss")
      .def(py::init<>())
      .def("__call__", &loss::L2Loss::operator(), py::call_guard<py::gil_scoped_release>());

  py::module_ metric_module = gluon_module.def_submodule("metric", "metrics (gluon.metric).");
  py::class_<metric::Accuracy>(metric_module, "_Accuracy")
      .def(py::init<>())
      .def("update", [](metric::Accuracy &a, const std::vector<Tensor> &labels, const std::vector<Tensor> &preds) {
             py::gil_scoped_release release;
             a.update(labels, preds);
           })
      .def("get", &metric::Accuracy::get)
      .def("reset", &metric::Accuracy::reset)
      .def_property_readonly("num_inst", &metric::Accuracy::num_inst)
      .def_property_readonly("sum_metric", &metric::Accuracy::num_correct); // MXNet's name

  py::module_ utils_module = gluon_module.def_submodule("utils", "gluon.utils.");
  utils_module.def("_split_and_load", [](const py::object &data, const std::vector<Device> &devices,
                                         int64_t batch_axis, bool even_split) {
    if (devices.empty())
      throw ValueError("split_and_load: needs at least one device");
    Tensor t = to_tensor(data, std::nullopt, py::isinstance<Tensor>(data) ? std::nullopt : std::optional(devices[0]));
    py::gil_scoped_release release;
    return utils::split_and_load(t, devices, batch_axis, even_split);
  });

  py::class_<PyTrainStep>(
      gluon_module, "TrainStep",
      "forward, loss, backward and the optimizer's update over devices as one compiled, "
      "data-parallel program (the split_and_load / record / backward / step loop in one call).")
      .def(py::init([](const py::object &net, const py::object &loss, const py::object &trainer,
                       const py::object &devices, bool sync_batch_norm, const py::kwargs &kwargs) {
             auto s = std::make_unique<PyTrainStep>();
             s->net = net;
             s->trainer = trainer;
             Trainer &t = py::getattr(trainer, "_impl", trainer).cast<Trainer &>();
             s->step = std::make_unique<TrainStep>(net.cast<Block &>(), loss_function(loss), t,
                                                   to_devices(devices), sync_batch_norm,
                                                   compile_options_of(kwargs, "TrainStep"));
             return s;
           }),
           py::arg("net"), py::arg("loss"), py::arg("trainer"), py::arg("devices"),
           py::arg("sync_batch_norm") = false)
      .def(
          "__call__",
          [](PyTrainStep &s, const py::object &data, const py::object &label) {
            Tensor d = to_tensor(data),
                   l = to_tensor(label, py::isinstance<Tensor>(label) ? std::nullopt
                                                                      : std::optional(DType::i64));
            py::gil_scoped_release release;
            return (*s.step)(d, l);
          },
          py::arg("data"), py::arg("label"))
      .def_property_readonly("last_output",
                             [](const PyTrainStep &s) { return s.step->last_output(); })
      .def_property_readonly(
          "compile_options",
          [](const PyTrainStep &s) { return compile_options_dict(s.step->compiled().options()); },
          "The options the step compiles with, as a dict.")
      .def_property_readonly(
          "compiles", [](const PyTrainStep &s) { return s.step->compiled().compiles(); },
          "How many signatures (and option sets) the step compiled so far.")
      .def(
          "save_states",
          [](const PyTrainStep &s, const std::string &path) {
            py::gil_scoped_release release;
            s.step->save_states(path);
          },
          py::arg("fname"),
          "Writes the optimizer's state and count of updates (Trainer.save_states' file).")
      .def(
          "load_states",
          [](PyTrainStep &s, const std::string &path) {
            py::gil_scoped_release release;
            s.step->load_states(path);
          },
          py::arg("fname"), "Reads a file of save_states (this class's or Trainer's).");

  py::class_<PyCompiledModel>(m, "CompiledModel",
      "A compiled model file (dlc-compile, HybridBlock.save_compiled) loaded to run, without the "
      "compiler; one loaded model may run from several threads at once.")
      .def(py::init([](const std::string &path, const py::object &device) {
             py::gil_scoped_release release;
             return PyCompiledModel{CompiledModel::load(path, optional_device(device))};
           }),
           py::arg("path"), py::arg("device") = py::none())
      .def_property_readonly("inputs", [](const PyCompiledModel &c) { return describe(c.model->inputs()); })
      .def_property_readonly("outputs", [](const PyCompiledModel &c) { return describe(c.model->outputs()); })
      .def_property_readonly("target", [](const PyCompiledModel &c) { return c.model->target(); })
      .def_property_readonly("device", [](const PyCompiledModel &c) { return c.model->device(); })
      .def("__call__", [](const PyCompiledModel &c, const py::args &args) -> py::object {
             std::vector<Tensor> inputs;
             for (size_t k = 0; k < args.size(); ++k) {
               const ModelTensor *spec = k < c.model->inputs().size() ? &c.model->inputs()[k] : nullptr;
               inputs.push_back(to_tensor(args[k], spec ? std::optional(spec->dtype) : std::nullopt));
             }
             std::vector<Tensor> outputs;
             {
               py::gil_scoped_release release;
               outputs = c.model->run(inputs);
             }
             if (outputs.size() == 1)
               return py::cast(outputs[0]);
             return py::cast(outputs);
           });
}

} // namespace dlc::python
