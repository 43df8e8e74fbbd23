//===- Bindings.h - what the parts of dlc's Python module share ----------------===//
//
// The extension module `dlc._dlc` binds the C++ framework; the package's Python files
// (python/dlc) give it MXNet's module layout and the few behaviours that are easier to
// write in Python (attribute registration of children, context managers). Conversions
// between Python values and dlc's (dtypes, devices, shapes, arrays) are defined once,
// here, so that every function reads its arguments the same way.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_PYTHON_BINDINGS_H
#define DLC_PYTHON_BINDINGS_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/gluon.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace dlc::python {

/// `obj` as a dtype: None gives `fallback`; otherwise anything numpy.dtype() reads
/// (np.float32, 'float32', numpy dtypes, Python's float/int/bool), or 'bfloat16'. Python's
/// float means float32 (dlc has no float64), as MXNet's default dtype does.
DType to_dtype(const py::handle &obj, DType fallback = DType::f32);
/// How Python sees a dtype: a numpy dtype (the string 'bfloat16', which numpy lacks).
py::object dtype_object(DType dtype);

/// `obj` as a device (a dlc Device); None gives the current device scope's.
Device to_device(const py::handle &obj);
std::optional<Device> optional_device(const py::handle &obj);
/// A device, a list or tuple of them, or None (the current device).
std::vector<Device> to_devices(const py::handle &obj);

/// An integer (a Python int, a numpy integer: anything with __index__) as int64, for
/// `what`: TypeError for anything else (a float), ValueError past 64 bits.
int64_t to_int64(const py::handle &obj, const std::string &what);
/// An int or a sequence of ints (to_int64 each).
Shape to_shape(const py::handle &obj);
py::tuple shape_tuple(const Shape &shape);
/// One value for both axes of a 2-D op, or two (a kernel size, strides, padding).
std::array<int64_t, 2> pair_of(const py::object &obj, const char *what);
/// 'write', 'add' or 'null'.
GradReq grad_req_of(const std::string &name);

/// hybridize()'s and TrainStep's keyword arguments as CompileOptions: the environment's
/// (compile_options_from_environment), with each CompileOptions field named in `kwargs`
/// (fuse, generated_kernels, cuda_graphs, timing, blocked_layout, cuda_toolkit,
/// gpu_chip, cache_dir) replaced; MXNet's hybridize flags that dlc has no use for
/// (static_alloc, static_shape, ...) are accepted. Others raise TypeError naming `where`.
CompileOptions compile_options_of(const py::kwargs &kwargs, const char *where);
/// The options as a dict of those fields (blocked_layout None when unset).
py::dict compile_options_dict(const CompileOptions &options);
/// An int or a sequence of ints as axes; None gives {} (every axis).
std::vector<int64_t> to_axes(const py::handle &obj);

/// `obj` as a tensor: a dlc ndarray as it is (moved to `device` and converted to `dtype`
/// when given), or anything numpy.asarray reads, copied to `device` (default: the
/// current device). Python sequences and scalars become float32 unless `dtype` says
/// otherwise (MXNet's rule); numpy arrays keep their dtype when dlc has it (float64
/// becomes float32, other integer widths int32 or int64).
Tensor to_tensor(const py::handle &obj, std::optional<DType> dtype = {},
                 std::optional<Device> device = {});
/// `value` (a number) as a 0-d tensor like `like` (its dtype and device): the scalar
/// operand of an arithmetic operator.
Tensor scalar_like(double value, const Tensor &like);
/// `x`, or for an integer or bool tensor `x` as float32.
Tensor as_floating(const Tensor &x);
/// numpy's and MXNet's `/` (divide, true_divide): integer and bool operands divide as
/// float32, so [3, 4] / 2 is [1.5, 2.0], not a truncated [1, 2].
Tensor true_divide(const Tensor &x, const Tensor &y);
/// An operand of a binary op: a tensor as it is, a number as a scalar_like `other`.
Tensor operand(const py::handle &obj, const Tensor &other);

/// A copy of `tensor`'s values in a new numpy array (float32 for bfloat16). Releases the
/// GIL while it waits for the values.
py::array to_numpy(const Tensor &tensor);

/// A Python callable as a tensor -> tensor function that C++ may call from any thread:
/// the GIL is taken around the call and around the callable's last release.
std::function<Tensor(const Tensor &)> tensor_function(py::object callable);

/// Sets the Python exception for a dlc error (its class per kind); false for others.
bool translate_dlc_error(std::exception_ptr p);
/// Sets the Python exception for any C++ exception: what code outside pybind11's
/// dispatcher (the ndarray's number slots) calls in its catch block.
void set_python_error(std::exception_ptr p);

void bind_errors(py::module_ &m);
void bind_devices(py::module_ &m);
void bind_ndarray(py::module_ &m);
void bind_ops(py::module_ &m);
void bind_autograd(py::module_ &m);
void bind_gluon(py::module_ &m);
/// gluon.model_zoo.text, into that module.
void bind_text_zoo(py::module_ m);
void bind_training(py::module_ &m);
void bind_data(py::module_ &m);
void bind_dist(py::module_ &m);
void bind_onnx(py::module_ &m);

} // namespace dlc::python

#endif // DLC_PYTHON_BINDINGS_H
