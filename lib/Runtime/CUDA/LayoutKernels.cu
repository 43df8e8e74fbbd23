//===- LayoutKernels.cu - GPU transpose, broadcast, concat and split ---------===//
//
// Layout ops move elements of any dtype by their width. Concat and split are strided
// block copies (cudaMemcpy2DAsync); transpose and broadcast_to gather through an Indexer.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

template <typename Word>
__global__ void gatherKernel(const Word *x, Word *y, int64_t n, Indexer ix) {
  DLC_GRID_STRIDE_LOOP(i, n) {
    int64_t at[1];
    broadcast_offsets<1>(ix, i, at);
    y[i] = x[at[0]];
  }
}

/// y[i] = x[offset of i through ix], for elements of `width` bytes.
void gather(const TensorRef &x, const TensorRef &y, const Indexer &ix, const char *op) {
  int64_t n = y.numel();
  if (n == 0)
    return;
  cudaStream_t stream = current_context().stream();
  switch (dtype_size(y.dtype)) {
  case 1:
    gatherKernel<uint8_t><<<blocks_for(n), kThreads, 0, stream>>>(x.as<const uint8_t>(),
                                                                   y.as<uint8_t>(), n, ix);
    break;
  case 2:
    gatherKernel<uint16_t><<<blocks_for(n), kThreads, 0, stream>>>(x.as<const uint16_t>(),
                                                                    y.as<uint16_t>(), n, ix);
    break;
  case 4:
    gatherKernel<uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(x.as<const uint32_t>(),
                                                                    y.as<uint32_t>(), n, ix);
    break;
  default:
    gatherKernel<uint64_t><<<blocks_for(n), kThreads, 0, stream>>>(x.as<const uint64_t>(),
                                                                    y.as<uint64_t>(), n, ix);
    break;
  }
  check_launch(op);
}

// y = x with dimensions permuted: y dim i is x dim permutation[i].
void transpose(const KernelArgs &args) {
  OpScope scope(ops::transpose);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  std::vector<int64_t> permutation = args.attrs->get_ints("permutation", {});
  std::vector<int64_t> strides = kernels::transposed_strides(x.shape, permutation);
  gather(x, y, make_indexer(ops::transpose, y.shape, {strides}), "transpose");
}

// y = x repeated along the dimensions where it broadcasts to y's shape.
void broadcastTo(const KernelArgs &args) {
  OpScope scope(ops::broadcast_to);
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  gather(x, y, make_indexer(ops::broadcast_to, y.shape, {broadcast_strides(x.shape, y.shape)}),
         "broadcast_to");
}

/// Copies `rows` blocks of `block` bytes between pitched layouts, in stream order.
void copyRows(void *target, size_t targetPitch, const void *source, size_t sourcePitch,
              size_t block, size_t rows) {
  if (block == 0 || rows == 0)
    return;
  if (rows == 1) { // one block: no pitch (2-D copies refuse pitches over about 2 GiB)
    check(cudaMemcpyAsync(target, source, block, cudaMemcpyDeviceToDevice,
                          current_context().stream()),
          "cudaMemcpyAsync");
    return;
  }
  check(cudaMemcpy2DAsync(target, targetPitch, source, sourcePitch, block, rows,
                          cudaMemcpyDeviceToDevice, current_context().stream()),
        "cudaMemcpy2DAsync");
}

// y = the inputs joined along axis.
void concat(const KernelArgs &args) {
  OpScope scope(ops::concat);
  const TensorRef &y = args.outputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                            int64_t(y.shape.size()));
  size_t width = dtype_size(y.dtype);
  AxisSplit out = split_at_axis(y.shape, axis);
  int64_t start = 0;
  for (const TensorRef &x : args.inputs) {
    AxisSplit in = split_at_axis(x.shape, axis);
    size_t block = size_t(in.axis * in.inner) * width;
    copyRows(static_cast<char *>(y.data) + size_t(start * out.inner) * width,
             size_t(out.axis * out.inner) * width, x.data, block, block, size_t(out.outer));
    start += in.axis;
  }
}

// The outputs are consecutive parts of x along axis.
void split(const KernelArgs &args) {
  OpScope scope(ops::split);
  const TensorRef &x = args.inputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                            int64_t(x.shape.size()));
  size_t width = dtype_size(x.dtype);
  AxisSplit in = split_at_axis(x.shape, axis);
  int64_t start = 0;
  for (const TensorRef &y : args.outputs) {
    AxisSplit part = split_at_axis(y.shape, axis);
    size_t block = size_t(part.axis * part.inner) * width;
    copyRows(y.data, block, static_cast<const char *>(x.data) + size_t(start * in.inner) * width,
             size_t(in.axis * in.inner) * width, block, size_t(in.outer));
    start += part.axis;
  }
}

} // namespace

void register_layout_kernels() {
  register_gpu_kernel(ops::broadcast_to, broadcastTo);
  register_gpu_kernel(ops::transpose, transpose);
  register_gpu_kernel(ops::concat, concat);
  register_gpu_kernel(ops::split, split);
}

} // namespace dlc::cuda
