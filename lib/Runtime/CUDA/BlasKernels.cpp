//===- BlasKernels.cpp - matmul and dense through cuBLAS ----------------------===//
//
// cuBLAS is column-major: a row-major (M, N) product C = A·B is computed as the
// column-major Cᵀ = Bᵀ·Aᵀ, which reads the same buffers with the operands swapped.
// float32 uses strict FP32 math unless set_gpu_tf32(true) (see DeviceContext::cublas);
// float16 and bfloat16 products run on the tensor cores with float32 accumulation
// (cublasGemmStridedBatchedEx), rounded once to the output's type.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

/// C (M, N) = op(A) (M, K) · op(B) (K, N), row-major, for `count` matrices at the given
/// element strides (0: the same matrix for every product), all of element type `dtype`
/// (f32, f16 or bf16).
void gemm(DType dtype, const void *a, bool transA, int64_t strideA, const void *b, bool transB,
          int64_t strideB, void *c, int64_t M, int64_t N, int64_t K, int64_t count,
          bool floatOutput = false) {
  cublasHandle_t handle = current_context().cublas();
  const float one = 1.f, zero = 0.f;
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = int(transA ? M : K), ldb = int(transB ? K : N);
  if (dtype == DType::f32) {
    check(cublasSgemmStridedBatched(handle, opB, opA, int(N), int(M), int(K), &one,
                                    static_cast<const float *>(b), ldb, strideB,
                                    static_cast<const float *>(a), lda, strideA, &zero,
                                    static_cast<float *>(c), int(N), M * N, int(count)),
          "cublasSgemmStridedBatched");
    return;
  }
  cudaDataType type = dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  check(cublasGemmStridedBatchedEx(handle, opB, opA, int(N), int(M), int(K), &one, b, type, ldb,
                                   strideB, a, type, lda, strideA, &zero, c,
                                   floatOutput ? CUDA_R_32F : type, int(N), M * N,
                                   int(count), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

// c (..., M, N) = op(a) (..., M, K) · op(b) (..., K, N); batch dimensions broadcast.
void matmul(const KernelArgs &args) {
  OpScope scope(ops::matmul);
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &c = args.outputs[0];
  if (c.dtype != DType::f32 && c.dtype != DType::f16 && c.dtype != DType::bf16)
    throw DTypeError(std::string("matmul: the GPU kernel takes float32, float16 or bfloat16, "
                                 "got ") + dtype_name(c.dtype));
  size_t element = dtype_size(c.dtype);
  bool transA = args.attrs->get_bool("transpose_a", false);
  bool transB = args.attrs->get_bool("transpose_b", false);
  size_t ra = a.shape.size(), rc = c.shape.size();
  int64_t M = c.shape[rc - 2], N = c.shape[rc - 1];
  int64_t K = transA ? a.shape[ra - 2] : a.shape[ra - 1];
  Shape batch(c.shape.begin(), c.shape.end() - 2);
  int64_t count = shape_rules::numElements(batch);
  if (M * N * count == 0)
    return;
  if (K == 0) {
    check(cudaMemsetAsync(c.data, 0, size_t(c.numel()) * element, current_context().stream()),
          "cudaMemsetAsync");
    return;
  }
  Shape aBatch(a.shape.begin(), a.shape.end() - 2), bBatch(b.shape.begin(), b.shape.end() - 2);
  int64_t aCount = shape_rules::numElements(aBatch), bCount = shape_rules::numElements(bBatch);
  const char *pa = a.as<const char>(), *pb = b.as<const char>();
  char *pc = c.as<char>();
  // One strided call when each operand is either one matrix for all or one per product.
  if ((aCount == 1 || aCount == count) && (bCount == 1 || bCount == count)) {
    gemm(c.dtype, pa, transA, aCount == 1 ? 0 : M * K, pb, transB, bCount == 1 ? 0 : K * N, pc,
         M, N, K, count);
    return;
  }
  // Partial broadcasting ((2, 1) against (1, 3)): one product per output matrix.
  std::vector<int64_t> aStrides = broadcast_strides(aBatch, batch),
                       bStrides = broadcast_strides(bBatch, batch);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, ai = 0, bi = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t coordinate = rest % batch[d];
      rest /= batch[d];
      ai += coordinate * aStrides[d];
      bi += coordinate * bStrides[d];
    }
    gemm(c.dtype, pa + size_t(ai * M * K) * element, transA, 0, pb + size_t(bi * K * N) * element,
         transB, 0, pc + size_t(i * M * N) * element, M, N, K, 1);
  }
}

// y (..., units) = x (..., K) · wᵀ + b, then ReLU when the activation attribute says so.
void dense(const KernelArgs &k) {
  OpScope scope(ops::dense);
  DType dtype = k.outputs[0].dtype;
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw DTypeError(std::string("dense: the GPU kernel takes float32, float16 or bfloat16, "
                                 "got ") + dtype_name(dtype));
  const Shape &x = k.inputs[0].shape, &w = k.inputs[1].shape;
  int64_t K = x.back(), units = w[0];
  int64_t M = shape_rules::numElements(Shape(x.begin(), x.end() - 1));
  if (M * units == 0)
    return;
  std::string activation = k.attrs->get_string("activation", "");
  if (!activation.empty() && activation != "relu")
    throw UnsupportedError("activation '" + activation + "' is not a fused epilogue the GPU "
                           "kernels have; expected relu");
  void *y = k.outputs[0].data;
  DeviceContext &ctx = current_context();
  // 16-bit: the product stays float32 (in the workspace) until the epilogue has added the
  // bias, so the result is rounded once.
  float *product = nullptr;
  if (K == 0) {
    check(cudaMemsetAsync(y, 0, size_t(M * units) * dtype_size(dtype), ctx.stream()),
          "cudaMemsetAsync");
  } else if (dtype == DType::f32) {
    gemm(dtype, k.inputs[0].data, false, 0, k.inputs[1].data, true, 0, y, M, units, K, 1);
  } else {
    product = static_cast<float *>(ctx.workspace(size_t(M * units) * sizeof(float)));
    gemm(dtype, k.inputs[0].data, false, 0, k.inputs[1].data, true, 0, product, M, units, K, 1,
         /*floatOutput=*/true);
  }
  const void *bias = k.inputs.size() > 2 ? k.inputs[2].data : nullptr;
  launch_bias_activation(dtype, y, product, bias, M, units, activation == "relu");
}

} // namespace

void register_blas_kernels() {
  register_gpu_kernel(ops::matmul, matmul);
  register_gpu_kernel(ops::dense, dense);
}

} // namespace dlc::cuda
