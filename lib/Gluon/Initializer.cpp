//===- Initializer.cpp - parameter initializers --------------------------------===//
#include "dlc/Gluon/Initializer.h"

#include "dlc/Frontend/NumPy.h"

#include <cmath>

namespace dlc::init {

Tensor Uniform::make(const std::string &, const Shape &shape, DType dtype, Device device) const {
  return np::random::uniform(-scale, scale, shape, device, dtype);
}
std::string Uniform::str() const { return "Uniform(scale=" + std::to_string(scale) + ")"; }

Tensor Normal::make(const std::string &, const Shape &shape, DType dtype, Device device) const {
  return np::random::normal(0, sigma, shape, device, dtype);
}
std::string Normal::str() const { return "Normal(sigma=" + std::to_string(sigma) + ")"; }

Tensor Constant::make(const std::string &, const Shape &shape, DType dtype,
                      Device device) const {
  return np::full(shape, value, dtype, device);
}
std::string Constant::str() const { return "Constant(" + std::to_string(value) + ")"; }

Tensor Xavier::make(const std::string &name, const Shape &shape, DType dtype,
                    Device device) const {
  if (shape.size() < 2)
    throw ValueError("Xavier initializer: parameter '" + name + "' of shape " +
                     shape_rules::str(shape) +
                     " has fewer than 2 dimensions; use another initializer "
                     "(biases are usually Zero)");
  double receptive = double(shape_rules::numElements(Shape(shape.begin() + 2, shape.end())));
  double fanIn = double(shape[1]) * receptive, fanOut = double(shape[0]) * receptive;
  double factor = factor_type == Factor::avg  ? (fanIn + fanOut) / 2
                  : factor_type == Factor::in ? fanIn
                                              : fanOut;
  double scale = std::sqrt(magnitude / factor);
  return rnd_type == Distribution::uniform ? np::random::uniform(-scale, scale, shape, device, dtype)
                                           : np::random::normal(0, scale, shape, device, dtype);
}

std::string Xavier::str() const {
  return std::string("Xavier(") + (rnd_type == Distribution::uniform ? "uniform" : "gaussian") +
         ", " + (factor_type == Factor::avg ? "avg" : factor_type == Factor::in ? "in" : "out") +
         ", magnitude=" + std::to_string(magnitude) + ")";
}

} // namespace dlc::init
