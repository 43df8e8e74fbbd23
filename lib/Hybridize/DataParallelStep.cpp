//===- DataParallelStep.cpp - trace, shard and run a whole training step ------===//
#include "dlc/Hybridize/DataParallelStep.h"

#include "dlc/Compiler/Compiler.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"
#include "OpDefinitions.h"
#include "CompileCache.h"
#include "CompiledLayouts.h"
#include "Tracer.h"

#include <chrono>
#include <mutex>

namespace dlc {

namespace {

/// What a traced argument is bound to at each call.
struct Binding {
  enum class Kind { data, label, rate, parameter, state, captured } kind = Kind::captured;
  std::string parameter; // parameter and state
  size_t index = 0;      // state: which of the parameter's states
  Tensor tensor;         // captured
};

struct Compiled {
  std::shared_ptr<Program> program;
  std::vector<Binding> arguments; // the traced function's, before sharding
  std::vector<bool> batch;
};

/// A program's view of `t`: its own memory, plain (the step writes into parameters and
/// optimizer state; see boundBuffers in CompiledFunction.cpp).
BoundBuffer bound(const Tensor &t) {
  detail::make_plain_in_place(t);
  return {t.buffer(), t.impl()->offset};
}

} // namespace

struct DataParallelStep::State {
  std::string name;
  Loss loss;
  Update update;
  size_t stateSize = 0;
  bool syncBatchNorm = false;
  std::vector<Device> devices;
  std::mutex mutex;
  detail::CompileCache<Compiled> cache;
  /// Optimizer state per parameter, per device: replicas updated identically.
  std::map<std::string, std::vector<std::vector<Tensor>>> optimizerState;
  /// The learning rate as a tensor per device, made again only when the rate changes: a
  /// step then costs no fill launch, and a step run as a CUDA graph finds it in place.
  std::vector<std::pair<double, Tensor>> rates;
  /// Seconds the latest compile took in all, and tracing the step within it.
  double lastCompile = 0, lastTrace = 0;

  detail::KeyedOptions options{CompileOptions{}}; ///< guarded by `mutex`

  std::shared_ptr<Compiled> compile(const Tensor &data, const Tensor &label,
                                    const std::vector<Parameter> &parameters,
                                    const CompileOptions &options, detail::CompiledTexts &texts);
};

DataParallelStep::DataParallelStep(std::string name, Loss loss, Update update, size_t stateSize,
                                   std::vector<Device> devices, CompileOptions options)
    : state_(std::make_shared<State>()) {
  if (devices.empty())
    throw ValueError(name + ": needs at least one device");
  state_->name = std::move(name);
  state_->loss = std::move(loss);
  state_->update = std::move(update);
  state_->stateSize = stateSize;
  state_->devices = std::move(devices);
  state_->options.set(std::move(options));
}

void DataParallelStep::set_options(CompileOptions options) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->options.set(std::move(options));
}

CompileOptions DataParallelStep::options() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->options.given();
}

std::shared_ptr<Compiled> DataParallelStep::State::compile(const Tensor &data, const Tensor &label,
                                                           const std::vector<Parameter> &params,
                                                           const CompileOptions &options,
                                                           detail::CompiledTexts &texts) {
  auto started = std::chrono::steady_clock::now();
  Device home = devices.front();
  compiler::Graph graph;
  graph.name = "train_step";
  graph.device = home;
  trace::Tracer tracer(graph);
  auto compiled = std::make_shared<Compiled>();

  Tensor dataIn = trace::Tracer::symbolic(data.shape(), data.dtype(), home);
  Tensor labelIn = trace::Tracer::symbolic(label.shape(), label.dtype(), home);
  Tensor rate = trace::Tracer::symbolic({}, DType::f32, home);
  tracer.add_argument(dataIn, "data");
  graph.arguments.back().batch = true;
  tracer.add_argument(labelIn, "label");
  graph.arguments.back().batch = true;
  tracer.add_argument(rate, "learning_rate");

  trace::Install install(tracer);
  autograd::Pause training(/*train_mode=*/true);
  std::vector<Tensor> returned = loss(dataIn, labelIn);
  Tensor losses = returned.empty() ? Tensor() : returned[0];
  if (!losses.defined() || losses.ndim() < 1 || losses.shape()[0] != data.shape()[0])
    throw ShapeError(name + ": the loss must give one value per sample (" +
                     std::to_string(data.shape()[0]) + "), got " +
                     (losses.defined() ? shape_rules::str(losses.shape()) : "nothing"));
  int lossValue = tracer.value(losses);

  // Backward from per-sample losses seeded with ones, as loss.backward() does.
  std::vector<trace::RecordedCall> forwardCalls = tracer.calls();
  std::vector<bool> needs(graph.values.size(), false);
  for (const Parameter &p : params)
    if (p.grad && tracer.argument_index(p.copies[0]) >= 0)
      needs[size_t(tracer.find(p.copies[0]))] = true;
  Tensor head = np::ones(losses.shape(), losses.dtype(), home);
  std::map<int, Tensor> grads =
      trace::backpropagate(tracer, forwardCalls, needs, {{lossValue, head}});

  // Every gradient first, marked for the all-reduce (so the sharding pass can bucket
  // them), then the optimizer on every parameter, with its state as arguments.
  // The gradients are summed over every process of the job: this process has its share
  // of the samples (a job's processes take equal shares), the update divides by all.
  const int processes = process_group().size();
  double rescale = 1.0 / (double(data.shape()[0]) * double(processes));
  std::vector<std::pair<const Parameter *, Tensor>> marked;
  for (const Parameter &p : params) {
    if (!p.grad || tracer.argument_index(p.copies[0]) < 0)
      continue;
    const compiler::GraphValue &v = graph.values[size_t(tracer.find(p.copies[0]))];
    auto it = grads.find(tracer.find(p.copies[0]));
    Tensor grad = it != grads.end() ? it->second : np::zeros(v.shape, v.dtype, home);
    Tensor view = grad.reshape(grad.shape()); // a view, marked for the all-reduce
    int viewValue = tracer.find(view);
    for (compiler::GraphNode &node : graph.nodes)
      if (!node.outputs.empty() && node.outputs[0] == viewValue)
        node.gradient = true;
    marked.push_back({&p, view});
  }
  for (const auto &[p, grad] : marked) {
    std::vector<std::vector<Tensor>> &replicas = optimizerState[p->name];
    if (replicas.empty())
      for (Device device : devices) {
        trace::Pause real; // the state's zeros are real tensors, not traced ones
        std::vector<Tensor> zeros;
        for (size_t k = 0; k < stateSize; ++k)
          zeros.push_back(np::zeros(grad.shape(), grad.dtype(), device));
        replicas.push_back(std::move(zeros));
      }
    std::vector<Tensor> state = replicas[0];
    Tensor updated = update(p->copies[0], grad, state, rate, rescale);
    Tensor weight = p->copies[0];
    updated.copyto(weight); // written back when the program ends
    for (size_t k = 0; k < stateSize; ++k)
      state[k].copyto(replicas[0][k]);
  }
  graph.results.push_back(lossValue);
  for (size_t k = 1; k < returned.size(); ++k)
    graph.results.push_back(tracer.value(returned[k]));

  // Bindings of the traced arguments.
  for (size_t i = 0; i < graph.arguments.size(); ++i) {
    const Tensor &t = tracer.argument_tensors()[i];
    Binding b;
    b.tensor = t;
    if (i == 0)
      b.kind = Binding::Kind::data;
    else if (i == 1)
      b.kind = Binding::Kind::label;
    else if (i == 2)
      b.kind = Binding::Kind::rate;
    for (const Parameter &p : params) {
      if (b.kind != Binding::Kind::captured)
        break;
      if (p.copies[0].buffer() == t.buffer()) {
        b.kind = Binding::Kind::parameter;
        b.parameter = p.name;
        graph.arguments[i].name = p.name;
      }
      auto state = optimizerState.find(p.name);
      if (state != optimizerState.end())
        for (size_t k = 0; k < state->second[0].size(); ++k)
          if (state->second[0][k].buffer() == t.buffer()) {
            b.kind = Binding::Kind::state;
            b.parameter = p.name;
            b.index = k;
            graph.arguments[i].name = p.name + ".state" + std::to_string(k);
          }
    }
    compiled->arguments.push_back(b);
    compiled->batch.push_back(graph.arguments[i].batch);
  }

  auto traced = std::chrono::steady_clock::now();
  compiler::CompiledDataParallel module;
  std::string error =
      compiler::compile_data_parallel(graph, devices, module, syncBatchNorm, options, processes);
  if (!error.empty())
    throw Error(name + ": " + error);
  compiled->program = module.program;
  texts.traced_ir = module.traced_ir;
  texts.compiled_ir = module.ir;
  texts.programs = module.program->str();
  lastTrace = std::chrono::duration<double>(traced - started).count();
  lastCompile = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return compiled;
}

std::vector<Tensor> DataParallelStep::operator()(const Tensor &data, const Tensor &label,
                                                 const std::vector<Parameter> &parameters,
                                                 double rate) {
  State &s = *state_;
  for (const Parameter &p : parameters)
    if (p.copies.size() != s.devices.size())
      throw Error(s.name + ": parameter '" + p.name + "' has " + std::to_string(p.copies.size()) +
                  " copies for " + std::to_string(s.devices.size()) +
                  " devices; initialize the network on the step's devices");
  Device home = s.devices.front();
  Tensor x = data.to(home), y = label.to(home);
  std::shared_ptr<Compiled> compiled;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // The options are part of the key (programs compiled with blocked layouts must not
    // run under the reference kernels, for one).
    const auto &resolvedNow = s.options.now(); // valid while the lock is held
    const CompileOptions &options = resolvedNow.first;
    const std::string &optionsKey = resolvedNow.second;
    std::string key = std::string(dtype_name(x.dtype())) + shape_rules::str(x.shape()) + "," +
                      dtype_name(y.dtype()) + shape_rules::str(y.shape()) + "; " + optionsKey;
    bool fresh = false;
    compiled = s.cache.get(
        key, s.name,
        [&](detail::CompiledTexts &texts) { return s.compile(x, y, parameters, options, texts); },
        fresh);
  }

  std::map<std::string, const Parameter *> byName;
  for (const Parameter &p : parameters)
    byName[p.name] = &p;
  // Arguments of the sharded function: batch ones once, the others once per device.
  std::vector<Tensor> keep;
  std::vector<BoundBuffer> arguments;
  size_t replicas = s.devices.size();
  for (size_t i = 0; i < compiled->arguments.size(); ++i) {
    const Binding &b = compiled->arguments[i];
    size_t copies = compiled->batch[i] || replicas == 1 ? 1 : replicas;
    for (size_t d = 0; d < copies; ++d) {
      Device device = s.devices[d];
      Tensor t;
      switch (b.kind) {
      case Binding::Kind::data:
        t = x;
        break;
      case Binding::Kind::label:
        t = y;
        break;
      case Binding::Kind::rate: {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.rates.resize(s.devices.size());
        auto &[value, tensor] = s.rates[d];
        if (!tensor.defined() || value != rate || tensor.device() != device) {
          value = rate;
          tensor = np::full({}, rate, DType::f32, device);
        }
        t = tensor;
        break;
      }
      case Binding::Kind::parameter:
        t = byName.at(b.parameter)->copies[d];
        break;
      case Binding::Kind::state:
        t = s.optimizerState.at(b.parameter)[d][b.index];
        break;
      case Binding::Kind::captured:
        t = b.tensor.to(device);
        break;
      }
      keep.push_back(t);
      arguments.push_back(bound(t));
    }
  }
  std::vector<int64_t> seeds;
  for (Device device : compiled->program->seed_devices())
    seeds.push_back(detail::next_kernel_seed(device));
  std::vector<BoundBuffer> results =
      compiled->program->run(arguments, {}, std::move(seeds), reference_kernels_enabled());
  std::vector<Tensor> out;
  for (size_t k = 0; k < results.size(); ++k) {
    const ProgramValue &v = compiled->program->values[size_t(compiled->program->results[k])];
    auto impl = std::make_shared<Tensor::Impl>();
    impl->shape = v.shape;
    impl->dtype = v.dtype;
    impl->buffer = results[k].buffer;
    impl->offset = results[k].offset;
    out.push_back(Tensor(std::move(impl)));
  }
  return out;
}

std::map<std::string, std::vector<Tensor>> DataParallelStep::optimizer_state() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  std::map<std::string, std::vector<Tensor>> first;
  for (const auto &[name, replicas] : state_->optimizerState)
    if (!replicas.empty())
      first[name] = replicas.front();
  return first;
}

void DataParallelStep::set_optimizer_state(
    const std::map<std::string, std::vector<Tensor>> &state) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (const auto &[name, tensors] : state) {
    if (tensors.size() != state_->stateSize)
      throw ValueError(state_->name + ": parameter '" + name + "' gets " +
                       std::to_string(tensors.size()) + " state tensors; the optimizer keeps " +
                       std::to_string(state_->stateSize));
    std::vector<std::vector<Tensor>> &replicas = state_->optimizerState[name];
    if (replicas.empty()) {
      // Tensors of their own on each device, which the compiled programs then bind.
      for (Device device : state_->devices) {
        std::vector<Tensor> copies;
        for (const Tensor &t : tensors)
          copies.push_back(t.copyto(device));
        replicas.push_back(std::move(copies));
      }
      continue;
    }
    for (std::vector<Tensor> &replica : replicas)
      for (size_t k = 0; k < tensors.size(); ++k) {
        if (tensors[k].shape() != replica[k].shape())
          throw ShapeError(state_->name + ": state " + std::to_string(k) + " of parameter '" +
                           name + "' is " + shape_rules::str(tensors[k].shape()) +
                           "; the step's is " + shape_rules::str(replica[k].shape()));
        tensors[k].copyto(replica[k]); // in place: compiled programs hold these tensors
      }
  }
}

void DataParallelStep::set_sync_batch_norm(bool sync) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->syncBatchNorm != sync)
    state_->cache.clear();
  state_->syncBatchNorm = sync;
}

int64_t DataParallelStep::compiles() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.compiles();
}
std::string DataParallelStep::traced_ir() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().traced_ir;
}
std::string DataParallelStep::compiled_ir() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().compiled_ir;
}
std::string DataParallelStep::program() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().programs;
}
int64_t DataParallelStep::steps() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  int64_t count = 0;
  for (const auto &entry : state_->cache.entries())
    count = int64_t(entry.second->program->steps.size());
  return count;
}

ProgramGraphStats DataParallelStep::graph_stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ProgramGraphStats sum;
  for (const auto &entry : state_->cache.entries()) {
    ProgramGraphStats one = entry.second->program->graph_stats();
    sum.captures += one.captures;
    sum.replays += one.replays;
    sum.launched += one.launched;
    sum.staged += one.staged;
    if (sum.not_graphed.empty())
      sum.not_graphed = one.not_graphed;
  }
  return sum;
}

std::pair<double, double> DataParallelStep::last_compile_seconds() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return {state_->lastCompile, state_->lastTrace};
}

} // namespace dlc
