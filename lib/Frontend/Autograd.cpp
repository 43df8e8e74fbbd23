//===- Autograd.cpp - the recording and backward() -----------------------------===//
#include "dlc/Frontend/Autograd.h"

#include "dlc/Frontend/NumPy.h"
#include "AutogradInternal.h"

#include <unordered_map>
#include <unordered_set>

namespace dlc {
namespace autograd {

namespace {
thread_local bool recording = false;
thread_local bool training = false;
} // namespace

Record::Record(bool train_mode) : wasRecording_(recording), wasTraining_(training) {
  recording = true;
  training = train_mode;
}
Record::~Record() {
  recording = wasRecording_;
  training = wasTraining_;
}

Pause::Pause(bool train_mode) : wasRecording_(recording), wasTraining_(training) {
  recording = false;
  training = train_mode;
}
Pause::~Pause() {
  recording = wasRecording_;
  training = wasTraining_;
}

TrainMode::TrainMode(bool train) : wasTraining_(training) { training = train; }
TrainMode::~TrainMode() { training = wasTraining_; }

bool is_recording() { return recording; }
bool is_training() { return training; }

bool needs_grad(const Tensor &tensor) {
  const auto &state = tensor.impl()->grad_state;
  return state && (state->node || state->req != GradReq::null);
}

void record(const std::string &name, const std::vector<Tensor> &inputs,
            const std::vector<Tensor> &outputs, NodeVjp vjp) {
  if (!recording)
    return;
  record_into(name, inputs, outputs,
              [vjp = std::move(vjp)](const std::vector<Tensor> &output_grads,
                                     const std::vector<Tensor> &) { return vjp(output_grads); });
}

void record_into(const std::string &name, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &outputs, NodeVjpInto vjp) {
  if (!recording)
    return;
  bool any = false;
  for (const Tensor &input : inputs)
    any = any || needs_grad(input);
  if (!any)
    return;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->vjp = std::move(vjp);
  node->inputs = inputs;
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto state = std::make_shared<TensorGradState>();
    state->node = node;
    state->output = k;
    outputs[k].impl()->grad_state = std::move(state);
  }
}

namespace {

Tensor accumulate(const Tensor &sum, const Tensor &more) {
  return sum.defined() ? sum + more : more;
}

/// Nodes reachable from `heads`, each after every node that consumes its outputs. The
/// shared pointers keep every node alive while backward() frees the recording.
std::vector<std::shared_ptr<Node>> orderFromHeads(const std::vector<Tensor> &heads) {
  std::vector<std::shared_ptr<Node>> postOrder;
  std::unordered_set<Node *> visited;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;
  auto push = [&](const Tensor &t) {
    const auto &state = t.impl()->grad_state;
    if (state && state->node && visited.insert(state->node.get()).second)
      stack.push_back({state->node, 0});
  };
  for (const Tensor &head : heads)
    push(head);
  while (!stack.empty()) {
    auto &[node, next] = stack.back();
    if (next < node->inputs.size()) {
      Tensor input = node->inputs[next++]; // a copy: push() may reallocate the stack
      push(input);
      continue;
    }
    postOrder.push_back(node);
    stack.pop_back();
  }
  return {postOrder.rbegin(), postOrder.rend()};
}

/// The leaves whose gradient buffer a VJP may write in place: grad_req write, an input
/// of exactly one recorded call, once, and no head (so that call's gradient is the
/// leaf's whole gradient), and a buffer no recorded call reads (a VJP run later would
/// otherwise read the new gradient where the recording saw the old one).
std::unordered_set<TensorGradState *>
soleWriteLeaves(const std::vector<Tensor> &heads,
                const std::vector<std::shared_ptr<Node>> &order) {
  std::unordered_map<TensorGradState *, int> uses;
  std::unordered_set<const Buffer *> read;
  auto count = [&](const Tensor &t) {
    const auto &state = t.impl()->grad_state;
    if (state && !state->node && state->req == GradReq::write)
      ++uses[state.get()];
  };
  for (const Tensor &head : heads)
    count(head), count(head); // a head's gradient is delivered directly: never in place
  for (const std::shared_ptr<Node> &node : order)
    for (const Tensor &input : node->inputs) {
      count(input);
      read.insert(input.buffer().get());
    }
  std::unordered_set<TensorGradState *> sole;
  for (auto [state, n] : uses)
    if (n == 1 && !read.count(state->grad.buffer().get()))
      sole.insert(state);
  return sole;
}

/// Whether `gradient` is `grad`'s own memory, which a VJP then wrote in place.
bool sameElements(const Tensor &gradient, const Tensor &grad) {
  return gradient.impl() == grad.impl() ||
         (gradient.buffer() == grad.buffer() && gradient.impl()->offset == grad.impl()->offset &&
          gradient.dtype() == grad.dtype() && gradient.impl()->layout == grad.impl()->layout);
}

} // namespace

void backward(const std::vector<Tensor> &heads, const std::vector<Tensor> &head_grads,
              bool retain_graph) {
  Pause pause(training); // gradients are not themselves recorded
  std::unordered_map<Node *, std::vector<Tensor>> gradients;
  std::unordered_map<TensorGradState *, Tensor> leaves;
  auto deliver = [&](const Tensor &target, const Tensor &gradient, const char *what) {
    const auto &state = target.impl()->grad_state;
    if (!state)
      return;
    if (gradient.shape() != target.shape())
      throw Error(std::string("backward: ") + what + " produced a gradient of shape " +
                  shape_rules::str(gradient.shape()) + " for a tensor of shape " +
                  shape_rules::str(target.shape()));
    if (state->node) {
      auto &slots = gradients[state->node.get()];
      slots.resize(std::max(slots.size(), state->output + 1));
      slots[state->output] = accumulate(slots[state->output], gradient);
    } else if (state->req != GradReq::null) {
      leaves[state.get()] = accumulate(leaves[state.get()], gradient);
    }
  };

  for (size_t i = 0; i < heads.size(); ++i) {
    const Tensor &head = heads[i];
    if (!needs_grad(head))
      throw Error("backward: head #" + std::to_string(i) + " (" +
                  shape_rules::str(head.shape()) +
                  ") was not computed inside autograd::Record from a tensor that called "
                  "attach_grad(); there is nothing to differentiate");
    Tensor seed = i < head_grads.size() && head_grads[i].defined()
                      ? head_grads[i]
                      : np::ones(head.shape(), head.dtype(), head.device());
    deliver(head, seed, "the head gradient");
  }

  std::vector<std::shared_ptr<Node>> order = orderFromHeads(heads);
  std::unordered_set<TensorGradState *> inPlace = soleWriteLeaves(heads, order);
  for (const std::shared_ptr<Node> &node : order) {
    auto found = gradients.find(node.get());
    if (found == gradients.end())
      continue;
    if (!node->vjp)
      throw Error("backward: the recording through '" + node->name +
                  "' was freed by an earlier backward(); pass retain_graph = true to "
                  "differentiate the same recording twice");
    std::vector<Tensor> outputGrads = std::move(found->second);
    gradients.erase(found);
    std::vector<Tensor> into(node->inputs.size());
    for (size_t i = 0; i < into.size(); ++i)
      if (const auto &state = node->inputs[i].impl()->grad_state;
          state && inPlace.count(state.get()) && state->grad.dtype() == node->inputs[i].dtype())
        into[i] = state->grad;
    std::vector<Tensor> inputGrads = node->vjp(outputGrads, into);
    if (inputGrads.size() != node->inputs.size())
      throw Error("backward: the VJP of '" + node->name + "' returned " +
                  std::to_string(inputGrads.size()) + " gradients for " +
                  std::to_string(node->inputs.size()) + " inputs");
    for (size_t i = 0; i < inputGrads.size(); ++i)
      if (inputGrads[i].defined())
        deliver(node->inputs[i], inputGrads[i], node->name.c_str());
  }

  for (auto &[state, gradient] : leaves) {
    Tensor converted = gradient.dtype() == state->grad.dtype()
                           ? gradient
                           : gradient.astype(state->grad.dtype());
    if (state->req == GradReq::add)
      converted = state->grad + converted;
    if (!sameElements(converted, state->grad))
      converted.copyto(state->grad);
    state->fresh = true;
  }

  if (!retain_graph)
    for (const std::shared_ptr<Node> &node : order) {
      node->vjp = nullptr;
      node->inputs.clear(); // lets the saved tensors and earlier nodes go
    }
}

} // namespace autograd

//===----------------------------------------------------------------------===//
// Tensor's autograd methods
//===----------------------------------------------------------------------===//

void Tensor::attach_grad(GradReq req) {
  auto state = std::make_shared<autograd::TensorGradState>();
  state->req = req;
  if (req != GradReq::null)
    state->grad = np::zeros(shape(), dtype(), device());
  impl_->grad_state = std::move(state);
}

Tensor Tensor::grad() const {
  requireDefined("grad()");
  const auto &state = impl_->grad_state;
  if (!state || !state->grad.defined())
    throw Error("grad(): this " + shape_rules::str(shape()) +
                " tensor has no gradient buffer; call attach_grad() before recording");
  return state->grad;
}

bool Tensor::fresh_grad() const {
  requireDefined("fresh_grad()");
  return impl_->grad_state && impl_->grad_state->fresh;
}

void Tensor::set_fresh_grad(bool fresh) const {
  requireDefined("set_fresh_grad()");
  if (impl_->grad_state)
    impl_->grad_state->fresh = fresh;
}

void Tensor::backward(const Tensor &head_grad, bool retain_graph) const {
  requireDefined("backward()");
  autograd::backward({*this}, {head_grad}, retain_graph);
}

Tensor Tensor::detach() const {
  requireDefined("detach()");
  auto impl = std::make_shared<Impl>(*impl_);
  impl->grad_state = nullptr;
  return Tensor(std::move(impl));
}

bool Tensor::requires_grad() const { return defined() && autograd::needs_grad(*this); }

} // namespace dlc
