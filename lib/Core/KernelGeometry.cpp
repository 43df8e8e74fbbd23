//===- KernelGeometry.cpp - index math shared by the CPU and GPU kernels ------===//
#include "dlc/Core/KernelGeometry.h"

namespace dlc::kernels {

std::vector<int64_t> broadcast_strides(const Shape &shape, const Shape &out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  size_t offset = out.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[offset + i] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

AxisSplit split_at_axis(const Shape &shape, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d < axis)
      split.outer *= shape[d];
    else if (d == axis)
      split.axis = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

std::vector<int64_t> transposed_strides(const Shape &input,
                                        const std::vector<int64_t> &permutation) {
  size_t rank = input.size();
  std::vector<int64_t> inStrides(rank, 0), strides(permutation.size(), 0);
  for (int64_t d = int64_t(rank) - 1, stride = 1; d >= 0; --d) {
    inStrides[size_t(d)] = stride;
    stride *= input[size_t(d)];
  }
  for (size_t i = 0; i < permutation.size(); ++i)
    strides[i] = inStrides[size_t(permutation[i])];
  return strides;
}

SliceWalk slice_walk(const Shape &input, const std::vector<int64_t> &begin,
                     const std::vector<int64_t> &step) {
  SliceWalk walk;
  walk.strides.assign(input.size(), 0);
  for (int64_t d = int64_t(input.size()) - 1, stride = 1; d >= 0; --d) {
    walk.base += begin[size_t(d)] * stride;
    walk.strides[size_t(d)] = step[size_t(d)] * stride;
    stride *= input[size_t(d)];
  }
  return walk;
}

Pool2DGeometry pool_geometry(const Shape &x, const Shape &y, const Attrs &a) {
  auto pair = [&](const char *name, int64_t fallback) {
    std::vector<int64_t> values = a.get_ints(name, {fallback, fallback});
    return std::vector<int64_t>{values.at(0), values.at(1)};
  };
  std::vector<int64_t> kernel = pair("kernel", 1), stride = pair("stride", 1),
                       padding = pair("padding", 0);
  Pool2DGeometry g{x[0], x[1], x[2], x[3], y[2], y[3], kernel[0], kernel[1]};
  g.strideH = stride[0];
  g.strideW = stride[1];
  g.padH = padding[0];
  g.padW = padding[1];
  return g;
}

} // namespace dlc::kernels
