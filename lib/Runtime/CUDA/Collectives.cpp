//===- Collectives.cpp - all-reduce across GPUs with NCCL ---------------------===//
//
// One NCCL communicator set per list of GPUs, created on first use (ncclCommInitAll:
// single process, one rank per GPU) by the thread that enqueues the collective, and kept
// until a failure breaks it. Each GPU's queue worker launches its own rank's call on its
// stream; NCCL matches the ranks on the devices, so no host thread waits for another.
//
//===----------------------------------------------------------------------===//
#include "CudaContext.h"
#include "CudaEngine.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/OpFacts.h"

#include <nccl.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace dlc::cuda {

namespace {

void checkNccl(ncclResult_t status, const char *call, const std::vector<int> &devices) {
  if (status == ncclSuccess)
    return;
  std::string set;
  for (int d : devices)
    set += (set.empty() ? "" : ", ") + gpu(d).str();
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
  explicit CommunicatorSet(std::vector<int> devices)
      : devices_(std::move(devices)), comms_(devices_.size()) {
    checkNccl(ncclCommInitAll(comms_.data(), int(devices_.size()), devices_.data()),
              "ncclCommInitAll", devices_);
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
std::map<std::vector<int>, std::shared_ptr<CommunicatorSet>> &cache() {
  static auto *instance = new std::map<std::vector<int>, std::shared_ptr<CommunicatorSet>>;
  return *instance;
}

} // namespace

std::shared_ptr<CommunicatorSet> communicators(const std::vector<int> &devices) {
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto it = cache().find(devices);
  if (it != cache().end() && !it->second->broken())
    return it->second;
  auto set = std::make_shared<CommunicatorSet>(devices); // a broken one is replaced
  cache()[devices] = set;
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
