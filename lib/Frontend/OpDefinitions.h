//===- OpDefinitions.h - registration of the op families (internal) ----------===//
#ifndef DLC_LIB_FRONTEND_OPDEFINITIONS_H
#define DLC_LIB_FRONTEND_OPDEFINITIONS_H

#include "dlc/Frontend/OpRegistry.h"

namespace dlc::detail {

void register_elementwise_ops();
void register_linalg_ops();
void register_reduce_ops();
void register_layout_ops();
void register_index_ops();
void register_norm_ops();
void register_attention_ops();
void register_creation_ops();
void register_nn_ops();
void register_memory_layout_ops();
void register_optimizer_ops();

/// A fresh kernel seed from `device`'s random generator (np::random::seed sets it).
int64_t next_kernel_seed(Device device);

/// Throws DTypeError unless every tensor of `in` is float32 (the NN and optimizer ops).
inline void require_float32(const std::vector<TensorMeta> &in) {
  for (const TensorMeta &meta : in)
    if (meta.dtype != DType::f32)
      throw DTypeError(std::string("needs float32 tensors, got ") + dtype_name(meta.dtype));
}

/// The one floating-point dtype (float32, float16 or bfloat16) every tensor of `in` has;
/// throws DTypeError otherwise. The NN ops take any of them: their kernels compute in
/// float32 and round once to float16 or bfloat16, as cuDNN and cuBLAS do.
inline DType require_one_float_dtype(const std::vector<TensorMeta> &in) {
  DType dtype = in.empty() ? DType::f32 : in.front().dtype;
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw DTypeError(std::string("needs float32, float16 or bfloat16 tensors, got ") +
                     dtype_name(dtype));
  for (const TensorMeta &meta : in)
    if (meta.dtype != dtype)
      throw DTypeError(std::string("needs tensors of one floating-point dtype, got ") +
                       dtype_name(dtype) + " and " + dtype_name(meta.dtype));
  return dtype;
}

/// Throws ShapeError with the rule's message when `inferred` failed, else returns it.
inline Shape checked(shape_rules::Inferred inferred) {
  if (!inferred.ok())
    throw ShapeError(inferred.error);
  return std::move(inferred.shape);
}

/// The one output of an op whose result has its first input's dtype.
inline std::vector<TensorMeta> sameDType(const std::vector<TensorMeta> &inputs, Shape shape) {
  std::vector<TensorMeta> outputs; // not an initializer list, which would copy the shape
  outputs.push_back({std::move(shape), inputs[0].dtype});
  return outputs;
}

/// `gradient` summed over the dimensions numpy broadcasting added or stretched to reach
/// it from `shape`, then shaped `shape`: the VJP of a broadcast.
Tensor sum_to(const Tensor &gradient, const Shape &shape);

/// Throws DTypeError unless every input has the first one's dtype.
void require_same_dtype(const std::vector<TensorMeta> &inputs, size_t first = 0);

} // namespace dlc::detail

#endif // DLC_LIB_FRONTEND_OPDEFINITIONS_H
