//===- ReorderSmall.cpp - layout changes of small tensors on the calling thread ===//
//
// A oneDNN reorder costs about 2 us per call whatever its size (a batch-1 prediction's
// 128x3x3 activation, 4.6 KB, back to plain before its dense layer); moving a few
// kilobytes takes a small fraction of that. Small tensors are moved here instead, one
// element at a time in the destination's order.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstdint>

namespace dlc::cpu_kernels::direct {

namespace {

/// Where element (n, c, s) of an (N, C, S) tensor lies in `layout`.
struct Placement {
  int64_t C, S, block;
  int64_t operator()(int64_t n, int64_t c, int64_t s) const {
    if (block == 1)
      return (n * C + c) * S + s;
    return ((n * (C / block) + c / block) * S + s) * block + c % block;
  }
};

} // namespace

void reorder_layout(int64_t N, int64_t C, int64_t H, int64_t W, Layout from, Layout to,
                    const float *src, float *dst) {
  const int64_t S = H * W;
  const Placement source{C, S, channel_block(from)}, target{C, S, channel_block(to)};
  if (target.block == 1) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < S; ++s)
          dst[target(n, c, s)] = src[source(n, c, s)];
    return;
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < C; cb += target.block)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t c = cb; c < cb + target.block; ++c)
          dst[target(n, c, s)] = src[source(n, c, s)];
}

} // namespace dlc::cpu_kernels::direct
