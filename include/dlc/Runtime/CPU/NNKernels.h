//===- NNKernels.h - CPU kernels of the neural-network ops, reference and oneDNN ===//
//
// Plain-pointer kernels over contiguous f32 buffers, one pair per op: `ref::` is the
// plain-loop oracle (slow, obviously right), `onednn::` the fast one. The runtime's op
// registry calls them from a device's worker thread; tests compare the two on random
// inputs and check the reference gradients against finite differences.
//
// Layouts follow MXNet: activations NCHW, convolution weights OIHW, dense weights
// (units, in_units). Output buffers are written entirely (never accumulated into).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_CPU_NNKERNELS_H
#define DLC_RUNTIME_CPU_NNKERNELS_H

#include "dlc/Core/KernelGeometry.h"

#include <cstdint>

namespace dlc {
struct KernelMemo; // dlc/Runtime/Engine/Kernel.h
} // namespace dlc

namespace dlc::cpu_kernels {

/// Sizes of one 2-D convolution. OH/OW follow the dialect's rule
/// `(H + 2*pad - dilation*(KH-1) - 1) / stride + 1`.
struct Conv2DGeometry {
  int64_t N, C, H, W;       // input
  int64_t O, KH, KW;        // weight is (O, C/groups, KH, KW)
  int64_t OH, OW;           // output is (N, O, OH, OW)
  int64_t strideH = 1, strideW = 1;
  int64_t padH = 0, padW = 0;
  int64_t dilationH = 1, dilationW = 1;
  int64_t groups = 1;
  // onednn:: only: the layouts of x/dx and of y/dy (dlc/Core/Layout.h); the channel
  // count of a blocked side is a multiple of its channel block.
  Layout inputLayout = Layout::plain, outputLayout = Layout::plain;
  // onednn:: only: Winograd where oneDNN has it for this shape and CPU (else direct);
  // the reference kernels always sum the window.
  op_enums::ConvAlgorithm algorithm = op_enums::ConvAlgorithm::direct;
};

/// Sizes of one 2-D pooling (shared with the GPU kernels).
using kernels::Pool2DGeometry;
namespace pool_index = kernels::pool_index;
using kernels::kMaxIndexedPoolTaps;

/// Batch norm over axis 1 of (N, C, S...) with S the product of the trailing dims.
struct BatchNormGeometry {
  int64_t N, C, S;
  // onednn:: only: the layout of x/dx and y/dy (a blocked one: the trailing dims as one
  // spatial axis of S, C a multiple of its channel block).
  Layout layout = Layout::plain;
};

/// Where a kernel keeps its weights as it prepared them for the library (reordered into
/// oneDNN's layout, Winograd-transformed) from one call to the next: a compiled
/// program's step whose weights only change with the parameters passes its memo and the
/// generation of its weights, which the program changes whenever they may have changed.
/// With the generation the memo was filled in and the same weights buffer, the kernel
/// skips the preparation. Empty (eager calls, training): prepared on every call. The
/// reference kernels ignore it.
struct WeightsMemo {
  KernelMemo *memo = nullptr;
  uint64_t generation = 0;
};

/// What a dense layer applies to its result in the same pass (dlc-fuse's dense_relu and
/// dense_gelu regions): nothing, max(y, 0), or GELU (with erf, as dlc.gelu).
struct DenseEpilogue {
  enum Kind { none, relu, gelu } kind = none;
  DenseEpilogue(bool relu = false) : kind(relu ? Kind::relu : Kind::none) {} // NOLINT
  DenseEpilogue(Kind kind) : kind(kind) {}                                   // NOLINT
  bool operator==(const DenseEpilogue &other) const { return kind == other.kind; }
};

/// What a forward convolution applies to its result in the same pass (dlc-fuse's
/// conv2d_relu, conv2d_relu6 and conv2d_silu regions): nothing, max(y, 0),
/// min(max(y, 0), cap), or y * sigmoid(y).
struct ConvEpilogue {
  bool relu = false;
  float cap = 0;     ///< above 0: the ReLU is capped there (ReLU6's 6)
  bool silu = false; ///< y * sigmoid(y) instead of a ReLU (EfficientNet's SiLU)
  ConvEpilogue(bool relu = false) : relu(relu) {} // NOLINT: a bool is the plain ReLU
  static ConvEpilogue capped(float cap) {
    ConvEpilogue e(true);
    e.cap = cap;
    return e;
  }
  static ConvEpilogue swish() {
    ConvEpilogue e;
    e.silu = true;
    return e;
  }
  bool any() const { return relu || silu; }
};

// The kernels that both ref:: (the plain-loop oracle) and onednn:: (the fast ones,
// oneDNN primitives cached by shape, one cache per thread, so each device's worker
// thread keeps its own) provide, with one contract, declared in each namespace below.
// x, dx: (N,C,H,W); w, dw: (O,C/groups,KH,KW); b, db: (O) or nullptr; y, dy:
// (N,O,OH,OW). With an `epilogue`, y = max(conv + b, 0) (capped where it says),
// dlc-fuse's; `memo` may keep the prepared weights (WeightsMemo).
// Pooling: y, dy (N,C,OH,OW); count_include_pad divides by the full window (MXNet's
// default) or by its in-bounds part.
// Batch norm: x, y, dy, dx (N,C,S); gamma, beta, mean, var, dgamma, dbeta (C). Training
// normalizes with the batch statistics and returns them (var biased, / N*S); inference
// with the running ones; backward takes the mean and var training returned.
// Dense: x (M,K), w (units,K), b (units) or nullptr, y (M,units); dx = dy·w,
// dw = dyᵀ·x, db = Σ_rows dy or nullptr.
#define DLC_NN_KERNELS_OF_BOTH                                                            \
  void conv2d_forward(const Conv2DGeometry &g, const float *x, const float *w,            \
                      const float *b, float *y, ConvEpilogue epilogue = {},               \
                      const WeightsMemo &memo = {});                                      \
  void conv2d_backward_data(const Conv2DGeometry &g, const float *dy, const float *w,     \
                            float *dx);                                                   \
  void conv2d_backward_filter(const Conv2DGeometry &g, const float *dy, const float *x,   \
                              float *dw, float *db);                                      \
  void avg_pool2d_forward(const Pool2DGeometry &g, bool countIncludePad, const float *x,  \
                          float *y);                                                      \
  void avg_pool2d_backward(const Pool2DGeometry &g, bool countIncludePad,                 \
                           const float *dy, float *dx);                                   \
  void batch_norm_forward_training(const BatchNormGeometry &g, const float *x,            \
                                   const float *gamma, const float *beta, double epsilon, \
                                   float *y, float *mean, float *var);                    \
  void batch_norm_forward_inference(const BatchNormGeometry &g, const float *x,           \
                                    const float *gamma, const float *beta,                \
                                    const float *runningMean, const float *runningVar,    \
                                    double epsilon, float *y);                            \
  void batch_norm_backward(const BatchNormGeometry &g, const float *dy, const float *x,   \
                           const float *gamma, const float *mean, const float *var,       \
                           double epsilon, float *dx, float *dgamma, float *dbeta);       \
  void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w, \
                     const float *b, float *y, DenseEpilogue epilogue = {});              \
  void dense_backward(int64_t M, int64_t K, int64_t units, const float *dy,               \
                      const float *x, const float *w, float *dx, float *dw, float *db);

namespace ref {
DLC_NN_KERNELS_OF_BOTH

// x is (N,C,H,W), y is (N,C,OH,OW); padding never wins a max
void max_pool2d_forward(const Pool2DGeometry &g, const float *x, float *y);
// the gradient goes to the first maximum of each window (row-major order); with
// `reluGrad` only where that maximum is > 0 (the gradient of a ReLU before the pooling,
// folded in: relu_backward(max_pool2d_backward(dy, x), x))
void max_pool2d_backward(const Pool2DGeometry &g, const float *x, const float *dy, float *dx,
                         bool reluGrad = false);
// max_pool2d_forward that also writes each window's code (see PoolIndex); the window
// must have at most kMaxIndexedPoolTaps taps
void max_pool2d_indexed_forward(const Pool2DGeometry &g, const float *x, float *y,
                                uint8_t *indices);
// max_pool2d_backward from the forward's codes instead of x: the same dx
void max_pool2d_indexed_backward(const Pool2DGeometry &g, const uint8_t *indices,
                                 const float *dy, float *dx, bool reluGrad = false);

// logits is (N,C), labels (N) class indices, loss (N); throws ValueError on a
// label outside [0, C)
void softmax_cross_entropy_forward(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *loss);
// dlogits = (softmax(logits) - onehot(labels)) * dloss[:, None]
void softmax_cross_entropy_backward(int64_t N, int64_t C, const float *dloss,
                                    const float *logits, const int64_t *labels,
                                    float *dlogits);
} // namespace ref

/// The fast CPU kernels of softmax cross-entropy (a language model's (tokens, vocab)
/// logits): rows over the threads, float exps with double sums; same contract as ref's.
namespace fast {
void softmax_cross_entropy_forward(int64_t N, int64_t C, const float *logits,
                                   const int64_t *labels, float *loss);
void softmax_cross_entropy_backward(int64_t N, int64_t C, const float *dloss,
                                    const float *logits, const int64_t *labels,
                                    float *dlogits);
} // namespace fast

namespace onednn {
DLC_NN_KERNELS_OF_BOTH

/// Converts an (N, C, H, W) f32 tensor from layout `from` to layout `to` (C a multiple
/// of the blocked ones' channel block).
void reorder_layout(int64_t N, int64_t C, int64_t H, int64_t W, Layout from, Layout to,
                    const float *src, float *dst);

/// The blocked layout this CPU runs oneDNN's blocked kernels in: nChw16c with AVX-512,
/// nChw8c with AVX2, plain without either (the default of blocked_layout()).
Layout preferred_blocked_layout();

/// y = softmax(x) along `axis` of a plain f32 tensor of `shape` (rank 1 to 12, no zero
/// dimension); the reference is the generic kernel of ReduceKernels.cpp.
void softmax_forward(const std::vector<int64_t> &shape, int64_t axis, const float *x, float *y);

/// Number of primitives in the calling thread's cache (for tests of the cache).
int64_t cached_primitive_count();

/// The two ways dense_forward can compute (it times both once per shape and keeps the
/// faster): oneDNN's inner product, or its matmul reading w (units, K) transposed in
/// place. For tests, which check each against the reference.
enum class DenseForm { inner_product, matmul };
void dense_forward_as(DenseForm form, int64_t M, int64_t K, int64_t units, const float *x,
                      const float *w, const float *b, float *y, DenseEpilogue epilogue = {});
} // namespace onednn

namespace direct {
// Hand-written kernels where oneDNN is slow (MaxPoolKernels.cpp and BatchNormInference.cpp
// say why). Same contracts as ref::. The max poolings need plane offsets (H*W) that fit
// in int32; max_pool2d_supported says whether `g` qualifies.
bool max_pool2d_supported(const Pool2DGeometry &g);
void max_pool2d_forward(const Pool2DGeometry &g, const float *x, float *y);
void max_pool2d_backward(const Pool2DGeometry &g, const float *x, const float *dy, float *dx,
                         bool reluGrad = false);
void max_pool2d_indexed_forward(const Pool2DGeometry &g, const float *x, float *y,
                                uint8_t *indices);
void max_pool2d_indexed_backward(const Pool2DGeometry &g, const uint8_t *indices,
                                 const float *dy, float *dx, bool reluGrad = false);
/// Inference batch norm (ref::'s contract) in any layout of `g`: one pass, x * scale +
/// shift per channel, the statistics folded in float (BatchNormInference.cpp).
void batch_norm_forward_inference(const BatchNormGeometry &g, const float *x,
                                  const float *gamma, const float *beta,
                                  const float *runningMean, const float *runningVar,
                                  double epsilon, float *y);
/// The activation after a training batch norm that its direct kernels fold in
/// (dlc-fuse's batch_norm_activation regions).
enum class NormActivation { none, relu, relu6 };
/// ref::batch_norm_forward_training, then `activation` on y (on y + residual, with a
/// residual of y's shape and layout), in any layout of `g`, the activation and the
/// residual in the normalizing pass (BatchNormActivation.cpp).
void batch_norm_forward_training(const BatchNormGeometry &g, const float *x, const float *gamma,
                                 const float *beta, double epsilon, NormActivation activation,
                                 float *y, float *mean, float *var,
                                 const float *residual = nullptr);
/// ref::batch_norm_backward of dy = the activation's gradient of dz, read from the
/// activation's output z (ReLU: z > 0; ReLU6: 0 < z < 6; none: dz, z unread), in any
/// layout of `g`: without storing dy, or, with `masked` (and an activation), writing dy
/// there in dz's layout (for another reader: a residual's shortcut).
void batch_norm_backward(const BatchNormGeometry &g, const float *dz, const float *z,
                         NormActivation activation, const float *x, const float *gamma,
                         const float *mean, const float *var, double epsilon, float *dx,
                         float *dgamma, float *dbeta, float *masked = nullptr);
/// onednn::reorder_layout's contract on the calling thread, for small tensors, where a
/// oneDNN reorder's fixed cost dwarfs the move (ReorderSmall.cpp).
void reorder_layout(int64_t N, int64_t C, int64_t H, int64_t W, Layout from, Layout to,
                    const float *src, float *dst);
/// Whether a dense layer is small enough for direct::dense_forward to beat oneDNN's
/// fixed cost (and has an epilogue it computes: none or ReLU).
bool dense_is_small(int64_t M, int64_t K, int64_t units, DenseEpilogue epilogue);
/// ref::dense_forward's contract (none or ReLU epilogue), float sums, AVX2 where the CPU
/// has it (DenseSmall.cpp); computes any size, fast where dense_is_small.
void dense_forward(int64_t M, int64_t K, int64_t units, const float *x, const float *w,
                   const float *b, float *y, DenseEpilogue epilogue = {});
/// For tests: with `portable`, the kernels skip their AVX-512 code even where the CPU has
/// it, as on machines without. Returns the previous setting. Not thread-safe.
bool use_portable_code(bool portable);
} // namespace direct

#undef DLC_NN_KERNELS_OF_BOTH

} // namespace dlc::cpu_kernels

#endif // DLC_RUNTIME_CPU_NNKERNELS_H
