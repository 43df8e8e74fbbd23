//===- Ops.h - how each ONNX op runs with dlc's ops (internal) -----------------===//
//
// One OpSpec per ONNX op type: the function that runs a node with dlc's eager ops, the
// inputs it needs known when the model is imported (a Reshape's target, a Slice's
// bounds), and the attributes it reads (any other attribute on a node is refused at
// import, by name). The same function runs on the device, inside a trace, and on host
// values while shapes are computed.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_ONNX_OPS_H
#define DLC_LIB_ONNX_OPS_H

#include "dlc/Onnx/OnnxFile.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlc::onnx::detail {

/// What a value is while the graph runs: a tensor of the program, or `known` (made of
/// constants and input shapes only, a host tensor that a trace does not record).
struct Value {
  Tensor tensor;
  bool known = false;
  bool parameter = false; ///< a parameter of the block (a weight the file gave)
};

/// Gives the tensor a conversion derives under a key, making it (the function) only once.
using Derive = std::function<Tensor(const std::string &key, const std::function<Tensor()> &)>;

class OpContext {
public:
  /// `materialize` turns a known input into a tensor on the device (device-mode nodes);
  /// `derive` holds what derived() makes (none: made at each call).
  OpContext(const Node &node, int64_t opset, std::vector<const Value *> inputs, bool host,
            Device device, std::function<Tensor(size_t)> materialize,
            int64_t max_created_elements, Derive derive = nullptr);

  const Node &node() const { return node_; }
  int64_t opset() const { return opset_; }
  /// Whether the node runs on known values (on the host, not traced).
  bool on_host() const { return host_; }
  Device device() const { return device_; }

  size_t size() const { return inputs_.size(); }
  /// Whether input `i` is given (optional inputs may be left out or named "").
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Input `i` as a tensor to compute with; throws when it is left out.
  Tensor in(size_t i) const;
  /// Input `i` if given, else an undefined tensor.
  Tensor optional(size_t i) const { return has(i) ? in(i) : Tensor(); }
  /// Whether input `i` is given and known (made of constants and input shapes only).
  bool known(size_t i) const { return has(i) && inputs_[i]->known; }
  /// Whether input `i` is one of the block's parameters: work on it alone is done once
  /// per change of the parameter in compiled programs (prepare_parameters).
  bool parameter(size_t i) const { return has(i) && inputs_[i]->parameter; }
  const Shape &shape(size_t i) const;
  DType dtype(size_t i) const;
  /// A known input's values (an op's shape, axes, bounds); throws when the input is
  /// computed from tensors, saying it must be known at import.
  std::vector<int64_t> ints(size_t i) const;
  std::vector<double> floats(size_t i) const;
  double scalar(size_t i) const;

  bool has_attr(const char *name) const;
  int64_t attr_int(const char *name, int64_t fallback) const;
  double attr_float(const char *name, double fallback) const;
  std::string attr_string(const char *name, const std::string &fallback) const;
  std::vector<int64_t> attr_ints(const char *name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(const char *name) const;
  const Attribute *attr(const char *name) const;

  /// An UnsupportedError naming the node, its op type and opset, and `what`.
  [[noreturn]] void fail(const std::string &what) const;
  /// Numpy broadcasting of two shapes; fails naming both when they do not broadcast.
  Shape broadcast(const Shape &a, const Shape &b) const;
  /// Fails for a shape a conversion is to create (a ConstantOfShape's, an Expand's) with
  /// a negative dimension or more elements than ImportOptions::max_created_elements: a
  /// file's numbers, not memory yet.
  const Shape &creatable(const Shape &shape) const;
  /// An axis in [-rank, rank) made non-negative; fails naming `what` otherwise.
  int64_t axis(int64_t axis, int64_t rank, const char *what = "axis") const;

  /// A tensor the conversion computes on the host from what the import knows (shapes,
  /// attributes, known inputs), such as Resize's interpolation matrices; `key` must name
  /// everything it depends on. On the device the block holds it as a parameter that never
  /// trains, made once per key: traced programs bind it as a weight and model files carry
  /// it (a tensor made afresh inside a trace would be captured, which export refuses).
  Tensor derived(const std::string &key, const std::function<Tensor()> &make) const;

private:
  const Value &value(size_t i) const;
  const Node &node_;
  int64_t opset_;
  std::vector<const Value *> inputs_;
  bool host_;
  Device device_;
  std::function<Tensor(size_t)> materialize_;
  int64_t maxCreated_;
  Derive derive_;
};

using Convert = std::function<std::vector<Tensor>(OpContext &)>;

enum class OpKind {
  pure,       ///< outputs depend on the inputs only: runs on the host when they are known
  shape_only, ///< reads only its inputs' shapes (Shape, Size): always known
  random,     ///< draws random numbers: always runs on the device
};

struct OpSpec {
  OpSpec(std::string type, int64_t since, Convert run, std::vector<size_t> host_inputs = {},
         std::vector<std::string> attributes = {}, OpKind kind = OpKind::pure,
         std::vector<size_t> frozen_inputs = {}, std::string note = "")
      : type(std::move(type)), since(since), run(std::move(run)),
        host_inputs(std::move(host_inputs)), attributes(std::move(attributes)), kind(kind),
        frozen_inputs(std::move(frozen_inputs)), note(std::move(note)) {}

  std::string type;
  int64_t since = 11; ///< the first opset dlc imports it at
  Convert run;
  std::vector<size_t> host_inputs;       ///< needed known at import
  std::vector<std::string> attributes;   ///< read; any other is refused
  OpKind kind = OpKind::pure;
  std::vector<size_t> frozen_inputs;     ///< parameters that never train (running stats)
  std::string note;                      ///< what is not covered, for docs/onnx.md
};

/// The table, built once from the Ops*.cpp files.
const std::vector<OpSpec> &op_specs();
const OpSpec *find_op_spec(const std::string &type);

void add_elementwise_ops(std::vector<OpSpec> &specs);
void add_nn_ops(std::vector<OpSpec> &specs);
void add_tensor_ops(std::vector<OpSpec> &specs);
void add_reduce_ops(std::vector<OpSpec> &specs);
void add_resize_ops(std::vector<OpSpec> &specs);
void add_pool_ops(std::vector<OpSpec> &specs);

} // namespace dlc::onnx::detail

#endif // DLC_LIB_ONNX_OPS_H
