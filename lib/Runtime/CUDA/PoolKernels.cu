//===- PoolKernels.cu - max and average pooling, forward and backward -------===//
//
// dlc's own kernels rather than cuDNN's: cuDNN's max-pool gradient needs the forward
// output (dlc's op contract passes only x and dy, so it had to be recomputed), and cuDNN
// rounds output sizes down only, while MXNet's 'full' convention (ceil_mode) rounds up.
//
// One thread per element; what it computes is in PoolWindows.h (checked on the CPU too).
// Windows are visited in the CPU reference's order and sums are in double, so GPU and
// CPU agree bit for bit, and nothing depends on scheduling: the gradients are gathers
// (one thread per input element, over the windows that cover it), not atomic scatters.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "PoolWindows.h"

namespace dlc::cuda {

namespace {

using cpu_kernels::Pool2DGeometry;

Pool2DGeometry poolGeometry(const Shape &x, const Shape &y, const Attrs &a) {
  if (x.size() != 4 || y.size() != 4)
    throw ShapeError(std::string(current_op()) + ": the GPU kernel takes NCHW tensors, got " +
                     shape_rules::str(x) + " -> " + shape_rules::str(y));
  auto pair = [&](const char *name, int64_t fallback) {
    std::vector<int64_t> v = a.get_ints(name, {fallback, fallback});
    return std::array<int64_t, 2>{v.at(0), v.at(1)};
  };
  auto kernel = pair("kernel", 1), stride = pair("stride", 1), padding = pair("padding", 0);
  Pool2DGeometry g{x[0], x[1], x[2], x[3], y[2], y[3], kernel[0], kernel[1]};
  g.strideH = stride[0];
  g.strideW = stride[1];
  g.padH = padding[0];
  g.padW = padding[1];
  return g;
}

__global__ void maxPoolForward(Pool2DGeometry g, const float *x, float *y) {
  DLC_GRID_STRIDE_LOOP(t, g.N * g.C * g.OH * g.OW) { y[t] = pool::max_output(g, x, t); }
}

__global__ void maxPoolArgmax(Pool2DGeometry g, const float *x, int32_t *argmax) {
  DLC_GRID_STRIDE_LOOP(t, g.N * g.C * g.OH * g.OW) { argmax[t] = pool::max_window_argmax(g, x, t); }
}

__global__ void maxPoolGather(Pool2DGeometry g, const int32_t *argmax, const float *dy,
                              float *dx) {
  DLC_GRID_STRIDE_LOOP(t, g.N * g.C * g.H * g.W) { dx[t] = pool::max_gradient(g, argmax, dy, t); }
}

__global__ void avgPoolForward(Pool2DGeometry g, bool includePad, const float *x, float *y) {
  DLC_GRID_STRIDE_LOOP(t, g.N * g.C * g.OH * g.OW) { y[t] = pool::avg_output(g, includePad, x, t); }
}

__global__ void avgPoolGather(Pool2DGeometry g, bool includePad, const float *dy, float *dx) {
  DLC_GRID_STRIDE_LOOP(t, g.N * g.C * g.H * g.W) { dx[t] = pool::avg_gradient(g, includePad, dy, t); }
}

void maxPool(const KernelArgs &k) {
  OpScope scope("dlc.max_pool2d");
  require_f32(k, "max_pool2d");
  Pool2DGeometry g = poolGeometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
  int64_t n = k.outputs[0].numel();
  if (n == 0)
    return;
  maxPoolForward<<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
      g, k.inputs[0].as<const float>(), k.outputs[0].as<float>());
  check_launch("maxPoolForward");
}

// dx from (dy, x): each window's argmax into the workspace, then one gather.
void maxPoolBackward(const KernelArgs &k) {
  OpScope scope("dlc.max_pool2d_backward");
  require_f32(k, "max_pool2d_backward");
  Pool2DGeometry g = poolGeometry(k.inputs[1].shape, k.inputs[0].shape, *k.attrs);
  int64_t windows = k.inputs[0].numel(), inputs = k.outputs[0].numel();
  if (inputs == 0)
    return;
  if (g.H * g.W > INT32_MAX)
    throw UnsupportedError(std::string(current_op()) + ": planes of more than 2^31 elements");
  DeviceContext &ctx = current_context();
  auto *argmax = static_cast<int32_t *>(ctx.workspace(size_t(windows) * sizeof(int32_t)));
  if (windows > 0) {
    maxPoolArgmax<<<blocks_for(windows), kThreads, 0, ctx.stream()>>>(
        g, k.inputs[1].as<const float>(), argmax);
    check_launch("maxPoolArgmax");
  }
  maxPoolGather<<<blocks_for(inputs), kThreads, 0, ctx.stream()>>>(
      g, argmax, k.inputs[0].as<const float>(), k.outputs[0].as<float>());
  check_launch("maxPoolGather");
}

void avgPool(const KernelArgs &k) {
  OpScope scope("dlc.avg_pool2d");
  require_f32(k, "avg_pool2d");
  Pool2DGeometry g = poolGeometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
  int64_t n = k.outputs[0].numel();
  if (n == 0)
    return;
  avgPoolForward<<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
      g, k.attrs->get_bool("count_include_pad", true), k.inputs[0].as<const float>(),
      k.outputs[0].as<float>());
  check_launch("avgPoolForward");
}

// dx from dy; the shapes of x (dx) and y (dy) give the geometry.
void avgPoolBackward(const KernelArgs &k) {
  OpScope scope("dlc.avg_pool2d_backward");
  require_f32(k, "avg_pool2d_backward");
  Pool2DGeometry g = poolGeometry(k.outputs[0].shape, k.inputs[0].shape, *k.attrs);
  int64_t n = k.outputs[0].numel();
  if (n == 0)
    return;
  avgPoolGather<<<blocks_for(n), kThreads, 0, current_context().stream()>>>(
      g, k.attrs->get_bool("count_include_pad", true), k.inputs[0].as<const float>(),
      k.outputs[0].as<float>());
  check_launch("avgPoolGather");
}

} // namespace

void register_pool_kernels() {
  register_gpu_kernel("dlc.max_pool2d", maxPool);
  register_gpu_kernel("dlc.max_pool2d_backward", maxPoolBackward);
  register_gpu_kernel("dlc.avg_pool2d", avgPool);
  register_gpu_kernel("dlc.avg_pool2d_backward", avgPoolBackward);
}

} // namespace dlc::cuda
