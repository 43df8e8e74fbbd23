//===- Tensor.cpp - tensor views, copies between devices, reading values back -===//
#include "dlc/Frontend/Tensor.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/OpRegistry.h"
#include "AutogradInternal.h"
#include "Tracer.h"
#include "dlc/Frontend/Trace.h"

#include <optional>

#include <iomanip>
#include <sstream>

namespace dlc {

namespace {
/// Reads element `i` of a host buffer of `dtype` as a double.
double readElement(const void *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::f32:
    return static_cast<const float *>(data)[i];
  case DType::f16:
    return to_float(static_cast<const float16 *>(data)[i]);
  case DType::bf16:
    return to_float(static_cast<const bfloat16 *>(data)[i]);
  case DType::i32:
    return static_cast<const int32_t *>(data)[i];
  case DType::i64:
    return double(static_cast<const int64_t *>(data)[i]);
  case DType::u8:
    return static_cast<const uint8_t *>(data)[i];
  case DType::boolean:
    return static_cast<const bool *>(data)[i] ? 1.0 : 0.0;
  }
  return 0;
}
} // namespace

void Tensor::requireDefined(const char *what) const {
  if (!impl_)
    throw Error(std::string(what) + ": the tensor is undefined (default-constructed)");
}

const Shape &Tensor::shape() const {
  requireDefined("shape()");
  return impl_->shape;
}

DType Tensor::dtype() const {
  requireDefined("dtype()");
  return impl_->dtype;
}

Device Tensor::device() const {
  requireDefined("device()");
  return impl_->buffer->device();
}

const std::shared_ptr<Buffer> &Tensor::buffer() const {
  requireDefined("buffer()");
  return impl_->buffer;
}

void *Tensor::data() const {
  requireDefined("data()");
  if (trace::Tracer *tracer = trace::Tracer::current())
    tracer->check_readable(*this, "data()");
  return static_cast<char *>(impl_->buffer->data()) + impl_->offset;
}

Tensor Tensor::empty(const Shape &shape, DType dtype, Device device) {
  return empty(Shape(shape), dtype, device);
}

Tensor Tensor::empty(Shape &&shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0)
      throw ShapeError("cannot create a tensor of shape " + shape_rules::str(shape) +
                       ": dimensions must be >= 0");
  if (std::string why = shape_rules::tensorSizeError(shape, int64_t(dtype_size(dtype)));
      !why.empty())
    throw ShapeError("cannot create a " + std::string(dtype_name(dtype)) + " tensor on " +
                     device.str() + ": " + why);
  size_t bytes = size_t(shape_rules::numElements(shape)) * dtype_size(dtype);
  auto impl = std::make_shared<Impl>();
  impl->shape = std::move(shape);
  impl->dtype = dtype;
  impl->buffer = std::make_shared<Buffer>(device, bytes);
  return Tensor(std::move(impl));
}

void Tensor::wait_to_read() const {
  requireDefined("wait_to_read()");
  if (trace::Tracer *tracer = trace::Tracer::current())
    tracer->check_readable(*this, "wait_to_read()");
  impl_->buffer->wait_to_read();
}

Tensor Tensor::copyto(Device target) const {
  requireDefined("copyto()");
  if (trace::Tracer *tracer = trace::Tracer::current(); tracer && tracer->produced(*this))
    throw UnsupportedError("copyto(" + target.str() + ") of a value computed inside a "
                           "hybridized forward: a compiled block runs on one device, and the "
                           "trace does not record copies between devices; copy its input or "
                           "output instead, or call hybridize(false) on the block");
  // A tensor from outside the trace (a constant, a captured value) is really copied.
  std::optional<trace::Pause> notTraced;
  if (trace::Tracer::current())
    notTraced.emplace();
  Tensor copy = empty(shape(), dtype(), target);
  copyto(copy);
  Device source = device();
  autograd::record("copyto", {*this}, {copy}, [source](const std::vector<Tensor> &grads) {
    return std::vector<Tensor>{grads[0].defined() ? grads[0].copyto(source) : Tensor()};
  });
  return copy;
}

void Tensor::copyto(Tensor &target) const {
  requireDefined("copyto()");
  if (!target.defined())
    throw Error("copyto(): the target tensor is undefined");
  if (target.shape() != shape() || target.dtype() != dtype())
    throw ShapeError("copyto(): cannot copy " + std::string(dtype_name(dtype())) + " " +
                     shape_rules::str(shape()) + " on " + device().str() + " into " +
                     dtype_name(target.dtype()) + " " + shape_rules::str(target.shape()) +
                     " on " + target.device().str() + ": shapes and dtypes must match");
  if (target.impl_->buffer == impl_->buffer && target.impl_->offset == impl_->offset)
    return;
  if (trace::Tracer *tracer = trace::Tracer::current()) {
    tracer->record_update(*this, target); // written back when the compiled program ends
    return;
  }
  // The bytes go over in the target's layout (plain, unless the target is a blocked
  // tensor of the dispatcher's, which other handles read as blocked). Layouts convert
  // on the CPU: from another device, the elements go over plain first.
  if (target.impl_->layout != Layout::plain && device() != target.device()) {
    autograd::Pause notRecorded(autograd::is_training()); // an internal staging copy
    copyto(target.device()).copyto(target);
    return;
  }
  Tensor source = detail::in_layout(*this, target.impl_->layout);
  // Runs after the source's producer (maybe on another queue); see enqueue_copy for
  // which queue runs it.
  enqueue_copy(source.impl_->buffer, source.data(), target.impl_->buffer, target.data(),
               nbytes());
}

Tensor Tensor::to(Device target) const {
  if (device() != target)
    return copyto(target);
  // The same tensor (callers may write through it), plain for its readers.
  detail::make_plain_in_place(*this);
  return *this;
}

Tensor Tensor::reshape(Shape newShape) const {
  requireDefined("reshape()");
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < newShape.size(); ++i) {
    if (newShape[i] == -1) {
      if (inferred >= 0)
        throw ShapeError("reshape(" + shape_rules::str(newShape) +
                         "): at most one dimension may be -1");
      inferred = int64_t(i);
    } else if (newShape[i] < 0) {
      throw ShapeError("reshape(" + shape_rules::str(newShape) +
                       "): dimensions must be >= 0 or -1");
    } else if (__builtin_mul_overflow(known, newShape[i], &known)) {
      // The count would wrap around, possibly to this tensor's own.
      throw ShapeError("reshape: cannot view " + shape_rules::str(shape()) + " as " +
                       shape_rules::str(newShape) + ": more than 2^63 elements");
    }
  }
  if (inferred >= 0 && known > 0 && size() % known == 0)
    newShape[inferred] = size() / known;
  if (shape_rules::numElements(newShape) != size() || (inferred >= 0 && known == 0))
    throw ShapeError("reshape: cannot view " + shape_rules::str(shape()) + " (" +
                     std::to_string(size()) + " elements) as " + shape_rules::str(newShape));
  // A view reinterprets the elements in row-major order, which needs them plain; the
  // tensor itself turns plain so that the view shares its memory.
  detail::make_plain_in_place(*this);
  auto impl = std::make_shared<Impl>(*impl_);
  impl->shape = std::move(newShape);
  impl->grad_state = nullptr;
  Tensor view(std::move(impl));
  Shape original = shape();
  auto vjp = [original](const std::vector<Tensor> &grads) {
    return std::vector<Tensor>{grads[0].defined() ? grads[0].reshape(original) : Tensor()};
  };
  if (trace::Tracer *tracer = trace::Tracer::current())
    tracer->record_reshape(*this, view, vjp);
  autograd::record("reshape", {*this}, {view}, vjp);
  return view;
}

Tensor Tensor::astype(DType target) const {
  static const OpDef &cast = find_op("astype");
  return invoke1(cast, {*this}, Attrs{{"dtype", int64_t(target)}});
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  requireDefined("slice()");
  if (shape().empty())
    throw ShapeError("slice(): a 0-d tensor has no axis 0 to slice");
  int64_t rows = shape()[0];
  if (begin < 0 || end > rows || begin > end)
    throw ShapeError("slice(" + std::to_string(begin) + ", " + std::to_string(end) +
                     "): out of range for axis 0 of " + shape_rules::str(shape()));
  // A value the trace knows (an argument or computed inside the hybridized forward) has
  // no memory to view: the traced program slices it with dlc.slice.
  if (trace::Tracer *tracer = trace::Tracer::current();
      tracer && (tracer->produced(*this) || tracer->find(*this) >= 0))
    return npx::slice_axis(*this, 0, begin, end);
  detail::make_plain_in_place(*this); // a view shares the tensor's (plain) memory
  auto impl = std::make_shared<Impl>(*impl_);
  impl->shape[0] = end - begin;
  int64_t rowElements = rows ? size() / rows : 0;
  impl->offset += size_t(begin * rowElements) * dtype_size(dtype());
  impl->grad_state = nullptr;
  Tensor view(std::move(impl));
  Shape whole = shape();
  DType type = dtype();
  Device where = device();
  autograd::record("slice", {*this}, {view}, [whole, type, where, begin, end](
                                                 const std::vector<Tensor> &grads) {
    if (!grads[0].defined())
      return std::vector<Tensor>{Tensor()};
    // The rows outside the slice get zeros.
    std::vector<Tensor> parts;
    Shape rowsShape = whole;
    if (begin > 0) {
      rowsShape[0] = begin;
      parts.push_back(np::zeros(rowsShape, type, where));
    }
    parts.push_back(grads[0]);
    if (end < whole[0]) {
      rowsShape[0] = whole[0] - end;
      parts.push_back(np::zeros(rowsShape, type, where));
    }
    return std::vector<Tensor>{parts.size() == 1 ? parts[0] : np::concatenate(parts, 0)};
  });
  return view;
}

Tensor Tensor::operator[](int64_t index) const {
  requireDefined("operator[]");
  if (shape().empty())
    throw ShapeError("operator[]: a 0-d tensor cannot be indexed");
  int64_t rows = shape()[0];
  int64_t row = index < 0 ? index + rows : index;
  if (row < 0 || row >= rows)
    throw ShapeError("index " + std::to_string(index) + " is out of range for axis 0 of " +
                     shape_rules::str(shape()));
  Shape rowShape(shape().begin() + 1, shape().end());
  return slice(row, row + 1).reshape(rowShape);
}

std::vector<double> Tensor::valuesAsDouble() const {
  requireDefined("reading values");
  if (trace::Tracer *tracer = trace::Tracer::current())
    tracer->check_readable(*this, "reading values (item, to_vector, printing)");
  Tensor host = device().is_host() ? detail::plain(*this) : copyto(cpu(0));
  host.wait_to_read();
  std::vector<double> values(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i)
    values[size_t(i)] = readElement(host.data(), dtype(), i);
  return values;
}

template <> std::vector<int64_t> Tensor::to_vector<int64_t>() const {
  if (trace::Tracer *tracer = trace::Tracer::current())
    tracer->check_readable(*this, "reading values (to_vector)");
  if (dtype() != DType::i64) {
    std::vector<double> values = valuesAsDouble();
    return std::vector<int64_t>(values.begin(), values.end());
  }
  Tensor host = device().is_host() ? *this : copyto(cpu(0)); // int64: never blocked
  host.wait_to_read();
  const int64_t *begin = static_cast<const int64_t *>(host.data());
  return std::vector<int64_t>(begin, begin + size());
}

std::string Tensor::str() const {
  // Integers print exactly (six significant digits made 1234567 read 1.23457e+06);
  // floats with six, as numpy does by default.
  bool exact = !is_floating(dtype());
  std::vector<double> values;
  std::vector<int64_t> integers;
  if (exact)
    integers = to_vector<int64_t>();
  else
    values = valuesAsDouble();
  size_t count = exact ? integers.size() : values.size();
  auto element = [&](std::ostream &out, size_t i) -> std::ostream & {
    return exact ? out << integers[i] : out << values[i];
  };
  std::ostringstream os;
  os << std::setprecision(6);
  const Shape &dims = shape();
  // Nested brackets as numpy prints them; one line per innermost row.
  std::vector<int64_t> index(dims.size(), 0);
  if (dims.empty()) {
    element(os, 0);
  } else {
    for (size_t i = 0; i < count; ++i) {
      size_t opened = 0;
      for (size_t d = dims.size(); d-- > 0 && index[d] == 0;)
        ++opened;
      if (i > 0)
        os << (opened ? std::string(",\n") + std::string(dims.size() - opened, ' ') : ", ");
      element(os << std::string(opened, '['), i);
      size_t closed = 0;
      for (size_t d = dims.size(); d-- > 0;) {
        if (++index[d] < dims[d])
          break;
        index[d] = 0;
        ++closed;
      }
      os << std::string(closed, ']');
    }
    if (count == 0)
      os << std::string(dims.size(), '[') << std::string(dims.size(), ']');
  }
  os << " <" << dtype_name(dtype()) << " " << shape_rules::str(dims) << " on " << device()
     << ">";
  return os.str();
}

std::ostream &operator<<(std::ostream &os, const Tensor &tensor) { return os << tensor.str(); }

} // namespace dlc
