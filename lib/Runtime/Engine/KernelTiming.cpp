//===- KernelTiming.cpp - timing one host kernel on random inputs -------------===//
#include "dlc/Runtime/Engine/KernelTiming.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>

namespace dlc {

namespace {

/// A 64-byte aligned block, as the host allocator hands out.
struct AlignedBlock {
  explicit AlignedBlock(size_t bytes)
      : data(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64))) {
    if (!data)
      throw OutOfMemoryError("time_host_kernel: cannot allocate " + std::to_string(bytes) + " bytes");
  }
  ~AlignedBlock() { std::free(data); }
  AlignedBlock(const AlignedBlock &) = delete;
  AlignedBlock &operator=(const AlignedBlock &) = delete;
  void *data;
};

TensorRef bind(const TimedTensor &tensor, std::vector<std::unique_ptr<AlignedBlock>> &blocks) {
  int64_t count = shape_rules::numElements(tensor.shape);
  blocks.push_back(std::make_unique<AlignedBlock>(size_t(count) * dtype_size(tensor.dtype)));
  TensorRef ref;
  ref.data = blocks.back()->data;
  ref.shape = tensor.shape;
  ref.dtype = tensor.dtype;
  ref.layout = tensor.layout;
  return ref;
}

/// Values in [-1, 1) for float inputs (the same in any layout: timing needs no
/// particular order), zeros for the others.
void fill(const TensorRef &ref, std::mt19937 &random) {
  int64_t count = ref.numel();
  if (ref.dtype != DType::f32) {
    std::fill_n(static_cast<char *>(ref.data), size_t(count) * dtype_size(ref.dtype), 0);
    return;
  }
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  float *values = ref.as<float>();
  for (int64_t i = 0; i < count; ++i)
    values[i] = uniform(random);
}

} // namespace

namespace {

double timeOrThrow(const KernelEntry &entry, const std::string &op,
                   const std::vector<TimedTensor> &inputs,
                   const std::vector<TimedTensor> &outputs, const Attrs &attrs,
                   bool keptWeights, int repeats) {
  std::vector<std::unique_ptr<AlignedBlock>> blocks;
  std::mt19937 random(20261205);
  KernelArgs args;
  for (const TimedTensor &tensor : inputs) {
    args.inputs.push_back(bind(tensor, blocks));
    fill(args.inputs.back(), random);
  }
  for (const TimedTensor &tensor : outputs)
    args.outputs.push_back(bind(tensor, blocks));
  args.attrs = &attrs;
  args.device = cpu(0);
  args.op = op.c_str();
  KernelMemo memo;
  if (keptWeights) {
    args.memo = &memo;
    args.memo_generation = 1;
  }
  entry.fast(args); // builds what the kernel caches
  double fastest = 0;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    auto start = std::chrono::steady_clock::now();
    entry.fast(args);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fastest = i == 0 ? seconds : std::min(fastest, seconds);
  }
  return fastest;
}

} // namespace

std::optional<double> time_host_kernel(const std::string &op,
                                       const std::vector<TimedTensor> &inputs,
                                       const std::vector<TimedTensor> &outputs,
                                       const Attrs &attrs, bool kept_weights, int repeats) {
  register_builtin_kernels();
  const KernelEntry *entry = find_kernel(op, cpu(0));
  if (!entry || !entry->fast)
    return std::nullopt;
  try {
    return timeOrThrow(*entry, op, inputs, outputs, attrs, kept_weights, repeats);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

} // namespace dlc
