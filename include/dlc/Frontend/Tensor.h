//===- Tensor.h - dlc's ndarray: a device, a shape, a dtype, shared storage ---===//
#ifndef DLC_FRONTEND_TENSOR_H
#define DLC_FRONTEND_TENSOR_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"
#include "dlc/Core/ShapeRules.h"
#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Core/Layout.h"

#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dlc {

using Shape = shape_rules::Shape;

/// How backward() stores a gradient into a tensor's grad(): replace it, add to it, or
/// not compute it (MXNet's grad_req).
enum class GradReq { null, write, add };

namespace autograd {
struct TensorGradState;
} // namespace autograd

/// A tensor (MXNet's ndarray): contiguous elements of one dtype on one device. Copies of
/// a Tensor share its elements; reshape and slicing along axis 0 give views that share
/// them too. Ops on it are queued on its device and return at once; reading values back
/// (to_vector, item, printing) waits for them and is the only implicit host transfer.
class Tensor {
public:
  /// An undefined tensor (no shape, no storage).
  Tensor() = default;

  bool defined() const { return impl_ != nullptr; }
  const Shape &shape() const;
  DType dtype() const;
  Device device() const;
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t size() const { return shape_rules::numElements(shape()); }
  size_t nbytes() const { return size_t(size()) * dtype_size(dtype()); }

  /// A copy on `device` (always a new tensor, MXNet's copyto(device)).
  Tensor copyto(Device device) const;
  /// Copies the elements into `target`, which must have the same shape and dtype.
  void copyto(Tensor &target) const;
  /// This tensor if it already lives on `device`, else a copy there (as_in_context).
  Tensor to(Device device) const;
  Tensor as_in_context(Device device) const { return to(device); }

  /// Same elements, another shape (a view); one entry may be -1.
  Tensor reshape(Shape shape) const;
  /// Elements converted to `dtype` (a new tensor).
  Tensor astype(DType dtype) const;
  /// Row `index` along axis 0 (a view without that axis); negative counts from the end.
  Tensor operator[](int64_t index) const;
  /// Rows [begin, end) along axis 0 (a view).
  Tensor slice(int64_t begin, int64_t end) const;

  /// Waits until the tensor's value is computed; rethrows the error of the op that was
  /// to compute it.
  void wait_to_read() const;

  /// The elements, converted to T, after waiting for them.
  template <typename T> std::vector<T> to_vector() const;
  /// The single element of a one-element tensor, converted to T.
  template <typename T> T item() const;

  /// Numpy-like text of the values (waits for them).
  std::string str() const;

  // Autograd (see dlc/Frontend/Autograd.h).
  /// Allocates a zero gradient buffer and marks the tensor as a leaf whose gradient
  /// backward() computes, written or added according to `req`.
  void attach_grad(GradReq req = GradReq::write);
  /// The gradient buffer attach_grad() allocated; throws if there is none.
  Tensor grad() const;
  /// Whether a backward() wrote grad() since the flag was last cleared (MXNet's
  /// `_fresh_grad`): Trainer.step refuses to apply a gradient twice.
  bool fresh_grad() const;
  void set_fresh_grad(bool fresh) const;
  /// Back-propagates from this tensor (seeded with `head_grad`, default ones).
  void backward(const Tensor &head_grad = Tensor(), bool retain_graph = false) const;
  /// The same elements, cut off from the recording (no gradient flows through).
  Tensor detach() const;
  /// Whether a gradient can flow to this tensor's inputs or into it.
  bool requires_grad() const;

  // Internals shared with the op dispatcher.
  struct Impl {
    Shape shape;
    DType dtype = DType::f32;
    std::shared_ptr<Buffer> buffer;
    size_t offset = 0; // bytes into buffer
    // How the elements sit in the buffer; set by the op dispatcher when the tensor is
    // created (dlc/Core/Layout.h). Views and host reads see plain tensors only.
    Layout layout = Layout::plain;
    std::shared_ptr<autograd::TensorGradState> grad_state; // null: not part of autograd
  };
  const std::shared_ptr<Impl> &impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<Buffer> &buffer() const;
  /// Pointer to the first element; only valid inside a kernel or after wait_to_read().
  /// The bytes are in the tensor's layout (detail::layout_of in OpRegistry.h), which an
  /// eager CPU op may have left blocked: detail::plain(t) gives a plain tensor.
  void *data() const;
  /// A new, uninitialized tensor on `device`.
  static Tensor empty(const Shape &shape, DType dtype, Device device);
  /// The same, taking over `shape` (no copy).
  static Tensor empty(Shape &&shape, DType dtype, Device device);

private:
  void requireDefined(const char *what) const;
  /// The elements as doubles (exact for every dtype but large int64).
  std::vector<double> valuesAsDouble() const;
  std::shared_ptr<Impl> impl_;
};

std::ostream &operator<<(std::ostream &os, const Tensor &tensor);

template <typename T> std::vector<T> Tensor::to_vector() const {
  std::vector<double> values = valuesAsDouble();
  std::vector<T> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = static_cast<T>(values[i]);
  return out;
}

template <> std::vector<int64_t> Tensor::to_vector<int64_t>() const;

template <typename T> T Tensor::item() const {
  if (size() != 1)
    throw ShapeError("item(): the tensor has " + std::to_string(size()) + " elements (shape " +
                     shape_rules::str(shape()) + "), expected exactly one");
  return to_vector<T>()[0];
}

} // namespace dlc

#endif // DLC_FRONTEND_TENSOR_H
