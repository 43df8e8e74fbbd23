//===- OptimizerStates.h - the optimizer's state in a file ---------------------===//
//
// Trainer::save_states and TrainStep::save_states write the same file, so a run that
// trained eagerly can go on compiled and the reverse: a safetensors file whose tensors
// are "<parameter>.state<k>" (momentum; Adam's mean and variance) and whose metadata
// names the optimizer and how many updates it has made (Adam's bias correction
// depends on it).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_GLUON_OPTIMIZERSTATES_H
#define DLC_LIB_GLUON_OPTIMIZERSTATES_H

#include "dlc/Gluon/Parameter.h"

#include <map>
#include <string>
#include <vector>

namespace dlc::gluon::optimizer_file {

struct OptimizerStates {
  std::string optimizer;
  int64_t updates = 0;
  /// Per parameter name, its state tensors in the optimizer's order.
  std::map<std::string, std::vector<Tensor>> tensors;
  /// The caller's own entries for the file's metadata (written only).
  std::map<std::string, std::string> metadata;
};

/// Writes `states` to `path` atomically (nothing is left half-written on failure).
void write_optimizer_states(const std::string &path, const OptimizerStates &states);

/// Reads `path` for `who` ("Trainer.load_states"), checked before anything is applied:
/// written for `optimizer`, `state_size` tensors per parameter, every parameter one of
/// `params` (initialized) with the state's shape and dtype. Tensors come on the host.
OptimizerStates read_optimizer_states(const std::string &path, const ParameterDict &params,
                                      const std::string &optimizer, size_t state_size,
                                      const std::string &who);

} // namespace dlc::gluon::optimizer_file

#endif // DLC_LIB_GLUON_OPTIMIZERSTATES_H
