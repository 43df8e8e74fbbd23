//===- Devices.cpp - how many GPUs this process can use -----------------------===//
#include "dlc/Config.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"

#if DLC_HAVE_CUDA
#include "dlc/Runtime/CUDA/CudaLibraries.h"
#endif

namespace dlc {

int num_gpus() {
#if DLC_HAVE_CUDA
  try {
    return cuda::countDevices().count;
  } catch (const std::exception &e) {
    throw Error(std::string("num_gpus: ") + e.what());
  }
#else
  return 0;
#endif
}

} // namespace dlc
