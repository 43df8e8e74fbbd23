//===- CudnnKernels.cpp - convolution and batch norm through cuDNN -----------===//
//
// cuDNN 9's legacy (descriptor) API: deprecated in favour of the graph API but complete
// for these ops, and what MXNet and PyTorch used for years. Convolution algorithms are
// chosen once per shape and direction and cached: by timing every algorithm cuDNN offers
// on the op's own buffers (cudnnFind*Ex, as PyTorch's cudnn.benchmark does), or, with
// DLC_CUDNN_CONV_ALGO=heuristics, by cuDNN's heuristics without running anything. Their
// workspace comes from the device context. Batch statistics are computed by dlc's own kernel (two passes in
// double, as the CPU reference), so the op's `var` output is the biased variance the
// contract names; cuDNN then normalizes with them.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"
#include "CudaOptions.h"
#include "CudnnSupport.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

// The descriptor API is deprecated in cuDNN 9; see the file comment.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dlc::cuda {

namespace {

std::array<int64_t, 2> pairAttr(const Attrs &attrs, const char *name, int64_t fallback) {
  std::vector<int64_t> values = attrs.get_ints(name, {fallback, fallback});
  return {values.at(0), values.at(1)};
}

/// cuDNN's name of a float dtype; throws naming the op for any other.
cudnnDataType_t cudnnType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return CUDNN_DATA_FLOAT;
  case DType::f16:
    return CUDNN_DATA_HALF;
  case DType::bf16:
    return CUDNN_DATA_BFLOAT16;
  default:
    throw DTypeError(std::string(current_op()) + ": the GPU kernels take float32, float16 or "
                     "bfloat16, got " + dtype_name(dtype));
  }
}

void setTensor4d(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w,
                 DType dtype = DType::f32) {
  check(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, cudnnType(dtype), int(n), int(c),
                                   int(h), int(w)),
        "cudnnSetTensor4dDescriptor");
}

void setTensor4d(cudnnTensorDescriptor_t desc, const Shape &s, DType dtype) {
  if (s.size() != 4)
    throw ShapeError(std::string(current_op()) + ": the GPU kernel takes NCHW tensors, got " +
                     shape_rules::str(s));
  setTensor4d(desc, s[0], s[1], s[2], s[3], dtype);
}

/// Whether a convolution must use FMA math only: float32 without TF32. float16 and
/// bfloat16 run on the tensor cores (float32 accumulation, as cuBLAS's products).
bool strictFloat32(DType dtype) { return dtype == DType::f32 && !tf32(); }

const float kOne = 1.f, kZero = 0.f;

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Descriptors of one convolution: x (N,C,H,W), w (O,C/g,KH,KW), y (N,O,OH,OW), all of
/// `dtype`; float32 arithmetic whatever the dtype.
struct Convolution {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  std::string key;
  DType dtype;
  bool strict; // FMA math only (read once: TF32 may be switched meanwhile)

  Convolution(const Shape &xs, const Shape &ws, const Shape &ys, const Attrs &a, DType dtype)
      : dtype(dtype), strict(strictFloat32(dtype)) {
    setTensor4d(x, xs, dtype);
    setTensor4d(y, ys, dtype);
    if (ws.size() != 4)
      throw ShapeError(std::string(current_op()) + ": the weight must be (O, C/groups, KH, KW), got " +
                       shape_rules::str(ws));
    check(cudnnSetFilter4dDescriptor(w, cudnnType(dtype), CUDNN_TENSOR_NCHW, int(ws[0]),
                                     int(ws[1]), int(ws[2]), int(ws[3])),
          "cudnnSetFilter4dDescriptor");
    auto stride = pairAttr(a, "stride", 1), padding = pairAttr(a, "padding", 0),
         dilation = pairAttr(a, "dilation", 1);
    check(cudnnSetConvolution2dDescriptor(conv, int(padding[0]), int(padding[1]), int(stride[0]),
                                          int(stride[1]), int(dilation[0]), int(dilation[1]),
                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    int64_t groups = a.get_int("groups", 1);
    check(cudnnSetConvolutionGroupCount(conv, int(groups)), "cudnnSetConvolutionGroupCount");
    // Strict float32 (FMA only) unless TF32 was asked for; tensor cores for 16-bit data
    // (what the search then times; the chosen entry's math type is set before running).
    check(cudnnSetConvolutionMathType(conv, strict                ? CUDNN_FMA_MATH
                                            : dtype == DType::f32 ? CUDNN_DEFAULT_MATH
                                                                  : CUDNN_TENSOR_OP_MATH),
          "cudnnSetConvolutionMathType");
    key = shape_rules::str(xs) + "|" + shape_rules::str(ws) + "|" + shape_rules::str(ys) + "|" +
          a.str() + "|" + dtype_name(dtype) + "|" + (strict ? "fma" : "any-math");
  }
};

/// Whether convolution algorithms are chosen by timing them (the default) or by cuDNN's
/// heuristics alone (DLC_CUDNN_CONV_ALGO=heuristics: no search on the first call of a
/// shape, but often a slower algorithm).
bool searchAlgorithms() {
  static const bool search = [] {
    const char *mode = std::getenv("DLC_CUDNN_CONV_ALGO");
    std::string value = mode ? mode : "find";
    if (value != "find" && value != "heuristics")
      throw UnsupportedError("DLC_CUDNN_CONV_ALGO must be 'find' or 'heuristics', got '" +
                             value + "'");
    return value == "find";
  }();
  return search;
}

/// Workspace the algorithm search may give one candidate: 256 MiB, or a quarter of what
/// the GPU has free when that is less (the context keeps its largest workspace).
size_t searchWorkspaceBytes() {
  size_t freeBytes = 0, totalBytes = 0;
  check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  return std::min(size_t(256) << 20, freeBytes / 4);
}

/// The workspace an algorithm search gets.
struct SearchSpace {
  void *data = nullptr;
  size_t bytes = 0;
};

/// The search's workspace: searchWorkspaceBytes() of the context's, or none when dlc's
/// memory limit refuses it (the search then times only the algorithms that need none).
SearchSpace searchSpace(DeviceContext &ctx) {
  SearchSpace space;
  space.bytes = searchWorkspaceBytes();
  try {
    space.data = ctx.workspace(space.bytes);
  } catch (const OutOfMemoryError &) {
    space = {};
  }
  return space;
}

/// A chosen convolution algorithm and the math type it was timed (or ranked) with.
struct Choice {
  int algorithm;
  cudnnMathType_t math;
};

/// The algorithm for `key` on this GPU, chosen once: `rank` fills cuDNN's perf results,
/// best first (timed by the search, or ranked by the heuristics).
template <typename Perf, typename Rank>
Choice chooseAlgorithm(const char *direction, const std::string &key, bool strict, Rank &&rank) {
  static std::mutex mutex;
  static std::map<std::string, Choice> chosen;
  bool search = searchAlgorithms();
  std::string fullKey = std::string(direction) + "|gpu" +
                        std::to_string(current_context().ordinal()) + "|" + key +
                        (search ? "|find" : "|heuristics");
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = chosen.find(fullKey);
    if (it != chosen.end())
      return it->second;
  }
  Perf perfs[16];
  int returned = 0;
  rank(search, 16, &returned, perfs);
  // In strict FP32, only entries that use FMA math qualify first (the descriptor asks for
  // it; the list may still hold tensor-op entries); else any that cuDNN can run.
  auto qualifies = [&](const Perf &perf, int pass) {
    return perf.status == CUDNN_STATUS_SUCCESS && (pass == 1 || perf.mathType == CUDNN_FMA_MATH);
  };
  int best = -1;
  for (int pass = strict ? 0 : 1; pass < 2 && best < 0; ++pass)
    for (int i = 0; i < returned && best < 0; ++i)
      if (qualifies(perfs[i], pass))
        best = i;
  // Timed: a deterministic algorithm (no atomics: the same bits every run) within 10 % of
  // the fastest is taken instead of it.
  if (search && best >= 0 && perfs[best].determinism != CUDNN_DETERMINISTIC) {
    int pass = qualifies(perfs[best], 0) ? 0 : 1;
    for (int i = best + 1; i < returned; ++i)
      if (qualifies(perfs[i], pass) && perfs[i].determinism == CUDNN_DETERMINISTIC &&
          perfs[i].time <= 1.1f * perfs[best].time) {
        best = i;
        break;
      }
  }
  if (best < 0)
    throw UnsupportedError(std::string(current_op()) + ": cuDNN has no " + direction +
                           " algorithm for " + key);
  // Strict float32 runs FMA math whatever entry was taken (an entry of the second pass
  // then runs as it did before math types were applied: under the FMA descriptor).
  Choice choice{int(perfs[best].algo), strict ? CUDNN_FMA_MATH : perfs[best].mathType};
  std::lock_guard<std::mutex> lock(mutex);
  chosen.emplace(fullKey, choice);
  return choice;
}

/// Sets the math type `choice` was timed with on `c`'s descriptor and returns its
/// algorithm (PyTorch does the same: an entry may use another math type than asked).
template <typename Algo> Algo use(const Convolution &c, Choice choice) {
  check(cudnnSetConvolutionMathType(c.conv, choice.math), "cudnnSetConvolutionMathType");
  return Algo(choice.algorithm);
}

void applyBiasAndRelu(const KernelArgs &k, const Convolution &c, void *y) {
  std::string activation = k.attrs->get_string("activation", "");
  if (!activation.empty() && activation != "relu")
    throw UnsupportedError("activation '" + activation + "' is not a fused epilogue the GPU "
                           "kernels have; expected relu");
  if (c.dtype != DType::f32) {
    // 16-bit: dlc's own per-channel kernel (float32 sum, rounded once) rather than the
    // legacy cudnnAddTensor / cudnnActivationForward, whose bfloat16 support is not
    // documented.
    const Shape &ys = k.outputs[0].shape;
    launch_channel_bias_activation(c.dtype, y, k.inputs.size() > 2 ? k.inputs[2].data : nullptr,
                                   shape_rules::numElements(ys), ys[1], ys[2] * ys[3],
                                   activation == "relu");
    return;
  }
  cudnnHandle_t handle = current_context().cudnn();
  if (k.inputs.size() > 2) {
    TensorDescriptor bias;
    setTensor4d(bias, 1, k.outputs[0].shape[1], 1, 1, c.dtype);
    check(cudnnAddTensor(handle, &kOne, bias, k.inputs[2].data, &kOne, c.y, y), "cudnnAddTensor");
  }
  if (activation.empty())
    return;
  ActivationDescriptor relu;
  check(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor");
  check(cudnnActivationForward(handle, relu, &kOne, c.y, y, &kZero, c.y, y),
        "cudnnActivationForward");
}

// y = conv2d(x, w) + b, optionally followed by a ReLU epilogue.
void conv2d(const KernelArgs &k) {
  OpScope scope(ops::conv2d);
  DeviceContext &ctx = current_context();
  Convolution c(k.inputs[0].shape, k.inputs[1].shape, k.outputs[0].shape, *k.attrs,
                k.outputs[0].dtype);
  cudnnHandle_t handle = ctx.cudnn();
  void *y = k.outputs[0].data;
  auto algo = use<cudnnConvolutionFwdAlgo_t>(c, chooseAlgorithm<cudnnConvolutionFwdAlgoPerf_t>(
      "forward", c.key, c.strict,
      [&](bool search, int requested, int *returned, cudnnConvolutionFwdAlgoPerf_t *perfs) {
        if (search) { // the candidates write y, which the chosen one overwrites below
          SearchSpace space = searchSpace(ctx);
          check(cudnnFindConvolutionForwardAlgorithmEx(
                    handle, c.x, k.inputs[0].data, c.w, k.inputs[1].data, c.conv, c.y, y,
                    requested, returned, perfs, space.data, space.bytes),
                "cudnnFindConvolutionForwardAlgorithmEx");
        } else {
          check(cudnnGetConvolutionForwardAlgorithm_v7(handle, c.x, c.w, c.conv, c.y, requested,
                                                       returned, perfs),
                "cudnnGetConvolutionForwardAlgorithm_v7");
        }
      }));
  size_t bytes = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(handle, c.x, c.w, c.conv, c.y, algo, &bytes),
        "cudnnGetConvolutionForwardWorkspaceSize");
  check(cudnnConvolutionForward(handle, &kOne, c.x, k.inputs[0].data, c.w, k.inputs[1].data,
                                c.conv, algo, ctx.workspace(bytes), bytes, &kZero, c.y, y),
        "cudnnConvolutionForward");
  applyBiasAndRelu(k, c, y);
}

// dx from (dy, w); dx's shape is the output's.
void conv2dBackwardData(const KernelArgs &k) {
  OpScope scope(ops::conv2d_backward_data);
  DeviceContext &ctx = current_context();
  Convolution c(k.outputs[0].shape, k.inputs[1].shape, k.inputs[0].shape, *k.attrs,
                k.outputs[0].dtype);
  cudnnHandle_t handle = ctx.cudnn();
  auto algo = use<cudnnConvolutionBwdDataAlgo_t>(c, chooseAlgorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
      "backward-data", c.key, c.strict,
      [&](bool search, int requested, int *returned, cudnnConvolutionBwdDataAlgoPerf_t *perfs) {
        if (search) { // the candidates write dx, which the chosen one overwrites below
          SearchSpace space = searchSpace(ctx);
          check(cudnnFindConvolutionBackwardDataAlgorithmEx(
                    handle, c.w, k.inputs[1].data, c.y, k.inputs[0].data, c.conv, c.x,
                    k.outputs[0].data, requested, returned, perfs, space.data, space.bytes),
                "cudnnFindConvolutionBackwardDataAlgorithmEx");
        } else {
          check(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, c.w, c.y, c.conv, c.x,
                                                            requested, returned, perfs),
                "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        }
      }));
  size_t bytes = 0;
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, c.w, c.y, c.conv, c.x, algo, &bytes),
        "cudnnGetConvolutionBackwardDataWorkspaceSize");
  check(cudnnConvolutionBackwardData(handle, &kOne, c.w, k.inputs[1].data, c.y, k.inputs[0].data,
                                     c.conv, algo, ctx.workspace(bytes), bytes, &kZero, c.x,
                                     k.outputs[0].data),
        "cudnnConvolutionBackwardData");
}

// dw (and db when asked for) from (dy, x); dw's shape is the output's.
void conv2dBackwardFilter(const KernelArgs &k) {
  OpScope scope(ops::conv2d_backward_filter);
  DeviceContext &ctx = current_context();
  Convolution c(k.inputs[1].shape, k.outputs[0].shape, k.inputs[0].shape, *k.attrs,
                k.outputs[0].dtype);
  cudnnHandle_t handle = ctx.cudnn();
  auto algo =
      use<cudnnConvolutionBwdFilterAlgo_t>(c, chooseAlgorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
          "backward-filter", c.key, c.strict,
          [&](bool search, int requested, int *returned,
              cudnnConvolutionBwdFilterAlgoPerf_t *perfs) {
            if (search) { // the candidates write dw, which the chosen one overwrites below
              SearchSpace space = searchSpace(ctx);
              check(cudnnFindConvolutionBackwardFilterAlgorithmEx(
                        handle, c.x, k.inputs[1].data, c.y, k.inputs[0].data, c.conv, c.w,
                        k.outputs[0].data, requested, returned, perfs, space.data, space.bytes),
                    "cudnnFindConvolutionBackwardFilterAlgorithmEx");
            } else {
              check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, c.x, c.y, c.conv,
                                                                  c.w, requested, returned,
                                                                  perfs),
                    "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
            }
          }));
  size_t bytes = 0;
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, c.x, c.y, c.conv, c.w, algo,
                                                       &bytes),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  check(cudnnConvolutionBackwardFilter(handle, &kOne, c.x, k.inputs[1].data, c.y,
                                       k.inputs[0].data, c.conv, algo, ctx.workspace(bytes),
                                       bytes, &kZero, c.w, k.outputs[0].data),
        "cudnnConvolutionBackwardFilter");
  if (k.outputs.size() > 1) {
    // db: dy summed over (N, H, W), by the GPU's own reduction kernel (the one a separate
    // dlc.reduce would run).
    static const Attrs channelSum{{"kind", int64_t(0)},
                                  {"axes", std::vector<int64_t>{0, 2, 3}},
                                  {"keepdims", false}};
    KernelArgs sum;
    sum.inputs = {k.inputs[0]};
    sum.outputs = {k.outputs[1]};
    sum.attrs = &channelSum;
    sum.device = k.device;
    sum.op = ops::reduce;
    find_kernel(ops::reduce, k.device)->fast(sum);
  }
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// x (N, C, ...) as the 4-d (N, C, S, 1) cuDNN normalizes per channel, and the (1, C, 1, 1)
/// descriptor of its per-channel operands.
struct BatchNorm {
  TensorDescriptor x, channel; // x of the data's dtype; the per-channel operands float32
  int64_t N, C, S;

  BatchNorm(const Shape &xs, DType dtype) {
    if (xs.size() < 2)
      throw ShapeError(std::string(current_op()) + ": the input must be (N, C, ...), got " +
                       shape_rules::str(xs));
    N = xs[0];
    C = xs[1];
    S = shape_rules::numElements(Shape(xs.begin() + 2, xs.end()));
    setTensor4d(x, N, C, S, 1, dtype);
    setTensor4d(channel, 1, C, 1, 1);
  }
};

/// to = from in to's dtype, by the GPU's cast kernel.
void castInto(const TensorRef &from, const TensorRef &to) {
  static const Attrs unused;
  KernelArgs cast;
  cast.inputs = {from};
  cast.outputs = {to};
  cast.attrs = &unused;
  cast.device = current_context().device();
  cast.op = ops::cast;
  find_kernel(ops::cast, cast.device)->fast(cast);
}

/// Runs `kernel` with the data operands `inputs` and results `outputs` of a bfloat16
/// batch norm widened to float32 (cuDNN's batch norm documents float16 data with float32
/// parameters, not bfloat16), rounding the results back once.
void inFloat32(const KernelArgs &k, const char *op, std::initializer_list<size_t> inputs,
               std::initializer_list<size_t> outputs, void (*kernel)(const KernelArgs &)) {
  OpScope scope(op);
  // The float32 copies share the context's scratch buffer (the kernels use its
  // workspace), each at a 256-byte boundary as the allocator's blocks are.
  auto slice = [](const TensorRef &t) { return (size_t(t.numel()) * sizeof(float) + 255) & ~size_t(255); };
  size_t bytes = 0;
  for (size_t i : inputs)
    bytes += slice(k.inputs[i]);
  for (size_t i : outputs)
    bytes += slice(k.outputs[i]);
  char *next = static_cast<char *>(current_context().scratch(bytes));
  auto widened = [&](const TensorRef &t) {
    TensorRef wide{next, t.shape, DType::f32, t.layout};
    next += slice(t);
    return wide;
  };
  KernelArgs wide = k;
  for (size_t i : inputs) {
    wide.inputs[i] = widened(k.inputs[i]);
    castInto(k.inputs[i], wide.inputs[i]);
  }
  for (size_t i : outputs)
    wide.outputs[i] = widened(k.outputs[i]);
  kernel(wide);
  for (size_t i : outputs)
    castInto(wide.outputs[i], k.outputs[i]);
  OpScope named(op); // errors found later name the op, not the last cast
}

// training: (x, gamma, beta[, running_mean, running_var]) -> (y, mean, var);
// inference: (x, gamma, beta, running_mean, running_var) -> y.
void batchNorm(const KernelArgs &k) {
  if (k.inputs[0].dtype == DType::bf16)
    return inFloat32(k, ops::batch_norm, {0}, {0}, batchNorm);
  OpScope scope(ops::batch_norm);
  DeviceContext &ctx = current_context();
  BatchNorm b(k.inputs[0].shape, k.inputs[0].dtype);
  if (b.N * b.C * b.S == 0)
    return;
  double epsilon = k.attrs->get_float("epsilon", 1e-5);
  const void *x = k.inputs[0].data;
  const void *mean, *var;
  if (k.attrs->get_bool("training", false)) {
    launch_channel_statistics(k.inputs[0], b.N, b.C, b.S, k.outputs[1].as<float>(),
                              k.outputs[2].as<float>());
    mean = k.outputs[1].data;
    var = k.outputs[2].data;
  } else {
    mean = k.inputs[3].data;
    var = k.inputs[4].data;
  }
  check(cudnnBatchNormalizationForwardInference(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne,
                                                &kZero, b.x, x, b.x, k.outputs[0].data, b.channel,
                                                k.inputs[1].data, k.inputs[2].data, mean, var,
                                                epsilon),
        "cudnnBatchNormalizationForwardInference");
}

// (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta)
void batchNormBackward(const KernelArgs &k) {
  if (k.inputs[1].dtype == DType::bf16)
    return inFloat32(k, ops::batch_norm_backward, {0, 1}, {0}, batchNormBackward);
  OpScope scope(ops::batch_norm_backward);
  DeviceContext &ctx = current_context();
  BatchNorm b(k.inputs[1].shape, k.inputs[1].dtype);
  if (b.N * b.C * b.S == 0)
    return;
  double epsilon = k.attrs->get_float("epsilon", 1e-5);
  auto *invStd = static_cast<float *>(ctx.workspace(size_t(b.C) * sizeof(float)));
  launch_inverse_std(k.inputs[4].as<const float>(), invStd, b.C, epsilon);
  check(cudnnBatchNormalizationBackward(ctx.cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero,
                                        &kOne, &kZero, b.x, k.inputs[1].data, b.x,
                                        k.inputs[0].data, b.x, k.outputs[0].data, b.channel,
                                        k.inputs[2].data, k.outputs[1].data, k.outputs[2].data,
                                        epsilon, k.inputs[3].data, invStd),
        "cudnnBatchNormalizationBackward");
}

} // namespace

void register_cudnn_kernels() {
  register_gpu_kernel(ops::conv2d, conv2d);
  register_gpu_kernel(ops::conv2d_backward_data, conv2dBackwardData);
  register_gpu_kernel(ops::conv2d_backward_filter, conv2dBackwardFilter);
  register_gpu_kernel(ops::batch_norm, batchNorm);
  register_gpu_kernel(ops::batch_norm_backward, batchNormBackward);
}

} // namespace dlc::cuda
