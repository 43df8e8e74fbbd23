//===- Dist.cpp - dlc.dist: training as one of several processes (mpirun) ------===//
#include "Bindings.h"

#include "dlc/Frontend/Dist.h"
#include "dlc/Gluon/Parameter.h"

namespace dlc::python {

namespace {

using GilFree = py::call_guard<py::gil_scoped_release>;

/// Parameters from what a script holds: a dict of them (collect_params()) or a list.
gluon::ParameterDict parametersOf(const py::object &params) {
  py::object values = py::hasattr(params, "values") ? params.attr("values")() : params;
  gluon::ParameterDict dict;
  size_t index = 0;
  for (py::handle item : values) {
    auto parameter = item.cast<gluon::ParameterPtr>();
    dict.add(std::to_string(index++) + ":" + parameter->name(), parameter);
  }
  return dict;
}

} // namespace

void bind_dist(py::module_ &m) {
  py::module_ d = m.def_submodule(
      "dist", "Training as one of several processes: launch the script with mpirun -np N.");
  d.def("init", &dist::init, GilFree(),
        "Joins the job this process was launched in (mpirun); a job of one otherwise.");
  d.def("rank", &dist::rank);
  d.def("size", &dist::size);
  d.def("local_rank", &dist::local_rank);
  d.def("local_size", &dist::local_size);
  d.def("describe", &dist::describe);
  d.def("barrier", &dist::barrier, GilFree(), "Waits until every process got here.");
  d.def("local_devices", &dist::local_devices, py::arg("devices"),
        "This process's consecutive block of the job's device list.");
  d.def("all_reduce", [](const std::vector<Tensor> &parts) { return dist::all_reduce(parts); },
        py::arg("parts"), GilFree(),
        "The sum of this process's float32 arrays and every other process's, in rank "
        "order: one array on parts[0]'s device.");
  d.def("broadcast", [](Tensor tensor, int root) { dist::broadcast(tensor, root); },
        py::arg("array"), py::arg("root") = 0, GilFree(),
        "Overwrites `array`, in place, with its value on process `root`.");
  d.def("broadcast_parameters", [](const py::object &params, int root) {
    gluon::ParameterDict dict = parametersOf(params);
    py::gil_scoped_release release;
    dict.broadcast(root);
  }, py::arg("params"), py::arg("root") = 0,
     "Every parameter (collect_params() or a list), on every process, takes its values "
     "on process `root`.");
}

} // namespace dlc::python
