//===- Dispatch.cpp - the op registry and eager dispatch ----------------------===//
#include "dlc/Frontend/OpRegistry.h"

#include "AutogradInternal.h"
#include "OpDefinitions.h"
#include "Tracer.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Engine/Profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <initializer_list>
#include <map>
#include <mutex>

namespace dlc {

namespace {

/// Calls of ops that may run on the caller (OpDef::may_run_on_caller) whose operands and
/// results hold at most this many bytes in all are cheaper to run than to hand to a
/// worker thread (see TaskCost::tiny).
constexpr size_t kTinyTaskBytes = size_t(64) << 10;

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<OpDef>> ops;
};

Registry &registry() {
  static Registry *instance = new Registry;
  return *instance;
}

void registerEveryOp() {
  static std::once_flag once;
  std::call_once(once, [] {
    detail::register_elementwise_ops();
    detail::register_linalg_ops();
    detail::register_reduce_ops();
    detail::register_layout_ops();
    detail::register_index_ops();
    detail::register_norm_ops();
    detail::register_attention_ops();
    detail::register_creation_ops();
    detail::register_nn_ops();
    detail::register_memory_layout_ops();
    detail::register_optimizer_ops();
  });
}

/// "float32 4x3 on cpu(0), int64 4 on cpu(1)"
std::string describe(const std::vector<Tensor> &inputs) {
  std::string text;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    text += (i ? ", " : "") + std::string(dtype_name(t.dtype())) + " " +
            shape_rules::str(t.shape()) + " on " + t.device().str();
  }
  return text.empty() ? "none" : text;
}

/// The layouts of one call: the op's rule, checked, or plain everywhere.
LayoutPlan planLayouts(const OpDef &op, const std::vector<Tensor> &inputs,
                       const std::vector<TensorMeta> &metas,
                       const std::vector<TensorMeta> &outputs, const Attrs &attrs,
                       Device where, bool referenceKernels) {
  std::vector<Layout> current;
  current.reserve(inputs.size());
  for (const Tensor &input : inputs)
    current.push_back(input.impl()->layout);
  if (!op.layout)
    return plain_layouts(inputs.size(), outputs.size());
  // Blocked tensors are oneDNN's CPU layouts; the reference kernels read plain ones.
  const Layout blocked =
      where.is_host() && !referenceKernels ? blocked_layout() : Layout::plain;
  LayoutPlan plan = op.layout(current, metas, outputs, attrs, blocked);
  auto check = [&](const std::vector<Layout> &layouts, const std::vector<TensorMeta> &sides,
                   const char *side) {
    if (layouts.size() != sides.size())
      throw Error(op.name + ": internal error: the layout rule plans " +
                  std::to_string(layouts.size()) + " " + side + ", the op has " +
                  std::to_string(sides.size()));
    for (size_t i = 0; i < layouts.size(); ++i)
      if (layouts[i] != Layout::plain && !blockable(sides[i].shape, sides[i].dtype, layouts[i]))
        throw Error(op.name + ": internal error: the layout rule plans " +
                    layout_name(layouts[i]) + " for " + side + " #" + std::to_string(i) +
                    ", " + dtype_name(sides[i].dtype) + " " + shape_rules::str(sides[i].shape));
  };
  check(plan.inputs, metas, "inputs");
  check(plan.outputs, outputs, "outputs");
  return plan;
}

/// This thread's T, reached in one thread-local lookup (in a shared library, such as the
/// Python module, a lookup is a call, and a lookup of an object with a constructor or a
/// destructor is two). Made on first use and deleted when the thread ends; null after.
template <typename T> T *perThread() {
  struct Slot {
    T *value = nullptr;
    bool gone = false;
  };
  thread_local Slot slot; // constant-initialized, nothing to destroy: no guard
  if (!slot.value && !slot.gone) {
    struct Reaper {
      Slot *slot;
      ~Reaper() {
        slot->gone = true;
        delete std::exchange(slot->value, nullptr);
      }
    };
    thread_local Reaper reaper{&slot};
    slot.value = new T;
  }
  return slot.value;
}

/// What a call of an op holds only while it lasts, kept from call to call so that filling
/// it allocates nothing once its vectors and shapes have grown.
struct CallScratch {
  std::vector<Tensor> inputs;    ///< invoke1's inputs written in braces
  std::vector<Tensor> results;   ///< invoke1's results
  std::vector<TensorMeta> metas; ///< the inputs' shapes and dtypes
};

/// Takes this thread's CallScratch for one call. A call made during another (a layout
/// conversion inside an op) takes the next level's; a deque keeps every level where it is
/// as the pool grows. The tensors are dropped when the call ends.
class CallLevel {
public:
  CallLevel() : levels_(*perThread<Levels>()) {
    if (levels_.pool.size() <= levels_.depth)
      levels_.pool.emplace_back();
    scratch_ = &levels_.pool[levels_.depth++];
  }
  ~CallLevel() {
    scratch_->inputs.clear();
    scratch_->results.clear();
    --levels_.depth;
  }
  CallLevel(const CallLevel &) = delete;
  CallLevel &operator=(const CallLevel &) = delete;
  CallScratch &get() { return *scratch_; }

private:
  struct Levels {
    std::deque<CallScratch> pool;
    size_t depth = 0; // the calls in progress on this thread
  };
  Levels &levels_;
  CallScratch *scratch_;
};

/// Fills `metas` with the shapes and dtypes of `inputs`, within their capacity.
void fillMetas(std::vector<TensorMeta> &metas, const std::vector<Tensor> &inputs) {
  metas.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    metas[i].shape.assign(inputs[i].shape().begin(), inputs[i].shape().end());
    metas[i].dtype = inputs[i].dtype();
  }
}

/// Kernel arguments of eager calls, reused. A task's arguments go back to the pools of
/// the thread that drops them; a tiny task runs and is dropped on its caller's thread, so
/// the next call there with as many inputs finds the vectors and shapes with their
/// capacity and fills them without allocating. (A queued task's go to its worker's
/// pools, up to a bound.)
class KernelArgsPool {
public:
  struct GiveBack {
    void operator()(KernelArgs *args) const {
      Pools *pools = perThread<Pools>();
      size_t arity = args->inputs.size();
      if (!pools || arity >= kArities || pools->free[arity].size() >= kMaxPooled) {
        delete args;
        return;
      }
      args->attrs = nullptr;
      args->device_seed = nullptr;
      pools->free[arity].emplace_back(args);
    }
  };
  using Handle = std::unique_ptr<KernelArgs, GiveBack>;

  /// Arguments with `inputs` inputs and `outputs` outputs, their fields still to be set.
  static Handle take(size_t inputs, size_t outputs) {
    Handle args;
    Pools *pools = perThread<Pools>();
    if (pools && inputs < kArities && !pools->free[inputs].empty()) {
      args.reset(pools->free[inputs].back().release());
      pools->free[inputs].pop_back();
    } else {
      args.reset(new KernelArgs);
    }
    args->inputs.resize(inputs);
    args->outputs.resize(outputs);
    return args;
  }

private:
  static constexpr size_t kArities = 8, kMaxPooled = 32;
  struct Pools {
    std::vector<std::unique_ptr<KernelArgs>> free[kArities]; // by number of inputs
  };
};

template <typename ErrorT>
[[noreturn]] void rethrowWithContext(const OpDef &op, const std::vector<Tensor> &inputs,
                                     const Attrs &attrs, const char *what) {
  throw ErrorT(op.name + ": " + what + " (inputs: " + describe(inputs) +
               (attrs.str() == "{}" ? "" : "; attributes " + attrs.str()) + ")");
}

} // namespace

void register_op(OpDef op) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = op.name;
  if (r.ops.count(name))
    throw Error("op '" + name + "' is registered twice");
  if (!op.layout) // the rule the dialect op's ODS names, if any
    op.layout = layout_rule_of(op.dialect_op);
  r.ops[name] = std::make_unique<OpDef>(std::move(op));
}

const OpDef &find_op(const std::string &name) {
  registerEveryOp();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.ops.find(name);
  if (it == r.ops.end())
    throw Error("no op named '" + name + "'");
  return *it->second;
}

std::vector<const OpDef *> all_ops() {
  registerEveryOp();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const OpDef *> ops;
  for (auto &entry : r.ops)
    ops.push_back(entry.second.get());
  return ops;
}

namespace {

/// Checks that `into` can take the outputs `metas` of `op` on `where`: one plain tensor of
/// each output's shape and dtype, on that device.
void checkInto(const OpDef &op, const std::vector<Tensor> &into,
               const std::vector<TensorMeta> &metas, Device where) {
  if (into.size() != metas.size())
    throw Error(op.name + ": writing into " + std::to_string(into.size()) +
                " tensors, but the op has " + std::to_string(metas.size()) + " outputs");
  for (size_t k = 0; k < into.size(); ++k) {
    const Tensor &t = into[k];
    std::string which = op.name + ": output #" + std::to_string(k);
    if (!t.defined())
      throw Error(which + " is an undefined tensor");
    if (t.shape() != metas[k].shape || t.dtype() != metas[k].dtype)
      throw ShapeError(which + " is " + dtype_name(metas[k].dtype) + " " +
                       shape_rules::str(metas[k].shape) + ", cannot write it into " +
                       dtype_name(t.dtype()) + " " + shape_rules::str(t.shape()));
    if (t.device() != where)
      throw DeviceMismatchError(which + " is computed on " + where.str() +
                                ", cannot write it into a tensor on " + t.device().str());
    if (t.impl()->layout != Layout::plain)
      throw UnsupportedError(which + ": the tensor to write into is in a blocked layout; "
                             "only plain tensors take results in place");
  }
}

/// Runs `op` (see invoke); its results go to `results`, which must arrive empty.
/// `scratch`: the call's level (CallLevel).
void run(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
         std::optional<Device> device, const std::vector<Tensor> *into,
         std::vector<Tensor> &results, CallScratch &scratch);

} // namespace

std::vector<Tensor> invoke(const OpDef &op, const std::vector<Tensor> &inputs,
                           const Attrs &attrs, std::optional<Device> device) {
  std::vector<Tensor> results;
  CallLevel level;
  run(op, inputs, attrs, device, nullptr, results, level.get());
  return results;
}

void invoke_into(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
                 const std::vector<Tensor> &outputs) {
  if (trace::Tracer::current())
    throw UnsupportedError(op.name + ": writing results into existing tensors cannot be "
                           "traced by hybridize; use the op's value-returning form");
  if (autograd::is_recording())
    throw UnsupportedError(op.name + ": writing results into existing tensors under "
                           "autograd::Record would change values the recording saved; "
                           "pause recording (autograd::Pause) first");
  std::vector<Tensor> results;
  CallLevel level;
  run(op, inputs, attrs, std::nullopt, &outputs, results, level.get());
}

namespace {

void run(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
         std::optional<Device> device, const std::vector<Tensor> *into,
         std::vector<Tensor> &results, CallScratch &scratch) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw Error(op.name + ": input #" + std::to_string(i) + " is an undefined tensor");

  Device where = device ? *device : inputs.empty() ? current_device() : inputs[0].device();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].device() != where)
      throw DeviceMismatchError(
          op.name + ": inputs live on different devices: " +
          (device ? "the op runs on " + where.str() : "input #0 is on " + where.str()) +
          ", input #" + std::to_string(i) + " is on " + inputs[i].device().str() +
          "; move one with copyto() or to() first");

  fillMetas(scratch.metas, inputs);
  const std::vector<TensorMeta> &metas = scratch.metas;
  std::vector<TensorMeta> outputs;
  try {
    outputs = op.infer(metas, attrs);
  } catch (const ShapeError &e) {
    rethrowWithContext<ShapeError>(op, inputs, attrs, e.what());
  } catch (const DTypeError &e) {
    rethrowWithContext<DTypeError>(op, inputs, attrs, e.what());
  } catch (const Error &e) {
    rethrowWithContext<Error>(op, inputs, attrs, e.what());
  }

  const KernelEntry *kernels = op.kernels.find(op.dialect_op, where);
  if (!kernels)
    throw UnsupportedError(op.name + ": no kernel for " + where.str() + " (inputs: " +
                           describe(inputs) + ")");
  // Read once: the kernel and the layouts it is given must agree.
  const bool referenceKernels = reference_kernels_enabled();
  KernelFn kernel = referenceKernels ? kernels->reference : kernels->fast;

  if (trace::Tracer *tracer = trace::Tracer::current()) {
    // Hybridize is tracing: record the call, compute nothing.
    for (const TensorMeta &meta : outputs)
      results.push_back(trace::Tracer::symbolic(meta.shape, meta.dtype, where));
    tracer->record_op(op, inputs, results, attrs);
    return;
  }

  // What the kernel reads: the inputs, converted where its layouts differ (autograd
  // records the inputs themselves: a conversion changes no value). Most calls have
  // plain tensors and no rule, or the element-wise rule, which blocks only what arrives
  // blocked: nothing to plan.
  bool planned = op.layout != nullptr && op.layout != elementwise_layouts;
  for (size_t i = 0; i < inputs.size() && !planned; ++i)
    planned = inputs[i].impl()->layout != Layout::plain;
  LayoutPlan layouts;
  std::vector<Tensor> converted;
  if (planned) {
    layouts = planLayouts(op, inputs, metas, outputs, attrs, where, referenceKernels);
    converted = inputs;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].impl()->layout != layouts.inputs[i])
        converted[i] = detail::in_layout(inputs[i], layouts.inputs[i]);
  }
  const std::vector<Tensor> &operands = planned ? converted : inputs;

  if (into) {
    checkInto(op, *into, outputs, where);
    for (size_t k = 0; k < outputs.size() && planned; ++k)
      if (layouts.outputs[k] != Layout::plain)
        throw UnsupportedError(op.name + ": its kernel writes output #" + std::to_string(k) +
                               " in a blocked layout; it cannot write into a plain tensor");
    results = *into;
  } else {
    results.reserve(outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      // The output's shape moves into the tensor: outputs[k] is not read after this.
      results.push_back(Tensor::empty(std::move(outputs[k].shape), outputs[k].dtype, where));
      if (planned)
        results.back().impl()->layout = layouts.outputs[k];
    }
  }

  BufferList reads, writes;
  size_t bytes = 0;
  for (const Tensor &input : operands) {
    reads.push_back(input.buffer());
    bytes += input.nbytes();
  }
  for (const Tensor &result : results) {
    writes.push_back(result.buffer());
    bytes += result.nbytes();
  }

  // The task and the autograd record share one copy of the attributes; most calls have
  // none, and share one empty set.
  static const auto noAttrs = std::make_shared<const Attrs>();
  std::shared_ptr<const Attrs> sharedAttrs =
      attrs.items().empty() ? noAttrs : std::make_shared<const Attrs>(attrs);
  const std::string *opName = &op.dialect_op; // the same key as compiled programs
  // The kernel's view of each tensor is fixed now: a tensor handle can later be pointed
  // at other memory (detail::make_plain_in_place) before this task runs. The task keeps
  // the buffers alive.
  KernelArgsPool::Handle args = KernelArgsPool::take(operands.size(), results.size());
  args->device = where;
  args->op = opName->c_str();
  auto view = [](TensorRef &ref, const Tensor &t) {
    // Tensor::data() without its question to the tracer, answered above: none is running.
    const Tensor::Impl &impl = *t.impl();
    ref.data = static_cast<char *>(impl.buffer->data()) + impl.offset;
    ref.shape.assign(t.shape().begin(), t.shape().end()); // within the pooled capacity
    ref.dtype = t.dtype();
    ref.layout = t.impl()->layout;
  };
  for (size_t i = 0; i < operands.size(); ++i)
    view(args->inputs[i], operands[i]);
  for (size_t k = 0; k < results.size(); ++k)
    view(args->outputs[k], results[k]);
  enqueue(where, std::move(reads), std::move(writes),
          [args = std::move(args), sharedAttrs, kernel, opName]() mutable {
            args->attrs = sharedAttrs.get();
            KernelProfile::timed(*opName, [&] { kernel(*args); });
            if (check_numerics_enabled())
              check_finite_outputs(opName->c_str(), args->device, args->inputs, args->outputs);
          },
          op.may_run_on_caller && bytes <= kTinyTaskBytes ? TaskCost::tiny : TaskCost::queued);

  // A GPU kernel's outputs are known only once it ran on the device: the guard copies
  // them to the host and waits, so that the first op to make a NaN is the one named.
  if (check_numerics_enabled() && !where.is_host())
    for (size_t k = 0; k < results.size(); ++k)
      if (is_floating(results[k].dtype())) {
        Tensor host = results[k].copyto(cpu());
        host.wait_to_read();
        if (int64_t at = first_non_finite(host.data(), host.dtype(), host.size()); at >= 0)
          throw Error("numerics check (DLC_CHECK_NUMERICS): " + op.dialect_op +
                      " made a NaN or an infinity at element " + std::to_string(at) +
                      " of output #" + std::to_string(k) + " (" +
                      shape_rules::str(results[k].shape()) + " " + dtype_name(results[k].dtype()) +
                      " on " + where.str() + ")");
      }

  if (op.vjp && autograd::is_recording() && !into) {
    // The VJP sees detached aliases: the recording keeps values alive, not itself.
    // Which inputs want a gradient is read when the backward runs, as the walk delivers
    // by the same rule (a tensor may call attach_grad() after the forward). Weak
    // references: the tape node already holds the inputs, and a closure holding them too
    // would make a cycle through a tensor that an op writes in place.
    std::vector<Tensor> savedInputs, savedOutputs;
    std::vector<std::weak_ptr<Tensor::Impl>> recordedInputs;
    for (const Tensor &t : inputs) {
      savedInputs.push_back(t.detach());
      recordedInputs.push_back(t.impl());
    }
    for (const Tensor &t : results)
      savedOutputs.push_back(t.detach());
    const OpDef *def = &op;
    autograd::record(op.name, inputs, results,
                     [def, savedInputs, savedOutputs, sharedAttrs,
                      recordedInputs](const std::vector<Tensor> &grads) {
                       std::vector<bool> needsGrad;
                       for (const std::weak_ptr<Tensor::Impl> &input : recordedInputs) {
                         std::shared_ptr<Tensor::Impl> impl = input.lock();
                         needsGrad.push_back(impl && autograd::needs_grad(Tensor(impl)));
                       }
                       VjpContext context{def->name, savedInputs, savedOutputs, grads,
                                          *sharedAttrs, &needsGrad};
                       return def->vjp(context);
                     });
  }
}

} // namespace

bool is_tracing() { return trace::Tracer::current() != nullptr; }

std::vector<Tensor> vjp_not_implemented(const VjpContext &context) {
  throw UnsupportedError("backward: '" + context.op_name +
                         "' has no gradient in dlc (it is itself a gradient op; second-order "
                         "derivatives are not supported)");
}

namespace {

Tensor invokeOne(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
                 std::optional<Device> device, CallScratch &scratch) {
  run(op, inputs, attrs, device, nullptr, scratch.results, scratch);
  if (scratch.results.size() != 1)
    throw Error(op.name + ": expected one result, the op gives " +
                std::to_string(scratch.results.size()));
  return std::move(scratch.results[0]);
}

} // namespace

Tensor invoke1(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs,
               std::optional<Device> device) {
  CallLevel level;
  return invokeOne(op, inputs, attrs, device, level.get());
}

Tensor invoke1(const OpDef &op, std::initializer_list<Tensor> inputs, const Attrs &attrs,
               std::optional<Device> device) {
  CallLevel level;
  level.get().inputs.assign(inputs);
  return invokeOne(op, level.get().inputs, attrs, device, level.get());
}

} // namespace dlc
