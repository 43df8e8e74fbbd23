//===- Block.cpp - block trees, parameter paths, sequential containers --------===//
#include "dlc/Gluon/Block.h"

#include <sstream>

namespace dlc::gluon {

void Block::addChild(const std::string &name, std::shared_ptr<Block> child) {
  if (!child)
    throw std::invalid_argument("register_child: '" + name + "' is a null block");
  for (const auto &entry : children_)
    if (entry.first == name)
      throw Error("a child named '" + name + "' is already registered");
  children_.emplace_back(name, std::move(child));
}

ParameterPtr Block::register_parameter(const std::string &name, ParameterPtr parameter) {
  for (const auto &entry : params_)
    if (entry.first == name)
      throw Error("a parameter named '" + name + "' is already registered");
  params_.emplace_back(name, parameter);
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

void HybridBlock::hybridize(bool active) {
  hybridized_ = active;
  for (const auto &entry : children())
    if (auto hybrid = std::dynamic_pointer_cast<HybridBlock>(entry.second))
      hybrid->hybridize(active);
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

} // namespace dlc::gluon
