//===- ReduceKernels.cpp - reductions, argmax and softmax on the CPU ----------===//
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Runtime/CPU/NNKernels.h"

#include <algorithm>
#include <limits>

namespace dlc::cpu_kernels {

namespace {

/// Output strides for walking the input: the output offset of each input element, with
/// 0 on reduced axes. Works for keepdims or not, since only non-reduced axes count.
std::vector<int64_t> reducedStrides(const Shape &input, const std::vector<bool> &reduced) {
  std::vector<int64_t> strides(input.size(), 0);
  int64_t stride = 1;
  for (size_t d = input.size(); d-- > 0;) {
    if (reduced[d])
      continue;
    strides[d] = stride;
    stride *= input[d];
  }
  return strides;
}

// The dialect's reduction kinds, as the kernels compare them.
constexpr int64_t kSum = int64_t(op_enums::ReduceKind::sum),
                  kMean = int64_t(op_enums::ReduceKind::mean),
                  kMax = int64_t(op_enums::ReduceKind::max),
                  kMin = int64_t(op_enums::ReduceKind::min);

/// Sum or mean per channel of an (N, C, H, W) f32 tensor in a blocked layout of `Lanes`
/// channels per block, into plain y (C values). The dispatcher hands reduce a blocked
/// tensor only for these. Threads take whole channel blocks, so the order of the
/// additions, and the result, do not depend on the thread count.
template <int64_t Lanes>
void channelReduceBlocked(const TensorRef &x, const TensorRef &y, int64_t kind) {
  const int64_t N = x.shape[0], C = x.shape[1], pixels = x.shape[2] * x.shape[3];
  const int64_t blocks = C / Lanes;
  const float *px = x.as<const float>();
  float *py = y.as<float>();
  const double count = double(N * pixels);
  parallel_for(blocks, x.numel(), [&](int64_t b) {
    double acc[Lanes] = {};
    for (int64_t n = 0; n < N; ++n) {
      const float *in = px + (n * blocks + b) * pixels * Lanes;
      for (int64_t p = 0; p < pixels; ++p)
        for (int64_t lane = 0; lane < Lanes; ++lane)
          acc[lane] += double(in[p * Lanes + lane]);
    }
    for (int64_t lane = 0; lane < Lanes; ++lane)
      py[b * Lanes + lane] = float(kind == kMean ? acc[lane] / count : acc[lane]);
  });
}

// y = reduce_{axes} x with the dialect's ReduceKind; accumulates in double.
void reduceKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t kind = args.attrs->get_int("kind", kSum);
  if (x.layout == Layout::nChw16c)
    return channelReduceBlocked<channel_block(Layout::nChw16c)>(x, y, kind);
  if (x.layout == Layout::nChw8c)
    return channelReduceBlocked<channel_block(Layout::nChw8c)>(x, y, kind);
  std::vector<bool> marked(x.shape.size(), false);
  for (int64_t axis : args.attrs->get_ints("axes", {}))
    marked[size_t(shape_rules::normalizeAxis(axis, int64_t(x.shape.size())))] = true;
  // Merge neighbouring dimensions that are both reduced or both kept: NCHW summed over
  // (N, H, W) walks as (N, C, H*W), with a long innermost run.
  Shape shape;
  std::vector<bool> reduced;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!shape.empty() && reduced.back() == marked[d])
      shape.back() *= x.shape[d];
    else {
      shape.push_back(x.shape[d]);
      reduced.push_back(marked[d]);
    }
  }
  int64_t outCount = y.numel(), inCount = x.numel();
  if (inCount == 0 && (kind == kMax || kind == kMin))
    throw ShapeError("max/min of an empty tensor has no value");
  double init = kind == kMax   ? -std::numeric_limits<double>::infinity()
                : kind == kMin ? std::numeric_limits<double>::infinity()
                               : 0.0;
  std::vector<double> acc(size_t(outCount), init);
  // Rows are the innermost (merged) dimension: reduced rows fold into one slot, kept
  // rows add element-wise into a run of slots.
  std::vector<int64_t> strides = reducedStrides(shape, reduced);
  int64_t inner = shape.empty() ? 1 : shape.back();
  bool innerReduced = !shape.empty() && reduced.back();
  Shape rows(shape.begin(), shape.empty() ? shape.end() : shape.end() - 1);
  std::array<std::vector<int64_t>, 1> rowStrides{
      std::vector<int64_t>(strides.begin(), strides.empty() ? strides.end() : strides.end() - 1)};
  auto combine = [kind](double a, double b) {
    return kind == kMax ? std::max(a, b) : kind == kMin ? std::min(a, b) : a + b;
  };
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.as<T>();
    // Sum of one reduced row; four partial sums let the additions overlap.
    auto rowSum = [&](const T *in) {
      double partial[4] = {0, 0, 0, 0};
      int64_t j = 0;
      for (; j + 4 <= inner; j += 4)
        for (int lane = 0; lane < 4; ++lane)
          partial[lane] += double(load(in[j + lane]));
      for (; j < inner; ++j)
        partial[0] += double(load(in[j]));
      return (partial[0] + partial[1]) + (partial[2] + partial[3]);
    };
    // (R, K, S) or (K, S) summed over R and S (a bias gradient, per-channel statistics):
    // threads take disjoint outputs k and add each one's rows in the order of the general
    // walk below, so the result does not depend on the thread count.
    bool outerReduced = shape.size() == 3 && reduced[0] && !reduced[1];
    if (innerReduced && (kind == kSum || kind == kMean) &&
        (outerReduced || (shape.size() == 2 && !reduced[0]))) {
      int64_t R = outerReduced ? shape[0] : 1, K = shape[shape.size() - 2];
      parallel_for(K, inCount, [&](int64_t k) {
        for (int64_t r = 0; r < R; ++r)
          acc[size_t(k)] += rowSum(px + (r * K + k) * inner);
      });
    } else
    for_each_broadcast<1>(rows, rowStrides, [&](int64_t row, const auto &at) {
      const T *in = px + row * inner;
      double *out = acc.data() + at[0];
      if (!innerReduced) {
        for (int64_t j = 0; j < inner; ++j)
          out[j] = combine(out[j], double(load(in[j])));
        return;
      }
      if (kind == kMax || kind == kMin) {
        double best = *out;
        for (int64_t j = 0; j < inner; ++j)
          best = combine(best, double(load(in[j])));
        *out = best;
        return;
      }
      *out += rowSum(in);
    });
    double count = outCount ? double(inCount) / double(outCount) : 1.0;
    T *py = y.as<T>();
    for (int64_t i = 0; i < outCount; ++i) {
      double v = kind == kMean ? acc[size_t(i)] / count : acc[size_t(i)];
      py[i] = convert_number<T>(v); // an integer mean of nothing is NaN: 0, not UB
    }
  });
}

// y (outer, inner) int64 = index of the first maximum of x (outer, axis, inner) along axis.
void argmaxKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", 0),
                                            int64_t(x.shape.size()));
  AxisSplit s = split_at_axis(x.shape, axis);
  if (s.axis == 0)
    throw ShapeError("argmax over an empty axis has no value");
  int64_t *py = y.as<int64_t>();
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.as<T>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const T *row = px + o * s.axis * s.inner + i;
        int64_t best = 0;
        auto bestValue = load(row[0]);
        for (int64_t a = 1; a < s.axis; ++a)
          if (load(row[a * s.inner]) > bestValue) {
            bestValue = load(row[a * s.inner]);
            best = a;
          }
        py[o * s.inner + i] = best;
      }
  });
}

// y = softmax(x) or log_softmax(x) along axis, subtracting the maximum for stability.
template <bool Log> void softmaxKernel(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", -1),
                                            int64_t(x.shape.size()));
  AxisSplit s = split_at_axis(x.shape, axis);
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<compute_t<T>>) {
      throw DTypeError(std::string("softmax needs a floating-point tensor, got ") +
                       dtype_name(x.dtype));
    } else {
      const T *px = x.as<T>();
      T *py = y.as<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          int64_t base = o * s.axis * s.inner + i;
          double peak = -std::numeric_limits<double>::infinity();
          for (int64_t a = 0; a < s.axis; ++a)
            peak = std::max(peak, double(load(px[base + a * s.inner])));
          double total = 0;
          for (int64_t a = 0; a < s.axis; ++a)
            total += std::exp(double(load(px[base + a * s.inner])) - peak);
          double logTotal = std::log(total);
          for (int64_t a = 0; a < s.axis; ++a) {
            double shifted = double(load(px[base + a * s.inner])) - peak;
            double v = Log ? shifted - logTotal : std::exp(shifted) / total;
            py[base + a * s.inner] = store<T>(static_cast<compute_t<T>>(v));
          }
        }
    }
  });
}

/// oneDNN's softmax for plain float32 tensors (NNKernels.h); softmaxKernel, its
/// reference, for the rest. log_softmax stays the reference's: oneDNN's log variant was
/// 2e-6 off in log space (Ops.SoftmaxIsStableAndNormalized), more than a loss should lose.
void softmaxFast(const KernelArgs &args) {
  const TensorRef &x = args.inputs[0], &y = args.outputs[0];
  bool plain = x.layout == Layout::plain && y.layout == Layout::plain;
  if (x.dtype != DType::f32 || !plain || x.shape.empty() || x.shape.size() > 12 ||
      x.numel() == 0)
    return softmaxKernel<false>(args);
  int64_t axis = shape_rules::normalizeAxis(args.attrs->get_int("axis", -1),
                                            int64_t(x.shape.size()));
  onednn::softmax_forward(x.shape, axis, x.as<float>(), y.as<float>());
}

} // namespace

void register_reduce_kernels() {
  register_host_kernel(ops::reduce, reduceKernel);
  register_host_kernel(ops::argmax, argmaxKernel);
  register_kernel(ops::softmax, DeviceKind::cpu, {softmaxFast, softmaxKernel<false>});
  register_host_kernel(ops::log_softmax, softmaxKernel<true>);
}

} // namespace dlc::cpu_kernels
