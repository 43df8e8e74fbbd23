//===- devices.cpp - the seed tutorial's first half, in C++ -------------------===//
//
// Counting GPUs, choosing a device, creating arrays on it, copying between devices,
// the error when an op's inputs live on different devices, and a default-device scope:
// what `npx.num_gpus()`, `np.ones(..., device=gpu)`, `x.copyto(gpu_1)` and
// `with mx.gpu(2):` do in MXNet.
//
//===----------------------------------------------------------------------===//
#include <dlc/dlc.h>

#include <iostream>

using namespace dlc;

int main() {
  try {
    // How many GPUs are there? Prefer the first one, fall back to the CPU (also while
    // this build has no GPU kernels: can_compute_on says so).
    std::cout << "GPUs: " << npx::num_gpus() << "\n";
    bool useGpus = npx::num_gpus() > 0 && can_compute_on(npx::gpu());
    Device device = useGpus ? npx::gpu() : npx::cpu();

    // Arrays carry the device they live on.
    Tensor x = np::ones({3, 4}, device);
    std::cout << "x = " << x << "\n";

    // Ops run where their inputs live; the result lives there too.
    Tensor y = np::random::uniform(0, 1, {3, 4}, device);
    Tensor z = x + y;
    std::cout << "x + y lives on " << z.device() << "\n";

    // Explicit copies to a second device (a second GPU, or a second CPU device).
    Device second = useGpus && npx::num_gpus() > 1 ? npx::gpu(1) : npx::cpu(1);
    Tensor w = x.copyto(second);
    std::cout << "w = x.copyto(" << second << ") lives on " << w.device() << "\n";

    // Inputs on different devices are an error, never a silent transfer.
    try {
      Tensor bad = x + w;
      std::cout << "unexpected: " << bad << "\n";
      return 1;
    } catch (const DeviceMismatchError &e) {
      std::cout << "x + w fails as it should: " << e.what() << "\n";
    }
    std::cout << "x + w.to(x.device()) = " << (x + w.to(x.device())) << "\n";

    // A scope changes the default device of this thread, like `with mx.gpu(2):`.
    {
      DeviceScope scope(second);
      Tensor t = np::zeros({2});
      std::cout << "inside the scope np::zeros lands on " << t.device() << "\n";
    }
    std::cout << "outside it, on " << np::zeros({2}).device() << "\n";
    npx::waitall();
  } catch (const Error &e) {
    std::cerr << "devices: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
