//===- Ops.cpp - the op table and what a conversion reads of its node ----------===//
#include "Ops.h"

#include <algorithm>
#include <map>

namespace dlc::onnx::detail {

OpContext::OpContext(const Node &node, int64_t opset, std::vector<const Value *> inputs,
                     bool host, Device device, std::function<Tensor(size_t)> materialize,
                     int64_t max_created_elements, Derive derive)
    : node_(node), opset_(opset), inputs_(std::move(inputs)), host_(host), device_(device),
      materialize_(std::move(materialize)), maxCreated_(max_created_elements),
      derive_(std::move(derive)) {}

Tensor OpContext::derived(const std::string &key, const std::function<Tensor()> &make) const {
  if (host_ || !derive_)
    return make().to(device_);
  return derive_(key, make);
}

const Value &OpContext::value(size_t i) const {
  if (!has(i))
    fail("input " + std::to_string(i) + " is required but left out");
  return *inputs_[i];
}

Tensor OpContext::in(size_t i) const {
  const Value &v = value(i);
  if (v.known && !host_)
    return materialize_(i);
  return v.tensor;
}

const Shape &OpContext::shape(size_t i) const { return value(i).tensor.shape(); }
DType OpContext::dtype(size_t i) const { return value(i).tensor.dtype(); }

std::vector<int64_t> OpContext::ints(size_t i) const {
  const Value &v = value(i);
  if (!v.known)
    fail("input " + std::to_string(i) + " ('" + node_.inputs[i] +
         "') is computed from tensor values; dlc needs it known when the model is imported "
         "(from constants and the inputs' shapes)");
  if (is_floating(v.tensor.dtype()))
    fail("input " + std::to_string(i) + " ('" + node_.inputs[i] + "') is " +
         dtype_name(v.tensor.dtype()) + ", expected integers");
  return v.tensor.to_vector<int64_t>();
}

std::vector<double> OpContext::floats(size_t i) const {
  const Value &v = value(i);
  if (!v.known)
    fail("input " + std::to_string(i) + " ('" + node_.inputs[i] +
         "') is computed from tensor values; dlc needs it known when the model is imported");
  return v.tensor.to_vector<double>();
}

double OpContext::scalar(size_t i) const {
  std::vector<double> values = floats(i);
  if (values.size() != 1)
    fail("input " + std::to_string(i) + " ('" + node_.inputs[i] + "') has " +
         std::to_string(values.size()) + " elements, expected one");
  return values[0];
}

const Attribute *OpContext::attr(const char *name) const {
  auto found = node_.attributes.find(name);
  return found == node_.attributes.end() ? nullptr : &found->second;
}

bool OpContext::has_attr(const char *name) const { return attr(name) != nullptr; }

namespace {
const Attribute &expectKind(const OpContext &c, const char *name, Attribute::Kind kind) {
  const Attribute *a = c.attr(name);
  if (a->kind != kind)
    c.fail(std::string("attribute '") + name + "' is " + attribute_kind_name(a->kind) +
           ", expected " + attribute_kind_name(kind));
  return *a;
}
} // namespace

int64_t OpContext::attr_int(const char *name, int64_t fallback) const {
  return has_attr(name) ? expectKind(*this, name, Attribute::Kind::int_).i : fallback;
}

double OpContext::attr_float(const char *name, double fallback) const {
  return has_attr(name) ? expectKind(*this, name, Attribute::Kind::float_).f : fallback;
}

std::string OpContext::attr_string(const char *name, const std::string &fallback) const {
  return has_attr(name) ? expectKind(*this, name, Attribute::Kind::string).s : fallback;
}

std::vector<int64_t> OpContext::attr_ints(const char *name, std::vector<int64_t> fallback) const {
  return has_attr(name) ? expectKind(*this, name, Attribute::Kind::ints).ints : fallback;
}

std::vector<double> OpContext::attr_floats(const char *name) const {
  return has_attr(name) ? expectKind(*this, name, Attribute::Kind::floats).floats
                        : std::vector<double>{};
}

void OpContext::fail(const std::string &what) const {
  throw UnsupportedError(node_.label() + ", opset " + std::to_string(opset_) + ": " + what);
}

Shape OpContext::broadcast(const Shape &a, const Shape &b) const {
  shape_rules::Inferred joined = shape_rules::broadcast(a, b);
  if (!joined.ok())
    fail("shapes " + shape_rules::str(a) + " and " + shape_rules::str(b) +
         " do not broadcast: " + joined.error);
  return joined.shape;
}

const Shape &OpContext::creatable(const Shape &shape) const {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      fail("shape " + shape_rules::str(shape) + " has a negative dimension");
    if (d > 0 && count > maxCreated_ / d)
      fail("shape " + shape_rules::str(shape) + " has more than " +
           std::to_string(maxCreated_) + " elements (ImportOptions::max_created_elements)");
    count *= d;
  }
  return shape;
}

int64_t OpContext::axis(int64_t axis, int64_t rank, const char *what) const {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    fail(std::string(what) + " " + std::to_string(axis) + " is outside [" +
         std::to_string(-rank) + ", " + std::to_string(rank) + ") for rank " +
         std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

const std::vector<OpSpec> &op_specs() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> all;
    add_elementwise_ops(all);
    add_nn_ops(all);
    add_tensor_ops(all);
    add_reduce_ops(all);
    add_resize_ops(all);
    add_pool_ops(all);
    std::sort(all.begin(), all.end(),
              [](const OpSpec &a, const OpSpec &b) { return a.type < b.type; });
    return all;
  }();
  return specs;
}

const OpSpec *find_op_spec(const std::string &type) {
  static const std::map<std::string, const OpSpec *> byType = [] {
    std::map<std::string, const OpSpec *> map;
    for (const OpSpec &spec : op_specs())
      map[spec.type] = &spec;
    return map;
  }();
  auto found = byType.find(type);
  return found == byType.end() ? nullptr : found->second;
}

} // namespace dlc::onnx::detail
