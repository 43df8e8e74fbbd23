//===- CudaMemory.cpp - device and pinned memory, copies between devices -----===//
#include "CudaContext.h"
#include "CudaEngine.h"

#include "dlc/Core/Error.h"

#include <cstring>
#include <mutex>
#include <set>
#include <utility>

namespace dlc::cuda {

void *device_malloc(int ordinal, size_t bytes) {
  DeviceGuard guard(ordinal);
  void *data = nullptr;
  cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(status, "cudaMalloc");
  return data;
}

void device_free(int ordinal, void *data) {
  DeviceGuard guard(ordinal);
  check(cudaFree(data), "cudaFree");
}

void *pinned_malloc(size_t bytes) {
  void *data = nullptr;
  cudaError_t status = cudaHostAlloc(&data, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return data;
}

void pinned_free(void *data) { check(cudaFreeHost(data), "cudaFreeHost"); }

MemoryInfo memory_info(int ordinal) {
  DeviceGuard guard(ordinal);
  MemoryInfo info;
  check(cudaMemGetInfo(&info.free, &info.total), "cudaMemGetInfo");
  return info;
}

namespace {

/// Lets `to` read `from`'s memory directly when the hardware allows (once per pair).
void enablePeerAccess(int to, int from) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried.insert({to, from}).second)
    return;
  int possible = 0;
  check(cudaDeviceCanAccessPeer(&possible, to, from), "cudaDeviceCanAccessPeer");
  if (!possible)
    return; // cudaMemcpyPeerAsync stages through the host
  DeviceGuard guard(to);
  cudaError_t status = cudaDeviceEnablePeerAccess(from, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled)
    cudaGetLastError();
  else
    check(status, "cudaDeviceEnablePeerAccess");
}

} // namespace

void copy_async(void *target, Device to, const void *source, Device from, size_t bytes) {
  if (bytes == 0)
    return;
  OpScope scope("copyto");
  DeviceContext &ctx = current_context();
  if (!to.is_host() && !from.is_host()) {
    if (to.id != from.id)
      enablePeerAccess(to.id, from.id);
    check(cudaMemcpyPeerAsync(target, to.id, source, from.id, bytes, ctx.stream()),
          "cudaMemcpyPeerAsync");
    return;
  }
  // Host memory on one side: unified addressing tells the direction. From pageable host
  // memory the call returns once the source has been staged, so the source may change
  // afterwards; pinned memory goes by DMA in stream order.
  check(cudaMemcpyAsync(target, source, bytes, cudaMemcpyDefault, ctx.stream()),
        "cudaMemcpyAsync");
}

} // namespace dlc::cuda
