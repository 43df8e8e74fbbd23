//===- Collectives.cpp - all-reduce across GPUs with NCCL ---------------------===//
//
// One NCCL communicator set per list of GPUs, created on first use (ncclCommInitAll:
// single process, one rank per GPU) and kept. Each GPU's queue worker launches its own
// rank's call on its stream; NCCL matches the ranks on the devices, so no host thread
// waits for another.
//
//===----------------------------------------------------------------------===//
#include "CudaContext.h"
#include "CudaEngine.h"

#include "dlc/Core/Error.h"

#include <nccl.h>

#include <map>
#include <mutex>

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

std::mutex &cacheMutex() {
  static std::mutex *mutex = new std::mutex;
  return *mutex;
}
std::map<std::vector<int>, std::vector<ncclComm_t>> &cache() {
  static auto *instance = new std::map<std::vector<int>, std::vector<ncclComm_t>>;
  return *instance;
}

/// The communicators of `devices`, one per rank (rank i is devices[i]).
std::vector<ncclComm_t> communicators(const std::vector<int> &devices) {
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto it = cache().find(devices);
  if (it != cache().end())
    return it->second;
  std::vector<ncclComm_t> comms(devices.size());
  checkNccl(ncclCommInitAll(comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll",
            devices);
  return cache().emplace(devices, std::move(comms)).first->second;
}

/// After a rank failed, its peers' NCCL kernels would wait for it forever: abort the set's
/// communicators (their pending operations fail) and forget them.
void abortCommunicators(const std::vector<int> &devices) {
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto it = cache().find(devices);
  if (it == cache().end())
    return;
  for (ncclComm_t comm : it->second)
    ncclCommAbort(comm);
  cache().erase(it);
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

void all_reduce(const std::vector<int> &devices, size_t rank, const void *input, void *output,
                size_t count, DType dtype, bool mean) {
  OpScope scope("dlc.all_reduce");
  try {
    std::vector<ncclComm_t> comms = communicators(devices);
    checkNccl(ncclAllReduce(input, output, count, ncclType(dtype), mean ? ncclAvg : ncclSum,
                            comms.at(rank), current_context().stream()),
              "ncclAllReduce", devices);
  } catch (...) {
    abortCommunicators(devices);
    throw;
  }
}

} // namespace dlc::cuda
