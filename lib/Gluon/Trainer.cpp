//===- Trainer.cpp - SGD, NAG and Adam with cross-device gradient sums -------===//
#include "dlc/Gluon/Trainer.h"

#include "OptimizerStates.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/Collectives.h"
#include "dlc/Frontend/Dist.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/OpRegistry.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace dlc::gluon {

namespace {
const std::map<std::string, std::vector<std::string>> knownOptions = {
    {"sgd", {"learning_rate", "momentum", "wd", "clip_gradient", "check_numerics"}},
    {"nag", {"learning_rate", "momentum", "wd", "clip_gradient", "check_numerics"}},
    {"adam",
     {"learning_rate", "beta1", "beta2", "epsilon", "wd", "clip_gradient", "check_numerics"}}};

/// Whether `weight` is updated by one fused op (npx::adam_update, sgd_momentum_update,
/// sgd_update) rather than several element-wise ones: for float32 weights, eagerly and in
/// a trace for a GPU (a compiled step on CPUs keeps the separate ops, which dlc-fuse
/// groups into an elementwise region the CPU runtime runs as one chunked pass through
/// the existing kernels; on GPUs they would stay a dozen launches), unless
/// DLC_FUSED_UPDATES=0. Same bits either way.
bool fusedUpdates(const Tensor &weight) {
  static const bool enabled = [] {
    const char *flag = std::getenv("DLC_FUSED_UPDATES");
    return !(flag && std::string(flag) == "0");
  }();
  return enabled && weight.dtype() == DType::f32 &&
         (!is_tracing() || weight.device().kind == DeviceKind::gpu);
}

/// Whether the fused update can write `weight` and `state` in place (npx::*_in_place):
/// plain tensors, recording paused (Trainer.step pauses it). A weight a CPU kernel keeps
/// in a blocked layout takes the update through a copy back instead. In place saves one
/// copy and one allocation per parameter and step (on a GPU, a launch each).
bool updatesInPlace(const Tensor &weight, const std::vector<Tensor> &state) {
  if (is_tracing() || autograd::is_recording() || detail::layout_of(weight) != Layout::plain)
    return false;
  return std::all_of(state.begin(), state.end(),
                     [](const Tensor &t) { return detail::layout_of(t) == Layout::plain; });
}
} // namespace

Trainer::Trainer(const ParameterDict &params, const std::string &optimizer,
                 const std::map<std::string, double> &options)
    : params_(params), optimizer_(optimizer), options_(options) {
  auto known = knownOptions.find(optimizer);
  if (known == knownOptions.end())
    throw ValueError("Trainer: unknown optimizer '" + optimizer + "'; expected sgd, nag or adam");
  for (const auto &[name, value] : options) {
    bool ok = false;
    for (const std::string &allowed : known->second)
      ok = ok || allowed == name;
    if (!ok)
      throw ValueError("Trainer: optimizer '" + optimizer + "' has no option '" + name + "'");
  }
  learningRate_ = option("learning_rate", optimizer == "adam" ? 0.001 : 0.01);
}

double Trainer::option(const std::string &name, double fallback) const {
  auto it = options_.find(name);
  return it == options_.end() ? fallback : it->second;
}

void Trainer::step(int64_t batch_size, bool ignore_stale_grad) {
  if (batch_size <= 0)
    throw ValueError("Trainer.step: batch_size must be positive, got " +
                     std::to_string(batch_size));
  autograd::Pause pause;
  // Gradients no backward() wrote since the last step: an error before anything changes,
  // or, when the caller expects them, parameters this step leaves alone.
  std::set<const Parameter *> stale;
  for (const ParameterPtr &parameter : params_.values()) {
    if (parameter->grad_req() == GradReq::null || !parameter->initialized())
      continue;
    std::vector<Device> devices = parameter->list_devices();
    for (Device device : devices)
      if (!parameter->data(device).fresh_grad()) {
        if (!ignore_stale_grad)
          throw Error("Trainer.step: the gradient of parameter '" + parameter->name() + "' on " +
                      device.str() +
                      " has not been written by a backward() since the last step; a "
                      "forward that skips some parameters is usually a bug (call "
                      "step(batch_size, /*ignore_stale_grad=*/true) to leave such "
                      "parameters unchanged)");
        stale.insert(parameter.get());
      }
  }
  // With check_numerics, a gradient holding a NaN or an infinity stops the step before it
  // reaches a weight, naming the parameter (DLC_CHECK_NUMERICS names the op that made it).
  if (option("check_numerics", 0) != 0)
    for (const ParameterPtr &parameter : params_.values()) {
      if (parameter->grad_req() == GradReq::null || !parameter->initialized() ||
          stale.count(parameter.get()))
        continue;
      for (Device device : parameter->list_devices()) {
        Tensor grad = parameter->grad(device);
        Tensor host = device.is_host() ? detail::plain(grad) : grad.copyto(cpu());
        host.wait_to_read();
        if (int64_t at = first_non_finite(host.data(), host.dtype(), host.size()); at >= 0)
          throw Error("Trainer.step (check_numerics): the gradient of parameter '" +
                      parameter->name() + "' on " + device.str() +
                      " holds a NaN or an infinity at element " + std::to_string(at) +
                      "; no weight was changed (DLC_CHECK_NUMERICS=1 names the op that "
                      "made it)");
      }
    }
  ++steps_;
  double rescale = 1.0 / double(batch_size);
  // In a job of several processes every gradient is summed over all of them: NCCL across
  // the processes for GPUs (the buckets below), dist::all_reduce on the first device for
  // CPUs, and for GPUs too where DLC_GPU_SUMS_THROUGH_HOST=1.
  const bool acrossProcesses = dist::size() > 1;
  const bool ncclAcrossProcesses = acrossProcesses && !gpu_sums_through_host();
  auto onGpus = [acrossProcesses, ncclAcrossProcesses](const std::vector<Device> &devices) {
    return (acrossProcesses ? ncclAcrossProcesses : devices.size() > 1) &&
           std::none_of(devices.begin(), devices.end(), [](Device d) { return d.is_host(); });
  };
  auto trainable = [&stale](const ParameterPtr &p) {
    return p->grad_req() != GradReq::null && p->initialized() && !stale.count(p.get());
  };
  // The step's rate as a 0-d tensor, one per dtype and device (on a GPU each is a launch).
  std::map<std::pair<DType, Device>, Tensor> rates;
  auto rateFor = [&](const Tensor &weight) {
    Tensor &rate = rates[{weight.dtype(), weight.device()}];
    if (!rate.defined())
      rate = np::full({}, effective_learning_rate(steps_), weight.dtype(), weight.device());
    return rate;
  };
  // Parameters whose copies are all on GPUs: their gradients are summed together, a few
  // NCCL all-reduces (buckets per device list and dtype) rather than one per parameter.
  std::map<std::vector<Device>, std::vector<ParameterPtr>> gpuGroups;
  for (const ParameterPtr &parameter : params_.values())
    if (trainable(parameter) && onGpus(parameter->list_devices()))
      gpuGroups[parameter->list_devices()].push_back(parameter);
  std::map<const Parameter *, std::vector<Tensor>> gpuSums;
  for (const auto &[devices, group] : gpuGroups) {
    std::vector<std::vector<Tensor>> grads;
    for (const ParameterPtr &parameter : group)
      grads.push_back(parameter->list_grad());
    std::vector<std::vector<Tensor>> sums =
        npx::all_reduce_coalesced(grads, false, size_t(64) << 20, acrossProcesses);
    for (size_t i = 0; i < group.size(); ++i)
      gpuSums[group[i].get()] = std::move(sums[i]);
  }
  for (const ParameterPtr &parameter : params_.values()) {
    if (!trainable(parameter))
      continue;
    std::vector<Device> devices = parameter->list_devices();
    if (onGpus(devices)) {
      // Every GPU has the gradients' sum and applies the same update to its own copy:
      // identical inputs through identical kernels give identical weights, so no weight
      // is copied.
      const std::vector<Tensor> &summed = gpuSums.at(parameter.get());
      std::map<Device, std::vector<Tensor>> &states = replicaStates(*parameter, devices);
      for (size_t i = 0; i < devices.size(); ++i) {
        Tensor weight = parameter->data(devices[i]);
        Tensor updated = update(weight, summed[i], states[devices[i]], rateFor(weight), rescale);
        updated.copyto(weight); // layers hold these tensors (nothing to copy when in place)
      }
      continue;
    }
    // Back from GPUs (the parameter moved): the first copy's state carries on.
    if (auto replicas = replicaState_.find(parameter.get()); replicas != replicaState_.end()) {
      if (!replicas->second.empty())
        state_[parameter.get()] = moveState(replicas->second.begin()->second, devices.front());
      replicaState_.erase(replicas);
    }
    Device home = devices.front();
    // KVStore 'device': the gradients of all copies meet on the first device.
    std::vector<Tensor> grads = parameter->list_grad();
    Tensor grad = grads[0];
    if (acrossProcesses) {
      // Every process's copies, added in the order one process holding them all would.
      std::vector<Tensor> parts{grads[0]};
      for (size_t i = 1; i < grads.size(); ++i)
        parts.push_back(grads[i].to(home));
      grad = dist::all_reduce(parts);
    } else {
      for (size_t i = 1; i < grads.size(); ++i)
        grad = grad + grads[i].to(home);
    }
    Tensor weight = parameter->data(home);
    Tensor updated = update(weight, grad, state_[parameter.get()], rateFor(weight), rescale);
    // One update, broadcast to every copy (in place: layers hold these tensors).
    for (Device device : devices) {
      Tensor copy = parameter->data(device);
      updated.to(device).copyto(copy);
    }
  }
  // Applied: the next step needs a new backward.
  for (const ParameterPtr &parameter : params_.values())
    if (trainable(parameter))
      for (Device device : parameter->list_devices())
        parameter->data(device).set_fresh_grad(false);
}

std::vector<Tensor> Trainer::moveState(const std::vector<Tensor> &state, Device device) {
  std::vector<Tensor> moved;
  for (const Tensor &t : state)
    moved.push_back(t.copyto(device));
  return moved;
}

std::map<Device, std::vector<Tensor>> &
Trainer::replicaStates(const Parameter &parameter, const std::vector<Device> &devices) {
  std::map<Device, std::vector<Tensor>> &states = replicaState_[&parameter];
  // The state of one copy to start a device that has none: the KVStore path's (the
  // parameter was on host devices before), else another GPU's. Every copy then continues
  // from the same state, as the weights do.
  std::vector<Tensor> seed;
  if (auto single = state_.find(&parameter); single != state_.end()) {
    seed = single->second;
    state_.erase(single);
    states.clear();
  } else if (!states.empty()) {
    seed = states.begin()->second;
  }
  for (auto it = states.begin(); it != states.end();) // devices the parameter left
    it = std::find(devices.begin(), devices.end(), it->first) == devices.end()
             ? states.erase(it)
             : std::next(it);
  for (Device device : devices)
    if (!states.count(device) && !seed.empty())
      states[device] = moveState(seed, device);
  return states;
}

size_t Trainer::state_size() const {
  if (optimizer_ == "adam")
    return 2;
  return option("momentum", optimizer_ == "nag" ? 0.9 : 0.0) == 0 ? 0 : 1;
}

double Trainer::effective_learning_rate(int64_t step) const {
  if (optimizer_ != "adam")
    return learningRate_;
  // Adam's bias correction, folded into the rate so that the update's graph does not
  // change from step to step.
  double beta1 = option("beta1", 0.9), beta2 = option("beta2", 0.999);
  return learningRate_ * std::sqrt(1 - std::pow(beta2, double(step))) /
         (1 - std::pow(beta1, double(step)));
}

Tensor Trainer::update(const Tensor &weight, Tensor grad, std::vector<Tensor> &state,
                       const Tensor &rate, double rescale) const {
  double wd = option("wd", 0), clip = option("clip_gradient", -1);
  Device home = weight.device();
  double momentum = option("momentum", optimizer_ == "nag" ? 0.9 : 0.0);
  // The fused op multiplies the gradient itself when nothing comes between (same bits).
  bool fused = fusedUpdates(weight);
  bool foldRescale = fused && clip <= 0 && wd == 0;
  double fusedRescale = foldRescale ? rescale : 1.0;
  if (!foldRescale && rescale != 1.0)
    grad = grad * rescale;
  if (clip > 0)
    grad = np::minimum(np::maximum(grad, np::full({}, -clip, grad.dtype(), home)),
                       np::full({}, clip, grad.dtype(), home));
  if (wd != 0)
    grad = grad + weight * wd;
  if (optimizer_ == "adam") {
    double beta1 = option("beta1", 0.9), beta2 = option("beta2", 0.999);
    double epsilon = option("epsilon", 1e-8);
    if (state.empty())
      state = {np::zeros(weight.shape(), weight.dtype(), home),
               np::zeros(weight.shape(), weight.dtype(), home)};
    if (fused && updatesInPlace(weight, state)) {
      npx::adam_update_in_place(weight, grad, state[0], state[1], rate, beta1, beta2, epsilon,
                                fusedRescale);
      return weight;
    }
    if (fused) {
      npx::AdamUpdate next = npx::adam_update(weight, grad, state[0], state[1], rate, beta1, beta2,
                                              epsilon, fusedRescale);
      state = {next.mean, next.var};
      return next.weight;
    }
    // Traced (the compiled step): the same arithmetic as separate ops, fused by the
    // compiler.
    state[0] = state[0] * beta1 + grad * (1 - beta1);
    state[1] = state[1] * beta2 + grad * grad * (1 - beta2);
    return weight - state[0] * rate / (np::sqrt(state[1]) + epsilon);
  }
  if (momentum == 0) {
    if (fused && updatesInPlace(weight, state)) {
      npx::sgd_update_in_place(weight, grad, rate, fusedRescale);
      return weight;
    }
    return fused ? npx::sgd_update(weight, grad, rate, fusedRescale) : weight - grad * rate;
  }
  if (state.empty())
    state = {np::zeros(weight.shape(), weight.dtype(), home)};
  if (fused && updatesInPlace(weight, state)) {
    npx::sgd_momentum_update_in_place(weight, grad, state[0], rate, momentum,
                                      optimizer_ == "nag", fusedRescale);
    return weight;
  }
  if (fused) {
    npx::MomentumUpdate next = npx::sgd_momentum_update(weight, grad, state[0], rate, momentum,
                                                        optimizer_ == "nag", fusedRescale);
    state[0] = next.momentum;
    return next.weight;
  }
  state[0] = state[0] * momentum + grad;
  Tensor direction = optimizer_ == "nag" ? grad + state[0] * momentum : state[0];
  return weight - direction * rate;
}

namespace utils {

std::vector<Tensor> split_and_load(const Tensor &data, const std::vector<Device> &devices,
                                   int64_t batch_axis, bool even_split) {
  if (devices.empty())
    throw ValueError("split_and_load: needs at least one device");
  if (devices.size() == 1)
    return {data.to(devices[0])};
  int64_t axis = shape_rules::normalizeAxis(batch_axis, data.ndim());
  if (axis < 0)
    throw ValueError("split_and_load: batch_axis " + std::to_string(batch_axis) +
                     " is out of range for data " + shape_rules::str(data.shape()));
  int64_t samples = data.shape()[size_t(axis)], parts = int64_t(devices.size());
  if (samples < parts)
    throw ValueError("split_and_load: " + std::to_string(samples) +
                     " samples cannot be split over " + std::to_string(parts) + " devices");
  if (even_split && samples % parts != 0)
    throw ValueError("split_and_load: a batch of " + std::to_string(samples) +
                     " samples does not split evenly over " + std::to_string(parts) +
                     " devices; use a batch size divisible by " + std::to_string(parts) +
                     " or even_split = false");
  // Sizes differ by at most one: the first (samples % parts) slices get one more.
  std::vector<int64_t> sizes(size_t(parts), samples / parts);
  for (int64_t i = 0; i < samples % parts; ++i)
    ++sizes[size_t(i)];
  std::vector<Tensor> slices = np::split_sizes(data, sizes, axis);
  for (size_t i = 0; i < slices.size(); ++i)
    slices[i] = slices[i].to(devices[i]);
  return slices;
}

} // namespace utils

} // namespace dlc::gluon

namespace dlc::gluon {

void Trainer::save_states(const std::string &path,
                          const std::map<std::string, std::string> &metadata) const {
  optimizer_file::OptimizerStates states{optimizer_, steps_, {}, metadata};
  for (const std::string &name : params_.keys()) {
    const Parameter *parameter = params_[name].get();
    if (auto it = state_.find(parameter); it != state_.end() && !it->second.empty())
      states.tensors[name] = it->second;
    else if (auto replicas = replicaState_.find(parameter);
             replicas != replicaState_.end() && !replicas->second.empty())
      states.tensors[name] = replicas->second.begin()->second; // every copy holds the same
  }
  optimizer_file::write_optimizer_states(path, states);
}

void Trainer::load_states(const std::string &path) {
  optimizer_file::OptimizerStates states = optimizer_file::read_optimizer_states(
      path, params_, optimizer_, state_size(), "Trainer.load_states");
  for (auto &[name, state] : states.tensors) {
    const ParameterPtr &parameter = params_[name];
    // The state lives where the update runs (the first device); several GPUs' copies
    // start from it (replicaStates).
    replicaState_.erase(parameter.get());
    state_[parameter.get()] = moveState(state, parameter->list_devices().front());
  }
  steps_ = states.updates;
}

} // namespace dlc::gluon
