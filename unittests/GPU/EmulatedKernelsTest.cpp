//===- EmulatedKernelsTest.cpp - the CUDA C++ kernels, run on the CPU --------===//
//
// Every kernel of lib/Runtime/CUDA's .cu files, built for the host by the CUDA emulator
// (GPU/Emulator), against the CPU reference kernel of the same op on the same random
// inputs (never zeros): element-wise, reductions and batch statistics, softmax, layout,
// pooling, losses, dropout, optimizer updates, creation. The kernels' own code runs —
// grid-stride loops, block reductions with __syncthreads, the split of long reductions
// over (output, part) blocks with an H200's 132 multiprocessors, 16-bit loads and
// stores — so index and reduction bugs show here, in CI, without a GPU. Each call also
// checks that the kernel wrote nothing past its outputs and left its inputs alone.
//
// Host and "device" share glibc's float functions here, so most results must match the
// reference bit for bit; a GPU's expf and friends may differ by an ulp, which
// dlc-gpu-tests allows for on a real GPU. cuDNN and cuBLAS kernels need a GPU.
//
//===----------------------------------------------------------------------===//
#include "Emulator/CudaEmulator.h" // first, as in the kernel files

#include "CudaKernels.h"
#include "CudnnSupport.h"

#include "dlc/Frontend/OpRegistry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace dlc::cuda {
KernelFn emulated_kernel(const std::string &op); // EmulatedContext.cpp
} // namespace dlc::cuda

namespace {

using namespace dlc;

constexpr size_t kGuardBytes = 64; // after each tensor: must stay as written

/// A tensor in host memory with a guard zone after its elements.
struct HostTensor {
  TensorMeta meta;
  std::vector<unsigned char> bytes;

  explicit HostTensor(TensorMeta m, unsigned char fill = 0xa5)
      : meta(std::move(m)),
        bytes(size_t(shape_rules::numElements(meta.shape)) * dtype_size(meta.dtype) + kGuardBytes,
              fill) {}
  size_t dataBytes() const { return bytes.size() - kGuardBytes; }
  int64_t numel() const { return shape_rules::numElements(meta.shape); }
  TensorRef ref() { return TensorRef{bytes.data(), meta.shape, meta.dtype}; }
  bool guardIntact(unsigned char fill) const {
    for (size_t i = dataBytes(); i < bytes.size(); ++i)
      if (bytes[i] != fill)
        return false;
    return true;
  }

  double at(int64_t i) const {
    const unsigned char *p = bytes.data() + size_t(i) * dtype_size(meta.dtype);
    switch (meta.dtype) {
    case DType::f32: return read<float>(p);
    case DType::f16: return __half2float(read<__half>(p));
    case DType::bf16: return __bfloat162float(read<__nv_bfloat16>(p));
    case DType::i32: return read<int32_t>(p);
    case DType::i64: return double(read<int64_t>(p));
    case DType::u8: return read<uint8_t>(p);
    case DType::boolean: return read<uint8_t>(p);
    }
    return 0;
  }
  void set(int64_t i, double v) {
    unsigned char *p = bytes.data() + size_t(i) * dtype_size(meta.dtype);
    switch (meta.dtype) {
    case DType::f32: write(p, float(v)); break;
    case DType::f16: write(p, __float2half(float(v))); break;
    case DType::bf16: write(p, __float2bfloat16(float(v))); break;
    case DType::i32: write(p, int32_t(v)); break;
    case DType::i64: write(p, int64_t(v)); break;
    case DType::u8: write(p, uint8_t(v)); break;
    case DType::boolean: write(p, uint8_t(v != 0)); break;
    }
  }

private:
  template <typename T> static T read(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  template <typename T> static void write(unsigned char *p, T v) { std::memcpy(p, &v, sizeof(T)); }
};

/// An input: its meta and the range its random values come from (integers: [lo, hi]).
struct Input {
  Shape shape;
  DType dtype = DType::f32;
  double lo = -2, hi = 2;
};

std::mt19937 &generator() {
  static std::mt19937 g(20261130);
  return g;
}

HostTensor randomTensor(const Input &in) {
  HostTensor t({in.shape, in.dtype});
  std::uniform_real_distribution<double> real(in.lo, in.hi);
  std::uniform_int_distribution<int64_t> integer(int64_t(in.lo), int64_t(in.hi));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = is_floating(in.dtype) ? real(generator()) : double(integer(generator()));
    if (is_floating(in.dtype) && v == 0)
      v = 0.5; // never zeros
    t.set(i, v);
  }
  return t;
}

/// How close a kernel's output must be to the reference's: |gpu - ref| <= abs + rel*|ref|.
struct Tolerance {
  double abs = 0, rel = 0;
};

std::string describe(const std::vector<Input> &inputs) {
  std::ostringstream os;
  os << "inputs";
  for (const Input &in : inputs)
    os << " " << shape_rules::str(in.shape) << ":" << dtype_name(in.dtype);
  return os.str();
}

/// The outputs of both kernels of frontend op `name` (the CPU reference's and the emulated
/// GPU one's), after checking that each left its inputs and the bytes past its outputs alone.
struct BothRuns {
  std::vector<HostTensor> reference, emulated;
};

BothRuns runBoth(const std::string &name, const std::vector<HostTensor> &inputs, const Attrs &attrs,
                  bool withReference = true) {
  const OpDef &op = find_op(name);
  std::vector<TensorMeta> metas;
  for (const HostTensor &t : inputs)
    metas.push_back(t.meta);
  std::vector<TensorMeta> outputMetas = op.infer(metas, attrs);

  BothRuns run;
  auto call = [&](KernelFn fn, Device device, std::vector<HostTensor> &outs, unsigned char fill) {
    std::vector<HostTensor> ins = inputs; // each kernel gets its own copy
    for (const TensorMeta &m : outputMetas)
      outs.emplace_back(m, fill);
    KernelArgs args;
    for (HostTensor &t : ins)
      args.inputs.push_back(t.ref());
    for (HostTensor &t : outs)
      args.outputs.push_back(t.ref());
    args.attrs = &attrs;
    args.device = device;
    args.op = op.dialect_op.c_str();
    fn(args);
    for (size_t i = 0; i < ins.size(); ++i)
      EXPECT_EQ(ins[i].bytes, inputs[i].bytes) << name << " on " << device << " wrote input " << i;
    for (size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(outs[i].guardIntact(fill))
          << name << " on " << device << " wrote past the end of output " << i;
  };
  const KernelEntry *cpu = find_kernel(op.dialect_op, dlc::cpu(0));
  KernelFn gpu = cuda::emulated_kernel(op.dialect_op);
  if (!cpu || !gpu)
    throw std::runtime_error("no " + std::string(cpu ? "emulated GPU" : "CPU") + " kernel for " +
                             op.dialect_op);
  if (withReference)
    call(cpu->reference, dlc::cpu(0), run.reference, 0x5a);
  call(gpu, dlc::gpu(0), run.emulated, 0xa5);
  for (auto &check : cuda::current_context().take_completion_checks())
    check(); // what the engine runs once the task has finished
  return run;
}

/// The emulated GPU kernel alone (for inputs the reference refuses).
std::vector<HostTensor> runEmulated(const std::string &name, const std::vector<HostTensor> &inputs,
                                    const Attrs &attrs) {
  return runBoth(name, inputs, attrs, /*withReference=*/false).emulated;
}

::testing::AssertionResult sameValues(const HostTensor &got, const HostTensor &want,
                                      Tolerance tolerance) {
  if (got.meta.shape != want.meta.shape || got.meta.dtype != want.meta.dtype)
    return ::testing::AssertionFailure() << "different shapes or dtypes";
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.at(i), w = want.at(i);
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              std::fabs(g - w) <= tolerance.abs + tolerance.rel * std::fabs(w);
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << want.numel() << " elements differ; the first at " << first
         << ": emulated GPU " << got.at(first) << ", CPU reference " << want.at(first);
}

/// Runs frontend op `name` on random `inputs` with both kernels and compares every output.
void expectAgree(const std::string &name, const std::vector<Input> &inputs, const Attrs &attrs = {},
                 Tolerance tolerance = {}) {
  std::vector<HostTensor> tensors;
  for (const Input &in : inputs)
    tensors.push_back(randomTensor(in));
  BothRuns run = runBoth(name, tensors, attrs);
  for (size_t i = 0; i < run.reference.size(); ++i)
    EXPECT_TRUE(sameValues(run.emulated[i], run.reference[i], tolerance))
        << name << " output " << i << ", " << describe(inputs);
}

const DType kFloats[] = {DType::f32, DType::f16, DType::bf16};

//===----------------------------------------------------------------------===//
// The emulator itself
//===----------------------------------------------------------------------===//

TEST(CudaEmulator, EveryThreadOfEveryBlockRunsOnceAndBarriersHoldTheBlock) {
  std::vector<int> visits(3 * 2 * 64 * 2, 0);
  std::vector<int> sawAllWrites(visits.size(), 0);
  std::vector<int> shared(64 * 2);
  dlc_emu::Counters before = dlc_emu::counters();
  dlc_emu::run_grid(dlc_emu::Config(dim3(3, 2), dim3(64, 2)), [&] {
    unsigned local = threadIdx.y * blockDim.x + threadIdx.x;
    unsigned block = blockIdx.y * gridDim.x + blockIdx.x;
    size_t global = size_t(block) * blockDim.x * blockDim.y + local;
    ++visits[global];
    shared[local] = int(block) + 1;
    __syncthreads(); // every thread of this block has written before any reads
    bool all = true;
    for (int v : shared)
      all &= v == int(block) + 1;
    sawAllWrites[global] = all;
    __syncthreads(); // and every read is done before the next block writes
  });
  for (size_t i = 0; i < visits.size(); ++i) {
    EXPECT_EQ(visits[i], 1) << "thread " << i;
    EXPECT_EQ(sawAllWrites[i], 1) << "thread " << i;
  }
  dlc_emu::Counters after = dlc_emu::counters();
  EXPECT_EQ(after.launches - before.launches, 1);
  EXPECT_EQ(after.barriers - before.barriers, 6 * 2); // two per block
}

TEST(CudaEmulator, RefusesConfigurationsAGpuRefuses) {
  EXPECT_THROW(dlc_emu::run_grid(dlc_emu::Config(dim3(1), dim3(2048)), [] {}),
               std::invalid_argument);
  EXPECT_THROW(dlc_emu::run_grid(dlc_emu::Config(dim3(0), dim3(32)), [] {}),
               std::invalid_argument);
  EXPECT_THROW(dlc_emu::thread_index(), std::invalid_argument); // outside a launch
}

TEST(CudaEmulator, AThreadsExceptionReachesTheLauncher) {
  EXPECT_THROW(dlc_emu::run_grid(dlc_emu::Config(dim3(2), dim3(32)),
                                 [] {
                                   if (blockIdx.x == 1 && threadIdx.x == 7)
                                     throw std::runtime_error("thread 7 of block 1");
                                 }),
               std::runtime_error);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

TEST(EmulatedGpuKernels, BinaryArithmeticInEveryBroadcastMode) {
  const char *ops[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};
  // Same shapes (mode 0), a scalar right operand (1), general broadcasting (2).
  std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 700}, {3, 700}}, {{5, 130}, {}}, {{4, 1, 33}, {7, 1}}, {{1}, {2, 3}}};
  for (const char *op : ops)
    for (auto [a, b] : shapes) {
      for (DType dtype : kFloats)
        expectAgree(op, {{a, dtype}, {b, dtype, 0.5, 3}});
      expectAgree(op, {{a, DType::i64, -50, 50}, {b, DType::i64, 1, 9}});
      expectAgree(op, {{a, DType::i32, -50, 50}, {b, DType::i32, 1, 9}});
    }
  for (DType dtype : kFloats)
    expectAgree("power", {{{6, 50}, dtype, 0.1, 3}, {{50}, dtype, -2, 2}});
}

TEST(EmulatedGpuKernels, IntegerDivisionByZeroIsReportedAfterTheTask) {
  HostTensor a = randomTensor({{300}, DType::i32, 1, 9});
  HostTensor b = randomTensor({{300}, DType::i32, 1, 9});
  b.set(217, 0);
  try {
    runEmulated("divide", {a, b}, {});
    FAIL() << "no error for an integer division by zero";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(EmulatedGpuKernels, UnaryFunctions) {
  for (DType dtype : kFloats) {
    for (const char *op : {"negative", "relu", "exp", "sigmoid", "tanh", "gelu", "erf",
                           "softrelu", "hard_swish", "softsign", "silu", "selu"})
      expectAgree(op, {{{9, 311}, dtype, -4, 4}});
    expectAgree("relu6", {{{9, 311}, dtype, -3, 9}});
    expectAgree("softrelu", {{{9, 311}, dtype, -40, 40}});
    for (const char *op : {"log", "sqrt", "rsqrt"})
      expectAgree(op, {{{9, 311}, dtype, 0.01, 20}});
  }
  expectAgree("negative", {{{1000}, DType::i64, -100, 100}});
  expectAgree("relu", {{{1000}, DType::i32, -100, 100}});
}

TEST(EmulatedGpuKernels, ReluBackwardCompareWhereCastBroadcast) {
  for (DType dtype : kFloats) {
    expectAgree("relu_backward", {{{17, 65}, dtype}, {{17, 65}, dtype}});
    expectAgree("gelu_backward", {{{17, 65}, dtype}, {{17, 65}, dtype, -4, 4}});
    expectAgree("relu6_backward", {{{17, 65}, dtype}, {{17, 65}, dtype, -3, 9}});
    // Slopes broadcast per channel (PReLU's) and as one scalar.
    expectAgree("leaky_relu", {{{4, 6, 5, 5}, dtype, -3, 3}, {{6, 1, 1}, dtype, -1, 1}});
    expectAgree("elu", {{{17, 65}, dtype, -4, 4}, {{}, dtype, 0.5, 2}});
    for (int64_t predicate = 0; predicate < 6; ++predicate)
      expectAgree("compare", {{{8, 1, 40}, dtype, -2, 2}, {{5, 40}, dtype, -2, 2}},
                  Attrs{{"predicate", predicate}});
    expectAgree("where", {{{6, 1}, DType::boolean, 0, 1}, {{6, 70}, dtype}, {{70}, dtype}});
    expectAgree("broadcast_to", {{{3, 1, 9}, dtype}}, Attrs{{"shape", Shape{2, 3, 50, 9}}});
  }
  // Small integers compare equal often.
  expectAgree("compare", {{{500}, DType::i32, 0, 3}, {{500}, DType::i32, 0, 3}},
              Attrs{{"predicate", int64_t(0)}});
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i32,
                       DType::i64, DType::u8,  DType::boolean};
  for (DType from : all)
    for (DType to : all) {
      Input in{{13, 37}, from, is_floating(from) ? -100.0 : 0.0, from == DType::boolean ? 1.0 : 100.0};
      if (is_floating(from) && !is_floating(to))
        in.lo = 0; // float to unsigned or bool: stay in range
      expectAgree("astype", {in}, Attrs{{"dtype", int64_t(to)}});
    }
}

//===----------------------------------------------------------------------===//
// Reductions, batch statistics, argmax, softmax
//===----------------------------------------------------------------------===//

TEST(EmulatedGpuKernels, ReductionsShortAndSplitOverBlocks) {
  // Short reductions (one thread per output), long ones over (output, part) blocks with
  // a second pass, and one output filling the GPU: a convolution's bias gradient.
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{{6, 40}, {1}},          {{6, 40}, {0}},       {{33, 70, 5}, {1}},
                        {{4, 3, 50, 50}, {0, 2, 3}}, {{20000}, {0}},  {{7, 300}, {0, 1}},
                        {{2, 9, 129}, {0, 2}},   {{3, 4, 5}, {0, 1, 2}}};
  for (const Case &c : cases)
    for (int64_t kind = 0; kind < 4; ++kind) {
      Attrs attrs{{"axes", c.axes}, {"kind", kind}};
      // Sums of many float32 terms: both sum in double, then round once.
      for (DType dtype : kFloats)
        expectAgree("reduce", {{c.shape, dtype}}, attrs);
      expectAgree("reduce", {{c.shape, DType::i64, -1000, 1000}}, attrs);
    }
}

TEST(EmulatedGpuKernels, BatchStatisticsMatchTheReferenceBatchNorm) {
  // launch_channel_statistics: mean and (biased) variance per channel of (N, C, S) data.
  struct Case {
    int64_t N, C, S;
  };
  for (Case c : {Case{8, 32, 31 * 31}, Case{3, 5, 1}, Case{2, 128, 14 * 14}, Case{300, 2, 7}})
    for (DType dtype : kFloats) {
      Shape xShape = c.S == 1 ? Shape{c.N, c.C} : Shape{c.N, c.C, c.S, 1};
      HostTensor x = randomTensor({xShape, dtype, -3, 5});
      HostTensor gamma = randomTensor({{c.C}, DType::f32}), beta = randomTensor({{c.C}, DType::f32});
      Attrs attrs{{"training", true}, {"epsilon", 1e-5}};
      const OpDef &op = find_op("batch_norm");
      std::vector<TensorMeta> outs = op.infer({x.meta, gamma.meta, beta.meta}, attrs);
      std::vector<HostTensor> reference;
      for (const TensorMeta &m : outs)
        reference.emplace_back(m);
      KernelArgs args;
      args.inputs = {x.ref(), gamma.ref(), beta.ref()};
      for (HostTensor &t : reference)
        args.outputs.push_back(t.ref());
      args.attrs = &attrs;
      args.device = dlc::cpu(0);
      find_kernel("dlc.batch_norm", dlc::cpu(0))->reference(args);

      HostTensor mean({{c.C}, DType::f32}), var({{c.C}, DType::f32});
      cuda::launch_channel_statistics(x.ref(), c.N, c.C, c.S, mean.ref().as<float>(),
                                      var.ref().as<float>());
      // The outputs after y: mean and variance, float32.
      EXPECT_TRUE(sameValues(mean, reference[1], {})) << c.N << "x" << c.C << "x" << c.S;
      EXPECT_TRUE(sameValues(var, reference[2], {1e-12, 1e-6})) << c.N << "x" << c.C << "x" << c.S;

      HostTensor invStd({{c.C}, DType::f32});
      cuda::launch_inverse_std(var.ref().as<float>(), invStd.ref().as<float>(), c.C, 1e-5);
      for (int64_t i = 0; i < c.C; ++i)
        EXPECT_EQ(float(invStd.at(i)), float(1.0 / std::sqrt(var.at(i) + 1e-5)));
    }
}

TEST(EmulatedGpuKernels, ArgmaxAndSoftmaxAlongEveryAxis) {
  for (int64_t axis : {0, 1, 2, -1}) {
    for (DType dtype : kFloats) {
      expectAgree("softmax", {{{5, 11, 13}, dtype, -6, 6}}, Attrs{{"axis", axis}});
      expectAgree("log_softmax", {{{5, 11, 13}, dtype, -6, 6}}, Attrs{{"axis", axis}});
      expectAgree("argmax", {{{5, 11, 13}, dtype, -6, 6}}, Attrs{{"axis", axis}});
    }
    // Ties: the first maximum wins.
    expectAgree("argmax", {{{5, 11, 13}, DType::i32, 0, 3}}, Attrs{{"axis", axis}});
  }
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

TEST(EmulatedGpuKernels, TransposeConcatenateSplit) {
  const DType dtypes[] = {DType::f32, DType::f16, DType::i64, DType::u8};
  for (DType dtype : dtypes) {
    Input x{{4, 5, 6, 7}, dtype, 0, 100};
    for (std::vector<int64_t> permutation :
         {std::vector<int64_t>{3, 2, 1, 0}, {0, 2, 3, 1}, {1, 0, 2, 3}, {0, 1, 3, 2}})
      expectAgree("transpose", {x}, Attrs{{"permutation", permutation}});
    for (auto [axis, sizes] : {std::pair<int64_t, std::vector<int64_t>>{0, {1, 3}},
                               {1, {2, 0, 3}}, {3, {3, 4}}, {-2, {6}}})
      expectAgree("split", {x}, Attrs{{"axis", axis}, {"sizes", sizes}});
    expectAgree("concatenate", {{{2, 3, 7}, dtype, 0, 100}, {{2, 5, 7}, dtype, 0, 100},
                                {{2, 1, 7}, dtype, 0, 100}},
                Attrs{{"axis", int64_t(1)}});
    expectAgree("concatenate", {{{3, 7}, dtype, 0, 100}, {{4, 7}, dtype, 0, 100}},
                Attrs{{"axis", int64_t(0)}});
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  Shape input;
  std::vector<int64_t> kernel, stride, padding;
  bool ceil = false, includePad = true;
};

Attrs poolAttrs(const PoolCase &c) {
  return Attrs{{"kernel", c.kernel},   {"stride", c.stride},
               {"padding", c.padding}, {"ceil_mode", c.ceil},
               {"count_include_pad", c.includePad}};
}

const PoolCase kPoolCases[] = {
    {{2, 3, 63, 63}, {4, 4}, {2, 2}, {0, 0}},                     // the seed's LeafNetwork
    {{3, 4, 9, 11}, {3, 3}, {1, 1}, {1, 1}},                      // padded, overlapping
    {{2, 3, 10, 10}, {3, 2}, {3, 2}, {1, 0}, true},               // ceil mode
    {{1, 5, 8, 7}, {2, 3}, {2, 2}, {1, 1}, true, false},          // padding left out of means
    {{1, 2, 5, 5}, {5, 5}, {1, 1}, {0, 0}}};                      // one window per plane

TEST(EmulatedGpuKernels, PoolingForwardAndBackward) {
  for (const PoolCase &c : kPoolCases)
    for (DType dtype : kFloats) {
      Attrs attrs = poolAttrs(c);
      Shape out = find_op("max_pool2d").infer({{c.input, dtype}}, attrs)[0].shape;
      // Integers from a small set: many equal maxima, where the first one must win.
      expectAgree("max_pool2d", {{c.input, dtype, 0, 3}}, attrs);
      expectAgree("max_pool2d", {{c.input, dtype}}, attrs);
      expectAgree("max_pool2d_backward", {{out, dtype}, {c.input, dtype}}, attrs);
      HostTensor dy = randomTensor({out, dtype});
      HostTensor ties = randomTensor({c.input, DType::i32, 0, 3});
      HostTensor x({c.input, dtype});
      for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, ties.at(i));
      BothRuns run = runBoth("max_pool2d_backward", {dy, x}, attrs);
      EXPECT_TRUE(sameValues(run.emulated[0], run.reference[0], {}))
          << "max_pool2d_backward with ties, " << shape_rules::str(c.input);
      expectAgree("avg_pool2d", {{c.input, dtype}}, attrs);
      Attrs backward = attrs;
      backward.set("input_shape", c.input);
      expectAgree("avg_pool2d_backward", {{out, dtype}}, backward);
    }
}

//===----------------------------------------------------------------------===//
// Losses, dropout, optimizer updates, creation
//===----------------------------------------------------------------------===//

TEST(EmulatedGpuKernels, SoftmaxCrossEntropyForwardAndBackward) {
  for (DType dtype : kFloats)
    for (DType labels : {DType::i32, DType::i64})
      for (auto [N, C] : {std::pair<int64_t, int64_t>{32, 2}, {300, 10}, {3, 1000}}) {
        Input logits{{N, C}, dtype, -8, 8}, label{{N}, labels, 0, double(C - 1)};
        expectAgree("softmax_cross_entropy", {logits, label});
        expectAgree("softmax_cross_entropy_backward", {{{N}, dtype, 0.1, 2}, logits, label});
      }
}

TEST(EmulatedGpuKernels, ABadLabelIsReportedWithItsRow) {
  HostTensor logits = randomTensor({{40, 5}, DType::f32});
  HostTensor labels = randomTensor({{40}, DType::i64, 0, 4});
  labels.set(23, 5);
  try {
    runEmulated("softmax_cross_entropy", {logits, labels}, {});
    FAIL() << "no error for a label outside [0, 5)";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("row 23"), std::string::npos) << e.what();
  }
}

// take moves elements of every dtype; its gradient adds each column in the indices'
// order, as the CPU kernels do, so the two agree bit for bit.
TEST(EmulatedGpuKernels, TakeAndItsGradient) {
  for (DType indices : {DType::i32, DType::i64}) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8})
      expectAgree("take", {{{7, 5, 3}, dtype, 0, 100}, {{4, 6}, indices, -5, 4}},
                  Attrs{{"axis", int64_t(1)}}, Tolerance{0, 0});
    expectAgree("take", {{{50, 16}, DType::f32}, {{3, 9}, indices, 0, 49}}, {}, Tolerance{0, 0});
    expectAgree("take_backward", {{{3, 9, 16}, DType::f32}, {{3, 9}, indices, -50, 49}},
                Attrs{{"axis", int64_t(0)}, {"size", int64_t(50)}}, Tolerance{0, 0});
    // Few slices, many indices: most slices are taken several times.
    expectAgree("take_backward", {{{7, 40, 3}, DType::f32}, {{40}, indices, -5, 4}},
                Attrs{{"axis", int64_t(1)}, {"size", int64_t(5)}}, Tolerance{0, 0});
  }
}

TEST(EmulatedGpuKernels, AttentionAndItsGradient) {
  // Causal with a boolean padding mask and dropout; an additive mask; unequal lengths and
  // features; more keys than a block has threads.
  struct Case {
    Shape q, k, v;
    std::optional<Input> mask;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 8}, {2, 3, 9, 8}, {2, 3, 9, 8}, Input{{2, 1, 1, 9}, DType::boolean, 0, 1},
       Attrs{{"scale", 0.35}, {"causal", true}, {"dropout", 0.25}}},
      {{3, 5, 6}, {3, 300, 6}, {3, 300, 4}, Input{{5, 300}, DType::f32},
       Attrs{{"scale", 0.4}}},
  };
  for (const Case &c : cases)
    for (DType dtype : kFloats) {
      std::vector<Input> in{{c.q, dtype}, {c.k, dtype}, {c.v, dtype}};
      if (c.mask) {
        Input mask = *c.mask;
        if (mask.dtype != DType::boolean)
          mask.dtype = dtype;
        in.push_back(mask);
      }
      Tolerance tolerance = dtype == DType::f32 ? Tolerance{1e-5, 1e-4} : Tolerance{2e-2, 2e-2};
      Attrs forwardAttrs = c.attrs; // the backward reads the seed from the forward's result
      forwardAttrs.set("seed", int64_t(5));
      expectAgree("attention", in, forwardAttrs, tolerance);
      // The backward from a forward's own output, log-sum-exp and seed.
      std::vector<HostTensor> forwardIn;
      for (const Input &i : in)
        forwardIn.push_back(randomTensor(i));
      std::vector<HostTensor> forward = runEmulated("attention", forwardIn, forwardAttrs);
      Shape outShape = c.q;
      outShape.back() = c.v.back();
      std::vector<HostTensor> backwardIn{randomTensor({outShape, dtype}), forwardIn[0],
                                         forwardIn[1], forwardIn[2], forward[0], forward[1],
                                         forward[2]};
      if (c.mask)
        backwardIn.push_back(forwardIn[3]);
      BothRuns run = runBoth("attention_backward", backwardIn, c.attrs);
      for (size_t i = 0; i < run.reference.size(); ++i)
        EXPECT_TRUE(sameValues(run.emulated[i], run.reference[i],
                               dtype == DType::f32 ? Tolerance{1e-4, 1e-3} : Tolerance{5e-2, 5e-2}))
            << "attention_backward output " << i << ", " << dtype_name(dtype);
    }
}

TEST(EmulatedGpuKernels, LayerNormAndItsGradient) {
  // The last axis (a transformer's features, longer than a block) and a middle one.
  for (auto [shape, axis] : {std::pair<Shape, int64_t>{{3, 5, 300}, -1}, {{4, 7, 3}, 1}})
    for (DType dtype : kFloats) {
      const int64_t n = shape[size_t(axis < 0 ? axis + 3 : axis)];
      Shape stats = shape;
      stats.erase(stats.begin() + (axis < 0 ? axis + 3 : axis));
      Attrs attrs{{"axis", axis}, {"epsilon", 1e-5}};
      Tolerance tolerance = dtype == DType::f32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-2, 1e-2};
      expectAgree("layer_norm", {{shape, dtype}, {{n}, DType::f32}, {{n}, DType::f32}}, attrs,
                  tolerance);
      // Statistics as a forward would give them: variances positive.
      expectAgree("layer_norm_backward",
                  {{shape, dtype}, {shape, dtype}, {{n}, DType::f32}, {stats, DType::f32},
                   {stats, DType::f32, 0.5, 2}},
                  attrs, dtype == DType::f32 ? Tolerance{1e-4, 1e-4} : Tolerance{3e-2, 3e-2});
    }
}

TEST(EmulatedGpuKernels, StridedSlicesAndTheirGradient) {
  // Reversed, strided and plain axes; an empty slice; a 1-element-wide last axis.
  const Attrs strided{{"begin", std::vector<int64_t>{5, 1, 0}},
                      {"end", std::vector<int64_t>{-1, 7, 3}},
                      {"step", std::vector<int64_t>{-2, 3, 1}}};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8})
    expectAgree("slice", {{{7, 8, 3}, dtype, 0, 100}}, strided, Tolerance{0, 0});
  expectAgree("slice", {{{7, 8, 3}, DType::f32}},
              Attrs{{"begin", std::vector<int64_t>{0, 4, 2}},
                    {"end", std::vector<int64_t>{7, 4, 3}},
                    {"step", std::vector<int64_t>{1, 1, 1}}},
              Tolerance{0, 0});
  Attrs back = strided;
  back.set("shape", std::vector<int64_t>{7, 8, 3});
  for (DType dtype : {DType::f32, DType::bf16})
    expectAgree("slice_backward", {{{3, 2, 3}, dtype}}, back, Tolerance{0, 0});
}

TEST(EmulatedGpuKernels, AnIndexOutOfRangeIsReportedWithItsPosition) {
  HostTensor table = randomTensor({{10, 4}, DType::f32});
  HostTensor ids = randomTensor({{30}, DType::i64, 0, 9});
  ids.set(17, 10);
  for (const char *op : {"take", "take_backward"})
    try {
      if (std::string(op) == "take")
        runEmulated(op, {table, ids}, {});
      else
        runEmulated(op, {randomTensor({{30, 4}, DType::f32}), ids},
                    Attrs{{"axis", int64_t(0)}, {"size", int64_t(10)}});
      FAIL() << op << ": no error for index 10 of an axis of 10";
    } catch (const IndexError &e) {
      EXPECT_NE(std::string(e.what()).find("(element 17 of the indices) is outside [-10, 10)"),
                std::string::npos)
          << e.what();
    }
}

TEST(EmulatedGpuKernels, DropoutDropsTheSameElementsAsTheCpu) {
  for (DType dtype : kFloats)
    for (double ratio : {0.2, 0.5})
      expectAgree("dropout", {{{33, 129}, dtype}},
                  Attrs{{"ratio", ratio}, {"seed", int64_t(77)}});
}

TEST(EmulatedGpuKernels, FusedOptimizerUpdatesGiveTheCpusBits) {
  Shape shape{37, 71};
  Input w{shape}, g{shape}, m{shape}, v{shape, DType::f32, 0.01, 1}, rate{{}, DType::f32, 0.001, 0.1};
  for (double rescale : {1.0, 1.0 / 32})
    for (bool nesterov : {false, true}) {
      expectAgree("adam_update", {w, g, m, v, rate},
                  Attrs{{"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"rescale_grad", rescale}});
      expectAgree("sgd_momentum_update", {w, g, m, rate},
                  Attrs{{"momentum", 0.9}, {"nesterov", nesterov}, {"rescale_grad", rescale}});
      expectAgree("sgd_update", {w, g, rate}, Attrs{{"rescale_grad", rescale}});
    }
}

TEST(EmulatedGpuKernels, ConstantsRangesAndRandomDrawsAreTheCpus) {
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};
  for (DType dtype : all) {
    Attrs shape{{"shape", Shape{7, 300}}, {"dtype", int64_t(dtype)}};
    Attrs full = shape;
    full.set("value", 3.25);
    expectAgree("full", {}, full);
    Attrs range = shape;
    range.set("shape", Shape{500}).set("start", 2.0).set("step", 0.5);
    expectAgree("arange", {}, range);
  }
  for (DType dtype : kFloats) {
    Attrs draw{{"shape", Shape{9, 111}}, {"dtype", int64_t(dtype)}, {"seed", int64_t(5)},
               {"low", -1.0},            {"high", 3.0},            {"mean", 1.0},
               {"stddev", 2.0}};
    expectAgree("random_uniform", {}, draw);
    expectAgree("random_normal", {}, draw);
  }
  expectAgree("random_randint", {},
              Attrs{{"shape", Shape{1000}}, {"dtype", int64_t(DType::i64)}, {"seed", int64_t(9)},
                    {"low", int64_t(-4)}, {"high", int64_t(50)}});
}

//===----------------------------------------------------------------------===//
// The epilogues of cuDNN convolutions and cuBLAS products
//===----------------------------------------------------------------------===//

TEST(EmulatedGpuKernels, BiasAndReluEpiloguesRoundOnce) {
  const int64_t rows = 19, columns = 53, channels = 7, inner = 30;
  for (DType dtype : kFloats)
    for (bool relu : {false, true}) {
      // Dense: y = relu(product + bias), product in float32.
      HostTensor product = randomTensor({{rows, columns}, DType::f32});
      HostTensor bias = randomTensor({{columns}, dtype});
      HostTensor y({{rows, columns}, dtype});
      cuda::launch_bias_activation(dtype, y.ref().data, product.ref().as<float>(),
                                   bias.ref().data, rows, columns, relu);
      HostTensor want({{rows, columns}, dtype});
      for (int64_t i = 0; i < y.numel(); ++i) {
        float v = float(product.at(i)) + float(bias.at(i % columns));
        want.set(i, relu && v < 0 ? 0.f : v);
      }
      EXPECT_TRUE(sameValues(y, want, {})) << dtype_name(dtype) << " relu " << relu;

      // Convolution: y (N, C, inner) += bias[c], then relu, in place.
      HostTensor conv = randomTensor({{3, channels, inner}, dtype});
      HostTensor channelBias = randomTensor({{channels}, dtype});
      HostTensor expected = conv;
      for (int64_t i = 0; i < conv.numel(); ++i) {
        float v = float(conv.at(i)) + float(channelBias.at((i / inner) % channels));
        expected.set(i, relu && v < 0 ? 0.f : v);
      }
      cuda::launch_channel_bias_activation(dtype, conv.ref().data, channelBias.ref().data,
                                           conv.numel(), channels, inner, relu);
      EXPECT_TRUE(sameValues(conv, expected, {})) << dtype_name(dtype) << " relu " << relu;
    }
}

TEST(EmulatedGpuKernels, EveryKernelOfTheCudaFilesIsEmulated) {
  // cuBLAS and cuDNN ops need a GPU; every other GPU op must be in the emulated table.
  const char *libraryOps[] = {"dlc.matmul", "dlc.dense", "dlc.conv2d", "dlc.conv2d_backward_data",
                              "dlc.conv2d_backward_filter", "dlc.batch_norm",
                              "dlc.batch_norm_backward"};
  int emulated = 0;
  for (const OpDef *op : all_ops()) {
    const KernelEntry *real = find_kernel(op->dialect_op, dlc::gpu(0));
    if (!real)
      continue;
    bool library = false;
    for (const char *name : libraryOps)
      library |= op->dialect_op == name;
    if (library)
      continue;
    EXPECT_NE(cuda::emulated_kernel(op->dialect_op), nullptr) << op->dialect_op;
    ++emulated;
  }
  EXPECT_GE(emulated, 30);
}

} // namespace
