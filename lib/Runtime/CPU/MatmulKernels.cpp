//===- MatmulKernels.cpp - batched matrix products on the CPU -----------------===//
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

#include <dnnl.h>

namespace dlc::cpu_kernels {

namespace {

/// Matrix geometry of a batched matmul: a is (..., M, K) or (..., K, M) transposed,
/// b is (..., K, N) or (..., N, K); batch dimensions broadcast.
struct MatmulPlan {
  int64_t M, N, K;
  bool transA, transB;
  Shape batch;                       // output batch dims
  std::vector<int64_t> aBatchStride; // in matrices, 0 where a broadcasts
  std::vector<int64_t> bBatchStride;
  int64_t batchCount;
};

MatmulPlan plan(const KernelArgs &args) {
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &c = args.outputs[0];
  MatmulPlan p;
  p.transA = args.attrs->get_bool("transpose_a", false);
  p.transB = args.attrs->get_bool("transpose_b", false);
  size_t ra = a.shape.size(), rc = c.shape.size();
  p.M = c.shape[rc - 2];
  p.N = c.shape[rc - 1];
  p.K = p.transA ? a.shape[ra - 2] : a.shape[ra - 1];
  p.batch.assign(c.shape.begin(), c.shape.end() - 2);
  p.aBatchStride = broadcast_strides(Shape(a.shape.begin(), a.shape.end() - 2), p.batch);
  p.bBatchStride = broadcast_strides(Shape(b.shape.begin(), b.shape.end() - 2), p.batch);
  p.batchCount = shape_rules::numElements(p.batch);
  return p;
}

/// Calls `f(aMatrix, bMatrix, cMatrix)` with the matrix indices of every batch entry.
template <typename F> void forEachBatch(const MatmulPlan &p, F &&f) {
  std::array<std::vector<int64_t>, 2> strides{p.aBatchStride, p.bBatchStride};
  if (p.batch.empty()) {
    f(0, 0, 0);
    return;
  }
  for_each_broadcast<2>(p.batch, strides,
                        [&](int64_t c, const auto &at) { f(at[0], at[1], c); });
}

// c (..., M, N) = op(a) (..., M, K) · op(b) (..., K, N); plain loops, double accumulation.
void matmulReference(const KernelArgs &args) {
  MatmulPlan p = plan(args);
  const TensorRef &a = args.inputs[0], &b = args.inputs[1], &c = args.outputs[0];
  dispatch_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("matmul of bool tensors is not supported");
    } else {
      const T *pa = a.as<T>(), *pb = b.as<T>();
      T *pc = c.as<T>();
      forEachBatch(p, [&](int64_t ai, int64_t bi, int64_t ci) {
        const T *A = pa + ai * p.M * p.K, *B = pb + bi * p.K * p.N;
        T *C = pc + ci * p.M * p.N;
        for (int64_t m = 0; m < p.M; ++m)
          for (int64_t n = 0; n < p.N; ++n) {
            double acc = 0;
            for (int64_t k = 0; k < p.K; ++k) {
              double x = double(load(p.transA ? A[k * p.M + m] : A[m * p.K + k]));
              double y = double(load(p.transB ? B[n * p.K + k] : B[k * p.N + n]));
              acc += x * y;
            }
            C[m * p.N + n] = convert_number<T>(acc); // integers saturate
          }
      });
    }
  });
}

// f32 through oneDNN's sgemm (row-major); other dtypes fall back to the reference.
void matmulFast(const KernelArgs &args) {
  if (args.outputs[0].dtype != DType::f32)
    return matmulReference(args);
  MatmulPlan p = plan(args);
  // Empty products: sgemm refuses a zero leading dimension; the loops give the answer
  // (nothing, or zeros for K = 0), as the GPU kernel does.
  if (p.M == 0 || p.N == 0 || p.K == 0 || p.batchCount == 0)
    return matmulReference(args);
  const float *pa = args.inputs[0].as<float>(), *pb = args.inputs[1].as<float>();
  float *pc = args.outputs[0].as<float>();
  forEachBatch(p, [&](int64_t ai, int64_t bi, int64_t ci) {
    dnnl_status_t status =
        dnnl_sgemm(p.transA ? 'T' : 'N', p.transB ? 'T' : 'N', p.M, p.N, p.K, 1.0f,
                   pa + ai * p.M * p.K, p.transA ? p.M : p.K, pb + bi * p.K * p.N,
                   p.transB ? p.K : p.N, 0.0f, pc + ci * p.M * p.N, p.N);
    if (status != dnnl_success)
      throw Error("matmul: oneDNN sgemm failed with status " + std::to_string(int(status)));
  });
}

} // namespace

void register_matmul_kernels() {
  register_kernel(ops::matmul, DeviceKind::cpu, {matmulFast, matmulReference});
}

} // namespace dlc::cpu_kernels
