//===- pooling.cpp - max pooling against this machine's memory bandwidth -----===//
//
// Usage: dlc-bench-pooling [BATCH]   (default 32)
//
// First the bandwidth: y = 1.5 * x over 256 MiB with OpenMP on every thread (STREAM's
// "scale"), counted as the bytes read and written. Then the LeafNetwork's three max
// poolings (4x4 windows, stride 2) at BATCH, forward, backward and backward with the
// ReLU's gradient folded in, and the indexed pair compiled training steps run (the
// forward also writes a byte per output; the backward reads them and dy, not x), in the blocked
// layout this CPU's kernels use and in plain NCHW, on 64-byte aligned memory as the allocator gives
// it: each line says the time, the bytes the op must move (forward x and y; backward x, dy and dx;
// the indexed ones the bytes too, and no x) and the ratio of the time to moving those bytes at the
// measured bandwidth (1.0 = memory speed).
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"

#include <dlc/Runtime/CPU/NNKernels.h>
#include <dlc/Runtime/Engine/Allocator.h>

#include <chrono>
#include <cstdio>
#include <random>

using namespace dlc;
using kernels::Pool2DGeometry;

namespace {

constexpr int kRepeats = 10;

float *floats(std::shared_ptr<Storage> &storage) { return static_cast<float *>(storage->data()); }

/// Bytes per second of STREAM's scale over 256 MiB (read + written).
double measureBandwidth() {
  const int64_t n = int64_t(64) << 20;
  auto a = allocate(cpu(0), size_t(n) * 4), b = allocate(cpu(0), size_t(n) * 4);
  float *x = floats(a), *y = floats(b);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i % 7), y[i] = 0.0f;
  double seconds = bench::bestOf(kRepeats, [&] {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      y[i] = 1.5f * x[i];
  });
  return 2.0 * double(n) * 4 / seconds;
}

void report(const char *bench, const Pool2DGeometry &g, double seconds, double bytes,
            double bandwidth) {
  std::printf("{\"framework\": \"dlc\", \"bench\": \"%s\", \"layout\": \"%s\", \"shape\": "
              "\"%ldx%ldx%ldx%ld\", \"ms\": %.3f, \"mbytes\": %.1f, \"gbytes_per_s\": %.1f, "
              "\"bandwidth_ratio\": %.2f}\n",
              bench, layout_name(g.layout), long(g.N), long(g.C), long(g.H), long(g.W),
              seconds * 1e3, bytes / 1e6, bytes / seconds / 1e9, seconds / (bytes / bandwidth));
}

} // namespace

int main(int argc, char **argv) {
  char *end = nullptr;
  const int64_t batch = argc > 1 ? std::strtoll(argv[1], &end, 10) : 32;
  if (argc > 2 || batch <= 0 || (end && *end)) {
    std::fprintf(stderr, "usage: dlc-bench-pooling [BATCH] (default 32)\n");
    return 2;
  }
  const double bandwidth = measureBandwidth();
  std::printf("# memory bandwidth (scale over 256 MiB, read + written): %.1f GB/s\n",
              bandwidth / 1e9);
  // The LeafNetwork's poolings: channels, input and output sides.
  const int64_t shapes[][3] = {{32, 127, 62}, {64, 61, 29}, {128, 28, 13}};
  std::mt19937 generator(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Layout layout : {cpu_kernels::onednn::preferred_blocked_layout(), Layout::plain}) {
    for (const auto &shape : shapes) {
      Pool2DGeometry g{batch, shape[0], shape[1], shape[1], shape[2], shape[2], 4,
                       4,     2,        2,        0,        0,        layout};
      const int64_t in = g.N * g.C * g.H * g.W, out = g.N * g.C * g.OH * g.OW;
      auto xs = allocate(cpu(0), size_t(in) * 4), dxs = allocate(cpu(0), size_t(in) * 4),
           ys = allocate(cpu(0), size_t(out) * 4), dys = allocate(cpu(0), size_t(out) * 4);
      float *x = floats(xs), *dx = floats(dxs), *y = floats(ys), *dy = floats(dys);
      for (int64_t i = 0; i < in; ++i)
        x[i] = uniform(generator), dx[i] = 0.0f;
      for (int64_t i = 0; i < out; ++i)
        dy[i] = uniform(generator), y[i] = 0.0f;
      const double forwardBytes = double(in + out) * 4, backwardBytes = double(2 * in + out) * 4;
      report("max_pool2d", g,
             bench::bestOf(kRepeats, [&] { cpu_kernels::direct::max_pool2d_forward(g, x, y); }),
             forwardBytes, bandwidth);
      report(
          "max_pool2d_backward", g,
          bench::bestOf(kRepeats, [&] { cpu_kernels::direct::max_pool2d_backward(g, x, dy, dx); }),
          backwardBytes, bandwidth);
      report("max_pool2d_backward_relu", g,
             bench::bestOf(kRepeats,
                           [&] {
                             cpu_kernels::direct::max_pool2d_backward(g, x, dy, dx,
                                                                      /*reluGrad=*/true);
                           }),
             backwardBytes, bandwidth);
      // The compiled step's pair: the forward also writes a byte per output, the
      // backward reads those bytes and dy instead of x.
      auto codes = allocate(cpu(0), size_t(out));
      uint8_t *indices = static_cast<uint8_t *>(codes->data());
      report(
          "max_pool2d_indexed", g,
          bench::bestOf(kRepeats,
                        [&] { cpu_kernels::direct::max_pool2d_indexed_forward(g, x, y, indices); }),
          forwardBytes + double(out), bandwidth);
      report("max_pool2d_backward_indexed_relu", g,
             bench::bestOf(kRepeats,
                           [&] {
                             cpu_kernels::direct::max_pool2d_indexed_backward(g, indices, dy, dx,
                                                                              /*reluGrad=*/true);
                           }),
             double(in + out) * 4 + double(out), bandwidth);
    }
  }
  return 0;
}
