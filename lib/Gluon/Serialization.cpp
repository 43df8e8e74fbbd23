//===- Serialization.cpp - save_parameters / load_parameters -------------------===//
//
// Parameters are saved as safetensors; they load from safetensors and from the files
// MXNet saved (mxnet_params::Reader).
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/Block.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/MXNetParams.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/SafeTensors.h"

#include <set>

namespace dlc::gluon {

void Block::save_parameters(const std::string &path,
                            const std::map<std::string, std::string> &metadata) const {
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
  std::map<std::string, std::string> header = metadata;
  header["format"] = "dlc";
  safetensors::save(path, tensors, header);
}

namespace {

/// Assigns the entries of `reader` (a safetensors or an MXNet file) to `params` on
/// `devices`. The entries are checked against the network before any tensor is read: a
/// file that does not match (a hostile header with a million entries among them) costs
/// no memory.
template <typename FileReader>
void loadFrom(const FileReader &reader, const std::string &path, ParameterDict &params,
              const std::vector<Device> &devices, const LoadOptions &options) {
  std::vector<std::string> problems;
  std::set<std::string> seen;
  struct Match {
    ParameterPtr parameter;
    const safetensors::TensorInfo *entry;
    bool transpose;
  };
  std::vector<Match> matched;
  for (const safetensors::TensorInfo &entry : reader.tensors()) {
    MappedName target{entry.name, false};
    if (options.name_map) {
      std::optional<MappedName> mapped = options.name_map(entry.name);
      if (!mapped)
        continue;
      target = std::move(*mapped);
    }
    const std::string &name = target.parameter;
    // How problems name the entry: the file's name, and the network's where they differ.
    const std::string called =
        "'" + entry.name + "'" + (name == entry.name ? "" : " (the network's '" + name + "')");
    if (!params.contains(name)) {
      if (!options.ignore_extra)
        problems.push_back(called + " is in the file but not in the network");
      continue;
    }
    if (!seen.insert(name).second) {
      problems.push_back(called + " fills a parameter another entry of the file fills too");
      continue;
    }
    const ParameterPtr &parameter = params[name];
    Shape shape = entry.shape;
    if (target.transpose) {
      if (shape.size() != 2) {
        problems.push_back(called + " has shape " + shape_rules::str(shape) +
                           " in the file; only a 2-d value can be stored transposed");
        continue;
      }
      std::swap(shape[0], shape[1]);
    }
    if (parameter->shape_known() && shape != parameter->shape()) {
      problems.push_back(called + " has shape " + shape_rules::str(entry.shape) +
                         " in the file" + (target.transpose ? " (stored transposed)" : "") +
                         " but " + shape_rules::str(parameter->shape()) + " in the network");
      continue;
    }
    if (entry.dtype != parameter->dtype() && !options.cast_dtype) {
      problems.push_back(called + " is " + dtype_name(entry.dtype) + " in the file but " +
                         dtype_name(parameter->dtype()) +
                         " in the network (cast_dtype converts it)");
      continue;
    }
    matched.push_back({parameter, &entry, target.transpose});
  }
  for (const std::string &name : params.keys())
    if (!seen.count(name) && !options.allow_missing)
      problems.push_back("'" + name + "' is in the network but not in the file");
  if (!problems.empty()) {
    constexpr size_t kShown = 20; // a hostile file could list millions
    std::string text;
    for (size_t i = 0; i < problems.size() && i < kShown; ++i)
      text += "\n  " + problems[i];
    if (problems.size() > kShown)
      text += "\n  ... and " + std::to_string(problems.size() - kShown) + " more";
    throw Error("load_parameters('" + path + "'): the file does not match the network:" + text);
  }
  std::vector<std::pair<ParameterPtr, Tensor>> assignments;
  for (const auto &[parameter, entry, transpose] : matched) {
    Tensor value = reader.read(*entry, devices.front());
    if (transpose)
      value = np::transpose(value);
    if (value.dtype() != parameter->dtype())
      value = value.astype(parameter->dtype());
    assignments.emplace_back(parameter, value);
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

} // namespace

void Block::load_parameters(const std::string &path, const std::vector<Device> &devices,
                            const LoadOptions &options) {
  if (devices.empty())
    throw ValueError("load_parameters: needs at least one device");
  autograd::Pause pause;
  ParameterDict params = collect_params();
  // A file MXNet saved (.params) or a safetensors file, told apart by their first bytes.
  if (mxnet_params::is_params_file(path))
    loadFrom(mxnet_params::Reader(path), path, params, devices, options);
  else
    loadFrom(safetensors::Reader(path), path, params, devices, options);
}

} // namespace dlc::gluon
