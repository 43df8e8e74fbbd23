//===- Window.cpp - the window of ONNX's convolutions and pools ----------------===//
#include "Window.h"

#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"

namespace dlc::onnx::detail {

Geometry readGeometry(const OpContext &c, size_t spatial, const std::vector<int64_t> &kernel,
                      const std::vector<int64_t> &sizes, bool transposed) {
  auto fill = [&](const char *name, int64_t fallback) {
    std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(spatial, fallback));
    if (v.size() != spatial)
      c.fail(std::string("attribute '") + name + "' has " + std::to_string(v.size()) +
             " values for " + std::to_string(spatial) + " spatial axes");
    for (int64_t x : v)
      if (x < 1 || x > kMostWindow)
        c.fail(std::string("attribute '") + name + "' holds " + std::to_string(x) +
               ", expected values from 1 to 2^31");
    return v;
  };
  if (kernel.size() != spatial || sizes.size() != spatial)
    c.fail("a window of " + std::to_string(kernel.size()) + " axes for an input of " +
           std::to_string(sizes.size()) + " spatial axes");
  std::vector<int64_t> strides = fill("strides", 1), dilations = fill("dilations", 1);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (pads.size() != 2 * spatial)
    c.fail("attribute 'pads' has " + std::to_string(pads.size()) + " values, expected " +
           std::to_string(2 * spatial));
  for (int64_t p : pads)
    if (p < 0 || p > kMostWindow)
      c.fail("padding " + std::to_string(p) + " (expected 0 to 2^31)");
  for (int64_t k : kernel)
    if (k < 1 || k > kMostWindow)
      c.fail("a window of " + std::to_string(k) + " (expected 1 to 2^31)");
  std::string autoPad = c.attr_string("auto_pad", "NOTSET");
  Geometry g{kernel, strides, dilations, {}, {}};
  for (size_t a = 0; a < spatial; ++a) {
    int64_t begin = pads[a], end = pads[a + spatial];
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      if (transposed)
        c.fail("auto_pad=" + autoPad + " on a transposed convolution");
      int64_t out = (sizes[a] + strides[a] - 1) / strides[a];
      int64_t total =
          std::max<int64_t>((out - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1 - sizes[a], 0);
      begin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (autoPad == "VALID") {
      begin = end = 0;
    } else if (autoPad != "NOTSET") {
      c.fail("auto_pad='" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
    }
    g.begin.push_back(begin);
    g.end.push_back(end);
  }
  return g;
}

Window toWindow(const Geometry &g) {
  size_t spatial = g.kernel.size();
  Window w;
  size_t first = 2 - spatial; // a 1-D window is the width of a 2-D one
  for (size_t a = 0; a < spatial; ++a) {
    w.kernel[first + a] = g.kernel[a];
    w.stride[first + a] = g.stride[a];
    w.dilation[first + a] = g.dilation[a];
    w.begin[first + a] = g.begin[a];
    w.end[first + a] = g.end[a];
  }
  return w;
}

void checkCreates(const OpContext &c, const Shape &input, int64_t channels, const Geometry &g,
                  bool transposed, const std::vector<int64_t> &extra) {
  Shape created{input[0], std::max<int64_t>(channels, 1)};
  for (size_t a = 0; a < g.kernel.size(); ++a) {
    // In floating point: a file's numbers (up to 2^31 each) could overflow the product.
    double in = double(input[2 + a]);
    double size = transposed ? double(g.stride[a]) * (in - 1) +
                                   double(g.kernel[a] - 1) * double(g.dilation[a]) + 1 +
                                   double(a < extra.size() ? extra[a] : 0)
                             : in + double(g.begin[a]) + double(g.end[a]);
    if (!(size < 0x1p40))
      c.fail("a window whose sizes, strides and dilations make an axis of " +
             std::to_string(size) + " elements");
    created.push_back(int64_t(size));
  }
  c.creatable(created);
}

std::vector<std::string> with_window_attributes(std::vector<std::string> extra) {
  for (const char *name : {"kernel_shape", "strides", "dilations", "pads", "auto_pad"})
    extra.push_back(name);
  return extra;
}

size_t spatialAxes(const OpContext &c, const Shape &shape) {
  if (shape.size() != 3 && shape.size() != 4)
    c.fail("input of shape " + shape_rules::str(shape) +
           ": dlc converts 1-D and 2-D ones (N, C, W) or (N, C, H, W)");
  return shape.size() - 2;
}

Tensor as2d(const Tensor &x) {
  if (x.ndim() != 3)
    return x;
  return np::reshape(x, {x.shape()[0], x.shape()[1], 1, x.shape()[2]});
}
Tensor back(const Tensor &y, size_t spatial) {
  if (spatial == 2)
    return y;
  return np::reshape(y, {y.shape()[0], y.shape()[1], y.shape()[3]});
}

Tensor padSpatial(const Tensor &x, const Window &w, double value) {
  return npx::pad(x, npx::PadMode::constant,
                  {0, 0, 0, 0, w.begin[0], w.end[0], w.begin[1], w.end[1]}, value);
}

} // namespace dlc::onnx::detail
