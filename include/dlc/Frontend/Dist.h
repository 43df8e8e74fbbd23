//===- Dist.h - training as one of several processes (mpirun) -----------------===//
//
// A job of N processes trains one model: each process runs the same program on its own
// devices with its own share of every batch, and the gradients are summed over all of
// them. Launch with `mpirun -np N prog ...`; launched alone, a program is a job of one
// and everything here is cheap and local. The job's device list may span processes:
// process r of N takes the r-th of N equal, consecutive blocks of it (job_devices), so
// `--devices cpu:0,cpu:1` means the same two devices, with the same random streams and
// the same samples each, in one process or in two.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_DIST_H
#define DLC_FRONTEND_DIST_H

#include "dlc/Frontend/Tensor.h"

#include <string>
#include <vector>

namespace dlc::dist {

/// Joins the job this process was launched in (Open MPI's environment says how many
/// processes mpirun started; MPI starts only when there are several) and gives this
/// process its share of the host's cores. Call it first; later calls do nothing. Throws
/// UnsupportedError when several processes were launched but dlc was built without MPI.
void init();

/// This process's rank (0 to size() - 1), the job's size, the rank among the processes
/// on this host and their number. Before init(): a job of one.
int rank();
int size();
int local_rank();
int local_size();
/// "2 processes (Open MPI v4.1.4)", "one process".
std::string describe();

/// Waits until every process of the job got here.
void barrier();

/// `job` (the devices of the whole job) cut into size() equal, consecutive blocks: this
/// process's block. Throws ValueError when the list does not divide.
std::vector<Device> local_devices(const std::vector<Device> &job);

/// The sum of `parts` (this process's tensors, alike in shape and float32) over the
/// parts of every process: one tensor on parts[0]'s device. Added in rank order, then
/// part order, so every process gets the same bits, and the bits one process holding all
/// the parts would get adding them in that order. Queued on parts[0]'s device after the
/// work that writes the parts; tensors on GPUs pass through the host (npx::all_reduce
/// with over_processes sums GPUs' tensors with NCCL instead). Not recorded by autograd.
Tensor all_reduce(const std::vector<Tensor> &parts);

/// Overwrites `tensor` on every process with its value on process `root` (in place: the
/// tensor keeps its memory). Waits for the work that uses it first.
void broadcast(Tensor &tensor, int root = 0);

/// Ends the job: every process exits with `code` (a process that failed calls this, so
/// that the others do not wait for it forever).
[[noreturn]] void abort(int code);

} // namespace dlc::dist

#endif // DLC_FRONTEND_DIST_H
