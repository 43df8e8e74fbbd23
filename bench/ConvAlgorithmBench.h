//===- ConvAlgorithmBench.h - one convolution, direct against Winograd ---------===//
//
// What dlc-bench-conv2x2 and dlc-bench-conv3x3 share: random buffers for a
// convolution, and its forward (bias and ReLU epilogue), data gradient and weight
// gradient (with the bias's) through the kernel entry points a compiled step calls,
// oneDNN's direct kernel and Winograd (oneDNN's or dlc's own) alternating, five rounds,
// each the best of five calls. One JSON line per direction: the median ms of each and
// direct / Winograd.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_BENCH_CONVALGORITHMBENCH_H
#define DLC_BENCH_CONVALGORITHMBENCH_H

#include "BenchSupport.h"

#include <dlc/Runtime/CPU/NNKernels.h>
#include <dlc/Runtime/Engine/Allocator.h>

#include <cstdio>
#include <random>
#include <string>

namespace dlc::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline float *randomFloats(std::shared_ptr<Storage> &storage, int64_t n, std::mt19937 &generator) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  float *p = static_cast<float *>(storage->data());
  for (int64_t i = 0; i < n; ++i)
    p[i] = uniform(generator);
  return p;
}

/// A convolution's tensors on cpu(0), random (the gradients' outputs left as they are).
struct ConvBuffers {
  std::shared_ptr<Storage> xs, ys, ws, bs, dws, dbs;
  float *x, *y, *w, *b, *dw, *db;

  ConvBuffers(const cpu_kernels::Conv2DGeometry &g, std::mt19937 &generator) {
    const int64_t in = g.N * g.C * g.H * g.W, out = g.N * g.O * g.OH * g.OW,
                  weights = g.O * g.C * g.KH * g.KW;
    xs = allocate(cpu(0), size_t(in) * 4), ys = allocate(cpu(0), size_t(out) * 4);
    ws = allocate(cpu(0), size_t(weights) * 4), bs = allocate(cpu(0), size_t(g.O) * 4);
    dws = allocate(cpu(0), size_t(weights) * 4), dbs = allocate(cpu(0), size_t(g.O) * 4);
    x = randomFloats(xs, in, generator), y = randomFloats(ys, out, generator);
    w = randomFloats(ws, weights, generator), b = randomFloats(bs, g.O, generator);
    dw = static_cast<float *>(dws->data()), db = static_cast<float *>(dbs->data());
  }
};

/// Times `g` (its layouts set) in the three directions, direct against Winograd, and
/// prints one line each, named `<name>_<direction>`.
inline void compareConvAlgorithms(const char *name, const cpu_kernels::Conv2DGeometry &g,
                                  ConvBuffers &t) {
  using op_enums::ConvAlgorithm;
  constexpr int kRounds = 5, kCalls = 5;
  for (const char *direction : {"forward", "backward_data", "backward_filter"}) {
    const std::string which = direction;
    std::vector<double> times[2];
    for (int round = 0; round < kRounds; ++round)
      for (ConvAlgorithm algorithm : {ConvAlgorithm::direct, ConvAlgorithm::winograd}) {
        cpu_kernels::Conv2DGeometry asked = g;
        asked.algorithm = algorithm;
        times[algorithm == ConvAlgorithm::winograd].push_back(bestOf(kCalls, [&] {
          if (which == "backward_data")
            cpu_kernels::onednn::conv2d_backward_data(asked, t.y, t.w, t.x);
          else if (which == "backward_filter")
            cpu_kernels::onednn::conv2d_backward_filter(asked, t.y, t.x, t.dw, t.db);
          else
            cpu_kernels::onednn::conv2d_forward(asked, t.x, t.w, t.b, t.y,
                                                cpu_kernels::ConvEpilogue(true));
        }));
      }
    const double direct = median(times[0]), winograd = median(times[1]);
    std::printf("{\"framework\": \"dlc\", \"bench\": \"%s_%s\", \"layout\": \"%s\", "
                "\"shape\": \"%ldx%ldx%ldx%ld->%ld\", \"direct_ms\": %.3f, "
                "\"winograd_ms\": %.3f, \"direct_over_winograd\": %.2f}\n",
                name, direction, layout_name(g.inputLayout), long(g.N), long(g.C), long(g.H),
                long(g.W), long(g.O), direct * 1e3, winograd * 1e3, direct / winograd);
    std::fflush(stdout);
  }
}

/// The batches named on the command line (`usage` on a bad one), else `fallback`.
inline std::vector<int64_t> batchesFrom(int argc, char **argv, const char *usage,
                                        std::vector<int64_t> fallback) {
  std::vector<int64_t> batches;
  for (int i = 1; i < argc; ++i) {
    char *end = nullptr;
    batches.push_back(std::strtoll(argv[i], &end, 10));
    if (batches.back() <= 0 || *end) {
      std::fprintf(stderr, "usage: %s\n", usage);
      std::exit(2);
    }
  }
  return batches.empty() ? fallback : batches;
}

} // namespace dlc::bench

#endif // DLC_BENCH_CONVALGORITHMBENCH_H
