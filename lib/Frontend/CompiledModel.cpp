//===- CompiledModel.cpp - loading, checking and running a .dlc model ----------===//
#include "dlc/Frontend/CompiledModel.h"

#include "OpDefinitions.h"

#include <cstdio>
#include "dlc/Core/Error.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include <cstring>
#include <map>

namespace dlc {

namespace {

/// The registry's entry for each dialect op: whose rule checks a step.
const std::map<std::string, const OpDef *> &rulesByDialectOp() {
  static const std::map<std::string, const OpDef *> byOp = [] {
    std::map<std::string, const OpDef *> map;
    for (const OpDef *op : all_ops())
      if (!op->dialect_op.empty() && op->infer)
        map.emplace(op->dialect_op, op);
    return map;
  }();
  return byOp;
}

std::string describe(const Program &p, const std::vector<int> &ids) {
  std::string text;
  for (int id : ids) {
    const ProgramValue &v = p.values[size_t(id)];
    text += (text.empty() ? "" : ", ") + std::string(dtype_name(v.dtype)) + " " +
            shape_rules::str(v.shape);
  }
  return "(" + text + ")";
}

/// "" when `op`'s rule gives `outputs` from `inputs`, else why not.
std::string checkRule(const std::string &op, const Attrs &attrs,
                      const std::vector<TensorMeta> &inputs,
                      const std::vector<TensorMeta> &outputs) {
  const op_facts::OpInfo *facts = op_facts::find(op);
  if (!facts)
    return op + " is not an op of the dlc dialect";
  if (!facts->takes(inputs.size(), outputs.size())) {
    auto range = [](int low, int high) {
      return high < 0 ? std::to_string(low) + " or more"
                      : low == high ? std::to_string(low)
                                    : std::to_string(low) + " to " + std::to_string(high);
    };
    return op + " takes " + range(facts->min_operands, facts->max_operands) + " operands and " +
           range(facts->min_results, facts->max_results) + " results, the step has " +
           std::to_string(inputs.size()) + " and " + std::to_string(outputs.size());
  }
  auto rule = rulesByDialectOp().find(op);
  if (rule == rulesByDialectOp().end())
    return op + " has no shape rule in this build";
  std::vector<TensorMeta> inferred;
  try {
    inferred = rule->second->infer(inputs, attrs);
  } catch (const std::exception &e) {
    return op + ": " + e.what();
  }
  if (inferred.size() != outputs.size())
    return op + " gives " + std::to_string(inferred.size()) + " results, the step has " +
           std::to_string(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k)
    if (inferred[k].shape != outputs[k].shape || inferred[k].dtype != outputs[k].dtype)
      return op + " gives result " + std::to_string(k) + " as " +
             dtype_name(inferred[k].dtype) + " " + shape_rules::str(inferred[k].shape) +
             ", the step has " + dtype_name(outputs[k].dtype) + " " +
             shape_rules::str(outputs[k].shape);
  return "";
}

std::vector<TensorMeta> metas(const Program &p, const std::vector<int> &ids) {
  std::vector<TensorMeta> out;
  for (int id : ids)
    out.push_back({p.values[size_t(id)].shape, p.values[size_t(id)].dtype});
  return out;
}

} // namespace

std::string check_program_ops(const Program &p) {
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const ProgramStep &s = p.steps[i];
    std::string where = "step " + std::to_string(i) + " " + describe(p, s.inputs) + " -> " +
                        describe(p, s.outputs) + ": ";
    std::string problem;
    if (s.kind == ProgramStep::Kind::copy || s.kind == ProgramStep::Kind::all_reduce) {
      for (size_t k = 0; k < s.inputs.size() && problem.empty(); ++k) {
        const ProgramValue &in = p.values[size_t(s.inputs[k])];
        const ProgramValue &out = p.values[size_t(s.outputs[k])];
        if (in.bytes() != out.bytes() || in.dtype != out.dtype)
          problem = s.op + " between values of different types";
      }
    } else if (s.fused) {
      // Each sub-step is an element-wise op on float32 chunks (scalars as 0-d tensors).
      const FusedElementwise &f = *s.fused;
      std::vector<TensorMeta> local;
      for (int k = 0; k < f.inputs; ++k)
        local.push_back({f.scalar[size_t(k)] ? Shape{} : Shape{f.elements}, DType::f32});
      for (size_t k = 0; k < f.steps.size() && problem.empty(); ++k) {
        const FusedElementwise::SubStep &sub = f.steps[k];
        if (!op_facts::has_trait(sub.op, op_facts::OpTrait::elementwise_kernel)) {
          problem = sub.op + " is not an element-wise op, in an element-wise region";
          break;
        }
        std::vector<TensorMeta> ins;
        for (int in : sub.inputs)
          ins.push_back(local[size_t(in)]);
        TensorMeta out{f.scalar[local.size()] ? Shape{} : Shape{f.elements}, DType::f32};
        problem = checkRule(sub.op, sub.attrs, ins, {out});
        local.push_back(out);
      }
    } else {
      problem = checkRule(s.op.substr(0, s.op.find('+')), s.attrs, metas(p, s.inputs),
                          metas(p, s.outputs));
    }
    if (!problem.empty())
      return where + problem;
  }
  return "";
}

std::shared_ptr<const LoadedHostCode> CompiledModel::loadHostCode() const {
  if (file_.host_code.empty() || !model_host_code_enabled())
    return nullptr;
  // Code this CPU cannot run, or that does not load, leaves the regions on their
  // interpreted sub-kernels: the model runs, slower, and says why once.
  std::string why = host_code_unrunnable(file_.host_target);
  std::shared_ptr<const LoadedHostCode> code;
  if (why.empty())
    code = LoadedHostCode::open(file_.host_code, why);
  if (!code)
    std::fprintf(stderr,
                 "dlc: the model %s runs its fused regions' interpreted kernels: its "
                 "generated host code cannot run here (%s)\n",
                 source_.c_str(), why.c_str());
  return code;
}

std::shared_ptr<const CompiledModel> CompiledModel::load(const std::string &path,
                                                         std::optional<Device> device) {
  return std::make_shared<const CompiledModel>(read_model_file(path), path, device);
}

namespace {

/// Moves a one-device program to `to`, a device of the same kind; "" or why not.
std::string retarget(Program &p, Device to) {
  std::vector<Device> used = p.devices();
  if (used.size() != 1)
    return "it runs on " + std::to_string(used.size()) + " devices; only a one-device model "
           "can be moved to " + to.str();
  Device from = used.front();
  if (from.kind != to.kind)
    return "it was compiled for " + from.str() + ", which " + to.str() + " cannot stand in for "
           "(another device of the same kind can)";
  auto move = [&](Device &d) {
    if (d == from)
      d = to;
  };
  for (ProgramValue &v : p.values)
    move(v.device);
  for (ProgramStep &s : p.steps) {
    move(s.device);
    for (Device &d : s.devices)
      move(d);
  }
  for (Program::Arena &a : p.arenas)
    move(a.device);
  MemoryPlan plan = p.memory();
  return p.set_plan(plan);
}

} // namespace

CompiledModel::CompiledModel(ModelFile file, const std::string &source,
                             std::optional<Device> device)
    : file_(std::move(file)), source_(source) {
  auto fail = [&](const std::string &problem) {
    throw Error("the model " + source_ + " is unusable: " + problem);
  };
  std::string error;
  program_ = decode_program(file_.program, error, file_.version, loadHostCode());
  if (!program_)
    fail("its program: " + error);
  file_.program.clear();
  file_.host_code.clear();
  if (std::string problem = check_program_ops(*program_); !problem.empty())
    fail(problem);
  std::vector<Device> used = program_->devices();
  for (Device d : used)
    if (d.kind != used.front().kind || (file_.target == "cpu") != d.is_host())
      fail("its program runs on " + d.str() + ", its target is " + file_.target);
  if (device && *device != this->device())
    if (std::string why = retarget(*program_, *device); !why.empty())
      fail("it cannot run on " + device->str() + ": " + why);
  if (!program_->updates.empty())
    fail("its program writes " + std::to_string(program_->updates.size()) +
         " of its arguments (a model's weights are read-only)");
  Device home = this->device();
  if (!home.is_host() && !can_compute_on(home))
    fail("it runs on " + home.str() + ", which this process does not have");

  // Every argument is an input or a weight, once; each of the right type.
  const size_t arguments = program_->arguments.size();
  std::vector<int> boundBy(arguments, 0);
  auto argumentType = [&](int index, const std::string &what, const Shape &shape, DType dtype) {
    if (index < 0 || size_t(index) >= arguments)
      fail(what + " is argument " + std::to_string(index) + " of " + std::to_string(arguments));
    const ProgramValue &v = program_->values[size_t(program_->arguments[size_t(index)])];
    if (v.shape != shape || v.dtype != dtype)
      fail(what + " is " + dtype_name(dtype) + " " + shape_rules::str(shape) +
           ", its argument is " + dtype_name(v.dtype) + " " + shape_rules::str(v.shape));
    ++boundBy[size_t(index)];
  };
  for (const ModelTensor &in : file_.inputs)
    argumentType(in.index, "input '" + in.name + "'", in.shape, in.dtype);
  for (const ModelWeight &w : file_.weights)
    argumentType(w.argument, "weight '" + w.name + "'", w.shape, w.dtype);
  for (size_t i = 0; i < arguments; ++i)
    if (boundBy[i] != 1)
      fail("argument " + std::to_string(i) + " is bound " + std::to_string(boundBy[i]) +
           " times (each must be an input or a weight, once)");
  for (const ModelTensor &out : file_.outputs) {
    if (out.index < 0 || size_t(out.index) >= program_->results.size())
      fail("output '" + out.name + "' is result " + std::to_string(out.index) + " of " +
           std::to_string(program_->results.size()));
    const ProgramValue &v = program_->values[size_t(program_->results[size_t(out.index)])];
    if (v.shape != out.shape || v.dtype != out.dtype)
      fail("output '" + out.name + "' is " + dtype_name(out.dtype) + " " +
           shape_rules::str(out.shape) + ", its result is " + dtype_name(v.dtype) + " " +
           shape_rules::str(v.shape));
  }

  // The weights, on the program's device in the layouts its kernels read, once.
  bound_.resize(arguments);
  for (ModelWeight &w : file_.weights) {
    Tensor host = Tensor::empty(w.shape, w.dtype, cpu(0));
    if (!w.bytes.empty())
      std::memcpy(host.data(), w.bytes.data(), w.bytes.size());
    const ProgramValue &v = program_->values[size_t(program_->arguments[size_t(w.argument)])];
    bound_[size_t(w.argument)] = detail::in_layout(host.to(home), v.layout);
    w.bytes = std::string(); // the tensor holds them now
  }
}

Device CompiledModel::device() const {
  std::vector<Device> used = program_->devices();
  return used.empty() ? (program_->values.empty() ? cpu(0) : program_->values.front().device)
                      : used.front();
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor> &inputs) const {
  if (inputs.size() != file_.inputs.size())
    throw ValueError("model " + source_ + " takes " + std::to_string(file_.inputs.size()) +
                     " inputs, got " + std::to_string(inputs.size()));
  Device home = device();
  std::vector<Tensor> arguments = bound_;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ModelTensor &want = file_.inputs[k];
    const Tensor &x = inputs[k];
    if (!x.defined())
      throw ValueError("model " + source_ + ": input '" + want.name + "' is undefined");
    if (x.dtype() != want.dtype)
      throw DTypeError("model " + source_ + ": input '" + want.name + "' must be " +
                       dtype_name(want.dtype) + " " + shape_rules::str(want.shape) + ", got " +
                       dtype_name(x.dtype()) + " " + shape_rules::str(x.shape()) + " on " +
                       x.device().str());
    if (x.shape() != want.shape)
      throw ShapeError("model " + source_ + ": input '" + want.name + "' must be " +
                       dtype_name(want.dtype) + " " + shape_rules::str(want.shape) + ", got " +
                       shape_rules::str(x.shape()) + " on " + x.device().str());
    const ProgramValue &v = program_->values[size_t(program_->arguments[size_t(want.index)])];
    arguments[size_t(want.index)] = detail::in_layout(x.to(home), v.layout);
  }
  std::vector<BoundBuffer> argumentBuffers, resultBuffers;
  for (const Tensor &t : arguments)
    argumentBuffers.push_back({t.buffer(), t.impl()->offset});
  std::vector<Tensor> results;
  for (int id : program_->results) {
    const ProgramValue &v = program_->values[size_t(id)];
    Tensor r = Tensor::empty(v.shape, v.dtype, v.device);
    r.impl()->layout = v.layout;
    resultBuffers.push_back({r.buffer(), r.impl()->offset});
    results.push_back(std::move(r));
  }
  std::vector<int64_t> seeds;
  for (Device d : program_->seed_devices())
    seeds.push_back(detail::next_kernel_seed(d));
  program_->run(argumentBuffers, resultBuffers, std::move(seeds));
  std::vector<Tensor> outputs;
  for (const ModelTensor &out : file_.outputs)
    outputs.push_back(detail::plain(results[size_t(out.index)]));
  return outputs;
}

} // namespace dlc
