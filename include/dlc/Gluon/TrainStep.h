//===- TrainStep.h - the seed's training loop as one compiled call ------------===//
#ifndef DLC_GLUON_TRAINSTEP_H
#define DLC_GLUON_TRAINSTEP_H

#include "dlc/Hybridize/DataParallelStep.h"
#include "dlc/Gluon/Block.h"
#include "dlc/Gluon/Trainer.h"

#include <functional>
#include <vector>

namespace dlc::gluon {

/// forward, loss, backward and the optimizer's update over `devices`, compiled once per
/// input signature into one data-parallel program (dlc-shard-data-parallel): the seed's
/// split_and_load / record / backward / trainer.step loop as one call, with the same
/// numbers. BatchNorm statistics are per device, as in that loop. The optimizer state
/// lives in the TrainStep (do not mix its calls with trainer.step()).
class TrainStep {
public:
  using LossFn = std::function<Tensor(const Tensor &prediction, const Tensor &label)>;

  /// `sync_batch_norm`: BatchNorm normalizes with the whole batch's statistics over all
  /// devices (SyncBatchNorm), so the step computes what one device with the whole batch
  /// would; by default each device uses its own part's, as the seed's loop does.
  /// `options`: how the step compiles (dlc/Core/CompileOptions.h).
  TrainStep(Block &net, LossFn loss, Trainer &trainer, std::vector<Device> devices,
            bool sync_batch_norm = false,
            CompileOptions options = compile_options_from_environment());

  /// One update from a whole batch (split over the devices); returns the per-sample
  /// losses on the first device.
  Tensor operator()(const Tensor &data, const Tensor &label);
  /// The network's outputs (predictions) of the latest step, on the first device, for
  /// metrics.
  const Tensor &last_output() const { return lastOutput_; }

  const DataParallelStep &compiled() const { return step_; }

  /// The optimizer's state and count of updates, in Trainer::save_states' file (a run
  /// may go on with either); `metadata` as for Trainer::save_states.
  void save_states(const std::string &path,
                   const std::map<std::string, std::string> &metadata = {}) const;
  /// Reads a file of Trainer::save_states or save_states, checked whole first.
  void load_states(const std::string &path);

private:
  Block &net_;
  Trainer &trainer_;
  std::vector<Device> devices_;
  DataParallelStep step_;
  int64_t updates_ = 0;
  Tensor lastOutput_;
};

} // namespace dlc::gluon

#endif // DLC_GLUON_TRAINSTEP_H
