//===- dlc-info.cpp - what this dlc was built with, and what it can see -------===//
#include "dlc/Config.h"
#if DLC_HAVE_CUDA
#include "dlc/Runtime/CUDA/CudaLibraries.h"
#endif

#include <cstdio>
#include <exception>

int main() {
  std::printf("dlc %s (MLIR %s)\n", DLC_VERSION, DLC_MLIR_VERSION);
  std::printf("CUDA backend: %s\n", DLC_CUDA_SUMMARY);
  std::printf("MPI process group: %s\n", DLC_MPI_SUMMARY);
#if DLC_HAVE_CUDA
  try {
    dlc::cuda::LibraryVersions v = dlc::cuda::libraryVersions();
    std::printf("  cudart %s, cuDNN %s, NCCL %s\n", v.cudaRuntime.c_str(), v.cudnn.c_str(),
                v.nccl.c_str());
    dlc::cuda::DeviceCount gpus = dlc::cuda::countDevices();
    std::printf("  GPUs visible: %d%s%s\n", gpus.count, gpus.note.empty() ? "" : " - ",
                gpus.note.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-info: %s\n", e.what());
    return 1;
  }
#endif
  return 0;
}
