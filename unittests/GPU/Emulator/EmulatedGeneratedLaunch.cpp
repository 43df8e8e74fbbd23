//===- EmulatedGeneratedLaunch.cpp - generated GPU kernels on emulated GPUs ----===//
//
// Emulated GPUs run no PTX. The compiler therefore also builds each generated GPU kernel
// for the host (dlc-host-build-gpu-kernels: the same kernel body inside loops over
// blocks and threads), and this launcher queues that build on the emulated stream with
// the grid a GPU launch would use, so that the generated code runs, in stream order, in
// every emulated GPU test. This definition takes the place of GeneratedLaunch.cpp's.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"

#include "dlc/Runtime/Program/Program.h"

namespace dlc::cuda {

#ifndef DLC_CUDA_EMULATION_STANDALONE
namespace {

void launchHostBuild(const GeneratedGpuKernel &kernel, int device,
                     const std::vector<char *> &pointers, int64_t elements) {
  if (!kernel.host_build)
    throw Error("emulated gpu(" + std::to_string(device) + "): the generated kernel " +
                kernel.name + " came without its host build");
  int64_t block = kThreads, grid = (std::max<int64_t>(elements, 1) + block - 1) / block;
  std::shared_ptr<const GeneratedKernel> build = kernel.host_build;
  dlc_emu::submit(current_context().stream(), [build, pointers, elements, grid, block] {
    std::vector<char *> values(pointers);
    int64_t scalars[3] = {elements, grid, block};
    std::vector<void *> arguments;
    for (char *&value : values)
      arguments.push_back(&value);
    for (int64_t &scalar : scalars)
      arguments.push_back(&scalar);
    build->entry(arguments.data());
  });
}

} // namespace

void register_generated_launch() {
  GeneratedKernelLauncher launcher;
  launcher.launch = launchHostBuild;
  launcher.needs_host_build = true;
  register_generated_kernel_launcher(DeviceKind::gpu, launcher);
}
#else
// The kernel tests call kernels one by one: no programs, no generated kernels.
void register_generated_launch() {}
#endif

} // namespace dlc::cuda
