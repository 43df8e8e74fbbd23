//===- conv3x3.cpp - ResNet-50's 3x3 convolutions, direct against Winograd ----===//
//
// Usage: dlc-bench-conv3x3 [BATCH ...]   (default 8 32)
//
// The 3x3 convolutions of ResNet-50 v1's bottlenecks (64, 128, 256 and 512 channels on
// 56x56, 28x28, 14x14 and 7x7; stride 1, padding 1), forward with bias and the ReLU
// epilogue, data gradient and weight gradient, in the blocked layout this CPU's kernels
// use, direct against Winograd as ConvAlgorithmBench.h times them. Where oneDNN has
// Winograd kernels (AVX-512) they run; on AVX2 CPUs dlc's F(2x2, 3x3) runs where it
// applies (WinogradAvx2.h: 128 channels or more) and the direct kernel elsewhere, so a
// ratio near 1 there says which shapes it leaves alone.
//
//===----------------------------------------------------------------------===//
#include "ConvAlgorithmBench.h"

using namespace dlc;

int main(int argc, char **argv) {
  const std::vector<int64_t> batches =
      bench::batchesFrom(argc, argv, "dlc-bench-conv3x3 [BATCH ...] (default 8 32)", {8, 32});
  const Layout layout = cpu_kernels::onednn::preferred_blocked_layout();
  const int64_t shapes[][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}}; // channels, side
  std::mt19937 generator(1);
  for (int64_t batch : batches)
    for (const auto &shape : shapes) {
      cpu_kernels::Conv2DGeometry g{batch, shape[0], shape[1], shape[1], shape[0],
                                    3,     3,        shape[1], shape[1]};
      g.padH = g.padW = 1;
      g.inputLayout = g.outputLayout = layout;
      bench::ConvBuffers t(g, generator);
      bench::compareConvAlgorithms("conv2d_3x3", g, t);
    }
  return 0;
}
