//===- Conversions.cpp - Python values to dlc's and back -----------------------===//
#include "Bindings.h"

#include "dlc/Frontend/OpRegistry.h"

#include <algorithm>
#include <cstring>

namespace dlc::python {

namespace {

py::module_ &numpy() {
  // Never destroyed: a static py::object would be released after the interpreter ends.
  static auto *module = new py::module_(py::module_::import("numpy"));
  return *module;
}

std::optional<DType> dtype_by_name(const std::string &name) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8,
                  DType::boolean})
    if (name == dtype_name(d))
      return d;
  return std::nullopt;
}

std::string type_name(const py::handle &obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

} // namespace

DType to_dtype(const py::handle &obj, DType fallback) {
  if (obj.is_none())
    return fallback;
  if (py::isinstance<py::str>(obj) && obj.cast<std::string>() == "bfloat16")
    return DType::bf16;
  // Python's float is float32 here, not numpy's float64: dlc's default dtype.
  if (obj.ptr() == reinterpret_cast<PyObject *>(&PyFloat_Type))
    return DType::f32;
  std::string name;
  try {
    name = py::str(numpy().attr("dtype")(obj).attr("name"));
  } catch (py::error_already_set &) {
    throw py::type_error("dtype: " + py::repr(obj).cast<std::string>() +
                         " is not a data type (expected a numpy dtype or its name)");
  }
  if (name == "float64")
    return DType::f32;
  if (std::optional<DType> d = dtype_by_name(name))
    return *d;
  throw DTypeError("dtype: dlc has no " + name +
                   " tensors (it has float32, float16, bfloat16, int32, int64, uint8, bool)");
}

py::object dtype_object(DType dtype) {
  if (dtype == DType::bf16)
    return py::str("bfloat16");
  return numpy().attr("dtype")(dtype_name(dtype));
}

std::optional<Device> optional_device(const py::handle &obj) {
  if (obj.is_none())
    return std::nullopt;
  if (py::isinstance<Device>(obj))
    return obj.cast<Device>();
  if (py::isinstance<py::str>(obj)) {
    // "cpu", "gpu(1)", "cpu:0": the spellings scripts and command lines use.
    std::string s = obj.cast<std::string>();
    std::string kind = s.substr(0, s.find_first_of("(:"));
    int id = 0;
    if (size_t at = s.find_first_of("(:"); at != std::string::npos)
      id = std::stoi(s.substr(at + 1));
    if (kind == "cpu")
      return cpu(id);
    if (kind == "gpu")
      return gpu(id);
    if (kind == "cpu_pinned")
      return cpu_pinned(id);
  }
  throw py::type_error("device: expected a dlc Device (dlc.cpu(i), dlc.gpu(i)), got " +
                       py::repr(obj).cast<std::string>());
}

Device to_device(const py::handle &obj) {
  return optional_device(obj).value_or(current_device());
}

std::vector<Device> to_devices(const py::handle &obj) {
  if (obj.is_none())
    return {current_device()};
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    std::vector<Device> devices;
    for (py::handle item : obj)
      devices.push_back(to_device(item));
    if (devices.empty())
      throw ValueError("devices: the list is empty (expected at least one device)");
    return devices;
  }
  return {to_device(obj)};
}

int64_t to_int64(const py::handle &obj, const std::string &what) {
  // What numpy takes as an index or a dimension: ints and numpy's integers, never a
  // float (numpy refuses 2.5 where it truncated here: np.zeros((2.5, 3)) gave 2x3).
  PyObject *index = PyNumber_Index(obj.ptr());
  if (!index) {
    PyErr_Clear();
    throw py::type_error(what + ": expected an integer, got " + py::repr(obj).cast<std::string>() +
                         " (" + type_name(obj) + ")");
  }
  py::object integer = py::reinterpret_steal<py::object>(index);
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
  if (overflow != 0)
    throw ValueError(what + ": " + py::repr(integer).cast<std::string>() +
                     " does not fit in a 64-bit integer");
  return int64_t(value);
}

Shape to_shape(const py::handle &obj) {
  if (PyIndex_Check(obj.ptr()))
    return {to_int64(obj, "shape")};
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    Shape shape;
    for (py::handle item : obj)
      shape.push_back(to_int64(item, "shape " + py::repr(obj).cast<std::string>()));
    return shape;
  }
  throw py::type_error("shape: expected an int or a sequence of ints, got " +
                       py::repr(obj).cast<std::string>());
}

py::tuple shape_tuple(const Shape &shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    t[i] = py::int_(shape[i]);
  return t;
}

std::array<int64_t, 2> pair_of(const py::object &obj, const char *what) {
  Shape s = to_shape(obj);
  if (s.size() == 1)
    return {s[0], s[0]};
  if (s.size() == 2)
    return {s[0], s[1]};
  throw ValueError(std::string(what) + ": expected one value or two (for a 2-D op), got " +
                   std::to_string(s.size()));
}

GradReq grad_req_of(const std::string &name) {
  if (name == "write")
    return GradReq::write;
  if (name == "add")
    return GradReq::add;
  if (name == "null")
    return GradReq::null;
  throw ValueError("grad_req: expected 'write', 'add' or 'null', got '" + name + "'");
}

CompileOptions compile_options_of(const py::kwargs &kwargs, const char *where) {
  CompileOptions options = compile_options_from_environment();
  // MXNet 1.x's hybridize flags: dlc always plans memory statically and compiles whole
  // graphs, so they change nothing here.
  static const char *const mxnetFlags[] = {
      "static_alloc",       "static_shape",         "inline_limit", "forward_bulk_size",
      "backward_bulk_size", "partition_if_dynamic", "backend",      "clear"};
  for (const auto &[key, value] : kwargs) {
    const std::string name = py::str(key);
    auto flag = [&] { return value.cast<bool>(); };
    auto text = [&] {
      return value.is_none() ? std::string() : py::str(value).cast<std::string>();
    };
    if (name == "fuse") {
      options.fuse = flag();
    } else if (name == "prepare_parameters") {
      options.prepare_parameters = flag();
    } else if (name == "pool_indices") {
      options.pool_indices = flag();
    } else if (name == "norm_activation") {
      options.norm_activation = flag();
    } else if (name == "group_updates") {
      options.group_updates = flag();
    } else if (name == "memory_budget") {
      // Bytes as a number, or a string with K, M or G ("512M"); None: no budget.
      options.memory_budget =
          value.is_none() ? 0
          : py::isinstance<py::str>(value)
              ? parse_memory_budget(text(), std::string(where) + ": memory_budget")
              : parse_memory_budget(std::to_string(value.cast<int64_t>()),
                                    std::string(where) + ": memory_budget");
    } else if (name == "conv_algorithms") {
      options.conv_algorithms =
          checked_conv_algorithms(text(), std::string(where) + ": conv_algorithms");
    } else if (name == "generated_kernels") {
      options.generated_kernels = flag();
    } else if (name == "cuda_graphs") {
      options.cuda_graphs = flag();
    } else if (name == "timing") {
      options.timing = flag();
    } else if (name == "cuda_toolkit") {
      options.cuda_toolkit = text();
    } else if (name == "gpu_chip") {
      options.gpu_chip = text();
    } else if (name == "cache_dir") {
      options.cache_dir = text();
    } else if (name == "blocked_layout") {
      const std::string layout = text();
      if (layout.empty())
        options.blocked_layout.reset();
      else if (layout == layout_name(Layout::plain) || layout == layout_name(Layout::nChw8c) ||
               layout == layout_name(Layout::nChw16c))
        options.blocked_layout = layout == layout_name(Layout::plain)    ? Layout::plain
                                 : layout == layout_name(Layout::nChw8c) ? Layout::nChw8c
                                                                         : Layout::nChw16c;
      else
        throw ValueError(std::string(where) + ": blocked_layout='" + layout +
                         "': expected 'nChw16c', 'nChw8c', 'plain' or None (the process's)");
    } else if (std::find_if(std::begin(mxnetFlags), std::end(mxnetFlags),
                            [&](const char *f) { return name == f; }) == std::end(mxnetFlags)) {
      throw py::type_error(std::string(where) + "() got an unexpected keyword argument '" + name +
                           "'; compile options are fuse, prepare_parameters, pool_indices, norm_activation, group_updates, memory_budget, conv_algorithms, generated_kernels, "
                           "cuda_graphs, "
                           "timing, blocked_layout, cuda_toolkit, gpu_chip and cache_dir");
    }
  }
  return options;
}

py::dict compile_options_dict(const CompileOptions &options) {
  py::dict d;
  d["blocked_layout"] = options.blocked_layout
                            ? py::object(py::str(layout_name(*options.blocked_layout)))
                            : py::object(py::none());
  d["fuse"] = options.fuse;
  d["prepare_parameters"] = options.prepare_parameters;
  d["pool_indices"] = options.pool_indices;
  d["norm_activation"] = options.norm_activation;
  d["group_updates"] = options.group_updates;
  d["memory_budget"] = options.memory_budget;
  d["conv_algorithms"] = options.conv_algorithms;
  d["generated_kernels"] = options.generated_kernels;
  d["cuda_graphs"] = options.cuda_graphs;
  d["timing"] = options.timing;
  d["cuda_toolkit"] = options.cuda_toolkit;
  d["gpu_chip"] = options.gpu_chip;
  d["cache_dir"] = options.cache_dir;
  return d;
}

std::vector<int64_t> to_axes(const py::handle &obj) {
  if (obj.is_none())
    return {};
  return to_shape(obj);
}

namespace {

/// A numpy array's dtype as dlc keeps it (None when the array must be converted first).
DType storage_dtype(const std::string &numpy_name) {
  if (std::optional<DType> d = dtype_by_name(numpy_name))
    return *d;
  if (numpy_name == "float64")
    return DType::f32;
  if (numpy_name == "int8" || numpy_name == "int16" || numpy_name == "uint16")
    return DType::i32;
  if (numpy_name == "uint32" || numpy_name == "uint64")
    return DType::i64;
  throw DTypeError("array: dlc has no tensors of numpy's " + numpy_name + " (it has float32, "
                   "float16, bfloat16, int32, int64, uint8, bool)");
}

} // namespace

Tensor to_tensor(const py::handle &obj, std::optional<DType> dtype, std::optional<Device> device) {
  if (py::isinstance<Tensor>(obj)) {
    Tensor t = obj.cast<Tensor>();
    if (dtype && *dtype != t.dtype())
      t = t.astype(*dtype);
    if (device)
      t = t.to(*device);
    return t;
  }
  bool from_numpy = py::isinstance<py::array>(obj) || py::hasattr(obj, "__array_interface__");
  py::array array;
  try {
    array = numpy().attr("asarray")(obj);
  } catch (py::error_already_set &e) {
    throw py::type_error("array: cannot read " + type_name(obj) + " as an array (" +
                         std::string(e.what()) + ")");
  }
  if (array.dtype().kind() == 'O' || array.dtype().kind() == 'U' || array.dtype().kind() == 'S')
    throw py::type_error("array: cannot make a tensor of " + type_name(obj) +
                         " (its elements are not numbers)");
  DType target = dtype ? *dtype
                       : (from_numpy ? storage_dtype(py::str(array.dtype().attr("name")))
                                     : DType::f32);
  // numpy converts (and lays out contiguously); bfloat16 goes through float32.
  DType converted = target == DType::bf16 ? DType::f32 : target;
  // asarray with order 'C' (ascontiguousarray would make a 0-d array 1-d).
  py::array contiguous = numpy().attr("asarray")(array, dtype_object(converted), "C");
  Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  Tensor host = Tensor::empty(shape, converted, cpu(0));
  if (host.nbytes())
    std::memcpy(host.data(), contiguous.data(), host.nbytes());
  if (target != converted)
    host = host.astype(target);
  Device where = device.value_or(current_device());
  return where == cpu(0) ? host : host.to(where);
}

Tensor as_floating(const Tensor &x) {
  return is_floating(x.dtype()) ? x : x.astype(DType::f32);
}

Tensor true_divide(const Tensor &x, const Tensor &y) {
  return np::divide(as_floating(x), as_floating(y));
}

Tensor scalar_like(double value, const Tensor &like) {
  return np::full({}, value, like.dtype(), like.device());
}

Tensor operand(const py::handle &obj, const Tensor &other) {
  if (py::isinstance<Tensor>(obj))
    return obj.cast<Tensor>();
  if (py::isinstance<py::bool_>(obj) || py::isinstance<py::int_>(obj) ||
      py::isinstance<py::float_>(obj))
    return scalar_like(obj.cast<double>(), other);
  return to_tensor(obj, other.dtype(), other.device());
}

py::array to_numpy(const Tensor &tensor) {
  Tensor host;
  {
    py::gil_scoped_release release;
    Tensor source = tensor.dtype() == DType::bf16 ? tensor.astype(DType::f32) : tensor;
    host = source.device().is_host() ? detail::plain(source) : source.copyto(cpu(0));
    host.wait_to_read();
  }
  std::vector<py::ssize_t> shape(host.shape().begin(), host.shape().end());
  py::array out(numpy().attr("empty")(shape_tuple(host.shape()), dtype_object(host.dtype())));
  if (host.nbytes())
    std::memcpy(out.mutable_data(), host.data(), host.nbytes());
  return out;
}

std::function<Tensor(const Tensor &)> tensor_function(py::object callable) {
  // The callable's last reference may go on any thread: release it under the GIL.
  std::shared_ptr<py::object> held(new py::object(std::move(callable)), [](py::object *p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [held](const Tensor &x) -> Tensor {
    py::gil_scoped_acquire gil;
    py::object result = (*held)(x);
    return to_tensor(result, std::nullopt, x.device());
  };
}

} // namespace dlc::python
