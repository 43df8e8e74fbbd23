//===- StridedRows.h - copies a strided view row by row ------------------------===//
//
// What slices and transposes share: the output walked row by row (its last dimension),
// rows split over the threads, each row read from the input at a base offset plus the
// walk's strides; a row whose elements are adjacent in the input is one memcpy.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_STRIDEDROWS_H
#define DLC_LIB_RUNTIME_CPU_STRIDEDROWS_H

#include "CpuKernels.h"
#include "dlc/Core/KernelGeometry.h"

#include <cstring>

namespace dlc::cpu_kernels {

/// Calls move(row, at) for every row of a sliced tensor of shape `out`: `row` the
/// index of the row's first element, `at` the input element it pairs with.
template <typename Move>
inline void forEachRow(const Shape &out, const kernels::SliceWalk &walk, size_t width, Move &&move) {
  int64_t total = shape_rules::numElements(out);
  if (total == 0)
    return;
  if (out.empty()) {
    move(int64_t(0), walk.base);
    return;
  }
  const int64_t inner = out.back(), rows = total / inner;
  parallel_for(rows, total * int64_t(width) / 4, [&](int64_t r) {
    int64_t at = walk.base;
    for (int64_t d = int64_t(out.size()) - 2, rest = r; d >= 0; --d) {
      at += (rest % out[size_t(d)]) * walk.strides[size_t(d)];
      rest /= out[size_t(d)];
    }
    move(r * inner, at);
  });
}

/// Copies `count` elements of type Word between strided places.
template <typename Word>
inline void copyStrided(const void *from, int64_t fromStride, void *to, int64_t toStride, int64_t count) {
  const Word *source = static_cast<const Word *>(from);
  Word *target = static_cast<Word *>(to);
  for (int64_t j = 0; j < count; ++j)
    target[j * toStride] = source[j * fromStride];
}

inline void copyRow(const char *from, int64_t fromStride, char *to, int64_t toStride, int64_t count,
             size_t width) {
  if (fromStride == 1 && toStride == 1) {
    std::memcpy(to, from, size_t(count) * width);
    return;
  }
  switch (width) {
  case 1:
    return copyStrided<uint8_t>(from, fromStride, to, toStride, count);
  case 2:
    return copyStrided<uint16_t>(from, fromStride, to, toStride, count);
  case 4:
    return copyStrided<uint32_t>(from, fromStride, to, toStride, count);
  default:
    return copyStrided<uint64_t>(from, fromStride, to, toStride, count);
  }
}

} // namespace dlc::cpu_kernels

#endif // DLC_LIB_RUNTIME_CPU_STRIDEDROWS_H
