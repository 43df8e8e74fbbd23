//===- Parameter.cpp - per-device parameter copies, deferred initialization ---===//
#include "dlc/Gluon/Parameter.h"

#include "dlc/Hybridize/CompiledFunction.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/Dist.h"
#include "dlc/Frontend/NumPy.h"

#include <regex>

namespace dlc::gluon {

Parameter::Parameter(std::string name, Shape shape, DType dtype, init::InitializerPtr init,
                     GradReq grad_req)
    : name_(std::move(name)), shape_(std::move(shape)), dtype_(dtype), init_(std::move(init)),
      grad_req_(grad_req) {}

bool Parameter::shape_known() const {
  for (int64_t d : shape_)
    if (d <= 0)
      return false;
  return true;
}

void Parameter::set_grad_req(GradReq req) {
  grad_req_ = req;
  for (auto &[device, copy] : copies_)
    copy.attach_grad(req);
}

std::string Parameter::where() const {
  if (devices_.empty())
    return "no device (not initialized)";
  std::string text;
  for (size_t i = 0; i < devices_.size(); ++i)
    text += (i ? ", " : "") + devices_[i].str();
  return text;
}

void Parameter::initialize(const init::InitializerPtr &fallback,
                           const std::vector<Device> &devices, bool force_reinit) {
  if (devices.empty())
    throw ValueError("initialize " + name_ + ": needs at least one device");
  if (initialized() && !force_reinit)
    return;
  init::InitializerPtr chosen = init_ ? init_ : fallback;
  if (!chosen)
    chosen = std::make_shared<init::Uniform>();
  if (!shape_known()) {
    deferredInit_ = chosen;
    deferredDevices_ = devices;
    copies_.clear();
    devices_.clear();
    return;
  }
  allocate(chosen, devices);
}

void Parameter::allocate(const init::InitializerPtr &init, const std::vector<Device> &devices) {
  trace::Pause notTraced; // initializers run for real, even during a trace
  autograd::Pause pause;
  copies_.clear();
  devices_ = devices;
  // One draw, copied everywhere: every device starts from the same values.
  Tensor value = init->make(name_, shape_, dtype_, devices.front());
  for (Device device : devices) {
    Tensor copy = value.copyto(device);
    copy.attach_grad(grad_req_);
    copies_[device] = copy;
  }
  deferredInit_ = nullptr;
  deferredDevices_.clear();
}

void Parameter::set_shape(const Shape &shape) {
  if (shape.size() != shape_.size())
    throw ShapeError("parameter " + name_ + " has shape " + shape_rules::str(shape_) +
                     " but the layer needs " + shape_rules::str(shape));
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape_[i] > 0 && shape_[i] != shape[i])
      throw ShapeError("parameter " + name_ + " has shape " + shape_rules::str(shape_) +
                       " but the layer's input needs " + shape_rules::str(shape) +
                       " (dimension " + std::to_string(i) + " differs)");
  shape_ = shape;
  if (deferredInit_ && !initialized())
    allocate(deferredInit_, deferredDevices_);
}

Tensor Parameter::data(Device device) const {
  auto it = copies_.find(device);
  if (it != copies_.end())
    return it->second;
  if (deferredInit_)
    throw Error("parameter " + name_ + " has not been allocated yet: its shape " +
                shape_rules::str(shape_) +
                " is still unknown (deferred initialization happens at the first forward)");
  throw Error("parameter " + name_ + " has no copy on " + device.str() + "; it lives on " +
              where() + " (initialize it there, or call reset_device)");
}

Tensor Parameter::data() const {
  if (devices_.empty())
    return data(cpu(0)); // throws the explanation
  return data(devices_.front());
}

std::vector<Tensor> Parameter::list_data() const {
  std::vector<Tensor> out;
  for (Device device : devices_)
    out.push_back(copies_.at(device));
  return out;
}

Tensor Parameter::grad(Device device) const { return data(device).grad(); }

std::vector<Tensor> Parameter::list_grad() const {
  std::vector<Tensor> out;
  for (Device device : devices_)
    out.push_back(copies_.at(device).grad());
  return out;
}

void Parameter::set_data(const Tensor &value) {
  if (!initialized())
    throw Error("set_data: parameter " + name_ + " is not initialized");
  if (value.shape() != shape_)
    throw ShapeError("set_data: parameter " + name_ + " has shape " + shape_rules::str(shape_) +
                     ", the value " + shape_rules::str(value.shape()));
  autograd::Pause pause;
  Tensor converted = value.dtype() == dtype_ ? value : value.astype(dtype_);
  for (auto &[device, copy] : copies_)
    converted.to(device).copyto(copy);
}

void Parameter::reset_device(const std::vector<Device> &devices) {
  if (devices.empty())
    throw ValueError("reset_device " + name_ + ": needs at least one device");
  if (!initialized()) {
    if (deferredInit_)
      deferredDevices_ = devices;
    else
      devices_ = devices;
    return;
  }
  autograd::Pause pause;
  Tensor value = data();
  std::map<Device, Tensor> moved;
  for (Device device : devices) {
    auto existing = copies_.find(device);
    Tensor copy = existing != copies_.end() ? existing->second : value.copyto(device);
    if (existing == copies_.end())
      copy.attach_grad(grad_req_);
    moved[device] = copy;
  }
  copies_ = std::move(moved);
  devices_ = devices;
}

void Parameter::zero_grad() {
  if (grad_req_ == GradReq::null)
    return;
  for (auto &[device, copy] : copies_) {
    Tensor gradient = copy.grad();
    np::zeros(shape_, dtype_, device).copyto(gradient);
  }
}

void Parameter::cast(DType dtype) {
  if (dtype == dtype_)
    return;
  autograd::Pause pause;
  dtype_ = dtype;
  for (auto &[device, copy] : copies_) {
    copy = copy.astype(dtype);
    copy.attach_grad(grad_req_);
  }
}

//===----------------------------------------------------------------------===//
// ParameterDict
//===----------------------------------------------------------------------===//

void ParameterDict::add(const std::string &name, ParameterPtr parameter) {
  if (byName_.count(name))
    throw Error("parameter name '" + name + "' is used twice");
  order_.push_back(name);
  byName_[name] = std::move(parameter);
}

const ParameterPtr &ParameterDict::operator[](const std::string &name) const {
  auto it = byName_.find(name);
  if (it != byName_.end())
    return it->second;
  std::string known;
  for (size_t i = 0; i < order_.size() && i < 8; ++i)
    known += (i ? ", " : "") + order_[i];
  if (order_.size() > 8)
    known += ", ...";
  throw Error("no parameter named '" + name + "'; known: " + (known.empty() ? "none" : known));
}

ParameterDict ParameterDict::select(const std::string &regex) const {
  std::regex pattern(regex);
  ParameterDict selected;
  for (const std::string &name : order_)
    if (std::regex_search(name, pattern))
      selected.add(name, byName_.at(name));
  return selected;
}

std::vector<ParameterPtr> ParameterDict::values() const {
  std::vector<ParameterPtr> out;
  for (const std::string &name : order_)
    out.push_back(byName_.at(name));
  return out;
}

void ParameterDict::initialize(const init::InitializerPtr &init,
                               const std::vector<Device> &devices, bool force_reinit) {
  for (const ParameterPtr &p : values())
    p->initialize(init, devices, force_reinit);
}

void ParameterDict::reset_device(const std::vector<Device> &devices) {
  for (const ParameterPtr &p : values())
    p->reset_device(devices);
}

void ParameterDict::zero_grad() {
  for (const ParameterPtr &p : values())
    p->zero_grad();
}

void ParameterDict::set_grad_req(GradReq req) {
  for (const ParameterPtr &p : values())
    p->set_grad_req(req);
}

void ParameterDict::broadcast(int root) {
  if (dist::size() == 1)
    return;
  // In registration order, which every process of the job shares.
  for (const ParameterPtr &p : values()) {
    if (!p->initialized())
      continue;
    Tensor first = p->data();
    dist::broadcast(first, root);
    for (Device device : p->list_devices())
      if (device != p->list_devices().front()) {
        Tensor copy = p->data(device);
        first.copyto(copy);
      }
  }
}

} // namespace dlc::gluon
