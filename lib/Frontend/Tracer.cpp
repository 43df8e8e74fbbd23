//===- Tracer.cpp - recording ops into a Graph --------------------------------===//
#include "Tracer.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::trace {

namespace {
thread_local Tracer *installed = nullptr;

const char *kUnhybridize =
    "; a compiled program cannot repeat what the trace saw. Call hybridize(false) on that "
    "block, or move this code out of its forward";
} // namespace

Tracer *Tracer::current() { return installed; }

Install::Install(Tracer &tracer) : previous_(installed) { installed = &tracer; }
Install::~Install() { installed = previous_; }

Tensor Tracer::symbolic(const Shape &shape, DType dtype, Device device) {
  auto impl = std::make_shared<Tensor::Impl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->buffer = std::make_shared<Buffer>(allocate(device, 0));
  return Tensor(std::move(impl));
}

int Tracer::define(const Tensor &tensor) {
  int id = graph_.add_value(tensor.shape(), tensor.dtype());
  ids_[tensor.impl().get()] = id;
  places_[{tensor.buffer().get(), tensor.impl()->offset}].push_back(id);
  keep_.push_back(tensor);
  return id;
}

int Tracer::add_argument(const Tensor &tensor, const std::string &name) {
  int id = define(tensor);
  graph_.arguments.push_back({id, name});
  arguments_.push_back(tensor);
  argumentBuffers_[tensor.buffer().get()] = name;
  return id;
}

int Tracer::find(const Tensor &tensor) const {
  auto it = ids_.find(tensor.impl().get());
  if (it != ids_.end())
    return it->second;
  auto place = places_.find({tensor.buffer().get(), tensor.impl()->offset});
  if (place != places_.end())
    for (int id : place->second)
      if (graph_.values[size_t(id)].shape == tensor.shape() &&
          graph_.values[size_t(id)].dtype == tensor.dtype())
        return id;
  return -1;
}

int Tracer::argument_index(const Tensor &tensor) const {
  int id = find(tensor);
  for (size_t i = 0; i < graph_.arguments.size(); ++i)
    if (graph_.arguments[i].value == id && id >= 0)
      return int(i);
  return -1;
}

int Tracer::value(const Tensor &tensor) {
  int known = find(tensor);
  if (known >= 0) {
    ids_[tensor.impl().get()] = known;
    keep_.push_back(tensor);
    return known;
  }
  auto place = places_.find({tensor.buffer().get(), tensor.impl()->offset});
  if (place != places_.end()) {
    // Another view of a known value (same elements, another shape): a reshape.
    int base = place->second.front();
    const compiler::GraphValue &from = graph_.values[size_t(base)];
    if (shape_rules::numElements(from.shape) == tensor.size() && from.dtype == tensor.dtype()) {
      int id = define(tensor);
      graph_.nodes.push_back({ops::reshape, "reshape", Attrs{{"shape", tensor.shape()}},
                              {base}, {id}});
      return id;
    }
  }
  auto producer = producers_.find(tensor.buffer().get());
  if (producer != producers_.end())
    throw UnsupportedError("hybridize: a slice of the value of '" + producer->second +
                           "' is used inside the traced forward; slicing traced values is not "
                           "compiled yet" + std::string(kUnhybridize));
  return add_argument(tensor, "captured." + std::to_string(captured_++));
}

void Tracer::record_op(const OpDef &op, const std::vector<Tensor> &inputs,
                       const std::vector<Tensor> &outputs, const Attrs &attrs) {
  if (op.dialect_op.rfind("dlc.", 0) != 0)
    throw UnsupportedError("hybridize: '" + op.name +
                           "' has no op in the dlc dialect, so it cannot run inside a "
                           "hybridized block" + std::string(kUnhybridize));
  compiler::GraphNode node;
  node.op = op.dialect_op;
  node.name = op.name;
  node.attrs = attrs;
  for (const Tensor &input : inputs)
    node.inputs.push_back(value(input));
  for (const Tensor &output : outputs) {
    node.outputs.push_back(define(output));
    producers_[output.buffer().get()] = op.name;
  }
  graph_.nodes.push_back(std::move(node));

  RecordedCall call{op.name, nullptr, inputs, outputs};
  if (op.vjp) {
    const OpDef *def = &op;
    call.vjp = [def, inputs, outputs, attrs](const std::vector<Tensor> &grads) {
      VjpContext context{def->name, inputs, outputs, grads, attrs};
      return def->vjp(context);
    };
  }
  calls_.push_back(std::move(call));
}

void Tracer::record_reshape(const Tensor &input, const Tensor &view, autograd::NodeVjp vjp) {
  int in = value(input);
  int out = graph_.add_value(view.shape(), view.dtype());
  ids_[view.impl().get()] = out;
  places_[{view.buffer().get(), view.impl()->offset}].push_back(out);
  keep_.push_back(view);
  graph_.nodes.push_back({ops::reshape, "reshape", Attrs{{"shape", view.shape()}}, {in}, {out}});
  calls_.push_back({"reshape", std::move(vjp), {input}, {view}});
}

void Tracer::record_update(const Tensor &source, const Tensor &target) {
  if (produced(target))
    throw UnsupportedError("hybridize: copyto() into a value computed inside the traced "
                           "forward (from '" + producers_.at(target.buffer().get()) +
                           "') is not compiled" + std::string(kUnhybridize));
  int from = value(source);
  value(target);
  int argument = argument_index(target);
  graph_.updates.push_back({from, argument});
}

bool Tracer::produced(const Tensor &tensor) const {
  return producers_.count(tensor.buffer().get()) != 0;
}

void Tracer::check_readable(const Tensor &tensor, const char *what) const {
  const Buffer *buffer = tensor.buffer().get();
  auto producer = producers_.find(buffer);
  if (producer != producers_.end())
    throw Error(std::string(what) + " inside a hybridized forward: the value comes from '" +
                producer->second + "', which is traced, not computed" + kUnhybridize);
  auto argument = argumentBuffers_.find(buffer);
  if (argument != argumentBuffers_.end())
    throw Error(std::string(what) + " inside a hybridized forward: '" + argument->second +
                "' is an argument of the traced program, its values differ on every call" +
                kUnhybridize);
}

} // namespace dlc::trace

namespace dlc::trace {

std::map<int, Tensor> backpropagate(const Tracer &lookup, const std::vector<RecordedCall> &calls,
                                    std::vector<bool> needs, std::map<int, Tensor> grads) {
  auto id = [&](const Tensor &t) { return size_t(lookup.find(t)); };
  for (const RecordedCall &call : calls) {
    bool any = false;
    for (const Tensor &in : call.inputs)
      any = any || needs[id(in)];
    if (any && call.vjp)
      for (const Tensor &out : call.outputs)
        needs[id(out)] = true;
  }
  for (auto call = calls.rbegin(); call != calls.rend(); ++call) {
    if (!call->vjp)
      continue;
    std::vector<Tensor> outputGrads;
    bool arrived = false;
    for (const Tensor &out : call->outputs) {
      auto it = grads.find(int(id(out)));
      outputGrads.push_back(it == grads.end() ? Tensor() : it->second);
      arrived = arrived || it != grads.end();
    }
    bool wanted = false;
    for (const Tensor &in : call->inputs)
      wanted = wanted || needs[id(in)];
    if (!arrived || !wanted)
      continue;
    std::vector<Tensor> inputGrads = call->vjp(outputGrads);
    for (size_t k = 0; k < inputGrads.size() && k < call->inputs.size(); ++k) {
      int value = int(id(call->inputs[k]));
      if (!inputGrads[k].defined() || !needs[size_t(value)])
        continue;
      auto it = grads.find(value);
      grads[value] = it == grads.end() ? inputGrads[k] : it->second + inputGrads[k];
    }
  }
  return grads;
}

bool active() { return installed != nullptr; }
Pause::Pause() : previous_(installed) { installed = nullptr; }
Pause::~Pause() { installed = static_cast<Tracer *>(previous_); }
} // namespace dlc::trace
