//===- CudaOptions.h - process-wide GPU options (internal) --------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDAOPTIONS_H
#define DLC_LIB_RUNTIME_CUDA_CUDAOPTIONS_H

namespace dlc::cuda {

/// Whether float32 matrix products and convolutions may use TF32 tensor cores (off by
/// default, so that GPU results match the CPU's to 1e-4).
void set_tf32(bool enabled);
bool tf32();

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDAOPTIONS_H
