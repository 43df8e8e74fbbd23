//===- ProgramGraphs.h - the state of a program's graphed runs (internal) ----===//
#ifndef DLC_LIB_RUNTIME_PROGRAM_PROGRAMGRAPHS_H
#define DLC_LIB_RUNTIME_PROGRAM_PROGRAMGRAPHS_H

#include "dlc/Runtime/Program/Program.h"

namespace dlc {

/// A recording (CUDA graph) of a one-task program's steps and what it was recorded
/// over. A recording holds addresses, so everything it touches must be where it was:
/// the arena is the same memory every run, random steps read their seeds from one
/// device buffer, and each argument and result ("binding") is either used where the
/// caller has it (as long as it stays there) or copied through a private buffer of the
/// program around each replay (once it has moved: the batch, fresh result tensors).
/// Touched by the device's queue worker only, but for `stats` (under the program's
/// graphedMutex_).
struct Program::Graphed {
  const TaskGraphs *backend = nullptr;
  std::shared_ptr<Buffer> arena;
  std::shared_ptr<Storage> seeds; ///< int64 per random step, on the device
  // Per binding: arguments, then results.
  std::vector<size_t> bytes;
  std::vector<bool> copiedOut; ///< results, and the arguments the program updates
  std::vector<std::shared_ptr<Storage>> staging; ///< null: the caller's memory is used
  std::vector<char *> recorded; ///< each binding's address in the recording
  std::vector<char *> previous; ///< the caller's addresses in the warm-up run
  /// The warm-up run's buffer of each binding. One that a later run binds to another
  /// buffer is staged even where the address is the same: a fresh tensor lands where an
  /// earlier one was only as the allocator's timing allows, and a binding that moves
  /// later costs a staging block in a warm run.
  std::vector<std::weak_ptr<Buffer>> owners;
  std::shared_ptr<void> graph;  ///< the recording; null before the first capture
  ProgramGraphStats stats;
};

} // namespace dlc

#endif // DLC_LIB_RUNTIME_PROGRAM_PROGRAMGRAPHS_H
