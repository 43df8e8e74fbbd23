//===- EmulatedNccl.h - the emulated NCCL's parts, shared by its two files ----===//
//
// EmulatedNccl.cpp holds the NCCL entry points and the cliques of one process
// (ncclCommInitAll); EmulatedNcclAcrossProcesses.cpp the cliques that span processes
// (ncclGetUniqueId, ncclCommInitRank), whose ranks meet in a file each process maps.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_UNITTESTS_GPU_EMULATOR_EMULATEDNCCL_H
#define DLC_UNITTESTS_GPU_EMULATOR_EMULATEDNCCL_H

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace dlc_emu::nccl {

/// Bytes per element of `type`; 0 for a type the emulator does not add.
size_t element_bytes(ncclDataType_t type);

/// Adds `sends` (one per rank) in rank order into every one of `receives`, rounding to
/// the element type after each addition as NCCL's kernels do; `average` divides by the
/// ranks. Every input is read before any output is written (outputs may alias inputs).
void sum(ncclDataType_t type, const std::vector<const void *> &sends,
         const std::vector<void *> &receives, size_t count, bool average);

/// The ranks of one communicator spread over processes.
class JobClique;

/// Makes the file the ranks of a new job clique meet in; its path is the id.
ncclResult_t make_job_id(ncclUniqueId *id);
/// Joins the clique of `id` as `rank` of `ranks` (null: the id or the rank is invalid).
std::shared_ptr<JobClique> join_job_clique(const ncclUniqueId &id, int ranks, int rank);
/// Rank `rank`'s part of an all-reduce, run in its stream: waits until every rank of the
/// clique got there (through the file), as a NCCL kernel waits for its peers.
void job_all_reduce(JobClique &clique, int rank, const void *send, void *receive,
                    size_t count, ncclDataType_t type, ncclRedOp_t op);
/// Wakes every rank waiting in the clique, in every process; later calls return at once.
void abort_job_clique(JobClique &clique);

} // namespace dlc_emu::nccl

#endif // DLC_UNITTESTS_GPU_EMULATOR_EMULATEDNCCL_H
