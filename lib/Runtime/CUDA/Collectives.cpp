//===- Collectives.cpp - all-reduce across GPUs with NCCL ---------------------===//
//
// One NCCL communicator set per list of GPUs, created on first use by the thread that
// enqueues the collective, and kept until a failure breaks it. In one process
// ncclCommInitAll makes one rank per GPU. In a job of several processes every process
// brings as many GPUs: process 0 makes the NCCL id, the job's process group broadcasts
// it (its control channel: the enqueueing thread is the program's own), and each GPU
// joins with ncclCommInitRank as rank process * GPUs + k, the joins of one process
// grouped so that NCCL connects them together. Each GPU's queue worker launches its own rank's call on its
// stream; NCCL matches the ranks on the devices, so no host thread waits for another.
//
//===----------------------------------------------------------------------===//
#include "CudaContext.h"
#include "CudaEngine.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"

#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace dlc::cuda {

namespace {

void checkNccl(ncclResult_t status, const char *call, const std::vector<int> &devices,
               const ProcessGroup *processes = nullptr) {
  if (status == ncclSuccess)
    return;
  std::string set;
  for (int d : devices)
    set += (set.empty() ? "" : ", ") + gpu(d).str();
  if (processes)
    set += " of process " + std::to_string(processes->rank()) + " of " +
           std::to_string(processes->size());
  throw Error(std::string(call) + " failed on {" + set + "} in dlc.all_reduce: " +
              ncclGetErrorString(status) + " (" + ncclGetLastError(nullptr) + ")");
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return ncclFloat32;
  case DType::f16:
    return ncclFloat16;
  case DType::bf16:
    return ncclBfloat16;
  case DType::i32:
    return ncclInt32;
  case DType::i64:
    return ncclInt64;
  case DType::u8:
    return ncclUint8;
  case DType::boolean:
    break;
  }
  throw DTypeError(std::string("all_reduce: NCCL cannot sum ") + dtype_name(dtype) + " tensors");
}

} // namespace

class CommunicatorSet {
public:
  CommunicatorSet(std::vector<int> devices, ProcessGroup *processes)
      : devices_(std::move(devices)), comms_(devices_.size()) {
    if (!processes) {
      checkNccl(ncclCommInitAll(comms_.data(), int(devices_.size()), devices_.data()),
                "ncclCommInitAll", devices_);
      return;
    }
    ncclUniqueId id{};
    if (processes->rank() == 0)
      checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", devices_, processes);
    processes->broadcast(&id, sizeof id, 0, ProcessGroup::Channel::control);
    const int local = int(devices_.size());
    int current = 0; // ncclCommInitRank joins the calling thread's device: restored after
    check(cudaGetDevice(&current), "cudaGetDevice");
    checkNccl(ncclGroupStart(), "ncclGroupStart", devices_, processes);
    ncclResult_t joined = ncclSuccess;
    for (int k = 0; k < local && joined == ncclSuccess; ++k) {
      check(cudaSetDevice(devices_[size_t(k)]), "cudaSetDevice");
      joined = ncclCommInitRank(&comms_[size_t(k)], processes->size() * local, id,
                                processes->rank() * local + k);
    }
    ncclResult_t grouped = ncclGroupEnd();
    check(cudaSetDevice(current), "cudaSetDevice");
    checkNccl(joined, "ncclCommInitRank", devices_, processes);
    checkNccl(grouped, "ncclGroupEnd", devices_, processes);
  }
  // Deliberately never destroyed while cached (process lifetime); a broken set's
  // communicators were aborted, which frees them.

  const std::vector<int> &devices() const { return devices_; }
  bool broken() {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return broken_;
  }

  /// Launches rank `rank`'s all-reduce. Launches share the set's lock (a rank's first
  /// call may wait for its peers' while NCCL connects them, so they must not exclude each
  /// other); an abort takes it alone, so it never frees a communicator mid-launch.
  void allReduce(size_t rank, const void *input, void *output, size_t count,
                 ncclDataType_t type, ncclRedOp_t op, cudaStream_t stream) {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    if (broken_)
      throw Error("ncclAllReduce not called on " + gpu(devices_.at(rank)).str() +
                  " in dlc.all_reduce: another rank of this collective failed and its "
                  "communicators were aborted");
    checkNccl(ncclAllReduce(input, output, count, type, op, comms_.at(rank), stream),
              "ncclAllReduce", devices_);
  }

  /// After a rank failed, its peers' NCCL kernels would wait for it forever: abort every
  /// communicator of the set (their pending operations end with an error).
  void abort() {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (broken_)
      return;
    broken_ = true;
    for (ncclComm_t comm : comms_)
      ncclCommAbort(comm);
  }

private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::shared_mutex mutex_;
  bool broken_ = false;
};

namespace {

std::mutex &cacheMutex() {
  static std::mutex *mutex = new std::mutex;
  return *mutex;
}
using CommunicatorKey = std::pair<std::vector<int>, int>; // GPUs, processes (0: none)
std::map<CommunicatorKey, std::shared_ptr<CommunicatorSet>> &cache() {
  static auto *instance = new std::map<CommunicatorKey, std::shared_ptr<CommunicatorSet>>;
  return *instance;
}

} // namespace

std::shared_ptr<CommunicatorSet> communicators(const std::vector<int> &devices,
                                               ProcessGroup *processes) {
  std::lock_guard<std::mutex> lock(cacheMutex());
  // A job's set and a process's own set of the same GPUs are different communicators.
  std::pair<std::vector<int>, int> key{devices, processes ? processes->size() : 0};
  auto it = cache().find(key);
  if (it != cache().end() && !it->second->broken())
    return it->second;
  auto set = std::make_shared<CommunicatorSet>(devices, processes); // a broken one is replaced
  cache()[key] = set;
  return set;
}

void check_all_reduce_dtype(DType dtype) { (void)ncclType(dtype); }

void all_reduce(const std::shared_ptr<CommunicatorSet> &set, size_t rank, const void *input,
                void *output, size_t count, DType dtype, bool mean) {
  OpScope scope(ops::all_reduce);
  try {
    set->allReduce(rank, input, output, count, ncclType(dtype), mean ? ncclAvg : ncclSum,
                   current_context().stream());
  } catch (...) {
    set->abort();
    throw;
  }
}

} // namespace dlc::cuda
