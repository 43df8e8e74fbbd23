//===- Numerics.h - the numerics guard: the first op to make a NaN or infinity ===//
//
// A loss that turns NaN says nothing of where it started. With the guard on, every
// kernel's floating-point outputs are checked as it finishes, eager ops and compiled
// programs alike, and the first op whose output holds a NaN or an infinity fails with
// an error naming it, its output, the element and whether its inputs were finite; the
// error surfaces at the next read, like any kernel's. It costs a pass over every output
// (on a GPU, a copy to the host after each eager op), so it is for finding a fault,
// not for production runs. Compiled programs on GPUs are not checked yet.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_NUMERICS_H
#define DLC_RUNTIME_ENGINE_NUMERICS_H

#include "dlc/Runtime/Engine/Kernel.h"

#include <vector>

namespace dlc {

/// Turns the guard on or off; DLC_CHECK_NUMERICS=1 turns it on at start-up.
void set_check_numerics(bool enabled);
bool check_numerics_enabled();

/// The position of the first NaN or infinity among `count` elements of `dtype` at
/// `data` (host memory), or -1; 0 for types that have none (integers, bool).
int64_t first_non_finite(const void *data, DType dtype, int64_t count);

/// Throws dlc::Error when one of the kernel's `outputs` (host memory) holds a NaN or an
/// infinity: "numerics check: dlc.log made -inf at element 3 of output #0 (4x8 float32
/// on cpu(0)) from finite inputs". Does nothing on other devices.
void check_finite_outputs(const char *op, Device device, const std::vector<TensorRef> &inputs,
                          const std::vector<TensorRef> &outputs);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_NUMERICS_H
