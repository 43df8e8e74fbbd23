//===- Module.cpp - dlc._dlc: errors, devices and the module itself ------------===//
#include "dlc/Config.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"
#include "Bindings.h"

#include <memory>
#include <vector>

namespace dlc::python {

namespace {

/// Python's classes for dlc's errors: DLCError (a RuntimeError, as MXNetError is) and,
/// under it, one class per dlc::Error kind, each also deriving from the built-in
/// exception Python code would catch for that kind (ValueError, IndexError, ...).
struct ErrorClasses {
  PyObject *base, *device_mismatch, *shape, *dtype, *out_of_memory, *unsupported, *value,
      *index;
};
ErrorClasses errors;

PyObject *make_error(py::module_ &m, const char *name, std::vector<PyObject *> bases,
                     const char *doc) {
  py::tuple tuple(bases.size());
  for (size_t i = 0; i < bases.size(); ++i)
    tuple[i] = py::reinterpret_borrow<py::object>(bases[i]);
  std::string qualified = std::string("dlc.base.") + name;
  PyObject *cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, tuple.ptr(), nullptr);
  if (!cls)
    throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;
}

/// The device scopes `with device:` opened on this thread, innermost last.
thread_local std::vector<std::unique_ptr<DeviceScope>> device_scopes;

} // namespace

void bind_errors(py::module_ &m) {
  errors.base = make_error(m, "DLCError", {PyExc_RuntimeError},
                           "Base of dlc's errors (MXNet's MXNetError).");
  errors.device_mismatch = make_error(m, "DeviceMismatchError", {errors.base},
                                      "Inputs of one op live on different devices.");
  errors.shape = make_error(m, "ShapeError", {errors.base, PyExc_ValueError},
                            "Shapes the op cannot take.");
  errors.dtype = make_error(m, "DTypeError", {errors.base, PyExc_TypeError},
                            "Element types the op cannot take.");
  errors.out_of_memory = make_error(m, "OutOfMemoryError", {errors.base, PyExc_MemoryError},
                                    "A device ran out of memory.");
  errors.unsupported = make_error(m, "UnsupportedError", {errors.base, PyExc_NotImplementedError},
                                  "No kernel for the device, or a feature not built in.");
  errors.value = make_error(m, "ValueError", {errors.base, PyExc_ValueError},
                            "An argument's value outside what the call accepts.");
  errors.index = make_error(m, "IndexError", {errors.base, PyExc_IndexError},
                            "An index past the end of a dataset or a list.");
  // pybind11 asks each translator in turn: one that cannot translate rethrows.
  py::register_exception_translator([](std::exception_ptr p) {
    if (!translate_dlc_error(p))
      std::rethrow_exception(p);
  });
}

bool translate_dlc_error(std::exception_ptr p) {
  try {
    if (p)
      std::rethrow_exception(p);
  } catch (const DeviceMismatchError &e) {
    PyErr_SetString(errors.device_mismatch, e.what());
  } catch (const ShapeError &e) {
    PyErr_SetString(errors.shape, e.what());
  } catch (const DTypeError &e) {
    PyErr_SetString(errors.dtype, e.what());
  } catch (const OutOfMemoryError &e) {
    PyErr_SetString(errors.out_of_memory, e.what());
  } catch (const UnsupportedError &e) {
    PyErr_SetString(errors.unsupported, e.what());
  } catch (const ValueError &e) {
    PyErr_SetString(errors.value, e.what());
  } catch (const IndexError &e) {
    PyErr_SetString(errors.index, e.what());
  } catch (const Error &e) {
    PyErr_SetString(errors.base, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

void set_python_error(std::exception_ptr p) {
  if (translate_dlc_error(p))
    return;
  try {
    std::rethrow_exception(p);
  } catch (py::error_already_set &e) {
    e.restore();
  } catch (const std::exception &e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

void bind_devices(py::module_ &m) {
  py::class_<Device>(m, "Device", "A device: a kind and an ordinal (MXNet's Device/Context). "
                                  "`with device:` makes it the default device of this thread.")
      .def(py::init([](const std::string &device_type, int device_id) {
             return to_device(py::str(device_type + "(" + std::to_string(device_id) + ")"));
           }),
           py::arg("device_type") = "cpu", py::arg("device_id") = 0)
      .def_property_readonly("device_type",
                             [](const Device &d) {
                               std::string s = d.str();
                               return s.substr(0, s.find('('));
                             })
      .def_property_readonly("device_id", [](const Device &d) { return d.id; })
      .def("__repr__", &Device::str)
      .def("__str__", &Device::str)
      .def("__eq__", [](const Device &a, const py::object &b) {
        return py::isinstance<Device>(b) && a == b.cast<Device>();
      })
      .def("__hash__", [](const Device &d) { return std::hash<Device>()(d); })
      .def("__enter__",
           [](const Device &d) {
             device_scopes.push_back(std::make_unique<DeviceScope>(d));
             return d;
           })
      .def("__exit__", [](const Device &, py::args) {
        if (!device_scopes.empty())
          device_scopes.pop_back();
        return false;
      });
  m.def("cpu", &dlc::cpu, py::arg("device_id") = 0, "The host device `device_id`.");
  m.def("gpu", &dlc::gpu, py::arg("device_id") = 0, "GPU `device_id`.");
  m.def("cpu_pinned", &dlc::cpu_pinned, py::arg("device_id") = 0,
        "Page-locked host memory (fast copies to GPUs).");
  m.def("num_gpus", &dlc::num_gpus, "GPUs this process can use.");
  m.def("gpu_backend_problem", [] { return device_backend_problem(DeviceKind::gpu); },
        "Why this build's GPU backend could not be loaded ('' when it was, or when the build "
        "has none). Asking loads it.");
  m.attr("built_with_cuda") = bool(DLC_HAVE_CUDA);
  m.def("current_device", &dlc::current_device,
        "The default device of this thread (the innermost `with device:`, else cpu(0)).");
}

/// Registers the submodules of `m` in sys.modules, so that the package's Python files can
/// `from dlc._dlc.np import ...` (pybind11's submodules are attributes only).
void register_submodules(const py::module_ &m) {
  py::dict modules = py::module_::import("sys").attr("modules");
  for (py::handle name : py::list(m.attr("__dict__").attr("keys")())) {
    py::object value = m.attr(name);
    if (py::isinstance<py::module_>(value)) {
      modules[value.attr("__name__")] = value;
      register_submodules(value.cast<py::module_>());
    }
  }
}

} // namespace dlc::python

PYBIND11_MODULE(_dlc, m) {
  using namespace dlc::python;
  m.doc() = "dlc's C++ core; import it through the dlc package.";
  bind_errors(m);
  bind_devices(m);
  bind_ndarray(m);
  bind_ops(m);
  bind_autograd(m);
  bind_gluon(m);
  bind_training(m);
  bind_data(m);
  bind_dist(m);
  bind_onnx(m);
  register_submodules(m);
}
