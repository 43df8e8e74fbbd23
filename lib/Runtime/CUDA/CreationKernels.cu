//===- CreationKernels.cu - constants, ranges and random tensors on GPUs -----===//
//
// Constants are filled on the device. Random draws (and ranges) are made on the host by
// the CPU kernel with the same `seed` attribute and uploaded, so that a seed gives the
// same tensor on every device, GPU or CPU: eager and compiled runs, and CPU and GPU runs
// of one script, start from the same initial parameters. Drawing on the device (Philox)
// would be faster for large tensors; initialization is not where training spends time.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

template <typename T> __global__ void fillKernel(T *y, int64_t n, T value) {
  DLC_GRID_STRIDE_LOOP(i, n) { y[i] = value; }
}

template <typename T> T hostValue(double v) {
  if constexpr (std::is_same_v<T, __half>)
    return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __double2bfloat16(v);
  else
    return static_cast<T>(v);
}

// y = value everywhere (a splat dlc.constant).
void constant(const KernelArgs &args) {
  OpScope scope(ops::constant);
  const TensorRef &y = args.outputs[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  double value = args.attrs->get_float("value", 0.0);
  cudaStream_t stream = current_context().stream();
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    fillKernel<T><<<blocks_for(n), kThreads, 0, stream>>>(y.as<T>(), n, hostValue<T>(value));
    check_launch("fillKernel");
  });
}

/// Runs the CPU kernel of `op` into host memory and uploads its single output.
template <const char *Op> void drawOnHost(const KernelArgs &args) {
  OpScope scope(Op);
  const TensorRef &y = args.outputs[0];
  size_t bytes = size_t(y.numel()) * dtype_size(y.dtype);
  if (bytes == 0)
    return;
  const KernelEntry *host = find_kernel(Op, cpu(0));
  if (!host)
    throw UnsupportedError(std::string(Op) + ": no CPU kernel to draw the values with");
  std::vector<unsigned char> values(bytes);
  KernelArgs onHost = args;
  onHost.device = cpu(0);
  onHost.outputs[0].data = values.data();
  host->fast(onHost);
  // From pageable memory the call returns once `values` has been staged, so it may be
  // freed when this function returns.
  check(cudaMemcpyAsync(y.data, values.data(), bytes, cudaMemcpyHostToDevice,
                        current_context().stream()),
        "cudaMemcpyAsync");
}

constexpr char kArange[] = "eager.arange";
constexpr char kRandint[] = "eager.random_randint";

} // namespace

void register_creation_kernels() {
  register_gpu_kernel(ops::constant, constant);
  register_gpu_kernel(ops::random_uniform, drawOnHost<ops::random_uniform>);
  register_gpu_kernel(ops::random_normal, drawOnHost<ops::random_normal>);
  register_gpu_kernel(kArange, drawOnHost<kArange>);
  register_gpu_kernel(kRandint, drawOnHost<kRandint>);
}

} // namespace dlc::cuda
