//===- Serialization.cpp - save_parameters / load_parameters (safetensors) ----===//
#include "dlc/Gluon/Block.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Gluon/SafeTensors.h"

#include <set>

namespace dlc::gluon {

void Block::save_parameters(const std::string &path) const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  ParameterDict params = collect_params();
  for (const std::string &name : params.keys()) {
    const ParameterPtr &parameter = params[name];
    if (!parameter->initialized())
      throw Error("save_parameters: parameter " + name +
                  " is not initialized yet (run a forward pass after initialize() so that "
                  "deferred shapes are known)");
    tensors.emplace_back(name, parameter->data().detach());
  }
  safetensors::save(path, tensors, {{"format", "dlc"}});
}

void Block::load_parameters(const std::string &path, const std::vector<Device> &devices,
                            const LoadOptions &options) {
  if (devices.empty())
    throw std::invalid_argument("load_parameters: needs at least one device");
  autograd::Pause pause;
  ParameterDict params = collect_params();
  std::vector<std::pair<std::string, Tensor>> loaded = safetensors::load(path, devices.front());
  std::vector<std::string> problems;
  std::set<std::string> seen;
  std::vector<std::pair<ParameterPtr, Tensor>> assignments;
  for (auto &[name, value] : loaded) {
    seen.insert(name);
    if (!params.contains(name)) {
      if (!options.ignore_extra)
        problems.push_back("'" + name + "' is in the file but not in the network");
      continue;
    }
    const ParameterPtr &parameter = params[name];
    bool shapeKnown = parameter->shape_known();
    if (shapeKnown && value.shape() != parameter->shape()) {
      problems.push_back("'" + name + "' has shape " + shape_rules::str(value.shape()) +
                         " in the file but " + shape_rules::str(parameter->shape()) +
                         " in the network");
      continue;
    }
    if (value.dtype() != parameter->dtype()) {
      if (!options.cast_dtype) {
        problems.push_back("'" + name + "' is " + dtype_name(value.dtype()) +
                           " in the file but " + dtype_name(parameter->dtype()) +
                           " in the network (cast_dtype converts it)");
        continue;
      }
      value = value.astype(parameter->dtype());
    }
    assignments.emplace_back(parameter, value);
  }
  for (const std::string &name : params.keys())
    if (!seen.count(name) && !options.allow_missing)
      problems.push_back("'" + name + "' is in the network but not in the file");
  if (!problems.empty()) {
    std::string text;
    for (const std::string &problem : problems)
      text += "\n  " + problem;
    throw Error("load_parameters('" + path + "'): the file does not match the network:" + text);
  }
  // Nothing is changed unless everything matched.
  for (auto &[parameter, value] : assignments) {
    if (!parameter->shape_known())
      parameter->set_shape(value.shape());
    if (!parameter->initialized() || parameter->list_devices() != devices) {
      parameter->initialize(std::make_shared<init::Zero>(), devices, /*force_reinit=*/true);
      parameter->set_shape(value.shape());
    }
    parameter->set_data(value);
  }
}

} // namespace dlc::gluon
