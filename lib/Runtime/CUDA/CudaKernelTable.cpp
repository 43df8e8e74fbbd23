//===- CudaKernelTable.cpp - the GPU kernels in the kernel table -------------===//
#include "CudaKernels.h"

namespace dlc::cuda {

Indexer make_indexer(const char *op, const Shape &out,
                     std::initializer_list<std::vector<int64_t>> operandStrides) {
  if (out.size() > size_t(kMaxRank))
    throw ShapeError(std::string(op) + ": the GPU kernels take tensors of rank up to " +
                     std::to_string(kMaxRank) + ", got rank " + std::to_string(out.size()) +
                     " " + shape_rules::str(out));
  Indexer ix;
  ix.rank = int(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    ix.shape[d] = out[d];
  int k = 0;
  for (const std::vector<int64_t> &strides : operandStrides) {
    for (size_t d = 0; d < strides.size(); ++d)
      ix.strides[k][d] = strides[d];
    ++k;
  }
  return ix;
}

void register_cuda_kernels() {
  register_elementwise_kernels();
  register_reduce_kernels();
  register_layout_kernels();
  register_index_kernels();
  register_slice_kernels();
  register_norm_kernels();
  register_attention_kernels();
  register_loss_kernels();
  register_creation_kernels();
  register_blas_kernels();
  register_cudnn_kernels();
  register_pool_kernels();
  register_optimizer_kernels();
  register_generated_launch();
}

} // namespace dlc::cuda
