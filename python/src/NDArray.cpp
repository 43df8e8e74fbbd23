//===- NDArray.cpp - dlc.np.ndarray: dlc's Tensor as MXNet's numpy array -------===//
#include "Bindings.h"
#include "DLPack.h"

#include "dlc/Frontend/OpRegistry.h"

#include <cstring>

namespace dlc::python {

namespace {

using GilFree = py::call_guard<py::gil_scoped_release>;

// --- indexing --------------------------------------------------------------------------

/// [begin, end) of a step-1 slice over an axis of `extent`, numpy's clamping.
std::pair<int64_t, int64_t> slice_bounds(const py::slice &slice, int64_t extent,
                                         const char *op) {
  py::ssize_t start, stop, step, length;
  if (!slice.compute(extent, &start, &stop, &step, &length))
    throw py::error_already_set();
  if (step != 1)
    throw UnsupportedError(std::string(op) + ": slices with a step other than 1 are not "
                           "supported (got step " + std::to_string(step) + ")");
  return {start, std::max<int64_t>(start, stop)};
}

int64_t checked_index(int64_t index, int64_t extent, int64_t axis, const Shape &shape) {
  if (index < -extent || index >= extent)
    throw IndexError("index " + std::to_string(index) + " is out of bounds for axis " +
                     std::to_string(axis) + " with size " + std::to_string(extent) +
                     " (shape " + shape_rules::str(shape) + ")");
  return index < 0 ? index + extent : index;
}

/// One slice of an index as a range: Python's start, stop and step (None: missing).
npx::SliceRange range_of(const py::slice &slice) {
  auto bound = [](const py::object &value) -> std::optional<int64_t> {
    if (value.is_none())
      return std::nullopt;
    return py::int_(value).cast<int64_t>();
  };
  std::optional<int64_t> step = bound(slice.attr("step"));
  if (step && *step == 0)
    throw ValueError("ndarray[]: slice step cannot be zero");
  return {bound(slice.attr("start")), bound(slice.attr("stop")), step.value_or(1)};
}

bool is_integer_index(const py::object &item) {
  if (py::isinstance<py::int_>(item))
    return true;
  if (py::isinstance<Tensor>(item)) {
    Tensor t = item.cast<Tensor>();
    return t.ndim() == 0 && !is_floating(t.dtype());
  }
  return py::hasattr(item, "__index__");
}

/// numpy's basic indexing: integers, slices with any step, None (a new axis of 1) and
/// one Ellipsis. A step-1 range of axis 0 alone is a view of x; anything else one
/// dlc.slice (a copy), so that hybridized code slices as eager code does.
Tensor get_item(const Tensor &x, const py::handle &key) {
  std::vector<py::object> items;
  if (py::isinstance<py::tuple>(key))
    for (py::handle item : key)
      items.push_back(py::reinterpret_borrow<py::object>(item));
  else
    items.push_back(py::reinterpret_borrow<py::object>(key));
  const Shape &shape = x.shape();
  size_t explicit_axes = 0;
  for (const py::object &item : items)
    if (!item.is(py::ellipsis()) && !item.is_none())
      ++explicit_axes;
  if (explicit_axes > shape.size())
    throw IndexError("too many indices for an array of shape " + shape_rules::str(shape) +
                     ": " + std::to_string(explicit_axes) + " indices");
  std::vector<npx::SliceRange> ranges; // one per axis of x the index names
  Shape result;                        // the shape after integers and None
  bool seen_ellipsis = false;
  auto whole_axis = [&] {
    result.push_back(shape[ranges.size()]);
    ranges.push_back({});
  };
  for (const py::object &item : items) {
    if (item.is(py::ellipsis())) {
      if (seen_ellipsis)
        throw IndexError("an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
      for (size_t k = explicit_axes; k < shape.size(); ++k)
        whole_axis();
    } else if (item.is_none()) {
      result.push_back(1);
    } else if (py::isinstance<py::slice>(item)) {
      npx::SliceRange range = range_of(item.cast<py::slice>());
      int64_t extent = shape[ranges.size()];
      auto [begin, end] = shape_rules::resolveSlice(range.begin, range.end, range.step, extent);
      result.push_back(shape_rules::sliceLength(begin, end, range.step));
      ranges.push_back(range);
    } else if (is_integer_index(item)) {
      int64_t axis = int64_t(ranges.size());
      int64_t index = checked_index(py::int_(item).cast<int64_t>(), shape[size_t(axis)], axis,
                                    shape);
      ranges.push_back({index, index + 1, 1});
    } else {
      throw IndexError("ndarray[]: dlc supports integers, slices, None and '...' as indices; "
                       "got " + py::repr(item).cast<std::string>() +
                       " (advanced indexing by arrays is not supported: use np.take)");
    }
  }
  while (ranges.size() < shape.size())
    whole_axis();
  // Only axis 0 cut, with step 1: Tensor::slice (a view of eager memory).
  bool only_rows = !ranges.empty() && ranges[0].step == 1;
  for (size_t d = 1; d < ranges.size() && only_rows; ++d)
    only_rows = !ranges[d].begin && !ranges[d].end && ranges[d].step == 1;
  Tensor sliced = x;
  if (only_rows) {
    auto [begin, end] = shape_rules::resolveSlice(ranges[0].begin, ranges[0].end, 1, shape[0]);
    if (begin != 0 || end != shape[0])
      sliced = x.slice(begin, std::max(begin, end));
  } else if (!ranges.empty()) {
    sliced = npx::slice(x, ranges);
  }
  return sliced.shape() == result ? sliced : sliced.reshape(result);
}

/// The view `x[key]` writes go through: axis 0 only, since only those views share memory.
Tensor writable_view(const Tensor &x, const py::handle &key) {
  if (py::isinstance<py::slice>(key)) {
    auto [begin, end] = slice_bounds(key.cast<py::slice>(), x.shape().empty() ? 0 : x.shape()[0],
                                     "ndarray[]=");
    if (x.shape().empty())
      return x;
    return x.slice(begin, end);
  }
  if (key.is(py::ellipsis()))
    return x;
  if (py::isinstance<py::int_>(key)) {
    if (x.shape().empty())
      throw IndexError("ndarray[]=: a 0-d array takes no integer index");
    return x[checked_index(key.cast<int64_t>(), x.shape()[0], 0, x.shape())];
  }
  throw IndexError("ndarray[]=: dlc writes through an integer, a step-1 slice along axis 0 "
                   "or '...'; got " + py::repr(key).cast<std::string>());
}

void set_item(Tensor &x, const py::handle &key, const py::handle &value) {
  if (autograd::is_recording())
    throw UnsupportedError("ndarray[]=: assigning into an array while autograd records would "
                           "change a value the recording may need (shape " +
                           shape_rules::str(x.shape()) + ")");
  detail::make_plain_in_place(x);
  Tensor target = writable_view(x, key);
  Tensor source = operand(value, target);
  if (source.dtype() != target.dtype())
    source = source.astype(target.dtype());
  source = source.to(target.device());
  if (source.shape() != target.shape())
    source = np::broadcast_to(source, target.shape());
  source.copyto(target);
}

// --- DLPack ---------------------------------------------------------------------------

struct Exported {
  Tensor tensor; // keeps the memory alive
  std::vector<int64_t> shape;
  dlpack::ManagedTensor managed{};
};

dlpack::DataType dlpack_dtype(DType dtype) {
  switch (dtype) {
  case DType::f32: return {dlpack::kFloat, 32, 1};
  case DType::f16: return {dlpack::kFloat, 16, 1};
  case DType::bf16: return {dlpack::kBfloat, 16, 1};
  case DType::i32: return {dlpack::kInt, 32, 1};
  case DType::i64: return {dlpack::kInt, 64, 1};
  case DType::u8: return {dlpack::kUInt, 8, 1};
  case DType::boolean: return {dlpack::kBool, 8, 1};
  }
  throw DTypeError("__dlpack__: unknown dtype");
}

dlpack::Device dlpack_device(Device device) {
  if (device.kind == DeviceKind::gpu)
    return {dlpack::kCUDA, device.id};
  if (device.kind == DeviceKind::cpu_pinned)
    return {dlpack::kCUDAHost, 0};
  return {dlpack::kCPU, 0};
}

py::capsule to_dlpack(const Tensor &x) {
  auto *exported = new Exported;
  {
    py::gil_scoped_release release;
    exported->tensor = x.device().is_host() ? detail::plain(x) : x;
    // The consumer reads the memory without dlc's engine: wait for its writer now.
    exported->tensor.wait_to_read();
  }
  exported->shape.assign(x.shape().begin(), x.shape().end());
  dlpack::Tensor &t = exported->managed.dl_tensor;
  t.data = exported->tensor.data();
  t.device = dlpack_device(x.device());
  t.ndim = int32_t(exported->shape.size());
  t.dtype = dlpack_dtype(x.dtype());
  t.shape = exported->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](dlpack::ManagedTensor *self) {
    delete static_cast<Exported *>(self->manager_ctx);
  };
  return py::capsule(&exported->managed, dlpack::kCapsuleName, [](PyObject *capsule) {
    // Still named "dltensor": no consumer took it, so it is ours to free.
    if (PyCapsule_IsValid(capsule, dlpack::kCapsuleName)) {
      auto *managed = static_cast<dlpack::ManagedTensor *>(
          PyCapsule_GetPointer(capsule, dlpack::kCapsuleName));
      managed->deleter(managed);
    }
  });
}

std::optional<DType> from_dlpack_dtype(dlpack::DataType t) {
  if (t.lanes != 1)
    return std::nullopt;
  switch (t.code) {
  case dlpack::kFloat:
    return t.bits == 32 ? std::optional(DType::f32) : t.bits == 16 ? std::optional(DType::f16) : std::nullopt;
  case dlpack::kBfloat:
    return t.bits == 16 ? std::optional(DType::bf16) : std::nullopt;
  case dlpack::kInt:
    return t.bits == 32 ? std::optional(DType::i32) : t.bits == 64 ? std::optional(DType::i64) : std::nullopt;
  case dlpack::kUInt:
    return t.bits == 8 ? std::optional(DType::u8) : std::nullopt;
  case dlpack::kBool:
    return t.bits == 8 ? std::optional(DType::boolean) : std::nullopt;
  }
  return std::nullopt;
}

/// What the host kernels may assume of a buffer's address (dlc's allocator gives 64).
constexpr uintptr_t kZeroCopyAlignment = 64;

/// A tensor from an object with __dlpack__: the same memory when it is compact host
/// memory aligned as dlc's kernels expect, else a copy through numpy.
Tensor from_dlpack(const py::object &obj) {
  if (py::isinstance<Tensor>(obj))
    return obj.cast<Tensor>();
  if (!py::hasattr(obj, "__dlpack__"))
    throw py::type_error("from_dlpack: " + py::repr(py::type::handle_of(obj)).cast<std::string>() +
                         " has no __dlpack__ method");
  py::capsule capsule = obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(capsule.ptr(), dlpack::kCapsuleName))
    throw ValueError("from_dlpack: the capsule was already consumed");
  auto *managed = static_cast<dlpack::ManagedTensor *>(
      PyCapsule_GetPointer(capsule.ptr(), dlpack::kCapsuleName));
  const dlpack::Tensor &t = managed->dl_tensor;
  // Ownership: from here the managed tensor is released through its deleter.
  PyCapsule_SetName(capsule.ptr(), dlpack::kUsedCapsuleName);
  std::shared_ptr<void> owner(managed, [](void *p) {
    auto *m = static_cast<dlpack::ManagedTensor *>(p);
    if (m->deleter)
      m->deleter(m);
  });
  Shape shape(t.shape, t.shape + t.ndim);
  std::optional<DType> dtype = from_dlpack_dtype(t.dtype);
  if (t.device.device_type != dlpack::kCPU)
    throw UnsupportedError("from_dlpack: only host memory is taken by DLPack (device type " +
                           std::to_string(t.device.device_type) + "); copy it to the host first");
  if (!dtype)
    throw DTypeError("from_dlpack: dlc has no tensors of DLPack type code " +
                     std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) + " bits");
  bool compact = true;
  if (t.strides) {
    int64_t expected = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      if (t.shape[k] != 1 && t.strides[k] != expected)
        compact = false;
      expected *= t.shape[k];
    }
  }
  char *data = static_cast<char *>(t.data) + t.byte_offset;
  size_t bytes = size_t(shape_rules::numElements(shape)) * dtype_size(*dtype);
  if (compact && reinterpret_cast<uintptr_t>(data) % kZeroCopyAlignment == 0) {
    auto impl = std::make_shared<Tensor::Impl>();
    impl->shape = shape;
    impl->dtype = *dtype;
    impl->buffer = std::make_shared<Buffer>(std::make_shared<Storage>(data, bytes, cpu(0), owner));
    return Tensor(std::move(impl));
  }
  // Unaligned or strided: a compact copy (numpy reads the strides).
  return to_tensor(py::module_::import("numpy").attr("from_dlpack")(obj), dtype, cpu(0));
}

// --- printing -------------------------------------------------------------------------

std::string repr(const Tensor &x) {
  if (!x.defined())
    return "array(<undefined>)";
  std::string values;
  try {
    values = py::repr(to_numpy(x)).cast<std::string>();
  } catch (const Error &) {
    // A value being traced by hybridize has no value to print yet. Any other error (the
    // computation behind the array failed) is the user's to see, as reading it would be.
    if (!is_tracing())
      throw;
    return "<ndarray shape=" + shape_rules::str(x.shape()) + " dtype=" + dtype_name(x.dtype()) +
           " device=" + x.device().str() + " (symbolic)>";
  }
  if (x.device() == cpu(0))
    return values;
  values.pop_back(); // ")"
  return values + ", device=" + x.device().str() + ")";
}

// --- autograd on arrays -----------------------------------------------------------------

using BinaryOp = Tensor (*)(const Tensor &, const Tensor &);

bool is_number(const py::handle &y) {
  return py::isinstance<py::int_>(y) || py::isinstance<py::float_>(y);
}

/// x op y with y a number, through the C++ operators that take one: they reuse one
/// cached scalar per value and device instead of making a 0-d array per call.
std::optional<Tensor> with_number(const Tensor &x, double y, BinaryOp op, bool number_first) {
  py::gil_scoped_release release;
  if (op == np::add)
    return number_first ? y + x : x + y;
  if (op == np::subtract)
    return number_first ? y - x : x - y;
  if (op == np::multiply)
    return number_first ? y * x : x * y;
  if (op == true_divide) {
    Tensor quotient = as_floating(x);
    return number_first ? y / quotient : quotient / y;
  }
  return std::nullopt;
}

Tensor binary(const Tensor &x, const py::handle &y, BinaryOp op) {
  if (is_number(y))
    if (std::optional<Tensor> r = with_number(x, y.cast<double>(), op, false))
      return *r;
  Tensor other = operand(y, op == true_divide ? as_floating(x) : x);
  py::gil_scoped_release release;
  return op(x, other);
}

Tensor reflected(const Tensor &x, const py::handle &y, BinaryOp op) {
  if (is_number(y))
    if (std::optional<Tensor> r = with_number(x, y.cast<double>(), op, true))
      return *r;
  Tensor other = operand(y, op == true_divide ? as_floating(x) : x);
  py::gil_scoped_release release;
  return op(other, x);
}

/// `x op= y`: the result written into x's memory, as MXNet's in-place operators do.
Tensor &in_place(Tensor &x, const py::handle &y, BinaryOp op) {
  if (autograd::is_recording())
    throw UnsupportedError("in-place operators are not allowed while autograd records (shape " +
                           shape_rules::str(x.shape()) + "): write y = x + ... instead");
  Tensor result = binary(x, y, op);
  if (result.shape() != x.shape())
    throw ShapeError("in-place operator: the result's shape " + shape_rules::str(result.shape()) +
                     " differs from the array's " + shape_rules::str(x.shape()));
  if (result.dtype() != x.dtype())
    result = result.astype(x.dtype());
  detail::make_plain_in_place(x);
  result.copyto(x);
  return x;
}

// --- the per-op path ------------------------------------------------------------------
//
// `a + b` on two arrays is the call a Python loop makes most. Through pybind11 it costs
// a method lookup, the dispatcher and four type-registry lookups (about 1 µs, as much as
// dlc's own work for a small array); so the type's number slots are replaced by C
// functions that take two ndarrays directly and hand anything else to the slots Python
// made from the __add__/__radd__ methods bound above.

PyTypeObject *ndarray_type = nullptr;
const py::detail::type_info *ndarray_info = nullptr;

/// The Tensor inside `obj`, or null when `obj` is not an ndarray (exactly).
const Tensor *tensor_in(PyObject *obj) {
  if (Py_TYPE(obj) != ndarray_type)
    return nullptr;
  auto *inst = reinterpret_cast<py::detail::instance *>(obj);
  void *value = inst->simple_layout ? inst->simple_value_holder[0]
                                    : inst->get_value_and_holder().value_ptr();
  return static_cast<const Tensor *>(value);
}

PyObject *new_ndarray(Tensor &&t) {
  return py::detail::type_caster_generic::cast(
             &t, py::return_value_policy::move, py::handle(), ndarray_info, nullptr,
             [](const void *p) -> void * {
               return new Tensor(std::move(*const_cast<Tensor *>(static_cast<const Tensor *>(p))));
             })
      .ptr();
}

enum SlotKind { kAdd, kSubtract, kMultiply, kDivide, kSlotKinds };
constexpr BinaryOp slot_op[kSlotKinds] = {np::add, np::subtract, np::multiply, true_divide};
constexpr const char *slot_method[kSlotKinds][2] = {
    {"__add__", "__radd__"}, {"__sub__", "__rsub__"}, {"__mul__", "__rmul__"},
    {"__truediv__", "__rtruediv__"}};

/// Operands of at most this many bytes in all keep the GIL through an arithmetic operator.
constexpr size_t kKeepTheGilBytes = size_t(16) << 10;

template <SlotKind K> PyObject *number_slot(PyObject *a, PyObject *b) noexcept {
  const Tensor *x = tensor_in(a), *y = tensor_in(b);
  try {
    // An array and a Python number: the C++ operators that take a double.
    PyObject *number = x && !y ? b : y && !x ? a : nullptr;
    if (number && (PyFloat_Check(number) || PyLong_Check(number))) {
      double value = PyFloat_Check(number) ? PyFloat_AS_DOUBLE(number) : PyLong_AsDouble(number);
      if (value == -1.0 && PyErr_Occurred())
        return nullptr;
      return new_ndarray(*with_number(x ? *x : *y, value, slot_op[K], !x));
    }
    if (!x || !y) {
      // A number or another array type on one side: the bound methods (Python's own
      // slot functions would not call them once the slot is replaced).
      py::handle self = x ? a : b, other = x ? b : a;
      return self.attr(slot_method[K][x ? 0 : 1])(other).release().ptr();
    }
    // Small host operands: the op runs on this thread at once (a tiny task) or is queued,
    // in microseconds either way, and releasing the GIL would cost more than that.
    // Larger ones release it, since making their outputs may take longer.
    if (x->device().is_host() && y->device().is_host() &&
        x->nbytes() + y->nbytes() <= kKeepTheGilBytes)
      return new_ndarray(slot_op[K](*x, *y));
    Tensor result;
    {
      py::gil_scoped_release release;
      result = slot_op[K](*x, *y);
    }
    return new_ndarray(std::move(result));
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

void install_number_slots(py::handle type) {
  ndarray_type = reinterpret_cast<PyTypeObject *>(type.ptr());
  ndarray_info = py::detail::get_type_info(typeid(Tensor));
  PyNumberMethods *slots = ndarray_type->tp_as_number;
  slots->nb_add = number_slot<kAdd>;
  slots->nb_subtract = number_slot<kSubtract>;
  slots->nb_multiply = number_slot<kMultiply>;
  slots->nb_true_divide = number_slot<kDivide>;
  PyType_Modified(ndarray_type);
}

Shape shape_from_args(const py::args &args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]))
    return to_shape(args[0]);
  return to_shape(args);
}

} // namespace

void bind_ndarray(py::module_ &m) {
  py::class_<Tensor> nd(m, "ndarray",
                        "dlc's array (MXNet's mxnet.np.ndarray): one dtype, one device; ops "
                        "return at once and run on the array's device.");
  nd.def(py::init([](const py::object &obj, const py::object &dtype, const py::object &device) {
           return to_tensor(obj, dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype)),
                            optional_device(device));
         }),
         py::arg("object"), py::arg("dtype") = py::none(), py::arg("device") = py::none())
      .def_property_readonly("shape", [](const Tensor &x) { return shape_tuple(x.shape()); })
      .def_property_readonly("dtype", [](const Tensor &x) { return dtype_object(x.dtype()); })
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("ctx", &Tensor::device)
      .def_property_readonly("context", &Tensor::device)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("size", &Tensor::size)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def_property_readonly("itemsize", [](const Tensor &x) { return dtype_size(x.dtype()); })
      .def_property_readonly("T", [](const Tensor &x) { return np::transpose(x); })
      .def("__len__",
           [](const Tensor &x) {
             if (x.shape().empty())
               throw py::type_error("len() of a 0-d array");
             return x.shape()[0];
           })
      .def("__iter__",
           [](const Tensor &x) {
             if (x.shape().empty())
               throw py::type_error("iteration over a 0-d array");
             py::list rows;
             for (int64_t i = 0; i < x.shape()[0]; ++i)
               rows.append(x[i]);
             return py::iter(rows);
           })
      .def("__bool__",
           [](const Tensor &x) {
             if (x.size() != 1)
               throw ValueError("the truth value of an array with " + std::to_string(x.size()) +
                                " elements is ambiguous (shape " + shape_rules::str(x.shape()) +
                                "); use any() or all()");
             py::gil_scoped_release release;
             return x.item<double>() != 0;
           })
      .def("__float__",
           [](const Tensor &x) {
             py::gil_scoped_release release;
             return x.item<double>();
           })
      .def("__int__",
           [](const Tensor &x) {
             py::gil_scoped_release release;
             return x.item<int64_t>();
           })
      .def("__index__",
           [](const Tensor &x) {
             if (is_floating(x.dtype()))
               throw py::type_error("only integer arrays can be used as an index");
             py::gil_scoped_release release;
             return x.item<int64_t>();
           })
      .def("item",
           [](const Tensor &x) -> py::object {
             int64_t i = 0;
             double d = 0;
             {
               py::gil_scoped_release release;
               if (is_floating(x.dtype()))
                 d = x.item<double>();
               else
                 i = x.item<int64_t>();
             }
             if (x.dtype() == DType::boolean)
               return py::bool_(i != 0);
             if (is_floating(x.dtype()))
               return py::float_(d);
             return py::int_(i);
           })
      .def("asnumpy", &to_numpy, "A copy of the values as a numpy array (waits for them).")
      .def("__array__",
           [](const Tensor &x, const py::object &dtype) {
             py::array a = to_numpy(x);
             return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
           },
           py::arg("dtype") = py::none())
      .def("tolist", [](const Tensor &x) { return to_numpy(x).attr("tolist")(); })
      .def("__repr__", &repr)
      .def("__str__",
           [](const Tensor &x) {
             try {
               return py::str(to_numpy(x)).cast<std::string>();
             } catch (const Error &) {
               return repr(x);
             }
           })
      .def("wait_to_read", &Tensor::wait_to_read, GilFree())
      // Devices.
      .def("copyto",
           [](const Tensor &x, const py::object &other) -> py::object {
             if (py::isinstance<Tensor>(other)) {
               Tensor target = other.cast<Tensor>();
               detail::make_plain_in_place(target);
               py::gil_scoped_release release;
               x.copyto(target);
               return other;
             }
             Device device = to_device(other);
             py::gil_scoped_release release;
             return py::cast(x.copyto(device));
           },
           py::arg("other"), "A copy on a device, or the values copied into another array.")
      .def("as_in_context", &Tensor::to, py::arg("device"), GilFree())
      .def("as_in_ctx", &Tensor::to, py::arg("device"), GilFree())
      .def("to_device", &Tensor::to, py::arg("device"), GilFree())
      .def("copy", [](const Tensor &x) { return x.copyto(x.device()); }, GilFree())
      // Shapes and types.
      .def("reshape",
           [](const Tensor &x, const py::args &args, const py::kwargs &kwargs) {
             Shape shape = kwargs.contains("shape") ? to_shape(kwargs["shape"]) : shape_from_args(args);
             return x.reshape(shape);
           })
      .def("astype",
           [](const Tensor &x, const py::object &dtype, bool copy) {
             DType d = to_dtype(dtype);
             return !copy && d == x.dtype() ? x : x.astype(d);
           },
           py::arg("dtype"), py::arg("copy") = true)
      .def("flatten", [](const Tensor &x) { return x.reshape({-1}); })
      .def("transpose",
           [](const Tensor &x, const py::args &axes) {
             std::vector<int64_t> order =
                 axes.size() == 1 && !py::isinstance<py::int_>(axes[0]) ? to_axes(axes[0]) : to_axes(axes);
             return np::transpose(x, order);
           })
      .def("sum", [](const Tensor &x, const py::object &axis, bool keepdims) { return np::sum(x, to_axes(axis), keepdims); },
           py::arg("axis") = py::none(), py::arg("keepdims") = false)
      .def("mean", [](const Tensor &x, const py::object &axis, bool keepdims) { return np::mean(x, to_axes(axis), keepdims); },
           py::arg("axis") = py::none(), py::arg("keepdims") = false)
      .def("max", [](const Tensor &x, const py::object &axis, bool keepdims) { return np::max(x, to_axes(axis), keepdims); },
           py::arg("axis") = py::none(), py::arg("keepdims") = false)
      .def("min", [](const Tensor &x, const py::object &axis, bool keepdims) { return np::min(x, to_axes(axis), keepdims); },
           py::arg("axis") = py::none(), py::arg("keepdims") = false)
      .def("argmax",
           [](const Tensor &x, const py::object &axis, bool keepdims) {
             return axis.is_none() ? np::argmax(x.reshape({-1}), 0, false)
                                   : np::argmax(x, axis.cast<int64_t>(), keepdims);
           },
           py::arg("axis") = py::none(), py::arg("keepdims") = false)
      // Indexing.
      .def("__getitem__", &get_item)
      .def("__setitem__", &set_item)
      // Arithmetic (numpy broadcasting; numbers become arrays of this one's dtype).
      .def("__add__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::add); })
      .def("__radd__", [](const Tensor &x, const py::object &y) { return reflected(x, y, np::add); })
      .def("__sub__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::subtract); })
      .def("__rsub__", [](const Tensor &x, const py::object &y) { return reflected(x, y, np::subtract); })
      .def("__mul__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::multiply); })
      .def("__rmul__", [](const Tensor &x, const py::object &y) { return reflected(x, y, np::multiply); })
      .def("__truediv__", [](const Tensor &x, const py::object &y) { return binary(x, y, true_divide); })
      .def("__rtruediv__", [](const Tensor &x, const py::object &y) { return reflected(x, y, true_divide); })
      .def("__pow__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::power); })
      .def("__rpow__", [](const Tensor &x, const py::object &y) { return reflected(x, y, np::power); })
      .def("__matmul__", [](const Tensor &x, const Tensor &y) { return np::matmul(x, y); }, GilFree())
      .def("__iadd__", [](Tensor &x, const py::object &y) -> Tensor & { return in_place(x, y, np::add); })
      .def("__isub__", [](Tensor &x, const py::object &y) -> Tensor & { return in_place(x, y, np::subtract); })
      .def("__imul__", [](Tensor &x, const py::object &y) -> Tensor & { return in_place(x, y, np::multiply); })
      .def("__itruediv__", [](Tensor &x, const py::object &y) -> Tensor & { return in_place(x, y, true_divide); })
      .def("__neg__", [](const Tensor &x) { return np::negative(x); }, GilFree())
      .def("__pos__", [](const Tensor &x) { return x; })
      .def("__abs__", [](const Tensor &x) { return np::maximum(x, np::negative(x)); }, GilFree())
      .def("__eq__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::equal); })
      .def("__ne__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::not_equal); })
      .def("__lt__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::less); })
      .def("__le__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::less_equal); })
      .def("__gt__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::greater); })
      .def("__ge__", [](const Tensor &x, const py::object &y) { return binary(x, y, np::greater_equal); })
      // Autograd.
      .def("attach_grad",
           [](Tensor &x, const std::string &grad_req) { x.attach_grad(grad_req_of(grad_req)); },
           py::arg("grad_req") = "write")
      .def_property_readonly("grad",
                             [](const Tensor &x) -> py::object {
                               if (!x.impl() || !x.impl()->grad_state)
                                 return py::none();
                               try {
                                 return py::cast(x.grad());
                               } catch (const Error &) {
                                 return py::none();
                               }
                             })
      .def("backward",
           [](const Tensor &x, const py::object &out_grad, bool retain_graph, bool train_mode) {
             Tensor head = out_grad.is_none() ? Tensor() : to_tensor(out_grad, x.dtype(), x.device());
             py::gil_scoped_release release;
             autograd::TrainMode mode(train_mode);
             x.backward(head, retain_graph);
           },
           py::arg("out_grad") = py::none(), py::arg("retain_graph") = false,
           py::arg("train_mode") = true)
      .def("detach", &Tensor::detach)
      // Exchange.
      .def("__dlpack__", [](const Tensor &x, const py::object &) { return to_dlpack(x); },
           py::arg("stream") = py::none(),
           "A DLPack capsule sharing the array's memory (after its value is computed).")
      .def("__dlpack_device__",
           [](const Tensor &x) {
             dlpack::Device d = dlpack_device(x.device());
             return py::make_tuple(d.device_type, d.device_id);
           });
  nd.attr("__hash__") = py::none();
  install_number_slots(nd);
  m.def("from_dlpack", &from_dlpack, py::arg("x"),
        "An ndarray from any object with __dlpack__: sharing its memory when it is compact, "
        "aligned host memory, else a copy.");
}

} // namespace dlc::python
