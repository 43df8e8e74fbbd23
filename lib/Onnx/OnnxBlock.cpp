//===- OnnxBlock.cpp - an ONNX graph as a HybridBlock ---------------------------===//
//
// Import decides, once, what every value is (docs/design/onnx.md):
//   - constant: an initializer, a Constant node, or a node of constants only, computed
//     now on the host (constant folding);
//   - known: computed from constants and input shapes (Shape, and what exporters do with
//     it); such nodes run on the host at every call, outside any trace;
//   - a tensor of the program.
// A constant that a tensor-computing node reads as data becomes a parameter of the block
// (floating-point ones of more than one element train; integer ones and running
// statistics do not); one-element constants become constants of the trace.
//
//===----------------------------------------------------------------------===//
#include "dlc/Onnx/Import.h"

#include "Ops.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/Trace.h"
#include "dlc/Gluon/Initializer.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace dlc::onnx {

using detail::OpContext;
using detail::OpKind;
using detail::OpSpec;
using detail::Value;

namespace {

/// A parameter's values as the file gave them.
struct FromFile : init::Initializer {
  explicit FromFile(Tensor value) : value(std::move(value)) {}
  Tensor make(const std::string &, const Shape &, DType dtype, Device device) const override {
    Tensor copy = value.copyto(device);
    return copy.dtype() == dtype ? copy : copy.astype(dtype);
  }
  std::string str() const override { return "FromFile"; }
  Tensor value;
};

/// A known value as a tensor of the program on `device`: a constant of the trace when
/// all its elements are equal, else a copy (which a trace captures).
Tensor materialize(const Tensor &known, Device device) {
  std::vector<double> values = known.to_vector<double>();
  bool splat = !values.empty() &&
               std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
  if (splat || values.empty())
    return np::full(known.shape(), values.empty() ? 0.0 : values[0], known.dtype(), device);
  return known.copyto(device);
}

bool moreThan2To31(const Shape &shape) {
  constexpr int64_t kMost = int64_t(1) << 31;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d > 0 && count > kMost / d)
      return true;
    count *= d;
  }
  return false;
}

bool isFloatingSplat(const Tensor &t) {
  return is_floating(t.dtype()) && t.size() <= 1;
}

std::string describe(const ValueInfo &v) {
  std::string dims;
  for (size_t a = 0; a < v.dims.size(); ++a) {
    if (a)
      dims += "x";
    dims += v.dims[a] >= 0 ? std::to_string(v.dims[a])
                           : (v.dim_names[a].empty() ? "?" : v.dim_names[a]);
  }
  return "'" + v.name + "' " + (v.dtype ? dtype_name(*v.dtype) : onnx_dtype_name(v.onnx_dtype)) +
         (v.has_shape ? " " + (dims.empty() ? std::string("scalar") : dims) : "");
}

} // namespace

struct OnnxBlock::Plan {
  struct Step {
    const Node *node;
    const OpSpec *spec;
    bool host;
    std::vector<int> inputs; ///< value ids; -1: left out
    std::vector<int> outputs;
  };
  std::vector<std::string> names;
  std::unordered_map<std::string, int> ids;
  std::vector<Step> steps;
  std::unordered_map<int, Tensor> constants; ///< host tensors
  std::unordered_map<int, gluon::ParameterPtr> parameters;
  /// What conversions derive (OpContext::derived), by parameter name: made at the first
  /// call that needs them, held as parameters that never train.
  std::map<std::string, gluon::ParameterPtr> derived;
  std::vector<int> inputs, outputs;

  int id(const std::string &name) {
    auto [it, inserted] = ids.emplace(name, int(names.size()));
    if (inserted)
      names.push_back(name);
    return it->second;
  }
};

namespace {

/// Runs one node on known values, on the host, outside any trace or recording.
std::vector<Tensor> runOnHost(const Node &node, const OpSpec &spec, int64_t opset,
                              const std::vector<const Value *> &inputs, int64_t maxCreated) {
  std::optional<trace::Pause> untraced;
  if (trace::active())
    untraced.emplace();
  autograd::Pause unrecorded;
  OpContext context(node, opset, inputs, /*host=*/true, npx::cpu(0),
                    [](size_t) -> Tensor { return Tensor(); }, maxCreated);
  return spec.run(context);
}

/// A model older than kOldestOpset imports when each of its nodes means what it means at
/// kOldestOpset: ONNX has not changed the op's definition between the two.
std::optional<std::string> changedSinceModel(const Node &node, int64_t opset) {
  if (opset >= kOldestOpset)
    return std::nullopt;
  int64_t then = op_version(node.op_type, opset), oldest = op_version(node.op_type, kOldestOpset);
  if (then == 0)
    return "ONNX has no " + node.op_type + " at opset " + std::to_string(opset);
  if (then == oldest)
    return std::nullopt;
  return node.op_type + "-" + std::to_string(then) + " differs from " + node.op_type + "-" +
         std::to_string(oldest) + ", the oldest definition dlc imports " +
         "(onnx.version_converter converts the model to opset " + std::to_string(kOldestOpset) +
         " or later)";
}

void checkSupported(const Model &model, int64_t opset, const std::string &source) {
  std::vector<std::string> problems;
  for (const Node &node : model.graph.nodes) {
    std::string where = node.label() + ", opset " + std::to_string(model.opset) + ": ";
    if (!node.domain.empty()) {
      problems.push_back(where + "domain '" + node.domain + "' (dlc imports ONNX's own ops)");
      continue;
    }
    const OpSpec *spec = detail::find_op_spec(node.op_type);
    if (!spec) {
      problems.push_back(where + "no conversion for " + node.op_type);
      continue;
    }
    if (std::optional<std::string> changed = changedSinceModel(node, model.opset)) {
      problems.push_back(where + *changed);
      continue;
    }
    if (opset < spec->since) {
      problems.push_back(where + node.op_type + " is imported from opset " +
                         std::to_string(spec->since));
      continue;
    }
    for (const auto &[name, attribute] : node.attributes)
      if (std::find(spec->attributes.begin(), spec->attributes.end(), name) ==
          spec->attributes.end())
        problems.push_back(where + "attribute '" + name + "' (dlc's " + node.op_type +
                           " reads " +
                           (spec->attributes.empty() ? std::string("none")
                                                     : [&] {
                                                         std::string all;
                                                         for (const std::string &a : spec->attributes)
                                                           all += (all.empty() ? "" : ", ") + a;
                                                         return all;
                                                       }()) +
                           ")");
  }
  if (problems.empty())
    return;
  std::string text = source + ": " + std::to_string(problems.size()) +
                      (problems.size() == 1 ? " problem stops" : " problems stop") +
                      " the import:";
  for (size_t i = 0; i < problems.size() && i < 20; ++i)
    text += "\n  " + problems[i];
  if (problems.size() > 20)
    text += "\n  ... and " + std::to_string(problems.size() - 20) + " more";
  throw UnsupportedError(text);
}

} // namespace

OnnxBlock::OnnxBlock(Model model, std::string source, const ImportOptions &options)
    : model_(std::move(model)), source_(std::move(source)),
      maxCreated_(options.max_created_elements), plan_(std::make_unique<Plan>()) {
  if (model_.opset == 0 && !model_.other_opsets.empty())
    throw UnsupportedError(source_ + ": imports no opset of ONNX's own domain, only '" +
                           model_.other_opsets.begin()->first + "'");
  if (model_.opset < 1 || model_.opset > kNewestOpset)
    throw UnsupportedError(source_ + ": opset " + std::to_string(model_.opset) +
                           " of ONNX's domain; dlc imports opsets " +
                           std::to_string(kOldestOpset) + " to " + std::to_string(kNewestOpset) +
                           ", and older ones whose ops have not changed since (" +
                           "onnx.version_converter converts between them)");
  opset_ = std::max(model_.opset, kOldestOpset);
  checkSupported(model_, opset_, source_);
  Plan &plan = *plan_;
  const Graph &graph = model_.graph;

  std::set<std::string> initialized;
  for (const auto &[name, tensor] : graph.initializers) {
    plan.constants[plan.id(name)] = tensor;
    initialized.insert(name);
  }
  std::set<std::string> given;
  for (const ValueInfo &input : graph.inputs) {
    if (initialized.count(input.name))
      continue; // IR < 4 lists initializers among the inputs
    ValueInfo v = input;
    if (auto value = options.input_values.find(v.name); value != options.input_values.end()) {
      const Tensor &t = value->second;
      bool fits = (!v.dtype || t.dtype() == *v.dtype) &&
                  (!v.has_shape || t.ndim() == int64_t(v.dims.size()));
      for (size_t a = 0; fits && v.has_shape && a < v.dims.size(); ++a)
        fits = v.dims[a] < 0 || v.dims[a] == t.shape()[a];
      if (!fits)
        throw ValueError(source_ + ": the value given for input " + describe(v) + " is " +
                         dtype_name(t.dtype()) + " " + shape_rules::str(t.shape()));
      plan.constants[plan.id(v.name)] = t.to(npx::cpu(0));
      given.insert(v.name);
      continue;
    }
    if (!v.dtype)
      throw UnsupportedError(source_ + ": input " + describe(v) + ": dtype " +
                             onnx_dtype_name(v.onnx_dtype) + " is not one dlc has");
    auto shape = options.input_shapes.find(v.name);
    if (shape != options.input_shapes.end()) {
      if (v.has_shape && shape->second.size() != v.dims.size())
        throw ValueError(source_ + ": --input-shape " + v.name + "=" +
                         shape_rules::str(shape->second) + " for input " + describe(v) +
                         " of another rank");
      for (size_t a = 0; v.has_shape && a < v.dims.size(); ++a)
        if (v.dims[a] >= 0 && shape->second[a] >= 0 && v.dims[a] != shape->second[a])
          throw ValueError(source_ + ": --input-shape " + v.name + "=" +
                           shape_rules::str(shape->second) + " contradicts input " + describe(v));
      v.has_shape = true;
      v.dims = shape->second;
      v.dim_names.resize(v.dims.size());
    }
    given.insert(v.name);
    plan.inputs.push_back(plan.id(v.name));
    inputs_.push_back(std::move(v));
  }
  std::vector<std::string> named;
  for (const auto &entry : options.input_shapes)
    named.push_back(entry.first);
  for (const auto &entry : options.input_values)
    named.push_back(entry.first);
  for (const std::string &name : named)
    if (!given.count(name)) {
      std::string names;
      for (const ValueInfo &v : inputs_)
        names += (names.empty() ? " " : ", ") + describe(v);
      throw ValueError(source_ + ": '" + name +
                       "' is given a shape or value but is not an input of the model (its "
                       "inputs:" + names + ")");
    }

  // What every value is, node by node (ONNX lists nodes in topological order).
  std::set<int> defined(plan.inputs.begin(), plan.inputs.end());
  std::set<int> known; // constants and values computed from them and shapes
  for (const auto &[id, tensor] : plan.constants) {
    defined.insert(id);
    known.insert(id);
  }
  std::map<int, std::pair<const OpSpec *, size_t>> readAsData; // constant -> a reader
  std::set<int> readOnHost;
  for (const Node &node : graph.nodes) {
    const OpSpec *spec = detail::find_op_spec(node.op_type);
    Plan::Step step{&node, spec, false, {}, {}};
    bool allKnown = true, allConstant = true;
    for (const std::string &name : node.inputs) {
      if (name.empty()) {
        step.inputs.push_back(-1);
        continue;
      }
      int id = plan.id(name);
      if (!defined.count(id))
        throw ValueError(source_ + ": " + node.label() + " reads '" + name +
                         "', which no input, initializer or earlier node gives (the nodes "
                         "must be in topological order)");
      step.inputs.push_back(id);
      allKnown = allKnown && known.count(id);
      allConstant = allConstant && plan.constants.count(id);
    }
    for (const std::string &name : node.outputs) {
      if (!name.empty() && defined.count(plan.id(name)))
        throw ValueError(source_ + ": " + node.label() + " writes '" + name +
                         "', which an input, initializer or earlier node already gives "
                         "(ONNX values are written once)");
      step.outputs.push_back(name.empty() ? -1 : plan.id(name));
    }
    step.host = spec->kind == OpKind::shape_only || (spec->kind == OpKind::pure && allKnown);
    bool host = step.host, fold = host && allConstant;
    if (fold) {
      std::vector<const Value *> inputs;
      std::vector<Value> held;
      held.reserve(step.inputs.size());
      for (int id : step.inputs) {
        if (id < 0) {
          inputs.push_back(nullptr);
          continue;
        }
        held.push_back({plan.constants.at(id), true});
        inputs.push_back(&held.back());
      }
      std::vector<Tensor> results = runOnHost(node, *spec, opset_, inputs, maxCreated_);
      for (size_t j = 0; j < step.outputs.size(); ++j) {
        if (step.outputs[j] < 0)
          continue;
        if (j >= results.size() || !results[j].defined())
          throw UnsupportedError(source_ + ": " + node.label() + ": output " +
                                 std::to_string(j) + " ('" + node.outputs[j] +
                                 "') is not produced by dlc's conversion");
        plan.constants[step.outputs[j]] = results[j];
      }
      for (int id : step.inputs)
        if (id >= 0)
          readOnHost.insert(id);
    } else {
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        int id = step.inputs[i];
        if (id < 0)
          continue;
        bool hostInput = std::find(spec->host_inputs.begin(), spec->host_inputs.end(), i) !=
                         spec->host_inputs.end();
        if (hostInput && !known.count(id))
          throw UnsupportedError(source_ + ": " + node.label() + ", opset " +
                                 std::to_string(model_.opset) + ": input " + std::to_string(i) +
                                 " ('" + node.inputs[i] +
                                 "') is computed from tensor values; dlc needs it known when "
                                 "the model is imported (from constants and input shapes)");
        if (step.host || hostInput)
          readOnHost.insert(id);
        else if (plan.constants.count(id) && !readAsData.count(id))
          readAsData[id] = {spec, i};
      }
      plan.steps.push_back(std::move(step));
    }
    for (const std::string &name : node.outputs)
      if (!name.empty()) {
        int id = plan.id(name);
        defined.insert(id);
        if (host)
          known.insert(id);
      }
  }

  // Constants read as data: parameters, or constants of the trace.
  for (const auto &[id, reader] : readAsData) {
    const Tensor &value = plan.constants.at(id);
    if (isFloatingSplat(value) || (!is_floating(value.dtype()) && value.size() <= 1))
      continue; // materialized at each call as a constant of the trace
    const OpSpec &spec = *reader.first;
    bool frozen = std::find(spec.frozen_inputs.begin(), spec.frozen_inputs.end(),
                            reader.second) != spec.frozen_inputs.end();
    GradReq req = is_floating(value.dtype()) && !frozen ? GradReq::write : GradReq::null;
    auto parameter = std::make_shared<gluon::Parameter>(
        plan.names[size_t(id)], value.shape(), value.dtype(), std::make_shared<FromFile>(value),
        req);
    parameter->initialize(nullptr, {npx::cpu(0)});
    register_parameter(plan.names[size_t(id)], parameter);
    plan.parameters[id] = parameter;
    if (!readOnHost.count(id))
      plan.constants.erase(id); // the parameter holds it
  }

  for (const ValueInfo &output : graph.outputs) {
    int id = plan.id(output.name);
    if (!defined.count(id))
      throw ValueError(source_ + ": output '" + output.name + "' is produced by no node");
    plan.outputs.push_back(id);
  }
}

OnnxBlock::~OnnxBlock() = default;

Tensor OnnxBlock::derivedParameter(const std::string &name, const std::function<Tensor()> &make,
                                   Device device) {
  gluon::ParameterPtr &held = plan_->derived[name];
  if (!held) {
    // Made outside any trace or recording: a weight of the program, not a step of it.
    std::optional<trace::Pause> untraced;
    if (trace::active())
      untraced.emplace();
    autograd::Pause unrecorded;
    Tensor value = make();
    held = std::make_shared<gluon::Parameter>(name, value.shape(), value.dtype(),
                                              std::make_shared<FromFile>(value), GradReq::null);
    held->initialize(nullptr, {device});
    register_parameter(name, held);
  }
  std::vector<Device> devices = held->list_devices();
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    devices.push_back(device);
    held->reset_device(devices);
  }
  return held->data(device);
}

std::vector<Tensor> OnnxBlock::forward_multi(const std::vector<Tensor> &given) {
  Plan &plan = *plan_;
  if (given.size() != inputs_.size()) {
    std::string names;
    for (const ValueInfo &v : inputs_)
      names += " " + describe(v);
    throw ValueError(source_ + ": called with " + std::to_string(given.size()) +
                     " inputs, the model takes " + std::to_string(inputs_.size()) + ":" + names);
  }
  std::vector<Value> values(plan.names.size());
  Device device = given.empty() ? npx::cpu(0) : given[0].device();
  for (size_t i = 0; i < given.size(); ++i) {
    const ValueInfo &v = inputs_[i];
    const Tensor &x = given[i];
    bool fits = x.dtype() == *v.dtype && (!v.has_shape || x.ndim() == int64_t(v.dims.size()));
    for (size_t a = 0; fits && v.has_shape && a < v.dims.size(); ++a)
      fits = v.dims[a] < 0 || v.dims[a] == x.shape()[a];
    if (!fits)
      throw ShapeError(source_ + ": input " + std::to_string(i) + " is " + dtype_name(x.dtype()) +
                       " " + shape_rules::str(x.shape()) + ", the model declares " +
                       describe(v));
    if (x.device() != device)
      throw DeviceMismatchError(source_ + ": input " + std::to_string(i) + " is on " +
                                x.device().str() + ", input 0 on " + device.str());
    values[size_t(plan.inputs[i])] = {x, false};
  }
  for (const auto &[id, tensor] : plan.constants)
    values[size_t(id)] = {tensor, true};
  for (const auto &[id, parameter] : plan.parameters)
    values[size_t(id)] = {parameter->data(device), false, true};

  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const Plan::Step &step = plan.steps[index];
    std::vector<const Value *> inputs;
    for (int id : step.inputs)
      inputs.push_back(id < 0 ? nullptr : &values[size_t(id)]);
    std::vector<Tensor> results;
    try {
      if (step.host) {
        results = runOnHost(*step.node, *step.spec, opset_, inputs, maxCreated_);
      } else {
        const Node &node = *step.node;
        OpContext context(
            node, opset_, inputs, false, device,
            [&](size_t i) { return materialize(inputs[i]->tensor, device); }, maxCreated_,
            [&](const std::string &key, const std::function<Tensor()> &make) {
              // Named after the node's first output (a file may leave it unnamed).
              std::string owner = !node.outputs.empty() && !node.outputs[0].empty()
                                      ? node.outputs[0]
                                      : "node" + std::to_string(index);
              return derivedParameter(owner + "." + key, make, device);
            });
        results = step.spec->run(context);
      }
    } catch (const UnsupportedError &) {
      throw;
    } catch (const DTypeError &e) {
      // A dtype an op of dlc's does not take: the model needs what dlc lacks.
      throw UnsupportedError(source_ + ": " + step.node->label() + ", opset " +
                             std::to_string(model_.opset) + ": " + e.what());
    } catch (const Error &e) {
      throw Error(source_ + ": " + step.node->label() + ", opset " +
                  std::to_string(model_.opset) + ": " + e.what());
    }
    for (size_t j = 0; j < step.outputs.size(); ++j) {
      if (step.outputs[j] < 0)
        continue;
      if (j >= results.size() || !results[j].defined())
        throw UnsupportedError(source_ + ": " + step.node->label() + ": output " +
                               std::to_string(j) + " ('" + step.node->outputs[j] +
                               "') is not produced by dlc's conversion");
      values[size_t(step.outputs[j])] = {results[j], step.host};
    }
  }
  std::vector<Tensor> out;
  for (int id : plan.outputs) {
    const Value &v = values[size_t(id)];
    out.push_back(v.known ? materialize(v.tensor, device) : v.tensor);
  }
  return out;
}

Tensor OnnxBlock::forward(const Tensor &x) {
  if (model_.graph.outputs.size() != 1)
    throw ValueError(source_ + ": the model has " + std::to_string(model_.graph.outputs.size()) +
                     " outputs; call it with forward_multi (net({x}) in C++, a list in Python)");
  return forward_multi({x})[0];
}

std::vector<Tensor> OnnxBlock::example_inputs(Device device) const {
  std::vector<Tensor> out;
  for (const ValueInfo &v : inputs_) {
    bool open = !v.has_shape || std::any_of(v.dims.begin(), v.dims.end(),
                                            [](int64_t d) { return d < 0; });
    if (open)
      throw ValueError(source_ + ": input " + describe(v) +
                       " leaves its shape open; give it (--input-shape " + v.name +
                       "=1x3x224x224, ImportOptions::input_shapes)");
    if (moreThan2To31(v.dims))
      throw ValueError(source_ + ": input " + describe(v) + " has more than 2^31 elements");
    out.push_back(np::zeros(v.dims, *v.dtype, device));
  }
  return out;
}

void export_traced(OnnxBlock &block, const std::string &prefix) {
  std::vector<Tensor> inputs = block.example_inputs(npx::cpu(0));
  bool was = block.hybridized();
  if (!was)
    block.hybridize(true, block.compile_options());
  autograd::Pause predicting;
  block(inputs);
  block.export_model(prefix);
  if (!was)
    block.hybridize(false);
}

std::string OnnxBlock::str(int) const {
  std::ostringstream os;
  os << "OnnxBlock(" << source_ << ": " << model_.graph.nodes.size() << " nodes, opset "
     << model_.opset << ", " << plan_->parameters.size() << " parameters; inputs";
  for (const ValueInfo &v : inputs_)
    os << " " << describe(v);
  os << "; outputs";
  for (const ValueInfo &v : model_.graph.outputs)
    os << " " << describe(v);
  os << ")";
  return os.str();
}

std::shared_ptr<OnnxBlock> import(Model model, const std::string &source,
                                  const ImportOptions &options) {
  return std::make_shared<OnnxBlock>(std::move(model), source, options);
}

std::shared_ptr<OnnxBlock> import(const std::string &path, const ImportOptions &options) {
  return import(read_model(path), path, options);
}

std::vector<SupportedOp> supported_ops() {
  std::vector<SupportedOp> out;
  for (const OpSpec &spec : detail::op_specs())
    out.push_back({spec.type, spec.since, spec.attributes, spec.note});
  return out;
}

void parse_input_shape(const std::string &text, std::map<std::string, Shape> &into) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw ValueError("--input-shape '" + text + "': expected NAME=1x3x224x224");
  Shape shape;
  std::string dims = text.substr(eq + 1);
  size_t start = 0;
  while (start <= dims.size()) {
    size_t x = dims.find('x', start);
    std::string part = dims.substr(start, x == std::string::npos ? std::string::npos : x - start);
    try {
      size_t used = 0;
      long long d = std::stoll(part, &used);
      if (used != part.size() || d < -1)
        throw std::invalid_argument(part);
      shape.push_back(d);
    } catch (const std::exception &) {
      throw ValueError("--input-shape '" + text + "': '" + part +
                       "' is not a dimension (a size, or -1 to leave it open)");
    }
    if (x == std::string::npos)
      break;
    start = x + 1;
  }
  into[text.substr(0, eq)] = shape;
}

} // namespace dlc::onnx
