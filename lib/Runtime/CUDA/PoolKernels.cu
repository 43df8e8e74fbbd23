//===- PoolKernels.cu - max and average pooling, forward and backward -------===//
//
// dlc's own kernels rather than cuDNN's: cuDNN's max-pool gradient needs the forward
// output (dlc's op contract passes only x and dy, so it had to be recomputed), and cuDNN
// rounds output sizes down only, while MXNet's 'full' convention (ceil_mode) rounds up.
//
// One thread per element, planes along the grid's y; what a thread computes is in
// PoolWindows.h (checked on the CPU too), in 32-bit plane coordinates.
// Windows are visited in the CPU reference's order and sums are in double, so GPU and
// CPU agree bit for bit, and nothing depends on scheduling: the gradients are gathers
// (one thread per input element, over the windows that cover it), not atomic scatters.
//
//===----------------------------------------------------------------------===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "PoolWindows.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::cuda {

namespace {

using kernels::Pool2DGeometry;

Pool2DGeometry poolGeometry(const Shape &x, const Shape &y, const Attrs &a) {
  if (x.size() != 4 || y.size() != 4)
    throw ShapeError(std::string(current_op()) + ": the GPU kernel takes NCHW tensors, got " +
                     shape_rules::str(x) + " -> " + shape_rules::str(y));
  return kernels::pool_geometry(x, y, a);
}

/// Runs the statement after it for every (plane, element of the plane): blockIdx.y
/// strides over the N*C planes, the x dimension over the plane's `count` elements, which
/// are `row` wide, binding the element's 32-bit coordinates (r, c).
#define DLC_FOR_PLANE_ELEMENTS(plane, r, c, planes, count, row)                           \
  for (int64_t plane = blockIdx.y; plane < (planes); plane += gridDim.y)                   \
    for (int64_t e_ = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e_ < (count);         \
         e_ += int64_t(gridDim.x) * blockDim.x)                                            \
      for (int r = int(e_) / (row), c = int(e_) % (row), once_ = 1; once_; once_ = 0)

template <typename T>
__global__ void maxPoolForward(pool::Plane g, int64_t planes, const T *x, T *y) {
  int64_t in = int64_t(g.H) * g.W, out = int64_t(g.OH) * g.OW;
  DLC_FOR_PLANE_ELEMENTS(nc, oh, ow, planes, g.OH * g.OW, g.OW) {
    y[nc * out + oh * g.OW + ow] = store<T>(pool::max_output(g, x + nc * in, oh, ow));
  }
}

/// Each window's first maximum; with `reluGrad` -1 (no gradient) where that maximum is
/// not > 0, the gradient of a ReLU before the pooling folded in.
template <typename T>
__global__ void maxPoolArgmax(pool::Plane g, int64_t planes, const T *x, int32_t *argmax,
                              bool reluGrad) {
  int64_t in = int64_t(g.H) * g.W, out = int64_t(g.OH) * g.OW;
  DLC_FOR_PLANE_ELEMENTS(nc, oh, ow, planes, g.OH * g.OW, g.OW) {
    int32_t best = pool::first_max(g, x + nc * in, oh, ow);
    if (reluGrad && best >= 0 && !(pool::value_of(x[nc * in + best]) > 0.f))
      best = -1;
    argmax[nc * out + oh * g.OW + ow] = best;
  }
}

template <typename T>
__global__ void maxPoolGather(pool::Plane g, int64_t planes, const int32_t *argmax, const T *dy,
                              T *dx) {
  int64_t in = int64_t(g.H) * g.W, out = int64_t(g.OH) * g.OW;
  DLC_FOR_PLANE_ELEMENTS(nc, ih, iw, planes, g.H * g.W, g.W) {
    dx[nc * in + ih * g.W + iw] =
        store<T>(pool::max_gradient(g, argmax + nc * out, dy + nc * out, ih, iw));
  }
}

template <typename T>
__global__ void avgPoolForward(pool::Plane g, int64_t planes, bool includePad, const T *x, T *y) {
  int64_t in = int64_t(g.H) * g.W, out = int64_t(g.OH) * g.OW;
  DLC_FOR_PLANE_ELEMENTS(nc, oh, ow, planes, g.OH * g.OW, g.OW) {
    y[nc * out + oh * g.OW + ow] = store<T>(pool::avg_output(g, includePad, x + nc * in, oh, ow));
  }
}

template <typename T>
__global__ void avgPoolGather(pool::Plane g, int64_t planes, bool includePad, const T *dy,
                              T *dx) {
  int64_t in = int64_t(g.H) * g.W, out = int64_t(g.OH) * g.OW;
  DLC_FOR_PLANE_ELEMENTS(nc, ih, iw, planes, g.H * g.W, g.W) {
    dx[nc * in + ih * g.W + iw] = store<T>(pool::avg_gradient(g, includePad, dy + nc * out, ih, iw));
  }
}

/// The grid of a per-plane loop over `count` elements in each of `planes` planes.
dim3 planeGrid(int64_t planes, int64_t count) {
  int64_t x = std::min<int64_t>((count + kThreads - 1) / kThreads, int64_t(1) << 16);
  return dim3(unsigned(std::max<int64_t>(1, x)),
              unsigned(std::max<int64_t>(1, std::min<int64_t>(planes, 65535))));
}

/// The geometry of a pooling op as 32-bit planes, or an error naming the op when a plane
/// is too large.
pool::Plane planeOf(const Pool2DGeometry &g) {
  // Every product the 32-bit math forms: plane sizes, padded extents, window sizes.
  if (g.H * g.W > INT32_MAX || g.OH * g.OW > INT32_MAX ||
      (g.H + 2 * g.padH) * (g.W + 2 * g.padW) > INT32_MAX ||
      (g.OH * g.strideH + g.kernelH) * (g.OW * g.strideW + g.kernelW) > INT32_MAX)
    throw UnsupportedError(std::string(current_op()) + ": the GPU kernels take planes of "
                           "fewer than 2^31 elements, got " + std::to_string(g.H) + "x" +
                           std::to_string(g.W) + " -> " + std::to_string(g.OH) + "x" +
                           std::to_string(g.OW));
  return pool::plane_of(g);
}

void maxPool(const KernelArgs &k) {
  OpScope scope(ops::max_pool2d);
  Pool2DGeometry g = poolGeometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
  if (k.outputs[0].numel() == 0)
    return;
  pool::Plane plane = planeOf(g);
  dispatch_float_dtype(k.inputs[0], [&](auto tag) {
    using T = decltype(tag);
    maxPoolForward<T><<<planeGrid(g.N * g.C, g.OH * g.OW), kThreads, 0,
                        current_context().stream()>>>(plane, g.N * g.C, k.inputs[0].as<const T>(),
                                                      k.outputs[0].as<T>());
  });
  check_launch("maxPoolForward");
}

// dx from (dy, x): each window's argmax into the workspace, then one gather. With
// activation = "relu" (dlc-fuse's max_pool2d_backward_relu) the gradient of the ReLU
// that made x is folded in.
void maxPoolBackward(const KernelArgs &k) {
  OpScope scope(ops::max_pool2d_backward);
  std::string activation = k.attrs->get_string("activation", "");
  if (!activation.empty() && activation != "relu")
    throw UnsupportedError("max_pool2d_backward: activation '" + activation + "' is no "
                           "gradient the GPU kernel folds in; expected relu");
  Pool2DGeometry g = poolGeometry(k.inputs[1].shape, k.inputs[0].shape, *k.attrs);
  if (k.outputs[0].numel() == 0)
    return;
  pool::Plane plane = planeOf(g);
  int64_t planes = g.N * g.C;
  DeviceContext &ctx = current_context();
  auto *argmax = static_cast<int32_t *>(
      ctx.workspace(size_t(k.inputs[0].numel()) * sizeof(int32_t)));
  dispatch_float_dtype(k.inputs[1], [&](auto tag) {
    using T = decltype(tag);
    if (k.inputs[0].numel() > 0) {
      maxPoolArgmax<T><<<planeGrid(planes, g.OH * g.OW), kThreads, 0, ctx.stream()>>>(
          plane, planes, k.inputs[1].as<const T>(), argmax, activation == "relu");
      check_launch("maxPoolArgmax");
    }
    maxPoolGather<T><<<planeGrid(planes, g.H * g.W), kThreads, 0, ctx.stream()>>>(
        plane, planes, argmax, k.inputs[0].as<const T>(), k.outputs[0].as<T>());
    check_launch("maxPoolGather");
  });
}

void avgPool(const KernelArgs &k) {
  OpScope scope(ops::avg_pool2d);
  Pool2DGeometry g = poolGeometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
  if (k.outputs[0].numel() == 0)
    return;
  pool::Plane plane = planeOf(g);
  dispatch_float_dtype(k.inputs[0], [&](auto tag) {
    using T = decltype(tag);
    avgPoolForward<T><<<planeGrid(g.N * g.C, g.OH * g.OW), kThreads, 0,
                        current_context().stream()>>>(
        plane, g.N * g.C, k.attrs->get(op_attrs::avg_pool2d::count_include_pad),
        k.inputs[0].as<const T>(), k.outputs[0].as<T>());
  });
  check_launch("avgPoolForward");
}

// dx from dy; the shapes of x (dx) and y (dy) give the geometry.
void avgPoolBackward(const KernelArgs &k) {
  OpScope scope(ops::avg_pool2d_backward);
  Pool2DGeometry g = poolGeometry(k.outputs[0].shape, k.inputs[0].shape, *k.attrs);
  if (k.outputs[0].numel() == 0)
    return;
  pool::Plane plane = planeOf(g);
  dispatch_float_dtype(k.inputs[0], [&](auto tag) {
    using T = decltype(tag);
    avgPoolGather<T><<<planeGrid(g.N * g.C, g.H * g.W), kThreads, 0,
                       current_context().stream()>>>(
        plane, g.N * g.C, k.attrs->get(op_attrs::avg_pool2d_backward::count_include_pad),
        k.inputs[0].as<const T>(), k.outputs[0].as<T>());
  });
  check_launch("avgPoolGather");
}

} // namespace

void register_pool_kernels() {
  register_gpu_kernel(ops::max_pool2d, maxPool);
  register_gpu_kernel(ops::max_pool2d_backward, maxPoolBackward);
  register_gpu_kernel(ops::avg_pool2d, avgPool);
  register_gpu_kernel(ops::avg_pool2d_backward, avgPoolBackward);
}

} // namespace dlc::cuda
