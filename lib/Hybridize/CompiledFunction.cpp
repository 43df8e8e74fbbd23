//===- CompiledFunction.cpp - trace, compile and run by input signature -------===//
//
// A new signature is traced with symbolic tensors (nothing runs, no seed is drawn), and, when gradients are needed, the backward is traced too by
// running the recorded calls' VJP rules backwards under a second tracer: the forward
// values those rules read become extra results of the forward program ("saved"), as in
// AOTAutograd's joint graph. Both graphs are compiled into one module.
//
//===----------------------------------------------------------------------===//
#include "dlc/Hybridize/CompiledFunction.h"

#include "dlc/Compiler/Compiler.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "AutogradInternal.h"
#include "OpDefinitions.h"
#include "CompileCache.h"
#include "CompiledLayouts.h"
#include "Tracer.h"

#include "dlc/Runtime/Files/ModelFile.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

namespace dlc {

namespace {

enum class Source { input, parameter, captured, output_grad, forward_result, forward_argument };

/// Where a program argument comes from at each call.
struct Binding {
  Source source = Source::captured;
  std::string name; // parameter name
  Tensor tensor;    // captured tensor
  int index = -1;   // forward result or argument number
};

struct CompiledSignature {
  std::shared_ptr<Program> forward, backward;
  size_t outputs = 1; ///< the function's outputs: the forward's first results
  std::vector<Binding> forward_args, backward_args;
  std::vector<int> grad_args; // forward arguments whose gradients the backward returns
};

bool debugLogging() {
  static const bool enabled = [] {
    const char *level = std::getenv("DLC_LOG");
    return level && std::string(level) == "debug";
  }();
  return enabled;
}

/// The tensors' memory as `program` reads it: each in the layout of the program's value
/// `ids[i]` (converted where it is not; the programs write only into tensors they own:
/// results, and plain parameters and optimizer state).
std::vector<BoundBuffer> boundBuffers(const Program &program, const std::vector<int> &ids,
                                      const std::vector<Tensor> &tensors) {
  std::vector<bool> written(tensors.size(), false);
  if (&ids == &program.arguments)
    for (const auto &[value, argument] : program.updates)
      written[size_t(argument)] = true;
  std::vector<BoundBuffer> bound;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor t = tensors[i];
    if (written[i]) // the program writes into it: into the tensor's own (plain) memory
      detail::make_plain_in_place(t);
    else
      t = detail::in_layout(t, program.values[size_t(ids[i])].layout);
    bound.push_back({t.buffer(), t.impl()->offset});
  }
  return bound;
}

/// Whether result value `v` can be written into `into`: the same shape, dtype, device and
/// layout, and memory none of the program's `arguments` reads.
bool writableInto(const ProgramValue &v, const Tensor &into, const std::vector<Tensor> &arguments) {
  if (!into.defined() || into.shape() != v.shape || into.dtype() != v.dtype ||
      into.device() != v.device || into.impl()->layout != v.layout)
    return false;
  return std::none_of(arguments.begin(), arguments.end(), [&](const Tensor &argument) {
    return argument.buffer() == into.buffer();
  });
}

/// Runs `program` on `arguments`; returns its results: result k in `into[k]` where that
/// can hold it (writableInto), elsewhere in a new tensor in the layout the program writes.
std::vector<Tensor> runProgram(const Program &program, const std::vector<Tensor> &arguments,
                               bool referenceKernels, const std::vector<Tensor> &into = {}) {
  std::vector<Tensor> results;
  for (size_t k = 0; k < program.results.size(); ++k) {
    const ProgramValue &v = program.values[size_t(program.results[k])];
    if (k < into.size() && writableInto(v, into[k], arguments)) {
      results.push_back(into[k]);
      continue;
    }
    results.push_back(Tensor::empty(v.shape, v.dtype, v.device));
    results.back().impl()->layout = v.layout;
  }
  std::vector<int64_t> seeds;
  for (Device device : program.seed_devices())
    seeds.push_back(detail::next_kernel_seed(device));
  program.run(boundBuffers(program, program.arguments, arguments),
              boundBuffers(program, program.results, results), std::move(seeds),
              referenceKernels);
  return results;
}

size_t inputCount(const CompiledSignature &signature) {
  return size_t(std::count_if(signature.forward_args.begin(), signature.forward_args.end(),
                              [](const Binding &b) { return b.source == Source::input; }));
}

} // namespace

struct CompiledFunction::State {
  std::string name;
  ForwardMulti forward;
  Parameters parameters;
  std::mutex mutex; ///< guards the cache, the latest signature and the call count
  detail::CompileCache<CompiledSignature> cache;
  std::shared_ptr<const CompiledSignature> latest; ///< the latest compile's, for stats()
  int64_t calls = 0;
  detail::KeyedOptions options{CompileOptions{}}; ///< guarded by `mutex`

  std::shared_ptr<CompiledSignature> compile(const std::vector<Tensor> &inputs, bool withGrad,
                                             const std::vector<bool> &inputGrads,
                                             const std::set<std::string> &gradParameters,
                                             const CompileOptions &options,
                                             detail::CompiledTexts &texts);
};

CompiledFunction::CompiledFunction(std::string name, Forward forward, Parameters parameters,
                                   CompileOptions options)
    : CompiledFunction(
          std::move(name),
          ForwardMulti([forward = std::move(forward)](const std::vector<Tensor> &inputs) {
            return std::vector<Tensor>{forward(inputs[0])};
          }),
          std::move(parameters), std::move(options)) {}

CompiledFunction::CompiledFunction(std::string name, ForwardMulti forward, Parameters parameters,
                                   CompileOptions options)
    : state_(std::make_shared<State>()) {
  state_->name = std::move(name);
  state_->forward = std::move(forward);
  state_->parameters = std::move(parameters);
  state_->options.set(std::move(options));
}

void CompiledFunction::set_options(CompileOptions options) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->options.set(std::move(options));
}

CompileOptions CompiledFunction::options() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->options.given();
}

int64_t CompiledFunction::cached_signatures() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return int64_t(state_->cache.entries().size());
}

std::shared_ptr<CompiledSignature>
CompiledFunction::State::compile(const std::vector<Tensor> &inputs, bool withGrad,
                                 const std::vector<bool> &inputGrads,
                                 const std::set<std::string> &gradParameters,
                                 const CompileOptions &options, detail::CompiledTexts &texts) {
  Device device = inputs[0].device();
  bool training = autograd::is_training();
  auto signature = std::make_shared<CompiledSignature>();

  // Forward: trace with a symbolic input (random ops draw no seeds while tracing).
  compiler::Graph forwardGraph;
  forwardGraph.name = "forward";
  forwardGraph.device = device;
  trace::Tracer forwardTracer(forwardGraph);
  // Inputs are named as MXNet's export names them: "data", or "data0", "data1", ...
  std::vector<Tensor> symbolicInputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    symbolicInputs.push_back(
        trace::Tracer::symbolic(inputs[i].shape(), inputs[i].dtype(), device));
    forwardTracer.add_argument(symbolicInputs.back(),
                               inputs.size() == 1 ? "data" : "data" + std::to_string(i));
  }
  std::vector<Tensor> outputs;
  {
    trace::Install install(forwardTracer);
    autograd::Pause pause(training);
    outputs = forward(symbolicInputs);
  }
  if (outputs.empty())
    throw Error(name + ": the hybridized forward returned no tensor");
  std::vector<int> outputValues;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].defined())
      throw Error(name + ": the hybridized forward's output #" + std::to_string(k) +
                  " is an undefined tensor");
    outputValues.push_back(forwardTracer.value(outputs[k]));
    forwardGraph.results.push_back(outputValues.back());
  }
  signature->outputs = outputs.size();
  forwardGraph.first_saved = outputs.size(); // what the backward trace adds is saved

  // Bind the arguments: the input, parameters (by name), other captured tensors.
  std::vector<BoundParameter> bound = parameters ? parameters(device) : std::vector<BoundParameter>{};
  std::vector<bool> needsGrad(forwardGraph.values.size(), false);
  for (size_t i = 0; i < forwardTracer.argument_tensors().size(); ++i) {
    const Tensor &t = forwardTracer.argument_tensors()[i];
    Binding binding;
    if (i < inputs.size()) {
      binding.source = Source::input;
      binding.index = int(i);
      needsGrad[size_t(forwardGraph.arguments[i].value)] = inputGrads[i];
    } else {
      binding.source = Source::captured;
      binding.tensor = t;
      forwardGraph.arguments[i].parameter = true;
      for (const BoundParameter &p : bound)
        if (p.data.defined() && p.data.buffer() == t.buffer() &&
            p.data.impl()->offset == t.impl()->offset && p.data.shape() == t.shape()) {
          binding.source = Source::parameter;
          binding.name = p.name;
          binding.tensor = Tensor();
          forwardGraph.arguments[i].name = p.name;
          needsGrad[size_t(forwardGraph.arguments[i].value)] = gradParameters.count(p.name) != 0;
          break;
        }
    }
    signature->forward_args.push_back(std::move(binding));
  }

  compiler::Graph backwardGraph;
  backwardGraph.name = "backward";
  backwardGraph.device = device;
  if (withGrad) {
    trace::Tracer backwardTracer(backwardGraph);
    // One gradient argument per output; an output given twice gets the sum.
    std::map<int, Tensor> outputGrads;
    for (size_t k = 0; k < outputs.size(); ++k) {
      Tensor grad = trace::Tracer::symbolic(outputs[k].shape(), outputs[k].dtype(), device);
      backwardTracer.add_argument(grad, outputs.size() == 1 ? "grad.output"
                                                            : "grad.output" + std::to_string(k));
      auto [at, inserted] = outputGrads.emplace(outputValues[k], grad);
      if (!inserted) {
        trace::Install install(backwardTracer);
        at->second = at->second + grad;
      }
    }
    {
      trace::Install install(backwardTracer);
      autograd::Pause pause(training);
      std::map<int, Tensor> grads = trace::backpropagate(
          forwardTracer, forwardTracer.calls(), needsGrad, outputGrads);
      for (size_t i = 0; i < forwardGraph.arguments.size(); ++i) {
        int id = forwardGraph.arguments[i].value;
        if (!needsGrad[size_t(id)])
          continue;
        auto it = grads.find(id);
        const compiler::GraphValue &v = forwardGraph.values[size_t(id)];
        Tensor grad = it != grads.end() ? it->second : np::zeros(v.shape, v.dtype, device);
        signature->grad_args.push_back(int(i));
        backwardGraph.results.push_back(backwardTracer.value(grad));
      }
    }
    // What the backward reads of the forward: its arguments, or values it must save.
    const auto &reads = backwardTracer.argument_tensors();
    for (size_t i = 0; i < reads.size(); ++i) {
      Binding binding;
      if (i < outputs.size()) {
        binding.source = Source::output_grad;
        binding.index = int(i);
      } else if (int argument = forwardTracer.argument_index(reads[i]); argument >= 0) {
        binding.source = Source::forward_argument;
        binding.index = argument;
        backwardGraph.arguments[i].name = "forward." + forwardGraph.arguments[size_t(argument)].name;
        backwardGraph.arguments[i].parameter = forwardGraph.arguments[size_t(argument)].parameter;
      } else if (int id = forwardTracer.find(reads[i]); id >= 0) {
        auto at = std::find(forwardGraph.results.begin(), forwardGraph.results.end(), id);
        if (at == forwardGraph.results.end())
          at = forwardGraph.results.insert(forwardGraph.results.end(), id);
        binding.source = Source::forward_result;
        binding.index = int(at - forwardGraph.results.begin());
        backwardGraph.arguments[i].name = "saved." + std::to_string(binding.index);
        backwardGraph.arguments[i].saved_result = binding.index;
      } else {
        binding.source = Source::captured;
        binding.tensor = reads[i];
        backwardGraph.arguments[i].parameter = true;
      }
      signature->backward_args.push_back(std::move(binding));
    }
  }

  // Blocked layouts: the forward's results (output and saved activations) may stay
  // blocked, and the backward takes the saved ones as the forward leaves them
  // (dlc-assign-layouts reads dlc.saved_from); the caller reads each result's layout.
  forwardGraph.blocked_results = true;
  backwardGraph.blocked_results = true;
  std::vector<const compiler::Graph *> graphs{&forwardGraph};
  if (withGrad)
    graphs.push_back(&backwardGraph);
  compiler::CompiledModule module;
  std::string error = compiler::compile(graphs, module, options);
  if (!error.empty())
    throw Error(name + ": " + error);
  signature->forward = module.programs[0];
  if (withGrad) {
    signature->backward = module.programs[1];
    // The pipeline may drop saved values the backward no longer reads, renumbering the
    // forward's saved results, and add others (a pooling's indices): saved values are
    // bound by the forward result each argument names, the other arguments in the
    // order traced, which the pipeline keeps.
    const std::vector<int> &saved = module.saved_results[1];
    std::vector<Binding> traced;
    for (Binding &binding : signature->backward_args)
      if (binding.source != Source::forward_result)
        traced.push_back(std::move(binding));
    signature->backward_args.clear();
    size_t nextTraced = 0;
    for (size_t i = 0; i < saved.size(); ++i) {
      if (saved[i] < 0 && nextTraced < traced.size()) {
        signature->backward_args.push_back(std::move(traced[nextTraced++]));
        continue;
      }
      if (saved[i] < 0 || size_t(saved[i]) >= signature->forward->results.size())
        throw Error(name + ": internal error: the compiled backward's argument #" +
                    std::to_string(i) + " is no result of the forward");
      Binding binding;
      binding.source = Source::forward_result;
      binding.index = saved[i];
      signature->backward_args.push_back(std::move(binding));
    }
    if (nextTraced != traced.size())
      throw Error(name + ": internal error: the compiled backward lost an argument it does "
                         "not save from the forward");
  }

  texts.traced_ir = module.traced_ir;
  texts.compiled_ir = module.ir;
  texts.programs.clear();
  for (const auto &program : module.programs)
    texts.programs += program->str();
  return signature;
}

Tensor CompiledFunction::operator()(const Tensor &x) {
  std::vector<Tensor> outputs = (*this)(std::vector<Tensor>{x});
  if (outputs.size() != 1)
    throw Error(state_->name + ": the hybridized forward returned " +
                std::to_string(outputs.size()) + " tensors where one was expected (call it "
                "with a list of inputs to get them all)");
  return outputs[0];
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor> &inputs) {
  State &s = *state_;
  if (inputs.empty())
    throw Error(s.name + ": called with no input");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw Error(s.name + ": input #" + std::to_string(i) + " is an undefined tensor");
  Device device = inputs[0].device();
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].device() != device)
      throw DeviceMismatchError(s.name + ": input #" + std::to_string(i) + " is on " +
                        inputs[i].device().str() + ", input #0 on " + device.str() +
                        "; a hybridized block's inputs must share one device");
  bool recording = autograd::is_recording();
  std::vector<bool> inputGrads;
  for (const Tensor &x : inputs)
    inputGrads.push_back(recording && x.requires_grad());
  bool anyInputGrad = std::find(inputGrads.begin(), inputGrads.end(), true) != inputGrads.end();
  std::vector<BoundParameter> parameters =
      s.parameters ? s.parameters(device) : std::vector<BoundParameter>{};
  std::set<std::string> gradParameters;
  if (recording)
    for (const BoundParameter &p : parameters)
      if (p.grad)
        gradParameters.insert(p.name);
  bool withGrad = anyInputGrad || !gradParameters.empty();

  // The signature, as users read it in logs: "float32[4x3x128x128] on cpu(0), training,
  // gradients of 18 parameters"; the key adds the parameters' names.
  std::string signatureText;
  for (const Tensor &x : inputs)
    signatureText += std::string(signatureText.empty() ? "" : ", ") + dtype_name(x.dtype()) +
                     "[" + shape_rules::str(x.shape()) + "]";
  signatureText += " on " + device.str() +
                   (autograd::is_training() ? ", training" : ", predicting");
  if (withGrad) {
    std::string which;
    if (anyInputGrad) {
      which = inputs.size() == 1 ? "the input" : "inputs";
      if (inputs.size() > 1)
        for (size_t i = 0; i < inputs.size(); ++i)
          if (inputGrads[i])
            which += " #" + std::to_string(i);
      which += " and ";
    }
    signatureText += ", gradients of " + which + std::to_string(gradParameters.size()) +
                     " parameters";
  }
  std::shared_ptr<CompiledSignature> signature;
  bool referenceKernels = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // The options are part of the key: a signature compiled under other options is
    // another entry. Programs compiled with blocked layouts must not run under the
    // reference kernels: the setting is read once, for the key and for the runs (the
    // backward's included).
    const auto &resolvedNow = s.options.now(); // valid while the lock is held
    const CompileOptions &options = resolvedNow.first;
    const std::string &optionsKey = resolvedNow.second;
    referenceKernels = *options.blocked_layout == Layout::plain && reference_kernels_enabled();
    std::string key = signatureText + "; " + optionsKey;
    for (const std::string &p : gradParameters)
      key += "," + p;
    bool compiled = false;
    signature = s.cache.get(
        key, s.name,
        [&](detail::CompiledTexts &texts) {
          return s.compile(inputs, withGrad, inputGrads, gradParameters, options, texts);
        },
        compiled);
    if (compiled) {
      s.latest = signature;
      if (debugLogging())
        std::fprintf(stderr, "dlc: hybridize '%s': compiled for %s in %.3f s (compile #%lld)\n",
                     s.name.c_str(), signatureText.c_str(), s.cache.last_compile_seconds(),
                     (long long)s.cache.compiles());
      if (s.parameters)
        parameters = s.parameters(device); // deferred ones are initialized now
    }
    ++s.calls;
  }

  std::map<std::string, Tensor> byName;
  for (const BoundParameter &p : parameters)
    byName[p.name] = p.data;
  std::vector<Tensor> forwardArgs;
  for (const Binding &binding : signature->forward_args) {
    if (binding.source == Source::input) {
      forwardArgs.push_back(inputs[size_t(binding.index)]);
    } else if (binding.source == Source::parameter) {
      auto it = byName.find(binding.name);
      if (it == byName.end() || !it->second.defined())
        throw Error(s.name + ": parameter '" + binding.name + "' has no copy on " +
                    device.str() + " (initialize the block on the devices it runs on)");
      forwardArgs.push_back(it->second);
    } else {
      forwardArgs.push_back(binding.tensor);
    }
  }
  std::vector<Tensor> forwardResults =
      runProgram(*signature->forward, forwardArgs, referenceKernels);
  std::vector<Tensor> outputs(forwardResults.begin(),
                              forwardResults.begin() + std::ptrdiff_t(signature->outputs));

  if (signature->backward) {
    std::vector<Tensor> recordInputs;
    for (int argument : signature->grad_args)
      recordInputs.push_back(forwardArgs[size_t(argument)]);
    std::string name = s.name;
    autograd::record_into(
        "hybridized " + s.name, recordInputs, outputs,
        [signature, forwardArgs, forwardResults, name,
         referenceKernels](const std::vector<Tensor> &grads, const std::vector<Tensor> &into) {
          if (std::none_of(grads.begin(), grads.end(),
                           [](const Tensor &g) { return g.defined(); }))
            return std::vector<Tensor>(signature->grad_args.size());
          const Program &backward = *signature->backward;
          // Outputs the loss did not reach have no gradient: they count as zeros.
          std::vector<Tensor> outputGrads;
          for (size_t k = 0; k < signature->outputs; ++k) {
            const ProgramValue &expected = backward.values[size_t(backward.arguments[k])];
            Tensor g = k < grads.size() ? grads[k] : Tensor();
            if (!g.defined()) {
              outputGrads.push_back(np::zeros(expected.shape, expected.dtype, expected.device));
              continue;
            }
            if (g.shape() != expected.shape || g.dtype() != expected.dtype ||
                g.device() != expected.device)
              throw ShapeError(name + ": the gradient of output #" + std::to_string(k) +
                               " is " + dtype_name(g.dtype()) + " " +
                               shape_rules::str(g.shape()) + " on " + g.device().str() +
                               ", expected " + dtype_name(expected.dtype) + " " +
                               shape_rules::str(expected.shape) + " on " +
                               expected.device.str());
            outputGrads.push_back(g);
          }
          std::vector<Tensor> arguments;
          for (const Binding &binding : signature->backward_args) {
            switch (binding.source) {
            case Source::output_grad:
              arguments.push_back(outputGrads[size_t(binding.index)]);
              break;
            case Source::forward_result:
              arguments.push_back(forwardResults[size_t(binding.index)]);
              break;
            case Source::forward_argument:
              arguments.push_back(forwardArgs[size_t(binding.index)]);
              break;
            default:
              arguments.push_back(binding.tensor);
            }
          }
          // The backward's results are the gradients of recordInputs, in order: a
          // parameter's gradient goes straight into its grad() buffer where it can.
          return runProgram(backward, arguments, referenceKernels, into);
        });
  }
  return outputs;
}

CompileStats CompiledFunction::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const State &s = *state_;
  CompileStats stats;
  stats.calls = s.calls;
  stats.compiles = s.cache.compiles();
  stats.cache_hits = s.cache.hits();
  stats.last_compile_seconds = s.cache.last_compile_seconds();
  if (s.latest) {
    stats.forward_arena_bytes = s.latest->forward->memory().arena_bytes;
    stats.forward_steps = int64_t(s.latest->forward->steps.size());
    if (s.latest->backward) {
      stats.backward_arena_bytes = s.latest->backward->memory().arena_bytes;
      stats.backward_steps = int64_t(s.latest->backward->steps.size());
    }
  }
  return stats;
}
std::string CompiledFunction::traced_ir() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().traced_ir;
}
std::string CompiledFunction::compiled_ir() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().compiled_ir;
}
std::string CompiledFunction::programs() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cache.texts().programs;
}
void CompiledFunction::clear() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->cache.clear();
}

void CompiledFunction::save_compiled(const std::string &path) const {
  State &s = *state_;
  std::shared_ptr<const CompiledSignature> signature;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // Of the programs compiled for predicting, the one for the largest input (an
    // evaluation's full batch rather than its last, partial one).
    auto inputElements = [](const CompiledSignature &sig) {
      const Program &p = *sig.forward;
      int64_t elements = 0;
      for (size_t i = 0; i < sig.forward_args.size(); ++i)
        if (sig.forward_args[i].source == Source::input)
          elements += shape_rules::numElements(p.values[size_t(p.arguments[i])].shape);
      return elements;
    };
    for (const auto &entry : s.cache.entries())
      if (!entry.second->backward &&
          (!signature || inputElements(*entry.second) > inputElements(*signature)))
        signature = entry.second;
  }
  if (!signature)
    throw Error("save_compiled('" + path + "'): " + s.name +
                " has no program compiled for predicting yet; call it once outside "
                "autograd.record()");
  const Program &program = *signature->forward;
  Device device = program.devices().empty() ? cpu(0) : program.devices().front();
  std::map<std::string, Tensor> byName;
  if (s.parameters)
    for (const BoundParameter &p : s.parameters(device))
      byName[p.name] = p.data;
  std::vector<ModelArgument> arguments;
  for (size_t i = 0; i < signature->forward_args.size(); ++i) {
    const Binding &binding = signature->forward_args[i];
    if (binding.source == Source::input) {
      arguments.push_back({inputCount(*signature) > 1
                               ? "data" + std::to_string(binding.index)
                               : std::string("data"),
                           true,
                           {}});
      continue;
    }
    Tensor value = binding.tensor;
    std::string name = "captured" + std::to_string(i);
    if (binding.source == Source::parameter) {
      auto it = byName.find(binding.name);
      if (it == byName.end() || !it->second.defined())
        throw Error("save_compiled('" + path + "'): parameter '" + binding.name +
                    "' has no copy on " + device.str());
      value = it->second;
      name = binding.name;
    }
    Tensor host = detail::plain(value).to(cpu(0));
    host.wait_to_read();
    arguments.push_back(
        {name, false, std::string(static_cast<const char *>(host.data()), host.nbytes())});
  }
  ModelFile file = model_file_for(program, std::move(arguments));
  write_model_file(path, file);
}

} // namespace dlc
