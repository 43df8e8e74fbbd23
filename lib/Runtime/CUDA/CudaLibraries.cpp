//===- CudaLibraries.cpp - CUDA library versions and GPU count --------------===//
#include "dlc/Runtime/CUDA/CudaLibraries.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "dlc/Core/Error.h"

namespace dlc::cuda {

namespace {
// CUDA encodes 13.0 as 13000; cuDNN 9.19.0 as 91900; NCCL 2.28.9 as 22809.
std::string threePart(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}
} // namespace

LibraryVersions libraryVersions() {
  LibraryVersions v;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    v.cudaRuntime = threePart(runtime / 1000, (runtime % 1000) / 10, runtime % 10);
  size_t cudnn = cudnnGetVersion();
  v.cudnn = threePart(static_cast<int>(cudnn / 10000), static_cast<int>(cudnn % 10000 / 100),
                      static_cast<int>(cudnn % 100));
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    v.nccl = threePart(nccl / 10000, nccl % 10000 / 100, nccl % 100);
  return v;
}

DeviceCount countDevices() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess)
    return {count, {}};
  // No driver or no device is a normal CPU-only machine, not an error.
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
    cudaGetLastError(); // clear the sticky error for later calls
    return {0, cudaGetErrorString(status)};
  }
  throw Error(std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + ": " +
              cudaGetErrorString(status));
}

} // namespace dlc::cuda
