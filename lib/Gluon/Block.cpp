//===- Block.cpp - block trees, parameter paths, sequential containers --------===//
#include "dlc/Gluon/Block.h"

#include "dlc/Core/AtomicFile.h"
#include "dlc/Frontend/NumPy.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <typeinfo>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

namespace dlc::gluon {

namespace {
/// The block whose default forward is running on this thread: when the defaults call
/// each other back, the block overrides neither (one of them must be written).
thread_local const Block *defaultForwardOf = nullptr;

struct DefaultForward {
  const Block *saved;
  explicit DefaultForward(const Block *block) : saved(defaultForwardOf) {
    if (defaultForwardOf == block)
      throw UnsupportedError(block->kind() +
                             ": a block must override forward(x) or forward_multi(inputs)");
    defaultForwardOf = block;
  }
  ~DefaultForward() { defaultForwardOf = saved; }
};
} // namespace

Tensor Block::forward(const Tensor &x) {
  DefaultForward guard(this);
  std::vector<Tensor> outputs = forward_multi({x});
  if (outputs.size() != 1)
    throw UnsupportedError(kind() + ": forward_multi returned " + std::to_string(outputs.size()) +
                           " outputs where one was expected; call the block with a list of "
                           "inputs to get them all");
  return outputs[0];
}

std::vector<Tensor> Block::forward_multi(const std::vector<Tensor> &inputs) {
  if (inputs.size() != 1)
    throw UnsupportedError(kind() + ": takes one input, got " + std::to_string(inputs.size()) +
                           " (a block with several overrides forward_multi)");
  DefaultForward guard(this);
  return {forward(inputs[0])};
}

namespace {
/// Counts changes to any block's parameters or children, so that a compiled function
/// re-collects its block's parameters only after one (an imported ONNX block registers
/// what its conversions derive during its first call, inside the trace).
std::atomic<uint64_t> structureChanges{0};
} // namespace

void Block::addChild(const std::string &name, std::shared_ptr<Block> child) {
  if (!child)
    throw ValueError("register_child: '" + name + "' is a null block");
  for (const auto &entry : children_)
    if (entry.first == name)
      throw Error("a child named '" + name + "' is already registered");
  children_.emplace_back(name, std::move(child));
  ++structureChanges;
}

std::shared_ptr<Block> Block::child(const std::string &name) const {
  for (const auto &entry : children_)
    if (entry.first == name)
      return entry.second;
  return nullptr;
}

void Block::replace_child(const std::string &name, std::shared_ptr<Block> block) {
  if (!block)
    throw ValueError("replace_child: '" + name + "' cannot become a null block");
  for (auto &entry : children_)
    if (entry.first == name) {
      entry.second = std::move(block);
      ++structureChanges;
      return;
    }
  std::string names;
  for (const auto &entry : children_)
    names += (names.empty() ? "" : ", ") + entry.first;
  throw Error(kind() + " has no child named '" + name + "' to replace (its children: " +
              (names.empty() ? std::string("none") : names) + ")");
}

ParameterPtr Block::register_parameter(const std::string &name, ParameterPtr parameter) {
  for (const auto &entry : params_)
    if (entry.first == name)
      throw Error("a parameter named '" + name + "' is already registered");
  params_.emplace_back(name, parameter);
  ++structureChanges;
  return parameter;
}

void Block::collect(const std::string &prefix, ParameterDict &into) const {
  for (const auto &[name, parameter] : params_)
    into.add(prefix + name, parameter);
  for (const auto &[name, child] : children_)
    child->collect(prefix + name + ".", into);
}

ParameterDict Block::collect_params(const std::string &select) const {
  ParameterDict all;
  collect("", all);
  return select.empty() ? all : all.select(select);
}

void Block::initialize(const init::InitializerPtr &init, const std::vector<Device> &devices,
                       bool force_reinit) {
  collect_params().initialize(init, devices, force_reinit);
}

void Block::reset_device(const std::vector<Device> &devices) {
  collect_params().reset_device(devices);
}

std::string Block::str(int indent) const {
  std::ostringstream os;
  os << kind();
  if (!children_.empty()) {
    os << "(\n";
    for (const auto &[name, child] : children_)
      os << std::string(size_t(indent + 2), ' ') << "(" << name << "): " << child->str(indent + 2)
         << "\n";
    os << std::string(size_t(indent), ' ') << ")";
  }
  return os.str();
}

void Block::cast(DType dtype) {
  for (const auto &entry : params_)
    entry.second->cast(dtype);
  for (const auto &entry : children_)
    entry.second->cast(dtype);
}

void HybridBlock::cast(DType dtype) {
  Block::cast(dtype);
  compiled_.reset();
}

void HybridBlock::replace_child(const std::string &name, std::shared_ptr<Block> block) {
  Block::replace_child(name, std::move(block));
  compiled_.reset();
}

void HybridBlock::hybridize(bool active, const CompileOptions &options) {
  hybridized_ = active;
  options_ = options;
  compiled_.reset();
  for (const auto &entry : children())
    if (auto hybrid = std::dynamic_pointer_cast<HybridBlock>(entry.second))
      hybrid->hybridize(active, options);
}

void HybridBlock::set_compile_options(const CompileOptions &options) {
  options_ = options;
  if (compiled_)
    compiled_->set_options(options);
  for (const auto &entry : children())
    if (auto hybrid = std::dynamic_pointer_cast<HybridBlock>(entry.second))
      hybrid->set_compile_options(options);
}

Tensor HybridBlock::call(const Tensor &x) {
  // Inside a parent's trace, run inline: the parent's program includes this block.
  if (!hybridized_ || trace::active())
    return forward(x);
  return compiledFunction()(x);
}

std::vector<Tensor> HybridBlock::call_multi(const std::vector<Tensor> &inputs) {
  if (!hybridized_ || trace::active())
    return forward_multi(inputs);
  return compiledFunction()(inputs);
}

CompiledFunction &HybridBlock::compiledFunction() {
  if (!compiled_) {
    struct Collected {
      std::mutex mutex;
      uint64_t at = ~uint64_t(0);
      ParameterDict params;
    };
    auto collected = std::make_shared<Collected>();
    compiled_ = std::make_shared<CompiledFunction>(
        compiledName(),
        CompiledFunction::ForwardMulti(
            [this](const std::vector<Tensor> &inputs) { return forward_multi(inputs); }),
        [this, collected](Device device) {
          std::lock_guard<std::mutex> lock(collected->mutex);
          if (collected->at != structureChanges.load()) {
            collected->at = structureChanges.load();
            collected->params = collect_params();
          }
          const ParameterDict &params = collected->params;
          std::vector<BoundParameter> bound;
          for (const std::string &name : params.keys()) {
            const ParameterPtr &p = params[name];
            std::vector<Device> devices = p->list_devices();
            bool there = p->initialized() &&
                         std::find(devices.begin(), devices.end(), device) != devices.end();
            bound.push_back({name, there ? p->data(device) : Tensor(),
                             p->grad_req() != GradReq::null});
          }
          return bound;
        },
        options_);
  }
  return *compiled_;
}

std::string HybridBlock::compiledName() const {
  // Subclasses that keep the default kind() are named by their C++ class.
  if (kind() != "HybridBlock")
    return kind();
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> name(
      abi::__cxa_demangle(typeid(*this).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : kind();
}

CompileStats HybridBlock::compile_stats() const {
  return compiled_ ? compiled_->stats() : CompileStats{};
}

void HybridBlock::export_model(const std::string &prefix) const {
  if (!compiled_ || compiled_->traced_ir().empty())
    throw Error("export_model('" + prefix + "'): " + kind() +
                " has no trace yet; hybridize() it and call it on an input first");
  write_file_atomically(prefix + ".mlir",
                        [&](std::ostream &out) { out << compiled_->traced_ir(); },
                        "export_model");
  save_parameters(prefix + ".safetensors");
}

void HybridBlock::save_compiled(const std::string &path) const {
  if (!compiled_)
    throw Error("save_compiled('" + path + "'): " + kind() +
                " has no compiled program yet; hybridize() it and call it on an input first");
  compiled_->save_compiled(path);
}

void Block::addPositionalChild(std::shared_ptr<Block> child) {
  addChild(std::to_string(children_.size()), std::move(child));
}

Tensor Block::forwardThroughChildren(const Tensor &x) {
  Tensor y = x;
  for (const auto &entry : children_)
    y = entry.second->forward(y);
  return y;
}

Sequential &Sequential::add(std::shared_ptr<Block> block) {
  addPositionalChild(std::move(block));
  return *this;
}

Tensor Sequential::forward(const Tensor &x) { return forwardThroughChildren(x); }

HybridSequential &HybridSequential::add(std::shared_ptr<Block> block) {
  addPositionalChild(std::move(block));
  return *this;
}

Tensor HybridSequential::forward(const Tensor &x) { return forwardThroughChildren(x); }

HybridConcatenate &HybridConcatenate::add(std::shared_ptr<Block> block) {
  addPositionalChild(std::move(block));
  return *this;
}

Tensor HybridConcatenate::forward(const Tensor &x) {
  if (children().empty())
    throw ValueError("HybridConcatenate: has no children to concatenate (add() some first)");
  std::vector<Tensor> outputs;
  outputs.reserve(children().size());
  for (const auto &entry : children())
    outputs.push_back(entry.second->forward(x));
  return np::concatenate(outputs, axis_);
}

} // namespace dlc::gluon
