//===- CudnnSupport.h - cuDNN descriptors and batch-norm helpers (internal) --===//
#ifndef DLC_LIB_RUNTIME_CUDA_CUDNNSUPPORT_H
#define DLC_LIB_RUNTIME_CUDA_CUDNNSUPPORT_H

#include "CudaContext.h"

#include <cstdint>

namespace dlc::cuda {

/// Owns one cuDNN descriptor; `Create`/`Destroy` are its cuDNN functions.
template <typename Descriptor, cudnnStatus_t (*Create)(Descriptor *),
          cudnnStatus_t (*Destroy)(Descriptor)>
class CudnnDescriptor {
public:
  CudnnDescriptor() { check(Create(&descriptor_), "cudnnCreate*Descriptor"); }
  ~CudnnDescriptor() { Destroy(descriptor_); }
  CudnnDescriptor(const CudnnDescriptor &) = delete;
  CudnnDescriptor &operator=(const CudnnDescriptor &) = delete;
  operator Descriptor() const { return descriptor_; }

private:
  Descriptor descriptor_ = nullptr;
};

using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                         cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                         cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                    cudnnDestroyConvolutionDescriptor>;
using ActivationDescriptor =
    CudnnDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                    cudnnDestroyActivationDescriptor>;

/// mean[c] and biased var[c] (float32) of x (N, C, S) over N and S, x of float32,
/// float16 or bfloat16 (ReduceKernels.cu).
void launch_channel_statistics(const TensorRef &x, int64_t N, int64_t C, int64_t S, float *mean,
                               float *var);
/// invStd[c] = 1 / sqrt(var[c] + epsilon) (LossKernels.cu).
void launch_inverse_std(const float *var, float *invStd, int64_t C, double epsilon);

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_CUDNNSUPPORT_H
