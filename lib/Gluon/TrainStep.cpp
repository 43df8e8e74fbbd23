//===- TrainStep.cpp - the compiled data-parallel training step ---------------===//
#include "dlc/Gluon/TrainStep.h"

#include "OptimizerStates.h"

#include "dlc/Frontend/Autograd.h"

namespace dlc::gluon {

TrainStep::TrainStep(Block &net, LossFn loss, Trainer &trainer, std::vector<Device> devices,
                     bool sync_batch_norm, CompileOptions options)
    : net_(net), trainer_(trainer), devices_(devices),
      step_(
          "TrainStep",
          [&net, loss](const Tensor &data, const Tensor &label) {
            Tensor output = net.forward(data);
            return std::vector<Tensor>{loss(output, label), output};
          },
          [&trainer](const Tensor &weight, const Tensor &grad, std::vector<Tensor> &state,
                     const Tensor &rate,
                     double rescale) { return trainer.update(weight, grad, state, rate, rescale); },
          trainer.state_size(), devices, std::move(options)) {
  step_.set_sync_batch_norm(sync_batch_norm);
}

Tensor TrainStep::operator()(const Tensor &data, const Tensor &label) {
  ParameterDict params = net_.collect_params();
  bool deferred = false;
  for (const ParameterPtr &p : params.values())
    deferred = deferred || !p->initialized();
  if (deferred) {
    // Shapes are learnt from a first call: one eager forward, in predict mode (no
    // dropout, no BatchNorm update), on one sample.
    autograd::Pause predict;
    net_.forward(data.slice(0, 1).to(devices_.front()));
  }
  std::vector<DataParallelStep::Parameter> parameters;
  for (const std::string &name : params.keys()) {
    const ParameterPtr &p = params[name];
    DataParallelStep::Parameter bound{name, {}, p->grad_req() != GradReq::null};
    for (Device device : devices_)
      bound.copies.push_back(p->data(device));
    parameters.push_back(std::move(bound));
  }
  std::vector<Tensor> results =
      step_(data, label, parameters, trainer_.effective_learning_rate(++updates_));
  lastOutput_ = results[1];
  return results[0];
}

void TrainStep::save_states(const std::string &path,
                            const std::map<std::string, std::string> &metadata) const {
  optimizer_file::write_optimizer_states(
      path, {trainer_.optimizer(), updates_, step_.optimizer_state(), metadata});
}

void TrainStep::load_states(const std::string &path) {
  optimizer_file::OptimizerStates states =
      optimizer_file::read_optimizer_states(path, net_.collect_params(), trainer_.optimizer(),
                                    trainer_.state_size(), "TrainStep.load_states");
  step_.set_optimizer_state(states.tensors);
  updates_ = states.updates;
}

} // namespace dlc::gluon
