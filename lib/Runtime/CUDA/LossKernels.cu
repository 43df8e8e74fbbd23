//===- LossKernels.cu - GPU softmax cross entropy, dropout, batch statistics --===//
#include "CudaDTypes.cuh"
#include "CudaKernels.h"
#include "CudnnSupport.h"
#include "dlc/Core/OpFacts.h"
#include "../KernelMath/DropoutMask.h"

namespace dlc::cuda {

namespace {

template <typename Label>
__device__ __forceinline__ bool labelOf(const Label *labels, int64_t n, int64_t C,
                                        int *badLabel, int64_t &label) {
  label = int64_t(labels[n]);
  if (label < 0 || label >= C) {
    atomicExch(badLabel, int(n) + 1); // row + 1 (0 means no error)
    return false;
  }
  return true;
}

/// Max of the row and the sum of exp(logit - max), in double.
template <typename T>
__device__ __forceinline__ void rowTerms(const T *row, int64_t C, double &peak, double &sum) {
  peak = -INFINITY;
  for (int64_t c = 0; c < C; ++c)
    peak = fmax(peak, double(load(row[c])));
  sum = 0;
  for (int64_t c = 0; c < C; ++c)
    sum += exp(double(load(row[c])) - peak);
}

// Logits, losses and gradients of type T (float32, float16 or bfloat16), computed in
// double and rounded once to T.
template <typename T, typename Label>
__global__ void crossEntropyForward(const T *logits, const Label *labels, T *loss, int64_t N,
                                    int64_t C, int *badLabel) {
  DLC_GRID_STRIDE_LOOP(n, N) {
    int64_t label;
    if (!labelOf(labels, n, C, badLabel, label)) {
      loss[n] = store<T>(NAN);
      continue;
    }
    const T *row = logits + n * C;
    double peak, sum;
    rowTerms(row, C, peak, sum);
    loss[n] = store<T>(float(log(sum) + peak - double(load(row[label]))));
  }
}

template <typename T, typename Label>
__global__ void crossEntropyBackward(const T *dloss, const T *logits, const Label *labels,
                                     T *dlogits, int64_t N, int64_t C, int *badLabel) {
  DLC_GRID_STRIDE_LOOP(n, N) {
    int64_t label;
    bool valid = labelOf(labels, n, C, badLabel, label);
    const T *row = logits + n * C;
    double peak, sum;
    rowTerms(row, C, peak, sum);
    for (int64_t c = 0; c < C; ++c) {
      double p = exp(double(load(row[c])) - peak) / sum;
      dlogits[n * C + c] = store<T>(
          valid ? float((p - (c == label ? 1.0 : 0.0)) * double(load(dloss[n]))) : NAN);
    }
  }
}

/// A flag the kernels set to row + 1 of a label outside [0, C); checked on the host
/// once the task has finished, with the CPU kernel's message.
int *labelCheck(const char *op, int64_t C) {
  auto flag = std::make_shared<ErrorFlag>();
  std::string name = op;
  current_context().after_completion([flag, name, C] {
    if (int row = flag->take())
      throw ValueError(name + ": a label of row " + std::to_string(row - 1) + " is outside [0, " +
                       std::to_string(C) + ") for " + std::to_string(C) + " classes");
  });
  return flag->device_pointer();
}

// loss (N) from logits (N, C) and labels (N)
void softmaxCrossEntropy(const KernelArgs &k) {
  OpScope scope(ops::softmax_cross_entropy);
  int64_t N = k.inputs[0].shape[0], C = k.inputs[0].shape[1];
  if (N == 0)
    return;
  DeviceContext &ctx = current_context();
  int *flag = labelCheck("softmax_cross_entropy", C);
  dispatch_float_dtype(k.inputs[0], [&](auto tag) {
    using T = decltype(tag);
    with_integer_data(k.inputs[1], "softmax_cross_entropy", "labels", [&](auto labels) {
      using Label = std::remove_const_t<std::remove_pointer_t<decltype(labels)>>;
      crossEntropyForward<T, Label><<<blocks_for(N), kThreads, 0, ctx.stream()>>>(
          k.inputs[0].as<const T>(), labels, k.outputs[0].as<T>(), N, C, flag);
    });
  });
  check_launch("crossEntropyForward");
}

// dlogits (N, C) from dloss (N), logits (N, C), labels (N)
void softmaxCrossEntropyBackward(const KernelArgs &k) {
  OpScope scope(ops::softmax_cross_entropy_backward);
  int64_t N = k.inputs[1].shape[0], C = k.inputs[1].shape[1];
  if (N == 0)
    return;
  DeviceContext &ctx = current_context();
  int *flag = labelCheck("softmax_cross_entropy_backward", C);
  dispatch_float_dtype(k.inputs[1], [&](auto tag) {
    using T = decltype(tag);
    with_integer_data(k.inputs[2], "softmax_cross_entropy_backward", "labels", [&](auto labels) {
      using Label = std::remove_const_t<std::remove_pointer_t<decltype(labels)>>;
      crossEntropyBackward<T, Label><<<blocks_for(N), kThreads, 0, ctx.stream()>>>(
          k.inputs[0].as<const T>(), k.inputs[1].as<const T>(), labels, k.outputs[0].as<T>(), N,
          C, flag);
    });
  });
  check_launch("crossEntropyBackward");
}

template <typename T>
__global__ void dropoutApply(const T *x, bool *mask, T *y, int64_t n, float scale,
                             uint64_t threshold, const int64_t *seedOnDevice, int64_t seed) {
  uint64_t s = uint64_t(seedOnDevice ? *seedOnDevice : seed);
  DLC_GRID_STRIDE_LOOP(i, n) {
    bool kept = dropout_mask::keep(s, uint64_t(i), threshold);
    mask[i] = kept;
    y[i] = store<T>(kept ? load(x[i]) * scale : 0.f);
  }
}

// (y, mask) = dropout(x), the mask drawn by each thread (DropoutMask.h, as the CPU
// kernel draws it: a seed drops the same elements on every device). The seed is the
// `seed` attribute, or what KernelArgs::device_seed holds when the kernel runs.
void dropout(const KernelArgs &k) {
  OpScope scope(ops::dropout);
  int64_t n = k.inputs[0].numel();
  if (n == 0)
    return;
  double ratio = k.attrs->get_float("ratio", 0.5);
  DeviceContext &ctx = current_context();
  dispatch_float_dtype(k.inputs[0], [&](auto tag) {
    using T = decltype(tag);
    dropoutApply<T><<<blocks_for(n), kThreads, 0, ctx.stream()>>>(
        k.inputs[0].as<const T>(), k.outputs[1].as<bool>(), k.outputs[0].as<T>(), n,
        float(1.0 / (1.0 - ratio)), dropout_mask::threshold(1.0 - ratio), k.device_seed,
        k.attrs->get_int("seed", 0));
  });
  check_launch("dropoutApply");
}

__global__ void inverseStd(const float *var, float *invStd, int64_t C, double epsilon) {
  DLC_GRID_STRIDE_LOOP(c, C) { invStd[c] = float(1.0 / sqrt(double(var[c]) + epsilon)); }
}

} // namespace

void launch_inverse_std(const float *var, float *invStd, int64_t C, double epsilon) {
  if (C == 0)
    return;
  inverseStd<<<blocks_for(C), kThreads, 0, current_context().stream()>>>(var, invStd, C, epsilon);
  check_launch("inverseStd");
}

void register_loss_kernels() {
  register_gpu_kernel(ops::softmax_cross_entropy, softmaxCrossEntropy);
  register_gpu_kernel(ops::softmax_cross_entropy_backward, softmaxCrossEntropyBackward);
  register_gpu_random_kernel(ops::dropout, dropout);
}

} // namespace dlc::cuda
