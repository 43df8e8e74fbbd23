//===- OneDNNPrimitiveCache.h - per-thread oneDNN engine, stream and primitive cache ===//
//
// Internal to the oneDNN kernels. Creating a oneDNN primitive costs far more than
// running it on the small tensors of a training step, so each kernel is built once per
// shape and kept in a cache owned by the calling thread: the runtime gives every device
// its own worker thread, and a per-thread cache needs no lock.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_ONEDNNPRIMITIVECACHE_H
#define DLC_LIB_RUNTIME_CPU_ONEDNNPRIMITIVECACHE_H

#include "dlc/Core/Layout.h"
#include "dlc/Runtime/CPU/NNKernels.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlc::cpu_kernels::onednn::detail {

/// The CPU engine of the calling thread.
const dnnl::engine &threadEngine();

/// One kernel: a sequence of primitives and the memory objects they read and write.
/// Memories bound with `bindUserBuffer` own no storage; every `run` points them at the
/// caller's buffers, so a cached kernel serves any buffers of its shape.
class CachedKernel {
public:
  using Args = std::unordered_map<int, dnnl::memory>;

  /// A memory of layout `md` that `run` rebinds to its next buffer argument (in the
  /// order of the `bindUserBuffer` calls).
  dnnl::memory bindUserBuffer(const dnnl::memory::desc &md);
  /// A memory of layout `md` with storage owned by the kernel, for intermediate data the
  /// caller never sees (the max-pooling workspace).
  dnnl::memory ownBuffer(const dnnl::memory::desc &md);
  /// Appends a primitive to run with `args`.
  void addStep(const dnnl::primitive &primitive, Args args);

  /// A user buffer of layout `user` as a primitive wants to read it, in layout `wanted`
  /// (oneDNN's choice for format_tag::any): the user's memory itself when the layouts
  /// agree, else an owned copy that a reorder step, added now, fills. Call before
  /// adding the primitive.
  dnnl::memory userInputAs(const dnnl::memory::desc &user, const dnnl::memory::desc &wanted);
  /// Like userInputAs, for the weights a run may find already prepared in its
  /// WeightsMemo: the reorder into `wanted` then writes into the memo and is skipped
  /// while the memo holds them (at most one such input per kernel).
  dnnl::memory memoInputAs(const dnnl::memory::desc &user, const dnnl::memory::desc &wanted);
  /// A user buffer a primitive writes in layout `wanted`; when that is not the user's
  /// layout, finishOutputs() adds the reorder into the user's buffer.
  dnnl::memory userOutputAs(const dnnl::memory::desc &user, const dnnl::memory::desc &wanted);
  /// Appends the reorders of outputs bound with userOutputAs; call after the primitive.
  void finishOutputs();

  /// Points the user memories at `buffers` (same order as they were bound) and runs
  /// every step on the calling thread's stream, waiting for completion.
  void run(std::initializer_list<const void *> buffers, const WeightsMemo &memo = {});

  size_t primitiveCount() const { return steps.size(); }

private:
  std::vector<dnnl::memory> userBuffers;
  std::vector<dnnl::memory> ownedBuffers;
  std::vector<std::pair<dnnl::primitive, Args>> steps;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> pendingOutputs; // (internal, user)
  // memoInputAs's: the reorder step that prepares the weights (-1: none), the user
  // buffer it reads, where it writes (rebound at each run), and the kernel's own place
  // for runs without a memo.
  long memoStep = -1;
  size_t memoUser = 0;
  dnnl::memory memoPrepared, memoFallback;
};

/// The calling thread's kernel for `key`; `build` fills a new one the first time the key
/// is seen. A build that throws leaves nothing behind, and its oneDNN error is rethrown
/// as std::runtime_error naming the key.
CachedKernel &cachedKernel(const std::string &key,
                           const std::function<void(CachedKernel &)> &build);

/// Like cachedKernel, for ops with several ways to build the kernel (plain layouts, or
/// oneDNN's blocked ones with reorders): the first time `key` is seen, each candidate is
/// built and timed on `buffers` (the call's own arguments; the kernels only write their
/// outputs, so running them more than once is harmless) and the fastest is kept.
/// Kernels whose `decisionKey` is the same share the choice of candidate (a convolution
/// with a fused ReLU takes its plain twin's layout, so both sum in the same order and
/// fused results equal unfused ones bit for bit); by default it is `key`.
CachedKernel &cachedFastestKernel(const std::string &key,
                                  const std::vector<std::function<void(CachedKernel &)>> &builds,
                                  std::initializer_list<const void *> buffers,
                                  const std::string &decisionKey = "");

/// Number of primitives in the calling thread's cache.
int64_t threadPrimitiveCount();

/// A cache key: the op's name followed by every field that shapes its primitives.
std::string geometryKey(const char *op, std::initializer_list<int64_t> fields);

/// Plain f32 memory descriptor.
inline dnnl::memory::desc f32Desc(const dnnl::memory::dims &dims,
                                  dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag);
}

/// With `relu`, a ReLU applied to the accumulator before the store (oneDNN's post-op):
/// dlc-fuse's conv2d + relu and dense + relu epilogues in one pass over the output.
inline dnnl::primitive_attr reluEpilogue(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  return attr;
}

/// A clip(low, high) post-op (ReLU6 is clip(0, 6)).
/// SiLU, y * sigmoid(y): oneDNN's swish post-op with alpha 1.
inline dnnl::primitive_attr swishEpilogue() {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);
  attr.set_post_ops(ops);
  return attr;
}

inline dnnl::primitive_attr clipEpilogue(float low, float high) {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, low, high);
  attr.set_post_ops(ops);
  return attr;
}

/// oneDNN's format tag of a 4-D activation in `layout` (dlc/Core/Layout.h).
inline dnnl::memory::format_tag activationTag(Layout layout) {
  using tag = dnnl::memory::format_tag;
  return layout == Layout::nChw16c ? tag::nChw16c
         : layout == Layout::nChw8c ? tag::nChw8c
                                    : tag::nchw;
}

/// The right padding that makes oneDNN's output-size rule,
/// (in + padLeft + padRight - window) / stride + 1 with floor, give exactly `out`.
/// Under the floor rule this is at most padLeft (the trimmed rows are never read);
/// under ceil-mode pooling it may exceed padLeft. `window` is the dilated extent.
inline int64_t paddingRightFor(int64_t in, int64_t out, int64_t window, int64_t stride,
                               int64_t padLeft) {
  // Clamped at 0: oneDNN rejects negative padding, and when the exact value is negative
  // the floor rule already yields `out` with 0 (the gap is smaller than one stride).
  return std::max<int64_t>(0, (out - 1) * stride + window - in - padLeft);
}

} // namespace dlc::cpu_kernels::onednn::detail

#endif // DLC_LIB_RUNTIME_CPU_ONEDNNPRIMITIVECACHE_H
