//===- OpRegistry.h - one entry per op, and the eager dispatcher -------------===//
//
// An op is defined once: its user-facing name, the `dlc` dialect op it maps to (also the
// key of its kernels in the kernel table, see dlc/Runtime/Engine/Kernel.h) and its shape/dtype
// rule; autograd adds its VJP rule to the same entry. Adding an op touches its entry,
// its kernels, and the dialect's ODS.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_OPREGISTRY_H
#define DLC_FRONTEND_OPREGISTRY_H

#include "dlc/Frontend/Tensor.h"
#include "dlc/Core/Attrs.h"
#include "dlc/Core/LayoutRules.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <array>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace dlc {

/// Output shapes and dtypes from the inputs'. Throws ShapeError or DTypeError saying
/// what is wrong; the dispatcher adds the op's name, inputs and devices to the message.
using InferFn = std::vector<TensorMeta> (*)(const std::vector<TensorMeta> &inputs,
                                            const Attrs &attrs);

/// What a VJP rule sees of one recorded call.
struct VjpContext {
  const std::string &op_name;
  const std::vector<Tensor> &inputs;       ///< detached from the recording
  const std::vector<Tensor> &outputs;      ///< detached from the recording
  const std::vector<Tensor> &output_grads; ///< undefined where no gradient arrived
  const Attrs &attrs;
  /// Which inputs want a gradient (read when the backward runs); null: all of them (a
  /// traced backward, whose unused results the compiler removes).
  const std::vector<bool> *input_needs_grad = nullptr;

  /// Whether input `i` wants a gradient: a rule may leave it undefined otherwise and skip
  /// its work (an image batch's gradient through the first convolution, PyTorch's
  /// `needs_input_grad`).
  bool wants_grad(size_t i) const { return !input_needs_grad || (*input_needs_grad)[i]; }
};

/// Gradients of the inputs from the outputs' gradients (vector-Jacobian product), one
/// per input, undefined for inputs that get none. Runs with recording paused.
using VjpFn = std::vector<Tensor> (*)(const VjpContext &context);

/// find_kernel's answers for one op, by device kind: the dispatcher asks on every call,
/// and the kernel table's entries never move once registered, so a found entry stays
/// valid (a re-registration updates it in place). Entries not found yet are asked again
/// (a GPU backend may register later). A copy starts empty.
class KernelLookupCache {
public:
  KernelLookupCache() = default;
  KernelLookupCache(const KernelLookupCache &) {}
  KernelLookupCache &operator=(const KernelLookupCache &) {
    for (auto &entry : byKind_)
      entry.store(nullptr, std::memory_order_relaxed);
    return *this;
  }
  const KernelEntry *find(const std::string &dialectOp, Device device) const {
    const auto kind = static_cast<size_t>(device.kind);
    if (kind >= byKind_.size())
      return find_kernel(dialectOp, device);
    auto &cached = byKind_[kind];
    if (const KernelEntry *entry = cached.load(std::memory_order_acquire))
      return entry;
    const KernelEntry *entry = find_kernel(dialectOp, device);
    if (entry)
      cached.store(entry, std::memory_order_release);
    return entry;
  }

private:
  mutable std::array<std::atomic<const KernelEntry *>, 8> byKind_{};
};

struct OpDef {
  std::string name;       ///< as users call it: "add"
  std::string dialect_op; ///< "dlc.add": the dialect op, and the kernels' key
  InferFn infer = nullptr;
  VjpFn vjp = nullptr;    ///< null: the outputs carry no gradient (comparisons, argmax, ...)
  /// null: plain in, plain out. Ops with a dialect op get the rule their ODS names
  /// (DLC_LayoutRule) when registered; only eager-only ops set one here.
  LayoutFn layout = nullptr;
  /// Its CPU kernels do work in proportion to the data they touch, and their results do
  /// not depend on the thread count: a call on a few KiB may run on the calling thread
  /// with one thread (TaskCost::tiny). Not for oneDNN's ops (matmul, dense, convolution,
  /// pooling, batch norm), whose sums are split by thread and whose small calls can still
  /// be much work.
  bool may_run_on_caller = false;
  KernelLookupCache kernels{}; ///< filled by the dispatcher
  /// Where users find it, for bindings that derive themselves from the registry (the
  /// Python module binds every element-wise op that has one): "np" (numpy's functions)
  /// or "npx" (MXNet's extensions); empty: bound by hand, or internal.
  std::string module = {};
};

/// `op`, marked may_run_on_caller.
inline OpDef caller_runnable(OpDef op) {
  op.may_run_on_caller = true;
  return op;
}

/// A VJP rule for ops that are differentiable but whose gradient dlc does not provide
/// (the gradient ops themselves: no second-order derivatives yet); it throws.
std::vector<Tensor> vjp_not_implemented(const VjpContext &context);

/// Whether hybridize is tracing on this thread: ops are recorded into a graph, not run.
/// Eager-only ops (`eager.*` kernels, no dialect op) cannot be traced; callers that have
/// one use the dialect's ops instead then.
bool is_tracing();

/// Adds `op` to the registry (names are unique).
void register_op(OpDef op);
/// The entry named `name`; throws dlc::Error for an unknown name.
const OpDef &find_op(const std::string &name);
/// Every registered op, by name.
std::vector<const OpDef *> all_ops();

/// Runs `op` eagerly: checks that the inputs share a device (DeviceMismatchError
/// otherwise), infers and allocates the outputs on that device (or on `device`, for ops
/// without inputs; default: the current DeviceScope), and queues the kernel there.
std::vector<Tensor> invoke(const OpDef &op, const std::vector<Tensor> &inputs,
                           const Attrs &attrs = {}, std::optional<Device> device = {});

/// Runs `op` eagerly as invoke() does, but writes its results into `outputs`: existing
/// plain tensors of the inferred shapes and dtypes on the op's device (MXNet's `out=`).
/// An output may be one of the inputs, an update in place, when the op's kernels allow
/// that aliasing (element-wise ones do: each element is read before it is written).
/// Ordered like any write: later readers see the results, earlier queued readers the old
/// values. Throws while hybridize traces or autograd records (a recording saves values
/// that an in-place write would change).
void invoke_into(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
                 const std::vector<Tensor> &outputs);
/// invoke() for an op with one output.
Tensor invoke1(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs = {},
               std::optional<Device> device = {});
/// The same for inputs written in braces (`invoke1(op, {a, b})`): they are held in a
/// vector of this thread's that keeps its capacity, not in a new one.
Tensor invoke1(const OpDef &op, std::initializer_list<Tensor> inputs, const Attrs &attrs = {},
               std::optional<Device> device = {});

namespace detail {
/// `tensor` in `layout`: itself when it already is, else a converted copy (queued like
/// any op, never recorded by autograd or hybridize: the values are the same).
Tensor in_layout(const Tensor &tensor, Layout layout);
/// `tensor` in the plain layout, which everything outside the layout-aware kernels reads.
inline Tensor plain(const Tensor &tensor) { return in_layout(tensor, Layout::plain); }
/// The layout `tensor`'s elements are in.
Layout layout_of(const Tensor &tensor);
/// Turns `tensor` itself plain (every handle of it sees the change): what a view, or a
/// write through one, needs so that it reaches the tensor's own memory. Not safe while
/// another thread uses the same tensor.
void make_plain_in_place(const Tensor &tensor);
} // namespace detail

} // namespace dlc

#endif // DLC_FRONTEND_OPREGISTRY_H
