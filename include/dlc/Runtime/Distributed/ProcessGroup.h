//===- ProcessGroup.h - the processes of one job, as the runtime sees them ----===//
//
// A job of several processes (launched by mpirun) trains one model: each process runs
// the same step on its devices and the gradients are summed over all of them. The
// runtime reaches the other processes through this interface only; Open MPI implements
// it (lib/Runtime/Distributed/MPI), and a process launched alone is a group of one, which needs no
// MPI at all. No MPI type appears here: code that includes this header builds and runs
// without MPI.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_DISTRIBUTED_PROCESSGROUP_H
#define DLC_RUNTIME_DISTRIBUTED_PROCESSGROUP_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

class ProcessGroup {
public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Among the processes on this host (for choosing a GPU and sharing the cores).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  /// "Open MPI v4.1.4", "one process".
  virtual std::string description() const = 0;

  // Collectives: every process calls the same ones in the same order. Those the engine's
  // queues run (the `data` calls) and those the program's own thread makes (`control`)
  // travel apart, so one of each may be in flight at a time.
  enum class Channel { data, control };
  virtual void barrier(Channel channel = Channel::control) = 0;
  /// `bytes` bytes at `data` on process `root` into `data` on every process.
  virtual void broadcast(void *data, size_t bytes, int root,
                         Channel channel = Channel::control) = 0;
  /// Each process's `bytes` bytes at `in`, in rank order, into `out` (size() * bytes).
  virtual void all_gather(const void *in, void *out, size_t bytes,
                          Channel channel = Channel::data) = 0;
  /// Ends the whole job: every process exits with `code`.
  [[noreturn]] virtual void abort(int code) = 0;

  /// Sums float32 vectors over the processes: each process gives `parts` vectors of
  /// `count` elements (its devices', in their order; every process as many), and every
  /// process gets in `out` the sum of all size() * parts vectors added in rank order,
  /// then part order: the same bits everywhere, and the bits one process with all those
  /// devices adds up.
  void all_reduce_sum(const std::vector<const float *> &parts, float *out, int64_t count,
                      Channel channel = Channel::data);
};

/// The job's group: the one join_process_group() joined, else a group of this process
/// alone.
ProcessGroup &process_group();

/// Joins the job this process was launched in (mpirun: Open MPI's environment says how
/// many processes there are), once; later calls return the same group. Launched alone, or
/// as a job of one, the group is this process alone and MPI is not started. Throws
/// UnsupportedError where a launcher started several processes but this dlc was built
/// without MPI (DLC_ENABLE_MPI), rather than run them as unrelated copies.
ProcessGroup &join_process_group();

/// How many processes the launcher started, from its environment (1 when none did).
int launched_processes();

/// Whether GPUs' sums over the job's processes go through the host and the process group
/// (DLC_GPU_SUMS_THROUGH_HOST=1) rather than NCCL across the processes (the default):
/// the older path, for a network NCCL cannot use.
bool gpu_sums_through_host();

} // namespace dlc

#endif // DLC_RUNTIME_DISTRIBUTED_PROCESSGROUP_H
