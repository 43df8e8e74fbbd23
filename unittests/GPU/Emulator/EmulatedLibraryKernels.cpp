//===- EmulatedLibraryKernels.cpp - cuBLAS and cuDNN ops on emulated GPUs ----===//
//
// cuBLAS and cuDNN cannot run without a GPU, so on emulated GPUs their ops (products,
// convolutions, batch norm) run the CPU kernels, in the stream's order like any GPU
// work: these definitions take the place of BlasKernels.cpp's and CudnnKernels.cpp's
// registrations. The engine, the streams, the copies and dlc's own CUDA kernels around
// them are the real ones; what the GPU tests learn about the library calls themselves
// needs a GPU.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"

#include <memory>
#include <stdexcept>

namespace dlc::cuda {

namespace {

/// Queues the CPU kernel of `Op` on the current GPU's stream, with its own copy of the
/// attributes (the caller's are gone by the time the stream gets there).
template <const char *Op> void onStream(const KernelArgs &args) {
  OpScope scope(Op);
  // The real kernels' dtype contract, checked on the host as they check it: cuBLAS and
  // cuDNN run the float types only, where the CPU kernels also take integers.
  if (!is_floating(args.inputs[0].dtype))
    throw DTypeError(std::string(Op) + ": the GPU kernel takes float32, float16 or bfloat16, "
                     "got " + dtype_name(args.inputs[0].dtype));
  const KernelEntry *host = find_kernel(Op, cpu(0));
  if (!host)
    throw UnsupportedError(std::string(Op) + ": no CPU kernel for the emulated GPU to run");
  if (!current_context().on_compute_stream()) // as the real adapters check
    throw Error(std::string(Op) + ": internal error: a library op issued on the copy stream");
  auto attrs = std::make_shared<Attrs>(*args.attrs);
  KernelArgs onHost = args;
  onHost.attrs = attrs.get();
  onHost.device = cpu(0);
  dlc_emu::submit(current_context().stream(), [onHost, attrs, run = host->fast] { run(onHost); });
}

constexpr char kConv[] = "dlc.conv2d";
constexpr char kConvData[] = "dlc.conv2d_backward_data";
constexpr char kConvFilter[] = "dlc.conv2d_backward_filter";
constexpr char kBatchNorm[] = "dlc.batch_norm";
constexpr char kBatchNormBackward[] = "dlc.batch_norm_backward";
constexpr char kMatmul[] = "dlc.matmul";
constexpr char kDense[] = "dlc.dense";

} // namespace

void register_cudnn_kernels() {
  register_gpu_kernel(kConv, onStream<kConv>);
  register_gpu_kernel(kConvData, onStream<kConvData>);
  register_gpu_kernel(kConvFilter, onStream<kConvFilter>);
  register_gpu_kernel(kBatchNorm, onStream<kBatchNorm>);
  register_gpu_kernel(kBatchNormBackward, onStream<kBatchNormBackward>);
}

void register_blas_kernels() {
  register_gpu_kernel(kMatmul, onStream<kMatmul>);
  register_gpu_kernel(kDense, onStream<kDense>);
}

} // namespace dlc::cuda
