//===- Collectives.h - all-reduce of one tensor per device (npx) -------------===//
#ifndef DLC_FRONTEND_COLLECTIVES_H
#define DLC_FRONTEND_COLLECTIVES_H

#include "dlc/Frontend/Tensor.h"

#include <vector>

namespace dlc::npx {

/// The element-wise sum (or, with `mean`, the average) of `tensors`, one per device, as
/// one result on each of those devices, in the same order. The tensors must share shape
/// and dtype and sit on distinct devices. On two or more GPUs this is one NCCL all-reduce
/// (each GPU's part queued after that GPU's earlier work); otherwise the tensors meet on
/// the first device, in order, and the result is copied to the others. Not recorded by
/// autograd. The results never share memory with the inputs. Throws ShapeError,
/// DTypeError (bool tensors; a mean of integers) or ValueError naming the
/// tensors.
///
/// With `over_processes`, in a job of several processes (dist), every process takes part
/// with as many tensors, and each result is the sum (mean) over all the processes'
/// tensors: on GPUs one NCCL all-reduce across the processes, on CPUs dist::all_reduce
/// (float32 only).
std::vector<Tensor> all_reduce(const std::vector<Tensor> &tensors, bool mean = false,
                               bool over_processes = false);

/// all_reduce of many tensors at once: items[k] holds one tensor per device (the same
/// devices, in the same order, for every item) and the result's [k] their sum on each of
/// those devices. Items of one dtype are flattened into buckets of at most
/// `bucket_bytes` (an item larger than that has a bucket of its own), one all-reduce
/// per bucket, then split back into views of the bucket's result: on GPUs one NCCL call
/// per bucket instead of one per tensor (PyTorch DDP's gradient buckets). Each element is
/// the sum all_reduce would give it; the results never share memory with the inputs.
/// `over_processes` as for all_reduce (every process makes the same buckets).
std::vector<std::vector<Tensor>> all_reduce_coalesced(const std::vector<std::vector<Tensor>> &items,
                                                      bool mean = false,
                                                      size_t bucket_bytes = size_t(64) << 20,
                                                      bool over_processes = false);

} // namespace dlc::npx

#endif // DLC_FRONTEND_COLLECTIVES_H
