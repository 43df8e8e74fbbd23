//===- ReducePlan.h - how the GPU reductions walk their input -----------------===//
//
// A reduction as (kept dims) x (reduced dims), and the split of each output's reduction
// into parts, one GPU block per (output, part). Host/device functions, so that
// unittests/GPU/GpuKernelMathTest.cpp can check on the CPU that the blocks' threads visit
// every element exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CUDA_REDUCEPLAN_H
#define DLC_LIB_RUNTIME_CUDA_REDUCEPLAN_H

#include "PoolWindows.h" // DLC_HOST_DEVICE

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlc::cuda {

constexpr int kMaxReduceRank = 8;

/// An input walked as (kept dims) x (reduced dims): an output element and a position
/// inside its reduction each map to an input offset through their own strides.
/// Neighbouring dims of the same kind are merged, so the innermost reduced dim (the
/// "row" a block walks with one offset computation) is as long as it can be.
struct ReducePlan {
  int keptRank = 0, reducedRank = 0;
  int64_t keptShape[kMaxReduceRank] = {}, keptStride[kMaxReduceRank] = {};
  int64_t reducedShape[kMaxReduceRank] = {}, reducedStride[kMaxReduceRank] = {};
  int64_t outputs = 1, length = 1; // output elements, elements per reduction
};

/// The plan of reducing contiguous `shape` over the dims flagged in `reduced`
/// (rank <= kMaxReduceRank).
inline ReducePlan make_reduce_plan(const std::vector<int64_t> &shape,
                                   const std::vector<bool> &reduced) {
  ReducePlan plan;
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[size_t(d)] = strides[size_t(d + 1)] * shape[size_t(d + 1)];
  for (int64_t d = 0; d < rank; ++d) {
    bool isReduced = reduced[size_t(d)];
    int &count = isReduced ? plan.reducedRank : plan.keptRank;
    int64_t *dims = isReduced ? plan.reducedShape : plan.keptShape;
    int64_t *dimStrides = isReduced ? plan.reducedStride : plan.keptStride;
    (isReduced ? plan.length : plan.outputs) *= shape[size_t(d)];
    if (d > 0 && reduced[size_t(d - 1)] == isReduced) {
      dims[count - 1] *= shape[size_t(d)]; // contiguous: the merged dim keeps the inner stride
      dimStrides[count - 1] = strides[size_t(d)];
    } else {
      dims[count] = shape[size_t(d)];
      dimStrides[count++] = strides[size_t(d)];
    }
  }
  return plan;
}

/// The offset of element `index` of a (shape, stride) index space of rank `rank`.
DLC_HOST_DEVICE int64_t offset_of(int64_t index, int rank, const int64_t *shape,
                                  const int64_t *stride) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (index % shape[d]) * stride[d];
    index /= shape[d];
  }
  return offset;
}

/// How many parts each output's reduction is split into: about four blocks per
/// multiprocessor in all, each part at least 4096 elements, at most 1024 parts.
inline int64_t parts_for(const ReducePlan &plan, int multiprocessors) {
  int64_t wanted = (4 * int64_t(multiprocessors) + plan.outputs - 1) / plan.outputs;
  int64_t most = plan.length / 4096;
  if (wanted > most)
    wanted = most;
  if (wanted > 1024)
    wanted = 1024;
  return wanted < 1 ? 1 : wanted;
}

/// Calls visit(offset) for the elements that thread `thread` of `threads` handles in
/// part `part` of `parts` of output `output`: the flattened reduction range
/// [length*part/parts, length*(part+1)/parts). Rows (the innermost reduced dim) at least
/// as long as the block are walked row by row, the threads striding along each row and
/// the offset computed once per row; shorter rows would leave threads idle, so then the
/// threads stride over the flattened range, computing each element's offset. No barrier
/// inside: a block may synchronize after it.
template <typename Visit>
DLC_HOST_DEVICE void visit_part(const ReducePlan &plan, int64_t output, int64_t part,
                                int64_t parts, int64_t thread, int64_t threads, Visit &&visit) {
  const int rowDim = plan.reducedRank - 1;
  const int64_t rowLength = plan.reducedShape[rowDim], rowStride = plan.reducedStride[rowDim];
  int64_t begin = plan.length * part / parts, end = plan.length * (part + 1) / parts;
  int64_t base = offset_of(output, plan.keptRank, plan.keptShape, plan.keptStride);
  if (rowLength < threads) {
    for (int64_t at = begin + thread; at < end; at += threads) {
      int64_t row = at / rowLength, column = at - row * rowLength;
      visit(base + offset_of(row, rowDim, plan.reducedShape, plan.reducedStride) +
            column * rowStride);
    }
    return;
  }
  int64_t row = begin / rowLength, column = begin % rowLength;
  for (int64_t at = begin; at < end; ++row, column = 0) {
    int64_t rowBase = base + offset_of(row, rowDim, plan.reducedShape, plan.reducedStride);
    int64_t take = rowLength - column < end - at ? rowLength - column : end - at;
    for (int64_t q = thread; q < take; q += threads)
      visit(rowBase + (column + q) * rowStride);
    at += take;
  }
}

} // namespace dlc::cuda

#endif // DLC_LIB_RUNTIME_CUDA_REDUCEPLAN_H
