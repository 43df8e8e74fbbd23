//===- Window.h - the window of ONNX's convolutions and pools (internal) -------===//
//
// kernel_shape, strides, dilations, pads and auto_pad as one geometry per spatial axis,
// and the two-axis form dlc's convolution and pool kernels take (a 1-D window is the
// width of a 2-D one of height 1).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_ONNX_WINDOW_H
#define DLC_LIB_ONNX_WINDOW_H

#include "Ops.h"

#include <array>

namespace dlc::onnx::detail {

/// The largest window, stride, dilation or padding a file may give: the arithmetic on
/// them stays far from overflowing.
constexpr int64_t kMostWindow = int64_t(1) << 31;

/// A window over any number of spatial axes, as ONNX gives it after auto_pad.
struct Geometry {
  std::vector<int64_t> kernel, stride, dilation;
  std::vector<int64_t> begin, end; ///< padding
};

/// The same for two axes (height first), what dlc's kernels take.
struct Window {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1};
  std::array<int64_t, 2> begin{0, 0}, end{0, 0}; ///< padding
  bool symmetric() const { return begin == end; }
};

/// Reads kernel_shape/strides/dilations/pads/auto_pad for `spatial` axes of an input
/// whose spatial sizes are `sizes`; fails naming an attribute that does not fit.
Geometry readGeometry(const OpContext &c, size_t spatial, const std::vector<int64_t> &kernel,
                      const std::vector<int64_t> &sizes, bool transposed = false);
/// A geometry of 1 or 2 axes as a two-axis window.
Window toWindow(const Geometry &g);
/// Fails before a window's arithmetic allocates more than the import allows (the file's
/// pads, strides and dilations set the sizes): the padded `input`, or for a transposed
/// convolution its whole output plus `extra` (output_padding), `channels` wide.
void checkCreates(const OpContext &c, const Shape &input, int64_t channels, const Geometry &g,
                  bool transposed, const std::vector<int64_t> &extra = {});

/// The attributes every windowed op reads, after `extra`.
std::vector<std::string> with_window_attributes(std::vector<std::string> extra);

/// The number of spatial axes of a 1-D or 2-D input; fails for others.
size_t spatialAxes(const OpContext &c, const Shape &shape);
/// (N, C, W) -> (N, C, 1, W); 4-D tensors stay.
Tensor as2d(const Tensor &x);
/// The inverse of as2d for an input of `spatial` axes.
Tensor back(const Tensor &y, size_t spatial);
/// Explicit padding of the two spatial axes, with `value`.
Tensor padSpatial(const Tensor &x, const Window &w, double value);

} // namespace dlc::onnx::detail

#endif // DLC_LIB_ONNX_WINDOW_H
