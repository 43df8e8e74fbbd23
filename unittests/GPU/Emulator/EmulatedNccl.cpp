//===- EmulatedNccl.cpp - the NCCL calls dlc makes, across emulated GPUs -----===//
//
// ncclCommInitAll makes one clique of ranks; ncclAllReduce puts the rank's part in its
// stream, where it waits until every rank of the clique has reached the same collective,
// as NCCL's kernels do: a rank whose stream never gets there hangs the others, the
// ordering mistake dlc's enqueue_collective exists to prevent. The last rank to arrive
// adds the inputs in rank order, rounding to the element type after each addition, and
// writes the result to every rank's output. ncclCommAbort wakes every waiting rank.
// ncclGetUniqueId and ncclCommInitRank make cliques whose ranks live in several processes
// (EmulatedNcclAcrossProcesses.cpp); the group calls only bracket them.
//
//===----------------------------------------------------------------------===//
#include <nccl.h> // first: its CUDA headers declare threadIdx, which CudaEmulator.h redefines

#include "CudaEmulator.h"
#include "EmulatedNccl.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <memory>
#include <mutex>
#include <vector>

namespace {

/// What one rank brought to a collective: the ranks of one collective must agree.
struct Call {
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
};

struct Clique {
  explicit Clique(int ranks) : sends(size_t(ranks)), receives(size_t(ranks)), calls(size_t(ranks)) {}
  std::mutex mutex;
  std::condition_variable done;
  std::vector<const void *> sends;
  std::vector<void *> receives;
  std::vector<Call> calls;
  int arrived = 0;
  uint64_t generation = 0; // collectives completed
  bool aborted = false;
};

template <typename T> double toDouble(T v) { return double(v); }
template <> double toDouble(__half v) { return __half2float(v); }
template <> double toDouble(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> T fromDouble(double v) { return T(v); }
template <> __half fromDouble(double v) { return __float2half(float(v)); }
template <> __nv_bfloat16 fromDouble(double v) { return __float2bfloat16(float(v)); }
template <> float fromDouble(double v) { return float(v); }

/// a + b in T: floats through double, rounded once to T; integers in their own type
/// (unsigned wrap-around, as NCCL's integer sums).
template <typename T> T add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return fromDouble<T>(toDouble(a) + toDouble(b));
}

template <typename T>
void reduce(const std::vector<const void *> &sends, const std::vector<void *> &receives,
            size_t count, bool average) {
  std::vector<T> total(count);
  for (size_t i = 0; i < count; ++i) {
    T acc = static_cast<const T *>(sends[0])[i];
    for (size_t r = 1; r < sends.size(); ++r)
      acc = add(acc, static_cast<const T *>(sends[r])[i]);
    if (average) {
      if constexpr (std::is_integral_v<T>)
        acc = T(acc / T(sends.size()));
      else
        acc = fromDouble<T>(toDouble(acc) / double(sends.size()));
    }
    total[i] = acc;
  }
  for (void *out : receives) // after every input was read: outputs may alias inputs
    std::memcpy(out, total.data(), count * sizeof(T));
}

} // namespace

namespace dlc_emu::nccl {

size_t element_bytes(ncclDataType_t type) {
  switch (type) {
  case ncclFloat32: case ncclInt32: return 4;
  case ncclFloat64: case ncclInt64: return 8;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclUint8: return 1;
  default: return 0;
  }
}

void sum(ncclDataType_t type, const std::vector<const void *> &sends,
         const std::vector<void *> &receives, size_t count, bool average) {
  switch (type) {
  case ncclFloat32: reduce<float>(sends, receives, count, average); break;
  case ncclFloat64: reduce<double>(sends, receives, count, average); break;
  case ncclFloat16: reduce<__half>(sends, receives, count, average); break;
  case ncclBfloat16: reduce<__nv_bfloat16>(sends, receives, count, average); break;
  case ncclInt32: reduce<int32_t>(sends, receives, count, average); break;
  case ncclInt64: reduce<int64_t>(sends, receives, count, average); break;
  case ncclUint8: reduce<uint8_t>(sends, receives, count, average); break;
  default: break;
  }
}

} // namespace dlc_emu::nccl

/// A rank of a clique in this process, or of one that spans processes (`job`).
struct ncclComm {
  std::shared_ptr<Clique> clique;
  std::shared_ptr<dlc_emu::nccl::JobClique> job;
  int rank;
  int device;
};

extern "C" {

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ranks, const int *devices) {
  if (ranks <= 0 || !comms)
    return ncclInvalidArgument;
  auto clique = std::make_shared<Clique>(ranks);
  for (int r = 0; r < ranks; ++r)
    comms[r] = new ncclComm{clique, nullptr, r, devices ? devices[r] : r};
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { return dlc_emu::nccl::make_job_id(id); }

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank) {
  if (!comm)
    return ncclInvalidArgument;
  std::shared_ptr<dlc_emu::nccl::JobClique> job = dlc_emu::nccl::join_job_clique(id, ranks, rank);
  if (!job)
    return ncclInvalidArgument;
  int device = 0;
  cudaGetDevice(&device);
  *comm = new ncclComm{nullptr, std::move(job), rank, device};
  return ncclSuccess;
}

// Joining does not wait for the peers here, so a group has nothing to hold back.
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void *send, void *receive, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (op != ncclSum && op != ncclAvg)
    return ncclInvalidArgument;
  if (dlc_emu::nccl::element_bytes(type) == 0)
    return ncclInvalidArgument;
  if (comm->job) {
    dlc_emu::count_all_reduce();
    dlc_emu::submit(stream, [job = comm->job, rank = comm->rank, send, receive, count, type, op] {
      dlc_emu::nccl::job_all_reduce(*job, rank, send, receive, count, type, op);
    });
    return ncclSuccess;
  }
  std::shared_ptr<Clique> clique = comm->clique;
  {
    std::lock_guard<std::mutex> lock(clique->mutex);
    if (clique->aborted)
      return ncclInvalidUsage;
  }
  int rank = comm->rank;
  dlc_emu::count_all_reduce();
  dlc_emu::submit(stream, [=] {
    Clique &c = *clique;
    std::unique_lock<std::mutex> lock(c.mutex);
    if (c.aborted)
      return; // the communicator is gone: nothing to meet
    uint64_t generation = c.generation;
    c.sends[size_t(rank)] = send;
    c.receives[size_t(rank)] = receive;
    c.calls[size_t(rank)] = {count, type, op};
    if (++c.arrived == int(c.sends.size())) {
      for (const Call &other : c.calls)
        if (other.count != count || other.type != type || other.op != op) {
          // On GPUs, ranks meeting different collectives read and write past buffers or
          // hang: the ordering mistake enqueue_collective prevents. Stop loudly here.
          std::fprintf(stderr, "emulated NCCL: the ranks of one all-reduce disagree (count "
                               "%zu vs %zu, type %d vs %d, op %d vs %d)\n",
                       other.count, count, int(other.type), int(type), int(other.op), int(op));
          std::abort();
        }
      dlc_emu::nccl::sum(type, c.sends, c.receives, count, op == ncclAvg);
      c.arrived = 0;
      ++c.generation;
      c.done.notify_all();
      return;
    }
    c.done.wait(lock, [&] { return c.generation != generation || c.aborted; });
  });
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm)
    return ncclSuccess;
  if (comm->job) {
    dlc_emu::nccl::abort_job_clique(*comm->job);
    delete comm;
    return ncclSuccess;
  }
  {
    std::lock_guard<std::mutex> lock(comm->clique->mutex);
    comm->clique->aborted = true;
    comm->clique->done.notify_all();
  }
  delete comm;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclInvalidArgument: return "invalid argument (emulated NCCL)";
  case ncclInvalidUsage: return "invalid usage (emulated NCCL)";
  default: return "error (emulated NCCL)";
  }
}

const char *ncclGetLastError(ncclComm_t) { return "emulated NCCL"; }

} // extern "C"
