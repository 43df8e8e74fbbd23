//===- CudaKernels.h - helpers shared by the GPU kernels (internal) ----------===//
//
// GPU kernels are registered under the same dialect op names as the CPU ones, for
// DeviceKind::gpu. They run on the device's queue worker and launch on its stream
// (current_context()); the CPU reference kernels are their oracle in tests.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDAKERNELS_H
#define DLC_LIB_RUNTIME_CUDA_CUDAKERNELS_H

#include "CudaContext.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/KernelGeometry.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace dlc::cuda {

/// Registers every GPU kernel in the kernel table (no CUDA call is made).
void register_cuda_kernels();
void register_elementwise_kernels(); // ElementwiseKernels.cu
void register_reduce_kernels();      // ReduceKernels.cu
void register_layout_kernels();      // LayoutKernels.cu
void register_loss_kernels();        // LossKernels.cu
void register_index_kernels();       // IndexKernels.cu
void register_slice_kernels();       // SliceKernels.cu
void register_norm_kernels();        // NormKernels.cu
void register_attention_kernels();   // AttentionKernels.cu
void register_creation_kernels();    // CreationKernels.cu
void register_blas_kernels();        // BlasKernels.cpp
void register_cudnn_kernels();       // CudnnKernels.cpp
void register_pool_kernels();        // PoolKernels.cu
void register_optimizer_kernels();   // OptimizerKernels.cu
/// Registers the launcher of generated GPU kernels (GeneratedLaunch.cpp; on emulated
/// GPUs, the emulator's).
void register_generated_launch();

#ifndef DLC_CUDA_EMULATION_STANDALONE
/// Registers `fn` for `op` on GPUs. The oracle of a GPU kernel is the CPU reference
/// kernel of the same op (tests compare the two), so the entry's reference is `fn` too.
inline void register_gpu_kernel(const char *op, KernelFn fn) {
  register_kernel(op, DeviceKind::gpu, {fn, fn});
}
/// The same for a random kernel that reads KernelArgs::device_seed when it is given.
inline void register_gpu_random_kernel(const char *op, KernelFn fn) {
  register_kernel(op, DeviceKind::gpu, {fn, fn, /*seed_on_device=*/true});
}
#else
/// In the CPU emulator's kernel tests (unittests/GPU/Emulator), the emulator's own table
/// holds them: the process's kernel table keeps the real GPU kernels.
void register_gpu_kernel(const char *op, KernelFn fn);
inline void register_gpu_random_kernel(const char *op, KernelFn fn) { register_gpu_kernel(op, fn); }
#endif

constexpr int kThreads = 256;
/// Blocks for a grid-stride loop over `n` elements.
inline unsigned blocks_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(1) << 20)));
}

// Shape helpers shared with the CPU kernels (host code; AxisSplit is passed to kernels
// by value).
using kernels::AxisSplit;
using kernels::broadcast_strides;
using kernels::split_at_axis;

/// Calls f with `indices`' data as `const int32_t *` or `const int64_t *` (class labels,
/// take's indices); any other dtype is a DTypeError naming `op` and `role`.
template <typename F>
void with_integer_data(const TensorRef &indices, const char *op, const char *role, F &&f) {
  if (indices.dtype == DType::i64)
    f(indices.as<const int64_t>());
  else if (indices.dtype == DType::i32)
    f(indices.as<const int32_t>());
  else
    throw DTypeError(std::string(op) + ": " + role + " must be int32 or int64, got " +
                     dtype_name(indices.dtype));
}

/// numpy broadcasting on the device: the output's shape and, per operand, its element
/// strides aligned to the output (0 where it broadcasts). Passed to kernels by value.
constexpr int kMaxRank = 8;
constexpr int kMaxOperands = 3;
struct Indexer {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxOperands][kMaxRank] = {};
};

/// An Indexer over `out` with one stride vector per operand; throws ShapeError naming
/// `op` for ranks above kMaxRank.
Indexer make_indexer(const char *op, const Shape &out,
                     std::initializer_list<std::vector<int64_t>> operandStrides);

#if defined(__CUDACC__) || defined(DLC_CUDA_EMULATION)
/// offsets[k] = the element of operand k that broadcasting pairs with output element i.
template <int K>
__device__ __forceinline__ void broadcast_offsets(const Indexer &ix, int64_t i, int64_t *offsets) {
  for (int k = 0; k < K; ++k)
    offsets[k] = 0;
  for (int d = ix.rank - 1; d >= 0; --d) {
    int64_t coordinate = i % ix.shape[d];
    i /= ix.shape[d];
    for (int k = 0; k < K; ++k)
      offsets[k] += coordinate * ix.strides[k][d];
  }
}

#define DLC_GRID_STRIDE_LOOP(i, n)                                                       \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);               \
       i += int64_t(blockDim.x) * gridDim.x)
#endif

/// y (rows, columns) = product + bias (columns) when bias is given, then ReLU when
/// `relu`: the dense op's epilogue (ElementwiseKernels.cu). y and bias are of `dtype`
/// (float32, float16 or bfloat16); `product` is a float32 (rows, columns) matrix, or null
/// for y itself. Computed in float32 and rounded once to `dtype`.
void launch_bias_activation(DType dtype, void *y, const float *product, const void *bias,
                            int64_t rows, int64_t columns, bool relu);
/// y (count elements, channel c of element i being (i / inner) % channels) += bias[c]
/// when bias is given, then ReLU when `relu`; y and bias of `dtype`, the sum in float32
/// (ElementwiseKernels.cu): a 16-bit convolution's epilogue.
void launch_channel_bias_activation(DType dtype, void *y, const void *bias, int64_t count,
                                    int64_t channels, int64_t inner, bool relu);

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDAKERNELS_H
