//===- CreationKernels.cpp - constants, ranges and seeded random tensors ------===//
//
// Random kernels draw from a generator seeded by the `seed` attribute alone, so a
// kernel's output depends only on its attributes: the same seed gives the same tensor
// on every run and every device (the frontend derives a fresh seed per call from the
// device's generator).
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "dlc/Core/OpFacts.h"

#include <random>

namespace dlc::cpu_kernels {

namespace {

/// Calls `f(T{})` for the output dtype and writes `value(i)` into every element.
template <typename F> void fill(const TensorRef &y, F &&value) {
  dispatch_dtype(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *py = y.as<T>();
    for (int64_t i = 0, n = y.numel(); i < n; ++i) {
      py[i] = convert_number<T>(value(i));
    }
  });
}

// y = value everywhere (a splat dlc.constant).
void constantKernel(const KernelArgs &args) {
  double value = args.attrs->get_float("value", 0.0);
  fill(args.outputs[0], [&](int64_t) { return value; });
}

// y[i] = start + i * step.
void arangeKernel(const KernelArgs &args) {
  double start = args.attrs->get_float("start", 0.0), step = args.attrs->get_float("step", 1.0);
  fill(args.outputs[0], [&](int64_t i) { return start + double(i) * step; });
}

std::mt19937_64 generatorFor(const KernelArgs &args) {
  return std::mt19937_64(uint64_t(args.attrs->get_int("seed", 0)));
}

// y ~ U[low, high)
void uniformKernel(const KernelArgs &args) {
  std::mt19937_64 generator = generatorFor(args);
  std::uniform_real_distribution<double> draw(args.attrs->get_float("low", 0.0),
                                              args.attrs->get_float("high", 1.0));
  fill(args.outputs[0], [&](int64_t) { return draw(generator); });
}

// y ~ N(mean, stddev^2)
void normalKernel(const KernelArgs &args) {
  std::mt19937_64 generator = generatorFor(args);
  std::normal_distribution<double> draw(args.attrs->get_float("mean", 0.0),
                                        args.attrs->get_float("stddev", 1.0));
  fill(args.outputs[0], [&](int64_t) { return draw(generator); });
}

// y uniform in the integers [low, high)
void randintKernel(const KernelArgs &args) {
  std::mt19937_64 generator = generatorFor(args);
  std::uniform_int_distribution<int64_t> draw(args.attrs->get_int("low", 0),
                                              args.attrs->get_int("high", 1) - 1);
  fill(args.outputs[0], [&](int64_t) { return double(draw(generator)); });
}

} // namespace

void register_creation_kernels() {
  register_host_kernel(ops::constant, constantKernel);
  register_host_kernel(ops::random_uniform, uniformKernel);
  register_host_kernel(ops::random_normal, normalKernel);
  // Eager-only creation ops have no dialect op: a traced program sees their results as
  // constants.
  register_host_kernel("eager.arange", arangeKernel);
  register_host_kernel("eager.random_randint", randintKernel);
}

} // namespace dlc::cpu_kernels
