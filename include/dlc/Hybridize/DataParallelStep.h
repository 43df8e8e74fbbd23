//===- DataParallelStep.h - a whole training step, compiled and sharded -------===//
//
// The engine behind gluon::TrainStep: forward, loss, backward and the optimizer's
// update are traced once per input signature into one single-device function (samples
// marked as batch arguments, parameter gradients marked as gradients), which
// dlc-shard-data-parallel turns into the program for every device: the batch split,
// parameters and optimizer state replicated, gradients all-reduced, identical updates.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_HYBRIDIZE_DATAPARALLELSTEP_H
#define DLC_HYBRIDIZE_DATAPARALLELSTEP_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Frontend/Tensor.h"
#include "dlc/Runtime/Program/Program.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlc {

class DataParallelStep {
public:
  /// A parameter: its copies, one per device of the step, in the devices' order.
  struct Parameter {
    std::string name;
    std::vector<Tensor> copies;
    bool grad = true;
  };
  /// The model's forward and loss on a batch: the per-sample losses first (what the
  /// gradients start from), then any other per-sample values to return (predictions).
  using Loss = std::function<std::vector<Tensor>(const Tensor &data, const Tensor &label)>;
  /// The optimizer's rule (gluon::Trainer::update): new weight from weight, gradient
  /// (summed over the batch), state (updated in place in the vector), a 0-d rate and the
  /// factor the gradient is multiplied by first (1 / batch size), which a fused update
  /// op takes as its rescale_grad.
  using Update = std::function<Tensor(const Tensor &weight, const Tensor &grad,
                                      std::vector<Tensor> &state, const Tensor &rate,
                                      double rescale)>;

  /// The step compiles as `options` say (they are part of its cache key).
  DataParallelStep(std::string name, Loss loss, Update update, size_t state_size,
                   std::vector<Device> devices,
                   CompileOptions options = compile_options_from_environment());

  /// One step on a whole batch (on any device; it is split over the step's devices):
  /// returns what the loss function gave (per-sample losses, then the rest), gathered on
  /// the first device. Gradients are summed over the batch and scaled by 1 / samples, as
  /// Trainer.step(batch_size) does.
  std::vector<Tensor> operator()(const Tensor &data, const Tensor &label,
                                 const std::vector<Parameter> &parameters, double rate);

  /// The optimizer's state per parameter name: the first device's copy (every device
  /// holds the same values). Empty before the first step.
  std::map<std::string, std::vector<Tensor>> optimizer_state() const;
  /// Sets the state of the named parameters on every device (copied; for parameters
  /// without one yet, the state their first step starts from). Each vector holds
  /// state_size tensors of its parameter's shape.
  void set_optimizer_state(const std::map<std::string, std::vector<Tensor>> &state);

  /// Normalize BatchNorm with the whole batch's statistics over all devices
  /// (SyncBatchNorm); off by default (per-device statistics, as MXNet). Recompiles.
  void set_sync_batch_norm(bool sync);

  /// The options the next compiles use (a step compiled under others stays cached).
  void set_options(CompileOptions options);
  CompileOptions options() const;

  int64_t compiles() const;
  /// The latest traced (single-device) and compiled (sharded) modules, and program.
  std::string traced_ir() const;
  std::string compiled_ir() const;
  std::string program() const;
  /// Kernel and transfer steps per run of the latest program.
  int64_t steps() const;
  /// Seconds the latest new signature took to compile (trace, passes, lowering, kernels
  /// from the kernel cache or compiled), and of those, tracing the step.
  std::pair<double, double> last_compile_seconds() const;
  /// What the compiled programs' graphed runs did (summed over the signatures; the
  /// first reason a program runs without graphs).
  ProgramGraphStats graph_stats() const;

  struct State;

private:
  std::shared_ptr<State> state_;
};

} // namespace dlc

#endif // DLC_HYBRIDIZE_DATAPARALLELSTEP_H
