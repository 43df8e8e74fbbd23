//===- PrimitiveCacheTest.cpp - the oneDNN kernels build each primitive once per shape ===//
#include "KernelTestSupport.h"

#include <thread>

using namespace dlc::cpu_kernels;
using namespace dlc::cpu_kernels::test;

namespace {

// Runs every oneDNN kernel once on small shapes derived from `size`, so a call with a
// new size touches only new cache keys.
void runEveryKernel(int64_t size) {
  const Conv2DGeometry conv = convGeometry(1, 2, size, size + 1, 3, 2, 2, 1, 1);
  auto x = randomTensor(inputSize(conv), 1), w = randomTensor(weightSize(conv), 2),
       b = randomTensor(conv.O, 3), y = randomTensor(outputSize(conv), 4);
  std::vector<float> dx(inputSize(conv)), dw(weightSize(conv)), db(conv.O);
  onednn::conv2d_forward(conv, x.data(), w.data(), b.data(), y.data());
  onednn::conv2d_backward_data(conv, y.data(), w.data(), dx.data());
  onednn::conv2d_backward_filter(conv, y.data(), x.data(), dw.data(), db.data());

  const Pool2DGeometry pool = poolGeometry(1, 2, size, size + 1, 2, 2, 1, true);
  auto px = randomTensor(inputSize(pool), 5), py = randomTensor(outputSize(pool), 6);
  std::vector<float> pdx(inputSize(pool));
  onednn::avg_pool2d_forward(pool, true, px.data(), py.data());
  onednn::avg_pool2d_backward(pool, false, py.data(), pdx.data());

  const BatchNormGeometry bn{2, 3, size};
  auto bx = randomTensor(bn.N * bn.C * bn.S, 7), gamma = randomTensor(bn.C, 8),
       beta = randomTensor(bn.C, 9);
  std::vector<float> by(bx.size()), mean(bn.C), var(bn.C), bdx(bx.size()), dgamma(bn.C),
      dbeta(bn.C);
  onednn::batch_norm_forward_training(bn, bx.data(), gamma.data(), beta.data(), 1e-5, by.data(),
                                      mean.data(), var.data());
  onednn::batch_norm_forward_inference(bn, bx.data(), gamma.data(), beta.data(), mean.data(),
                                       var.data(), 1e-5, by.data());
  onednn::batch_norm_backward(bn, by.data(), bx.data(), gamma.data(), mean.data(), var.data(),
                              1e-5, bdx.data(), dgamma.data(), dbeta.data());

  const int64_t M = 2, K = size, units = 3;
  auto dxIn = randomTensor(M * K, 10), dwIn = randomTensor(units * K, 11),
       dbIn = randomTensor(units, 12), dyIn = randomTensor(M * units, 13);
  std::vector<float> out(M * units), ddx(M * K), ddw(units * K), ddb(units);
  onednn::dense_forward(M, K, units, dxIn.data(), dwIn.data(), dbIn.data(), out.data());
  onednn::dense_backward(M, K, units, dyIn.data(), dxIn.data(), dwIn.data(), ddx.data(),
                         ddw.data(), ddb.data());
}

TEST(PrimitiveCache, SameShapesTwiceBuildNothingNew) {
  runEveryKernel(5);
  const int64_t afterFirst = onednn::cached_primitive_count();
  EXPECT_GT(afterFirst, 0);
  runEveryKernel(5);
  EXPECT_EQ(onednn::cached_primitive_count(), afterFirst);
}

TEST(PrimitiveCache, NewShapesGrowTheCache) {
  runEveryKernel(6);
  const int64_t before = onednn::cached_primitive_count();
  runEveryKernel(7);
  const int64_t after = onednn::cached_primitive_count();
  // At least 11 primitives: conv 3, avg pool 2, batch norm 3, dense 1 + 2; a
  // convolution timed faster in oneDNN's blocked layouts adds the reorders to and from
  // the plain buffers. (Max pooling is not oneDNN's: MaxPoolKernels.cpp.)
  EXPECT_GE(after - before, 11);
}

TEST(PrimitiveCache, CachedKernelServesNewBuffers) {
  // The second call must read the new buffers, not the ones the primitive was built with.
  const Conv2DGeometry g = convGeometry(1, 3, 9, 9, 2, 3, 3, 1, 1);
  std::vector<float> got(outputSize(g)), want(outputSize(g));
  for (uint32_t seed : {51u, 52u}) {
    auto x = randomTensor(inputSize(g), seed), w = randomTensor(weightSize(g), seed + 10);
    onednn::conv2d_forward(g, x.data(), w.data(), nullptr, got.data());
    ref::conv2d_forward(g, x.data(), w.data(), nullptr, want.data());
    EXPECT_TRUE(allClose(got, want, 1e-5)) << "seed " << seed;
  }
}

TEST(PrimitiveCache, EachThreadHasItsOwn) {
  runEveryKernel(8);
  const int64_t mainCount = onednn::cached_primitive_count();
  int64_t freshThreadCount = -1, afterWork = -1;
  std::thread worker([&] {
    freshThreadCount = onednn::cached_primitive_count();
    runEveryKernel(8);
    afterWork = onednn::cached_primitive_count();
  });
  worker.join();
  EXPECT_EQ(freshThreadCount, 0);
  EXPECT_GT(afterWork, 0);
  EXPECT_EQ(onednn::cached_primitive_count(), mainCount);
}

} // namespace
