//===- LossKernels.cpp - softmax cross-entropy, fast -----------------------------===//
//
// A language model's loss reads (tokens, vocab) logits, 25 M floats for GPT-2 at 512
// tokens: the rows go over the threads, each row's exps in float with the sums in double
// (the reference computes in double). The backward recomputes the row's maximum and sum
// (the forward's are not kept) and writes softmax - onehot in one more pass.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "dlc/Runtime/CPU/NNKernels.h"

#include <cmath>
#include <limits>

namespace dlc::cpu_kernels::fast {

namespace {

void checkLabels(int64_t N, int64_t C, const int64_t *labels) {
  for (int64_t n = 0; n < N; ++n)
    if (labels[n] < 0 || labels[n] >= C)
      throw dlc::ValueError("softmax_cross_entropy: label " + std::to_string(labels[n]) +
                            " of row " + std::to_string(n) + " is outside [0, " +
                            std::to_string(C) + ") for " + std::to_string(C) + " classes");
}

/// The row's maximum and sum of exp(logit - maximum).
void rowTerms(int64_t C, const float *row, float &maximum, double &sum) {
  maximum = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < C; ++c)
    maximum = std::max(maximum, row[c]);
  double total = 0;
  for (int64_t c = 0; c < C; ++c)
    total += double(std::exp(row[c] - maximum));
  sum = total;
}

} // namespace

void softmax_cross_entropy_forward(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *loss) {
  checkLabels(N, C, labels);
  parallel_for(N, N * C, [&](int64_t n) {
    const float *row = logits + n * C;
    float maximum;
    double sum;
    rowTerms(C, row, maximum, sum);
    loss[n] = float(std::log(sum) + double(maximum) - double(row[labels[n]]));
  });
}

void softmax_cross_entropy_backward(int64_t N, int64_t C, const float *dloss,
                                    const float *logits, const int64_t *labels,
                                    float *dlogits) {
  checkLabels(N, C, labels);
  parallel_for(N, N * C, [&](int64_t n) {
    const float *row = logits + n * C;
    float *out = dlogits + n * C;
    float maximum;
    double sum;
    rowTerms(C, row, maximum, sum);
    const float scale = float(double(dloss[n]) / sum);
    for (int64_t c = 0; c < C; ++c)
      out[c] = std::exp(row[c] - maximum) * scale;
    out[labels[n]] -= dloss[n];
  });
}

} // namespace dlc::cpu_kernels::fast
