//===- CudaLibraries.h - versions of the CUDA libraries and the GPU count ---===//
//
// Part of libdlc_runtime's CUDA side: no MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CUDA_CUDALIBRARIES_H
#define DLC_RUNTIME_CUDA_CUDALIBRARIES_H

#include <string>

namespace dlc::cuda {

/// Versions as "major.minor.patch" of the libraries actually loaded at run time.
struct LibraryVersions {
  std::string cudaRuntime;
  std::string cudnn;
  std::string nccl;
};
LibraryVersions libraryVersions();

/// Number of usable GPUs. Zero, with `note` saying why, when there is no driver or no
/// device; any other CUDA error throws std::runtime_error naming it.
struct DeviceCount {
  int count = 0;
  std::string note;
};
DeviceCount countDevices();

} // namespace dlc::cuda

#endif // DLC_RUNTIME_CUDA_CUDALIBRARIES_H
