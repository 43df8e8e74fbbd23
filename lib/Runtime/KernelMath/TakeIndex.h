//===- TakeIndex.h - where an index of dlc.take points, on every device -------===//
//
// take (and its gradient) read one slice of the input per index: an index in
// [-size, size) names slice index (counted from the end when negative, as NumPy's
// take does), any other is an error the kernels report with the index's position. The
// CPU kernels and the GPU threads decide it with this one function.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_KERNELMATH_TAKEINDEX_H
#define DLC_LIB_RUNTIME_KERNELMATH_TAKEINDEX_H

#include "dlc/Core/HostDevice.h"

#include <cstdint>

namespace dlc::take_index {

/// The slice `index` names along an axis of `size`, or -1 when it names none.
DLC_HOST_DEVICE int64_t slice(int64_t index, int64_t size) {
  if (index < -size || index >= size)
    return -1;
  return index < 0 ? index + size : index;
}

} // namespace dlc::take_index

#endif // DLC_LIB_RUNTIME_KERNELMATH_TAKEINDEX_H
