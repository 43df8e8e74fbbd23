//===- conv2x2.cpp - the LeafNetwork's 2x2 convolutions, direct against Winograd ---===//
//
// Usage: dlc-bench-conv2x2 [BATCH ...]   (default 2 4 10 32)
//
// The convolutions of the seed's LeafNetwork that dlc-choose-conv-algorithms may give to
// dlc's F(3x3, 2x2) (32 -> 64 channels on 62x62, 64 -> 128 on 29x29; the first, 3
// input channels, always stays direct), forward with bias and the ReLU epilogue, data
// gradient and weight gradient (with the bias's), in the blocked layout this CPU's kernels use,
// through the kernel entry points a compiled step calls: oneDNN's direct kernel and dlc's Winograd
// alternating, five rounds, each the best of five calls. Batches 4 and 10 are the pieces a compiled
// batch-32 step cuts the batch into to keep its activations in cache. One JSON line
// per convolution, direction and batch: the median ms of each and direct / Winograd.
// Then the weight gradient under the LeafNetwork's max pooling: the pooling's gradient
// and Winograd's, against dlc's kernel that reads the pooling's dy and codes
// (PooledFilterGradient.h).
//
//===----------------------------------------------------------------------===//
#include "ConvAlgorithmBench.h"

#include <dlc/Runtime/CPU/PooledFilterGradient.h>

using namespace dlc;
using bench::median;
using cpu_kernels::Conv2DGeometry;
using cpu_kernels::Pool2DGeometry;
using op_enums::ConvAlgorithm;

int main(int argc, char **argv) {
  constexpr int kRounds = 5, kCalls = 5;
  const std::vector<int64_t> batches = bench::batchesFrom(
      argc, argv, "dlc-bench-conv2x2 [BATCH ...] (default 2 4 10 32)", {2, 4, 10, 32});
  const Layout layout = cpu_kernels::onednn::preferred_blocked_layout();
  const int64_t shapes[][3] = {{32, 64, 62}, {64, 128, 29}}; // C, O, input side
  std::mt19937 generator(1);
  for (int64_t batch : batches)
    for (const auto &shape : shapes) {
      Conv2DGeometry g{batch, shape[0], shape[2],     shape[2],    shape[1],
                       2,     2,        shape[2] - 1, shape[2] - 1};
      g.inputLayout = g.outputLayout = layout;
      bench::ConvBuffers t(g, generator);
      float *x = t.x, *y = t.y, *dw = t.dw, *db = t.db;
      bench::compareConvAlgorithms("conv2d_2x2", g, t);
      // The weight gradient when a max pooling (the LeafNetwork's 4x4 windows of stride
      // 2, after the ReLU) follows: Winograd over the pooling's gradient, or dlc's
      // pooled kernel straight from the pooling's dy and codes.
      Pool2DGeometry pool{g.N, g.O, g.OH, g.OW, (g.OH - 4) / 2 + 1, (g.OW - 4) / 2 + 1, 4, 4, 2, 2};
      pool.layout = layout;
      const int64_t pooled = pool.N * pool.C * pool.OH * pool.OW;
      auto pys = allocate(cpu(0), size_t(pooled) * 4), codes = allocate(cpu(0), size_t(pooled));
      float *py = static_cast<float *>(pys->data());
      auto *code = static_cast<uint8_t *>(codes->data());
      cpu_kernels::direct::max_pool2d_indexed_forward(pool, y, py, code);
      bench::randomFloats(pys, pooled, generator); // the pooling's dy
      Conv2DGeometry asked = g;
      asked.algorithm = ConvAlgorithm::winograd;
      std::vector<double> times[2];
      for (int round = 0; round < kRounds; ++round) {
        times[0].push_back(bench::bestOf(kCalls, [&] {
          cpu_kernels::direct::max_pool2d_indexed_backward(pool, code, py, y, true);
          cpu_kernels::onednn::conv2d_backward_filter(asked, y, x, dw, db);
        }));
        times[1].push_back(bench::bestOf(kCalls, [&] {
          cpu_kernels::pooled_filter_gradient::backward(g, pool, code, py, x, true, dw, db);
        }));
      }
      const double winograd = median(times[0]), pooledMs = median(times[1]);
      std::printf("{\"framework\": \"dlc\", \"bench\": \"conv2d_2x2_backward_filter_pooled\", "
                  "\"layout\": \"%s\", \"shape\": \"%ldx%ldx%ldx%ld->%ld\", "
                  "\"pooling_gradient_then_winograd_ms\": %.3f, \"from_codes_ms\": %.3f, "
                  "\"ratio\": %.2f}\n",
                  layout_name(layout), long(g.N), long(g.C), long(g.H), long(g.W), long(g.O),
                  winograd * 1e3, pooledMs * 1e3, winograd / pooledMs);
      std::fflush(stdout);
    }
  return 0;
}
