//===- GpuKernelTest.cpp - every GPU kernel against the CPU reference --------===//
//
// Each case draws random inputs on the CPU (never zeros), runs the op eagerly on gpu(0)
// and with the CPU reference kernels, and compares. Also: copies in every direction,
// pinned memory, memory statistics, the errors a GPU reports late (bad labels, integer
// division by zero) and early (device mismatch, out of memory). Every test skips, saying
// why, when this process sees no GPU.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Distributed/Collectives.h"
#include "dlc/gluon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

using namespace dlc;

namespace {

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (num_gpus() == 0)
      GTEST_SKIP() << "no GPU in this process (num_gpus() == 0): GPU tests are skipped";
  }
};

Tensor randomOnCpu(const Shape &shape, double low = -1, double high = 1, uint64_t seed = 7) {
  np::random::seed(seed, cpu(0));
  return np::random::uniform(low, high, shape, cpu(0));
}

std::vector<float> values(const Tensor &t) {
  return (t.dtype() == DType::f32 ? t : t.astype(DType::f32)).to_vector<float>();
}

/// Runs `op` on copies of `inputs` on gpu(0) and, with the reference kernels, on cpu(0);
/// expects every result to agree to `tolerance` (relative, absolute below 1).
void expectGpuMatchesCpu(const std::vector<Tensor> &inputs,
                         const std::function<std::vector<Tensor>(const std::vector<Tensor> &)> &op,
                         const std::string &what, double tolerance = 1e-5) {
  std::vector<Tensor> onGpu;
  for (const Tensor &t : inputs)
    onGpu.push_back(t.copyto(gpu(0)));
  std::vector<Tensor> gpuResults = op(onGpu);
  use_reference_kernels(true);
  std::vector<Tensor> cpuResults = op(inputs);
  use_reference_kernels(false);
  ASSERT_EQ(gpuResults.size(), cpuResults.size()) << what;
  for (size_t k = 0; k < gpuResults.size(); ++k) {
    EXPECT_EQ(gpuResults[k].device(), gpu(0)) << what << " result #" << k;
    ASSERT_EQ(gpuResults[k].shape(), cpuResults[k].shape()) << what << " result #" << k;
    ASSERT_EQ(gpuResults[k].dtype(), cpuResults[k].dtype()) << what << " result #" << k;
    std::vector<float> g = values(gpuResults[k]), c = values(cpuResults[k]);
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], c[i], tolerance * std::max(1.f, std::abs(c[i])))
          << what << " result #" << k << " element " << i;
  }
}

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

} // namespace

TEST_F(Gpu, DeviceApi) {
  EXPECT_GT(num_gpus(), 0);
  EXPECT_TRUE(can_compute_on(gpu(0)));
  EXPECT_FALSE(can_compute_on(gpu(num_gpus())));
  EXPECT_THROW(np::zeros({2}, gpu(num_gpus())), UnsupportedError);
  Tensor x = np::ones({3, 4}, gpu(0));
  EXPECT_EQ(x.device(), gpu(0));
  {
    DeviceScope scope(gpu(0));
    EXPECT_EQ(np::zeros({2}).device(), gpu(0));
  }
  GpuMemoryInfo info = gpu_memory_info(gpu(0));
  EXPECT_GT(info.total_bytes, 0);
  EXPECT_LE(info.free_bytes, info.total_bytes);
}

TEST_F(Gpu, CopiesInEveryDirection) {
  Tensor host = randomOnCpu({5, 7});
  Tensor onGpu = host.copyto(gpu(0));
  EXPECT_EQ(values(onGpu.copyto(cpu(0))), values(host));
  // A view (row slice) copies from its offset.
  Tensor rows = host.slice(1, 4).copyto(gpu(0));
  EXPECT_EQ(values(rows), values(host.slice(1, 4)));
  // Pinned host memory both ways, and the host copy of a GPU result.
  Tensor pinned = host.copyto(cpu_pinned(0));
  EXPECT_EQ(values(pinned.copyto(gpu(0))), values(host));
  EXPECT_EQ(values((onGpu + onGpu).copyto(cpu_pinned(0))), values(host + host));
  if (num_gpus() > 1) {
    Tensor other = onGpu.copyto(gpu(1));
    EXPECT_EQ(other.device(), gpu(1));
    EXPECT_EQ(values(other), values(host));
    EXPECT_THROW(onGpu + other, DeviceMismatchError);
  }
  EXPECT_THROW(onGpu + host, DeviceMismatchError);
}

namespace {

// On emulated GPUs (dlc-gpu-emulated-tests) the CPU computes the backlog: 512² keeps it
// to milliseconds there.
#ifdef DLC_EMULATED_GPUS
constexpr int64_t kBacklogSide = 512;
#else
constexpr int64_t kBacklogSide = 4096;
#endif

/// Queues ~10 ms of work on `device`'s compute stream (products of 4096² matrices of
/// ones, scaled back to ones: exact), so that what is queued next runs late.
void queueBacklog(Device device) {
  Tensor m = np::ones({kBacklogSide, kBacklogSide}, DType::f32, device);
  for (int i = 0; i < 4; ++i)
    m = np::matmul(m, m) * (1.0 / double(kBacklogSide));
}

void expectAll(const Tensor &t, float value, const std::string &what) {
  std::vector<float> v = values(t);
  auto [low, high] = std::minmax_element(v.begin(), v.end());
  EXPECT_EQ(*low, value) << what;
  EXPECT_EQ(*high, value) << what;
}

/// A pinned host tensor of `value`, already written (its fill is not what is timed).
Tensor pinnedFull(const Shape &shape, double value) {
  Tensor t = np::full(shape, value, DType::f32, cpu_pinned(0));
  t.wait_to_read();
  return t;
}

/// Uploads, downloads and copies between GPUs against kernels still queued behind a
/// backlog: read after write, write after read, and failures passed along.
void expectCopiesOrderedWithQueuedKernels() {
  const Shape shape{1024, 1024};
  // Read after write: a download (pinned: asynchronous) of a result still being computed.
  queueBacklog(gpu(0));
  Tensor late = np::full(shape, 3.0, DType::f32, gpu(0)) + 1.0;
  expectAll(late.copyto(cpu_pinned(0)), 4.f, "download of a queued result");
  // Write after read: an upload into a tensor that a queued kernel still has to read.
  Tensor source = np::full(shape, 1.0, DType::f32, gpu(0));
  source.wait_to_read();
  Tensor nines = pinnedFull(shape, 9.0);
  queueBacklog(gpu(0));
  Tensor read = source + 0.0;
  nines.copyto(source);
  expectAll(read, 1.f, "a queued read of a tensor overwritten by an upload");
  expectAll(source, 9.f, "the upload");
  // Read after an upload: kernels see the uploaded values.
  Tensor host = randomOnCpu({1000}, -1, 1, 11);
  EXPECT_EQ(values(host.copyto(gpu(0)) * 2.0), values(host * 2.0));
  // A kernel's late failure reaches the download that read its result.
  Tensor logits = randomOnCpu({2, 3}).copyto(gpu(0));
  Tensor badLabels = np::array(std::vector<int64_t>{0, 7}).copyto(gpu(0));
  queueBacklog(gpu(0));
  Tensor loss = npx::softmax_cross_entropy(logits, badLabels);
  EXPECT_THROW(loss.copyto(cpu_pinned(0)).to_vector<float>(), Error);
  EXPECT_THROW(waitall(), Error);
  EXPECT_NO_THROW(waitall());
  if (num_gpus() < 2)
    return;
  for (auto [from, to] : {std::pair{0, 1}, std::pair{1, 0}}) {
    std::string pair = "gpu(" + std::to_string(from) + ") -> gpu(" + std::to_string(to) + ")";
    // A result still being computed on one GPU, copied to the other and computed on.
    queueBacklog(gpu(from));
    Tensor produced = np::full(shape, 2.0, DType::f32, gpu(from)) * 3.0;
    Tensor there = produced.copyto(gpu(to)) + 1.0;
    expectAll(there, 7.f, pair + ": a copy of a queued result");
    // An upload into the source must wait for the other GPU's copy to have read it.
    Tensor original = np::full(shape, 5.0, DType::f32, gpu(from));
    original.wait_to_read();
    queueBacklog(gpu(to));
    Tensor copied = original.copyto(gpu(to)); // behind gpu(to)'s backlog
    pinnedFull(shape, 8.0).copyto(original);
    expectAll(copied, 5.f, pair + ": a copy overtaken by a write to its source");
    expectAll(original, 8.f, pair + ": the write");
    // A late failure on one GPU reaches what the other computes from it.
    Tensor logitsThere = randomOnCpu({2, 3}).copyto(gpu(from));
    Tensor labelsThere = np::array(std::vector<int64_t>{0, 7}).copyto(gpu(from));
    queueBacklog(gpu(from));
    Tensor failed = npx::softmax_cross_entropy(logitsThere, labelsThere);
    EXPECT_THROW((failed.copyto(gpu(to)) + 1.0).to_vector<float>(), Error) << pair;
    EXPECT_THROW(waitall(), Error) << pair;
    EXPECT_NO_THROW(waitall()) << pair;
  }
}

/// Sets the GPU ordering switches for its life, then restores them.
class GpuOrderingSwitches {
public:
  GpuOrderingSwitches(bool eventWaits, bool copyStream)
      : eventWaits_(gpu_event_waits()), copyStream_(gpu_copy_stream()) {
    set_gpu_event_waits(eventWaits);
    set_gpu_copy_stream(copyStream);
  }
  ~GpuOrderingSwitches() {
    set_gpu_event_waits(eventWaits_);
    set_gpu_copy_stream(copyStream_);
  }

private:
  bool eventWaits_, copyStream_;
};

} // namespace

// Each way of ordering GPU work: the copy stream with device-side waits (the default),
// one stream with device-side waits between GPUs, host waits (DLC_GPU_EVENT_WAITS=0).
TEST_F(Gpu, CopiesOrderThemselvesWithQueuedKernelsOnEveryPath) {
  {
    SCOPED_TRACE("copy stream and device-side waits");
    GpuOrderingSwitches mode(true, true);
    expectCopiesOrderedWithQueuedKernels();
  }
  {
    SCOPED_TRACE("one stream, device-side waits between GPUs");
    GpuOrderingSwitches mode(true, false);
    expectCopiesOrderedWithQueuedKernels();
  }
  {
    SCOPED_TRACE("host waits");
    GpuOrderingSwitches mode(false, false);
    expectCopiesOrderedWithQueuedKernels();
  }
}

// A collective whose input has just been uploaded (the copy stream) follows the upload
// on the device: one GPU's NCCL-less path and, with two, NCCL.
TEST_F(Gpu, AllReduceOfAnUploadSeesTheUploadedValues) {
  std::vector<Device> devices{gpu(0), cpu(0)};
  if (num_gpus() > 1)
    devices = {gpu(0), gpu(1)};
  std::vector<Tensor> parts;
  for (size_t i = 0; i < devices.size(); ++i) {
    queueBacklog(gpu(0));
    parts.push_back(pinnedFull({256, 256}, double(i + 1)).copyto(devices[i]));
  }
  for (const Tensor &sum : npx::all_reduce(parts))
    expectAll(sum, 3.f, "all_reduce of uploads on " + sum.device().str());
}

// The fused optimizer updates compute with round-to-nearest intrinsics (no FMA
// contraction), so a GPU gives the CPU's bits; one launch per parameter.
TEST_F(Gpu, FusedOptimizerUpdatesMatchTheCpuBitForBit) {
  Tensor w = randomOnCpu({300, 77}, -1, 1, 31), g = randomOnCpu({300, 77}, -0.1, 0.1, 32);
  Tensor mean = randomOnCpu({300, 77}, -0.01, 0.01, 33), var = randomOnCpu({300, 77}, 1e-6, 1e-3, 34);
  Tensor rate = np::full({}, 0.0013);
  expectGpuMatchesCpu({w, g, mean, var, rate}, [](auto &in) {
    npx::AdamUpdate r = npx::adam_update(in[0], in[1], in[2], in[3], in[4], 0.85, 0.995, 1e-7);
    return std::vector<Tensor>{r.weight, r.mean, r.var};
  }, "adam_update", 0);
  expectGpuMatchesCpu({w, g, mean, var, rate}, [](auto &in) {
    npx::AdamUpdate r =
        npx::adam_update(in[0], in[1], in[2], in[3], in[4], 0.85, 0.995, 1e-7, 1.0 / 24);
    return std::vector<Tensor>{r.weight, r.mean, r.var};
  }, "adam_update with rescale_grad", 0);
  expectGpuMatchesCpu({w, g, rate}, [](auto &in) {
    return one(npx::sgd_update(in[0], in[1], in[2], 1.0 / 24));
  }, "sgd_update", 0);
  for (bool nesterov : {false, true})
    for (double rescale : {1.0, 1.0 / 24})
      expectGpuMatchesCpu({w, g, mean, rate}, [nesterov, rescale](auto &in) {
        npx::MomentumUpdate r =
            npx::sgd_momentum_update(in[0], in[1], in[2], in[3], 0.9, nesterov, rescale);
        return std::vector<Tensor>{r.weight, r.momentum};
      }, std::string(nesterov ? "nag update" : "momentum update") +
             (rescale == 1.0 ? "" : " with rescale_grad"), 0);
  // And the separate ops the fused one replaces, on the GPU: the same bits.
  Tensor gw = w.copyto(gpu(0)), gg = g.copyto(gpu(0)), gm = mean.copyto(gpu(0)),
         gv = var.copyto(gpu(0)), gr = rate.copyto(gpu(0));
  npx::AdamUpdate fused = npx::adam_update(gw, gg, gm, gv, gr, 0.85, 0.995, 1e-7);
  Tensor m2 = gm * 0.85 + gg * (1 - 0.85), v2 = gv * 0.995 + gg * gg * (1 - 0.995);
  Tensor w2 = gw - m2 * gr / (np::sqrt(v2) + 1e-7);
  auto bits = [](const Tensor &t) {
    std::vector<float> v = values(t);
    std::vector<uint32_t> out(v.size());
    std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
    return out;
  };
  EXPECT_EQ(bits(fused.mean), bits(m2));
  EXPECT_EQ(bits(fused.var), bits(v2));
  EXPECT_EQ(bits(fused.weight), bits(w2));
}

TEST_F(Gpu, MemoryStatisticsAndOutOfMemory) {
  waitall();
  int64_t before = memory_stats(gpu(0)).bytes_in_use;
  {
    Tensor big = np::zeros({1 << 20}, gpu(0));
    big.wait_to_read();
    EXPECT_GE(memory_stats(gpu(0)).bytes_in_use, before + (int64_t(4) << 20));
  }
  waitall();
  EXPECT_EQ(memory_stats(gpu(0)).bytes_in_use, before);
  try {
    np::zeros({int64_t(1) << 50}, gpu(0)); // 4 PiB
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("gpu(0)"), std::string::npos) << message;
    EXPECT_NE(message.find("free of"), std::string::npos) << message;
  }
}

TEST_F(Gpu, ElementwiseWithBroadcasting) {
  Tensor a = randomOnCpu({3, 1, 5}, 0.5, 2, 1), b = randomOnCpu({4, 5}, 0.5, 2, 2);
  using Op = Tensor (*)(const Tensor &, const Tensor &);
  std::vector<std::pair<const char *, Op>> ops = {
      {"add", np::add},         {"subtract", np::subtract}, {"multiply", np::multiply},
      {"divide", np::divide},   {"power", np::power},       {"maximum", np::maximum},
      {"minimum", np::minimum}, {"less", np::less},         {"greater_equal", np::greater_equal},
      {"equal", np::equal}};
  for (auto &[name, op] : ops) {
    expectGpuMatchesCpu({a, b}, [op = op](auto &in) { return one(op(in[0], in[1])); }, name);
    expectGpuMatchesCpu({a, a}, [op = op](auto &in) { return one(op(in[0], in[1])); },
                        std::string(name) + " same shape");
  }
  expectGpuMatchesCpu({a, np::array(std::vector<float>{1.5f}, Shape{})},
                      [](auto &in) { return one(in[0] * in[1]); }, "scalar");
  Tensor half = a.astype(DType::f16);
  expectGpuMatchesCpu({half, b.astype(DType::f16)}, [](auto &in) { return one(in[0] + in[1]); },
                      "float16 add", 1e-3);
}

TEST_F(Gpu, UnaryAndSelect) {
  Tensor x = randomOnCpu({6, 33}, -2, 2, 3), positive = randomOnCpu({6, 33}, 0.1, 3, 4);
  using Op = Tensor (*)(const Tensor &);
  for (auto [name, op] : std::vector<std::pair<const char *, Op>>{
           {"negative", np::negative}, {"exp", np::exp}, {"tanh", np::tanh},
           {"relu", npx::relu}, {"sigmoid", npx::sigmoid}, {"gelu", npx::gelu},
           {"erf", npx::erf}, {"softrelu", npx::softrelu}, {"hard_swish", npx::hard_swish},
           {"relu6", npx::relu6}, {"softsign", npx::softsign}, {"silu", npx::silu},
           {"selu", npx::selu}})
    expectGpuMatchesCpu({x}, [op = op](auto &in) { return one(op(in[0])); }, name);
  for (auto [name, op] : std::vector<std::pair<const char *, Op>>{
           {"log", np::log}, {"sqrt", np::sqrt}, {"rsqrt", np::rsqrt}})
    expectGpuMatchesCpu({positive}, [op = op](auto &in) { return one(op(in[0])); }, name);
  expectGpuMatchesCpu({randomOnCpu({6, 33}, -1, 1, 5), x},
                      [](auto &in) { return one(npx::relu_backward(in[0], in[1])); },
                      "relu_backward");
  expectGpuMatchesCpu({randomOnCpu({6, 33}, -1, 1, 6), x},
                      [](auto &in) { return one(npx::gelu_backward(in[0], in[1])); },
                      "gelu_backward");
  expectGpuMatchesCpu({x, positive},
                      [](auto &in) { return one(np::where(in[0] > in[1], in[0], in[1])); },
                      "where");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(in[0].astype(DType::i32)); }, "cast f32->i32");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(in[0].astype(DType::bf16)); }, "cast f32->bf16",
                      1e-2);
}

TEST_F(Gpu, ReductionsArgmaxSoftmax) {
  Tensor x = randomOnCpu({4, 5, 6}, -1, 1, 6);
  for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{{}, {1}, {0, 2}, {-1}}) {
    std::string tag = "axes size " + std::to_string(axes.size());
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(np::sum(in[0], axes)); }, "sum " + tag);
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(np::mean(in[0], axes, true)); },
                        "mean " + tag);
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(np::max(in[0], axes)); }, "max " + tag);
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(np::min(in[0], axes)); }, "min " + tag);
  }
  // A long reduction takes the one-block-per-output path.
  Tensor wide = randomOnCpu({3, 20000}, -1, 1, 8);
  expectGpuMatchesCpu({wide}, [](auto &in) { return one(np::sum(in[0], {1})); }, "long sum");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(np::argmax(in[0], 1)); }, "argmax");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(npx::softmax(in[0], 1)); }, "softmax");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(npx::log_softmax(in[0])); }, "log_softmax");
}

TEST_F(Gpu, LayoutOps) {
  Tensor x = randomOnCpu({2, 3, 4}, -1, 1, 9), y = randomOnCpu({2, 5, 4}, -1, 1, 10);
  expectGpuMatchesCpu({x}, [](auto &in) { return one(np::transpose(in[0], {2, 0, 1})); },
                      "transpose");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(np::broadcast_to(in[0], {3, 2, 3, 4})); },
                      "broadcast_to");
  expectGpuMatchesCpu({x, y}, [](auto &in) { return one(np::concatenate({in[0], in[1]}, 1)); },
                      "concatenate");
  expectGpuMatchesCpu({y}, [](auto &in) { return np::split_sizes(in[0], {1, 4}, 1); }, "split");
  expectGpuMatchesCpu({x}, [](auto &in) { return one(np::reshape(in[0], {6, 4}) * 2.0); },
                      "reshape");
  // take and its scatter-add: ids repeated and negative.
  Tensor ids = np::array(std::vector<int64_t>{4, -1, 0, 4, 2, 4});
  expectGpuMatchesCpu({y, ids}, [](auto &in) { return one(np::take(in[0], in[1], 1)); }, "take");
  expectGpuMatchesCpu({randomOnCpu({2, 6, 4}, -1, 1, 11), ids},
                      [](auto &in) { return one(npx::take_backward(in[0], in[1], 1, 5)); },
                      "take_backward");
  // Layer norm over the last and a middle axis, and its gradients.
  Tensor gamma = randomOnCpu({4}, -1, 1, 13), beta = randomOnCpu({4}, -1, 1, 14);
  expectGpuMatchesCpu({y, gamma, beta}, [](auto &in) {
    npx::LayerNormResult r = npx::layer_norm_with_stats(in[0], in[1], in[2]);
    npx::LayerNormGrads g = npx::layer_norm_backward(in[0] * 3.0, in[0], in[1], r.mean, r.var);
    return std::vector<Tensor>{r.output, r.mean, r.var, g.input, g.gamma, g.beta};
  }, "layer_norm");
  expectGpuMatchesCpu({x, randomOnCpu({3}, -1, 1, 15), beta.slice(0, 3)}, [](auto &in) {
    return one(npx::layer_norm(in[0], in[1], in[2], 1));
  }, "layer_norm over axis 1");
  // Strided slices (one reversed) and their gradient.
  using R = npx::SliceRange;
  expectGpuMatchesCpu({y}, [](auto &in) {
    return one(npx::slice(in[0], {R{}, R{-1, std::nullopt, -2}, R{1, 3, 1}}));
  }, "slice");
  expectGpuMatchesCpu({randomOnCpu({2, 3, 2}, -1, 1, 12)}, [](auto &in) {
    return one(npx::slice_backward(in[0], {2, 5, 4}, {0, 4, 1}, {2, -1, 3}, {1, -2, 1}));
  }, "slice_backward");
}

TEST_F(Gpu, MatmulAndDense) {
  expectGpuMatchesCpu({randomOnCpu({5, 7}, -1, 1, 11), randomOnCpu({7, 3}, -1, 1, 12)},
                      [](auto &in) { return one(np::matmul(in[0], in[1])); }, "matmul");
  expectGpuMatchesCpu({randomOnCpu({7, 5}, -1, 1, 13), randomOnCpu({3, 7}, -1, 1, 14)},
                      [](auto &in) { return one(np::matmul(in[0], in[1], true, true)); },
                      "matmul transposed");
  expectGpuMatchesCpu({randomOnCpu({2, 5, 7}, -1, 1, 15), randomOnCpu({7, 3}, -1, 1, 16)},
                      [](auto &in) { return one(np::matmul(in[0], in[1])); }, "batched matmul");
  expectGpuMatchesCpu({randomOnCpu({2, 1, 5, 7}, -1, 1, 17), randomOnCpu({3, 7, 4}, -1, 1, 18)},
                      [](auto &in) { return one(np::matmul(in[0], in[1])); },
                      "partially broadcast matmul");
  expectGpuMatchesCpu({randomOnCpu({6, 9}, -1, 1, 19), randomOnCpu({4, 9}, -1, 1, 20),
                       randomOnCpu({4}, -1, 1, 21)},
                      [](auto &in) { return one(npx::fully_connected(in[0], in[1], in[2])); },
                      "dense");
  // float16 and bfloat16 on the tensor cores (float32 accumulation, one rounding) against
  // the CPU reference (double accumulation, one rounding): within a few of the type's ulps.
  for (auto [dtype, tolerance] : {std::pair{DType::f16, 4e-3}, std::pair{DType::bf16, 3e-2}}) {
    std::string tag = std::string(" ") + dtype_name(dtype);
    expectGpuMatchesCpu({randomOnCpu({3, 33, 37}, -1, 1, 70).astype(dtype),
                         randomOnCpu({37, 18}, -1, 1, 71).astype(dtype)},
                        [](auto &in) { return one(np::matmul(in[0], in[1])); },
                        "batched matmul" + tag, tolerance);
    expectGpuMatchesCpu({randomOnCpu({37, 33}, -1, 1, 72).astype(dtype),
                         randomOnCpu({18, 37}, -1, 1, 73).astype(dtype)},
                        [](auto &in) { return one(np::matmul(in[0], in[1], true, true)); },
                        "matmul transposed" + tag, tolerance);
  }
  EXPECT_THROW(np::matmul(np::ones({2, 2}, DType::i32, gpu(0)), np::ones({2, 2}, DType::i32, gpu(0)))
                   .wait_to_read(),
               DTypeError);
}

TEST_F(Gpu, ConvolutionForwardAndBackward) {
  for (int64_t groups : {1, 3}) {
    npx::ConvOptions options;
    options.stride = {2, 1};
    options.padding = {1, 0};
    options.dilation = {1, groups == 3 ? 2 : 1};
    options.groups = groups;
    Tensor x = randomOnCpu({2, 3, 9, 7}, -1, 1, 22), w = randomOnCpu({6, 3 / groups, 3, 2}, -1, 1, 23);
    Tensor b = randomOnCpu({6}, -1, 1, 24);
    Shape xs = x.shape(), ws = w.shape();
    std::string tag = "groups " + std::to_string(groups);
    expectGpuMatchesCpu({x, w, b},
                        [&](auto &in) { return one(npx::convolution(in[0], in[1], in[2], options)); },
                        "conv2d " + tag, 1e-4);
    Tensor dy = randomOnCpu(npx::convolution(x, w, b, options).shape(), -1, 1, 25);
    expectGpuMatchesCpu(
        {dy, w}, [&](auto &in) { return one(npx::convolution_backward_data(in[0], in[1], xs, options)); },
        "conv2d backward data " + tag, 1e-4);
    expectGpuMatchesCpu(
        {dy, x},
        [&](auto &in) { return one(npx::convolution_backward_filter(in[0], in[1], ws, options)); },
        "conv2d backward filter " + tag, 1e-4);
  }
}

TEST_F(Gpu, PoolingForwardAndBackward) {
  Tensor x = randomOnCpu({2, 3, 8, 7}, -1, 1, 26);
  npx::PoolOptions max;
  max.kernel = {2, 2};
  max.stride = {2, 2};
  Tensor y = npx::max_pool2d(x, max);
  Tensor dy = randomOnCpu(y.shape(), -1, 1, 27);
  expectGpuMatchesCpu({x}, [&](auto &in) { return one(npx::max_pool2d(in[0], max)); }, "max_pool2d");
  expectGpuMatchesCpu({dy, x}, [&](auto &in) { return one(npx::max_pool2d_backward(in[0], in[1], max)); },
                      "max_pool2d backward");
  // Overlapping windows (the LeafNetwork's 4x4, stride 2), padding, MXNet's 'full'
  // convention (ceil_mode), and ties: small integers, so that many windows hold equal
  // maxima and the gradient must go to the first of them as on the CPU.
  Tensor ties = np::random::randint(0, 4, {2, 3, 9, 10}, cpu(0)).astype(DType::f32);
  for (bool ceil : {false, true}) {
    npx::PoolOptions overlap;
    overlap.kernel = {4, 4};
    overlap.stride = {2, 2};
    overlap.padding = {1, 1};
    overlap.ceil_mode = ceil;
    std::string tag = ceil ? " (4x4/2, padded, ceil_mode)" : " (4x4/2, padded)";
    for (const Tensor &input : {x, ties}) {
      Tensor dyo = randomOnCpu(npx::max_pool2d(input, overlap).shape(), -1, 1, 41);
      expectGpuMatchesCpu({input}, [&](auto &in) { return one(npx::max_pool2d(in[0], overlap)); },
                          "max_pool2d" + tag);
      expectGpuMatchesCpu(
          {dyo, input},
          [&](auto &in) { return one(npx::max_pool2d_backward(in[0], in[1], overlap)); },
          "max_pool2d backward" + tag);
    }
  }
  for (bool includePad : {true, false}) {
    npx::PoolOptions avg;
    avg.kernel = {3, 3};
    avg.stride = {2, 2};
    avg.padding = {1, 1};
    avg.ceil_mode = includePad; // both conventions, once each
    avg.count_include_pad = includePad;
    Tensor ya = npx::avg_pool2d(x, avg);
    Tensor dya = randomOnCpu(ya.shape(), -1, 1, 28);
    std::string tag = includePad ? " including padding" : " excluding padding";
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(npx::avg_pool2d(in[0], avg)); },
                        "avg_pool2d" + tag);
    expectGpuMatchesCpu({dya}, [&](auto &in) { return one(npx::avg_pool2d_backward(in[0], x.shape(), avg)); },
                        "avg_pool2d backward" + tag);
  }
}

TEST_F(Gpu, BatchNormTrainingInferenceBackward) {
  Tensor x = randomOnCpu({4, 3, 5, 6}, -2, 3, 29), gamma = randomOnCpu({3}, 0.5, 1.5, 30);
  Tensor beta = randomOnCpu({3}, -1, 1, 31), mean = randomOnCpu({3}, -1, 1, 32);
  Tensor var = randomOnCpu({3}, 0.5, 2, 33), dy = randomOnCpu({4, 3, 5, 6}, -1, 1, 34);
  expectGpuMatchesCpu({x, gamma, beta},
                      [](auto &in) {
                        auto r = npx::batch_norm_training(in[0], in[1], in[2]);
                        return std::vector<Tensor>{r.output, r.mean, r.var};
                      },
                      "batch_norm training", 1e-4);
  expectGpuMatchesCpu({x, gamma, beta, mean, var},
                      [](auto &in) {
                        return one(npx::batch_norm_inference(in[0], in[1], in[2], in[3], in[4]));
                      },
                      "batch_norm inference", 1e-4);
  expectGpuMatchesCpu({dy, x, gamma, mean, var},
                      [](auto &in) {
                        auto g = npx::batch_norm_backward(in[0], in[1], in[2], in[3], in[4]);
                        return std::vector<Tensor>{g.input, g.gamma, g.beta};
                      },
                      "batch_norm backward", 1e-4);
}

// float16 and bfloat16 NN ops (cuDNN's convolutions on tensor cores, cuBLAS's dense,
// dlc's pooling, loss and dropout kernels, batch norm with float32 parameters) against
// the CPU's, which are the float32 results rounded once: within two units in the last
// place of the narrow type for results of magnitude 1 or more, and as much absolutely
// below (the GPU's float32 sums differ in their last bits, and a convolution's output is
// rounded before its bias is added).
TEST_F(Gpu, HalfPrecisionNNOpsMatchTheCpu) {
  for (DType half : {DType::f16, DType::bf16}) {
    std::string name = dtype_name(half);
    double tolerance = half == DType::f16 ? 2e-3 : 1.6e-2;
    auto narrow = [&](const Tensor &t) { return t.astype(half); };
    npx::ConvOptions conv;
    conv.padding = {1, 1};
    Tensor x = narrow(randomOnCpu({4, 8, 10, 10}, -1, 1, 61));
    Tensor w = narrow(randomOnCpu({16, 8, 3, 3}, -0.3, 0.3, 62));
    Tensor b = narrow(randomOnCpu({16}, -1, 1, 63));
    Tensor dy = narrow(randomOnCpu({4, 16, 10, 10}, -1, 1, 64));
    expectGpuMatchesCpu({x, w, b}, [&](auto &in) { return one(npx::convolution(in[0], in[1], in[2], conv)); },
                        name + " convolution", tolerance);
    expectGpuMatchesCpu({dy, w},
                        [&](auto &in) {
                          return one(npx::convolution_backward_data(in[0], in[1], x.shape(), conv));
                        },
                        name + " convolution_backward_data", tolerance);
    expectGpuMatchesCpu({dy, x},
                        [&](auto &in) {
                          auto g = npx::convolution_backward_weights(in[0], in[1], w.shape(), conv);
                          return std::vector<Tensor>{g.weight, g.bias};
                        },
                        name + " convolution weight and bias gradients", tolerance);
    npx::ConvOptions fused = conv;
    fused.relu = true;
    expectGpuMatchesCpu({x, w, b}, [&](auto &in) { return one(npx::convolution(in[0], in[1], in[2], fused)); },
                        name + " convolution with the ReLU epilogue", tolerance);
    npx::PoolOptions pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    pool.ceil_mode = true;
    Tensor pooledGrad = narrow(randomOnCpu({4, 16, 5, 5}, -1, 1, 65));
    expectGpuMatchesCpu({dy}, [&](auto &in) { return one(npx::max_pool2d(in[0], pool)); },
                        name + " max_pool2d", tolerance);
    expectGpuMatchesCpu({dy}, [&](auto &in) { return one(npx::avg_pool2d(in[0], pool)); },
                        name + " avg_pool2d", tolerance);
    expectGpuMatchesCpu({pooledGrad, dy},
                        [&](auto &in) { return one(npx::max_pool2d_backward(in[0], in[1], pool)); },
                        name + " max_pool2d_backward", tolerance);
    expectGpuMatchesCpu({pooledGrad},
                        [&](auto &in) { return one(npx::avg_pool2d_backward(in[0], dy.shape(), pool)); },
                        name + " avg_pool2d_backward", tolerance);
    Tensor gamma = randomOnCpu({16}, 0.5, 1.5, 66), beta = randomOnCpu({16}, -1, 1, 67);
    expectGpuMatchesCpu({dy, gamma, beta},
                        [&](auto &in) {
                          auto r = npx::batch_norm_training(in[0], in[1], in[2]);
                          return std::vector<Tensor>{r.output, r.mean, r.var};
                        },
                        name + " batch_norm training", tolerance);
    Tensor mean = randomOnCpu({16}, -0.1, 0.1, 68), var = randomOnCpu({16}, 0.5, 1.5, 69);
    Tensor grad = narrow(randomOnCpu({4, 16, 10, 10}, -1, 1, 70));
    expectGpuMatchesCpu({grad, dy, gamma, mean, var},
                        [&](auto &in) {
                          auto g = npx::batch_norm_backward(in[0], in[1], in[2], in[3], in[4]);
                          return std::vector<Tensor>{g.input, g.gamma, g.beta};
                        },
                        name + " batch_norm backward", tolerance);
    expectGpuMatchesCpu({dy, gamma, beta, mean, var},
                        [&](auto &in) {
                          return one(npx::batch_norm_inference(in[0], in[1], in[2], in[3], in[4]));
                        },
                        name + " batch_norm inference", tolerance);
    // K = 600: long float32 sums (cuBLAS must not reduce in the 16-bit type).
    Tensor longRows = narrow(randomOnCpu({6, 600}, -1, 1, 76));
    Tensor longWeight = narrow(randomOnCpu({10, 600}, -0.1, 0.1, 77));
    expectGpuMatchesCpu({longRows, longWeight, narrow(randomOnCpu({10}, -1, 1, 78))},
                        [&](auto &in) { return one(npx::fully_connected(in[0], in[1], in[2])); },
                        name + " fully_connected over 600 features", tolerance);
    Tensor features = narrow(randomOnCpu({6, 40}, -1, 1, 71));
    Tensor weight = narrow(randomOnCpu({10, 40}, -0.3, 0.3, 72)), bias = narrow(randomOnCpu({10}, -1, 1, 73));
    expectGpuMatchesCpu({features, weight, bias},
                        [&](auto &in) { return one(npx::fully_connected(in[0], in[1], in[2])); },
                        name + " fully_connected", tolerance);
    Tensor logits = narrow(randomOnCpu({6, 10}, -3, 3, 74));
    Tensor labels = np::array(std::vector<int64_t>{0, 9, 2, 1, 3, 7});
    Tensor dloss = narrow(randomOnCpu({6}, -1, 1, 75));
    expectGpuMatchesCpu({logits, labels},
                        [&](auto &in) { return one(npx::softmax_cross_entropy(in[0], in[1])); },
                        name + " softmax_cross_entropy", tolerance);
    expectGpuMatchesCpu({dloss, logits, labels},
                        [&](auto &in) {
                          return one(npx::softmax_cross_entropy_backward(in[0], in[1], in[2]));
                        },
                        name + " softmax_cross_entropy_backward", tolerance);
    expectGpuMatchesCpu({x}, [&](auto &in) { return one(npx::dropout(in[0], 0.3, 5).output); },
                        name + " dropout", tolerance);
  }
}

TEST_F(Gpu, LossDropoutAndRandom) {
  Tensor logits = randomOnCpu({8, 5}, -3, 3, 35);
  Tensor labels = np::array(std::vector<int64_t>{0, 4, 2, 1, 3, 3, 0, 4});
  Tensor dloss = randomOnCpu({8}, 0.5, 1.5, 36);
  expectGpuMatchesCpu({logits, labels},
                      [](auto &in) { return one(npx::softmax_cross_entropy(in[0], in[1])); },
                      "softmax_cross_entropy");
  expectGpuMatchesCpu(
      {dloss, logits, labels},
      [](auto &in) { return one(npx::softmax_cross_entropy_backward(in[0], in[1], in[2])); },
      "softmax_cross_entropy backward");
  // A seed drops the same elements and draws the same numbers on every device.
  expectGpuMatchesCpu({randomOnCpu({7, 9}, -1, 1, 37)},
                      [](auto &in) {
                        auto r = npx::dropout(in[0], 0.3, 1234);
                        return std::vector<Tensor>{r.output, r.mask};
                      },
                      "dropout");
  np::random::seed(99, gpu(0));
  std::vector<float> first = values(np::random::uniform(2, 3, {500}, gpu(0)));
  np::random::seed(99, gpu(0));
  EXPECT_EQ(values(np::random::uniform(2, 3, {500}, gpu(0))), first);
  float low = *std::min_element(first.begin(), first.end());
  float high = *std::max_element(first.begin(), first.end());
  EXPECT_GE(low, 2.f);
  EXPECT_LT(high, 3.f);
  EXPECT_GT(high - low, 0.5f); // spread, not a constant
  EXPECT_EQ(values(np::full({4}, 2.5, DType::f32, gpu(0))), std::vector<float>(4, 2.5f));
}

TEST_F(Gpu, ErrorsFromTheDeviceSurfaceAtTheRead) {
  Tensor logits = randomOnCpu({2, 3}).copyto(gpu(0));
  Tensor bad = np::array(std::vector<int64_t>{0, 7}).copyto(gpu(0));
  Tensor loss = npx::softmax_cross_entropy(logits, bad); // returns at once
  try {
    loss.wait_to_read();
    FAIL() << "expected the bad label to be reported";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("outside [0, 3)"), std::string::npos) << e.what();
  }
  // What was computed from the failed result fails with the same error.
  EXPECT_THROW(np::sum(loss).item<float>(), Error);
  Tensor ints = np::array(std::vector<int64_t>{4, 5}).copyto(gpu(0));
  Tensor zeroDivisor = np::array(std::vector<int64_t>{1, 0}).copyto(gpu(0));
  EXPECT_THROW((ints / zeroDivisor).to_vector<int64_t>(), Error);
  EXPECT_THROW(waitall(), Error); // the first error since the last waitall
  waitall();                      // and only once
}

TEST_F(Gpu, AutogradOnTheGpuMatchesTheCpu) {
  Tensor x = randomOnCpu({2, 3, 6, 6}, -1, 1, 40), w = randomOnCpu({4, 3, 3, 3}, -1, 1, 41);
  Tensor b = randomOnCpu({4}, -1, 1, 42);
  auto gradients = [&](Device device) {
    Tensor xd = x.copyto(device), wd = w.copyto(device), bd = b.copyto(device);
    xd.attach_grad();
    wd.attach_grad();
    bd.attach_grad();
    {
      autograd::Record record;
      npx::PoolOptions pool;
      pool.kernel = {2, 2};
      pool.stride = {2, 2};
      Tensor y = npx::max_pool2d(npx::relu(npx::convolution(xd, wd, bd)), pool);
      Tensor loss = np::sum(y * y);
      loss.backward();
    }
    return std::vector<std::vector<float>>{values(xd.grad()), values(wd.grad()), values(bd.grad())};
  };
  auto onGpu = gradients(gpu(0)), onCpu = gradients(cpu(0));
  for (size_t k = 0; k < onGpu.size(); ++k)
    for (size_t i = 0; i < onGpu[k].size(); ++i)
      ASSERT_NEAR(onGpu[k][i], onCpu[k][i], 1e-4 * std::max(1.f, std::abs(onCpu[k][i])))
          << "gradient #" << k << " element " << i;
}

// npx::all_reduce of one random tensor per device against the sum on the CPU.
void expectAllReduceMatchesCpuSum(const std::vector<Device> &devices, bool mean,
                                  const std::string &what) {
  std::vector<Tensor> parts;
  std::vector<double> expected;
  for (size_t k = 0; k < devices.size(); ++k) {
    Tensor t = randomOnCpu({3, 257}, -1, 1, 60 + k);
    std::vector<float> v = t.to_vector<float>();
    expected.resize(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i)
      expected[i] += v[i];
    parts.push_back(t.copyto(devices[k]));
  }
  std::vector<Tensor> results = npx::all_reduce(parts, mean);
  ASSERT_EQ(results.size(), devices.size()) << what;
  for (size_t k = 0; k < results.size(); ++k) {
    EXPECT_EQ(results[k].device(), devices[k]) << what;
    std::vector<float> got = results[k].to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], expected[i] / (mean ? double(devices.size()) : 1.0), 1e-5)
          << what << " result " << k << " element " << i;
  }
}

// The communicators of a job of processes (ncclGetUniqueId, the id broadcast,
// ncclCommInitRank per GPU): in this job of one process, every GPU of the process is a
// rank, and the sum is every GPU's part.
TEST_F(Gpu, AllReduceWithTheJobsCommunicatorsMatchesTheCpuSum) {
  std::vector<AllReduceRank> ranks;
  std::vector<Tensor> outputs;
  std::vector<double> expected(3 * 129, 0.0);
  for (int i = 0; i < num_gpus(); ++i) {
    Tensor part = randomOnCpu({3, 129}, -1, 1, 90 + uint64_t(i));
    std::vector<float> v = part.to_vector<float>();
    for (size_t e = 0; e < v.size(); ++e)
      expected[e] += v[e];
    Tensor in = part.copyto(gpu(i)), out = Tensor::empty(in.shape(), in.dtype(), in.device());
    ranks.push_back({in.device(), {in.data(), in.shape(), in.dtype()},
                     {out.data(), out.shape(), out.dtype()}, in.buffer(), out.buffer()});
    outputs.push_back(out);
  }
  enqueue_gpu_all_reduce(ranks, /*mean=*/false, /*over_processes=*/true);
  for (const Tensor &out : outputs) {
    std::vector<float> got = out.to_vector<float>();
    for (size_t e = 0; e < got.size(); ++e)
      ASSERT_NEAR(got[e], expected[e], 1e-5) << "element " << e << " on " << out.device();
  }
}

// A GPU and a CPU tensor meet through copies.
TEST_F(Gpu, AllReduceOfGpuAndCpuMatchesTheCpuSum) {
  expectAllReduceMatchesCpuSum({gpu(0), cpu(0)}, false, "gpu(0) + cpu(0)");
  expectAllReduceMatchesCpuSum({cpu(0), gpu(0)}, true, "mean of cpu(0) and gpu(0)");
}

// Two or more GPUs: one NCCL all-reduce (Trainer.step's path on GPUs).
TEST_F(Gpu, AllReduceOverGpusWithNcclMatchesTheCpuSum) {
  if (num_gpus() < 2)
    GTEST_SKIP() << "one GPU in this process: the NCCL all-reduce needs two";
  std::vector<Device> gpus;
  for (int i = 0; i < num_gpus(); ++i)
    gpus.push_back(gpu(i));
  expectAllReduceMatchesCpuSum(gpus, false, "NCCL sum over every GPU");
  expectAllReduceMatchesCpuSum(gpus, true, "NCCL mean over every GPU");
  // Several tensors in one NCCL call (Trainer.step's buckets): each as all_reduce alone
  // (to rounding: with three GPUs or more NCCL's ring may add in another order).
  std::vector<std::vector<Tensor>> items;
  for (Shape shape : {Shape{3, 4}, Shape{7}, Shape{2, 2, 2}}) {
    std::vector<Tensor> copies;
    for (Device d : gpus)
      copies.push_back(randomOnCpu(shape, -1, 1, uint64_t(shape.size() * 10 + d.id)).copyto(d));
    items.push_back(copies);
  }
  std::vector<std::vector<Tensor>> coalesced = npx::all_reduce_coalesced(items);
  for (size_t k = 0; k < items.size(); ++k) {
    std::vector<Tensor> alone = npx::all_reduce(items[k]);
    for (size_t j = 0; j < gpus.size(); ++j) {
      std::vector<float> got = values(coalesced[k][j]), want = values(alone[j]);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6) << "item " << k << " on " << gpus[j];
    }
  }
  // A rank whose input failed poisons every rank's result (they summed its garbage).
  Tensor failed = np::matmul(np::ones({2, 2}, DType::i32, gpu(0)),
                             np::ones({2, 2}, DType::i32, gpu(0))); // no i32 GPU matmul
  std::vector<Tensor> parts{failed};
  for (int i = 1; i < num_gpus(); ++i)
    parts.push_back(np::ones({2, 2}, DType::i32, gpu(i)));
  for (const Tensor &result : npx::all_reduce(parts))
    EXPECT_THROW(result.wait_to_read(), DTypeError) << result.device();
  EXPECT_THROW(npx::waitall(), DTypeError);
  EXPECT_NO_THROW(npx::waitall()) << "the collective's error is reported once";
}
