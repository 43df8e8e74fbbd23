//===- KernelGeometry.h - index math shared by the CPU and GPU kernels --------===//
//
// How an op's shapes and attributes become loop bounds and strides: broadcasting,
// splitting at an axis, transposing, pooling windows, and the C++ type of a dtype. The
// CPU kernels (lib/Runtime/CPU) and the CUDA kernels (lib/Runtime/CUDA) both use these,
// so neither backend includes the other's headers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_KERNELGEOMETRY_H
#define DLC_CORE_KERNELGEOMETRY_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/Layout.h"
#include "dlc/Core/ShapeRules.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace dlc::kernels {

using shape_rules::Shape;

/// Calls `f(T{})` with the C++ type of `dtype`, float16 and bfloat16 being `Half` and
/// `BHalf` (the CPU kernels pass dlc's structs, the GPU kernels CUDA's types: the same
/// bits).
template <typename Half, typename BHalf, typename F> void dispatch_dtype_as(DType dtype, F &&f) {
  switch (dtype) {
  case DType::f32:
    return f(float{});
  case DType::f16:
    return f(Half{});
  case DType::bf16:
    return f(BHalf{});
  case DType::i32:
    return f(int32_t{});
  case DType::i64:
    return f(int64_t{});
  case DType::u8:
    return f(uint8_t{});
  case DType::boolean:
    return f(bool{});
  }
}

/// What arithmetic on T computes in: float for the 16-bit floats (`Half`, `BHalf` as in
/// dispatch_dtype_as), T itself otherwise.
template <typename T, typename Half, typename BHalf>
using compute_as =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BHalf>, float, T>;

/// Row-major strides of `shape`, aligned to the last `rank` dimensions of an output,
/// with 0 where `shape` broadcasts (a missing or size-1 dimension).
std::vector<int64_t> broadcast_strides(const Shape &shape, const Shape &out);

/// Splits `shape` around `axis` into (outer, size of axis, inner) element counts.
struct AxisSplit {
  int64_t outer = 1, axis = 1, inner = 1;
};
AxisSplit split_at_axis(const Shape &shape, int64_t axis);

/// Per output dim i of a transpose, the row-major stride of input dim permutation[i].
std::vector<int64_t> transposed_strides(const Shape &input, const std::vector<int64_t> &permutation);

/// Where a slice reads its input: the element of output element 0 (`base`) and, per
/// output dimension, how many input elements one step along it moves (negative for a
/// negative step). Slice and its gradient walk the same way on every device.
struct SliceWalk {
  int64_t base = 0;
  std::vector<int64_t> strides;
};
SliceWalk slice_walk(const Shape &input, const std::vector<int64_t> &begin,
                     const std::vector<int64_t> &step);

/// Sizes of one 2-D pooling; OH/OW as the dialect computes them (floor, or ceil_mode).
struct Pool2DGeometry {
  int64_t N, C, H, W;
  int64_t OH, OW;
  int64_t kernelH, kernelW;
  int64_t strideH = 1, strideW = 1;
  int64_t padH = 0, padW = 0;
  // The CPU's direct kernels only: the layout of x/dx and y/dy (a blocked one: C a
  // multiple of its channel block).
  Layout layout = Layout::plain;
};

/// The code dlc.max_pool2d_indexed writes per output, one byte in the output's layout:
/// the window's first maximum as its tap number (row-major within the window, padding
/// counted: 0 .. kMaxIndexedPoolTaps - 1), with kNotPositive set where that maximum is
/// not > 0 (the gradient of a ReLU before the pooling passes nothing there); kEmpty for
/// a window that covers no input.
namespace pool_index {
constexpr uint8_t kTapMask = 0x7f, kNotPositive = 0x80, kEmpty = 0xff;
} // namespace pool_index
constexpr int64_t kMaxIndexedPoolTaps = 127;

/// The geometry of a 2-D pooling from its (N,C,H,W) input, output and attributes.
Pool2DGeometry pool_geometry(const Shape &x, const Shape &y, const Attrs &a);

/// A convolution step with a pooling epilogue (dlc-fuse-conv-pool's conv2d_max_pool2d
/// regions) carries the pooling's attributes under this prefix: "pool.kernel",
/// "pool.stride", ...; the convolution's own keep their names.
inline constexpr char kPoolEpiloguePrefix[] = "pool.";
/// The filter gradient of such a region's backward (max_pool2d_backward_conv2d) runs
/// the pooling's gradient first (its attributes under kPoolEpiloguePrefix) and the data
/// gradient beside it, whose attributes are kept under this prefix.
inline constexpr char kDataGradientPrefix[] = "data.";

} // namespace dlc::kernels

#endif // DLC_CORE_KERNELGEOMETRY_H
