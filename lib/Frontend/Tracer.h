//===- Tracer.h - recording a hybridized forward into a Graph (internal) ------===//
//
// While a Tracer is installed on a thread, ops do not run: invoke() gives symbolic
// results (tensors with a shape, a dtype, a device and no elements) and records a node;
// views and write-backs are recorded too. Tensors the trace did not produce become
// function arguments. Reading a traced value (item(), to_vector(), printing) throws,
// because the compiled program could not repeat a branch taken on it.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_FRONTEND_TRACER_H
#define DLC_LIB_FRONTEND_TRACER_H

#include "dlc/Compiler/Graph.h"
#include "dlc/Frontend/OpRegistry.h"
#include "AutogradInternal.h"
#include "dlc/Frontend/Trace.h"

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlc::trace {

/// One recorded call, kept to derive the backward graph: the VJP closure sees the
/// symbolic inputs and outputs, so running it under another Tracer records the backward.
struct RecordedCall {
  std::string name;
  autograd::NodeVjp vjp; // null: no gradient flows through
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

class Tracer {
public:
  explicit Tracer(compiler::Graph &graph) : graph_(graph) {}

  /// The tracer installed on this thread, or null.
  static Tracer *current();

  /// A tensor with `shape`, `dtype` and `device` whose elements never exist.
  static Tensor symbolic(const Shape &shape, DType dtype, Device device);

  /// Makes `tensor` the next argument of the graph, named `name`; returns its value.
  int add_argument(const Tensor &tensor, const std::string &name);
  /// The value of `tensor`; one the trace has not seen becomes a captured argument.
  int value(const Tensor &tensor);
  /// The value of `tensor` if the trace knows it (argument or produced), else -1.
  int find(const Tensor &tensor) const;
  /// The argument number of `tensor`, or -1.
  int argument_index(const Tensor &tensor) const;
  /// The tensors bound to the graph's arguments, in order.
  const std::vector<Tensor> &argument_tensors() const { return arguments_; }
  const std::vector<RecordedCall> &calls() const { return calls_; }
  compiler::Graph &graph() { return graph_; }

  // Hooks of the dispatcher and of Tensor.
  void record_op(const OpDef &op, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &outputs, const Attrs &attrs);
  void record_reshape(const Tensor &input, const Tensor &view, autograd::NodeVjp vjp);
  void record_update(const Tensor &source, const Tensor &target);
  /// Throws when `tensor`'s elements are traced (produced or an argument): `what`
  /// says how the code tried to read them.
  void check_readable(const Tensor &tensor, const char *what) const;
  /// Whether `tensor` was produced by an op of this trace.
  bool produced(const Tensor &tensor) const;

private:
  int define(const Tensor &tensor);
  compiler::Graph &graph_;
  std::unordered_map<const Tensor::Impl *, int> ids_;
  /// (buffer, byte offset) -> values there: views and detached aliases of known tensors.
  std::map<std::pair<const Buffer *, size_t>, std::vector<int>> places_;
  std::unordered_map<const Buffer *, std::string> producers_; // buffer -> op that made it
  std::unordered_map<const Buffer *, std::string> argumentBuffers_;
  std::vector<Tensor> arguments_;
  std::vector<Tensor> keep_; // keeps Impl pointers unique while the trace lives
  std::vector<RecordedCall> calls_;
  int captured_ = 0;
};

/// Reverse-mode differentiation of a trace: runs the VJP rules of `calls` backwards from
/// `seeds` (value -> its gradient), so that the installed tracer records the backward.
/// `lookup` maps the calls' tensors to values; `needs` (per value, usually set for some
/// arguments) is extended forward through the calls, and only those values get gradients.
/// Returns the gradient of every value reached.
std::map<int, Tensor> backpropagate(const Tracer &lookup, const std::vector<RecordedCall> &calls,
                                    std::vector<bool> needs, std::map<int, Tensor> seeds);

/// Installs `tracer` on this thread while it lives (nestable: restores the previous one).
class Install {
public:
  explicit Install(Tracer &tracer);
  ~Install();
  Install(const Install &) = delete;
  Install &operator=(const Install &) = delete;

private:
  Tracer *previous_;
};

} // namespace dlc::trace

#endif // DLC_LIB_FRONTEND_TRACER_H
