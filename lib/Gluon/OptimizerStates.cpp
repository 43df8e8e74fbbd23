//===- OptimizerStates.cpp - the optimizer's state in a file -------------------===//
#include "OptimizerStates.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/ShapeRules.h"
#include "dlc/Frontend/SafeTensors.h"

#include <cerrno>
#include <cstdlib>

namespace dlc::gluon::optimizer_file {

namespace {

constexpr const char *kFormat = "dlc optimizer states";

/// The file's name for state `index` of parameter `name`: "conv0.weight.state1".
std::string stateName(const std::string &name, size_t index) {
  return name + ".state" + std::to_string(index);
}

/// stateName's inverse; {"", 0} when the name is not a state's.
std::pair<std::string, size_t> splitStateName(const std::string &name) {
  size_t dot = name.rfind(".state");
  if (dot == std::string::npos || dot + 6 >= name.size())
    return {"", 0};
  std::string index = name.substr(dot + 6);
  if (index.size() > 3 || index.find_first_not_of("0123456789") != std::string::npos)
    return {"", 0};
  return {name.substr(0, dot), size_t(std::atoi(index.c_str()))};
}

} // namespace

void write_optimizer_states(const std::string &path, const OptimizerStates &states) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto &[name, state] : states.tensors)
    for (size_t k = 0; k < state.size(); ++k)
      tensors.emplace_back(stateName(name, k), state[k]);
  std::map<std::string, std::string> metadata = states.metadata;
  metadata["format"] = kFormat;
  metadata["optimizer"] = states.optimizer;
  metadata["updates"] = std::to_string(states.updates);
  safetensors::save(path, tensors, metadata);
}

OptimizerStates read_optimizer_states(const std::string &path, const ParameterDict &params,
                                      const std::string &optimizer, size_t state_size,
                                      const std::string &who) {
  safetensors::Reader reader(path);
  const std::map<std::string, std::string> &meta = reader.metadata();
  auto field = [&](const char *key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  if (field("format") != kFormat)
    throw ValueError(who + "('" + path + "'): not a file of optimizer states (its metadata "
                     "has no \"format\": \"" + kFormat + "\"; parameter files load with "
                     "load_parameters)");
  OptimizerStates states;
  states.optimizer = field("optimizer");
  if (states.optimizer != optimizer)
    throw ValueError(who + "('" + path + "'): the states are " + states.optimizer +
                     "'s; this trainer's optimizer is " + optimizer);
  const std::string updates = field("updates");
  errno = 0;
  char *end = nullptr;
  long long count = std::strtoll(updates.c_str(), &end, 10);
  if (updates.empty() || *end != '\0' || errno != 0 || count < 0)
    throw ValueError(who + "('" + path + "'): \"updates\" is '" + updates +
                     "'; expected a count of updates");
  states.updates = count;
  for (const safetensors::TensorInfo &entry : reader.tensors()) {
    auto [name, index] = splitStateName(entry.name);
    if (name.empty() || index >= state_size)
      throw ValueError(who + "('" + path + "'): '" + entry.name + "' is not one of the " +
                       std::to_string(state_size) + " state tensors " + optimizer +
                       " keeps per parameter");
    if (!params.contains(name))
      throw ValueError(who + "('" + path + "'): the states hold parameter '" + name +
                       "', which this trainer does not train");
    const ParameterPtr &parameter = params[name];
    if (!parameter->initialized())
      throw ValueError(who + "('" + path + "'): parameter '" + name +
                       "' is not initialized yet (its shape is not known); initialize the "
                       "network and run it once before loading its optimizer's states");
    if (entry.shape != parameter->shape() || entry.dtype != parameter->dtype())
      throw ShapeError(who + "('" + path + "'): '" + entry.name + "' is " +
                       dtype_name(entry.dtype) + " of shape " + shape_rules::str(entry.shape) +
                       "; parameter '" + name + "' is " + dtype_name(parameter->dtype()) +
                       " of shape " + shape_rules::str(parameter->shape()));
    std::vector<Tensor> &state = states.tensors[name];
    state.resize(state_size);
    state[index] = reader.read(entry);
  }
  for (const auto &[name, state] : states.tensors)
    for (size_t k = 0; k < state.size(); ++k)
      if (!state[k].defined())
        throw ValueError(who + "('" + path + "'): parameter '" + name + "' lacks '" +
                         stateName(name, k) + "'");
  return states;
}

} // namespace dlc::gluon::optimizer_file
