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
/// DTypeError (bool tensors; a mean of integers) or std::invalid_argument naming the
/// tensors.
std::vector<Tensor> all_reduce(const std::vector<Tensor> &tensors, bool mean = false);

} // namespace dlc::npx

#endif // DLC_FRONTEND_COLLECTIVES_H
