//===- Initializer.h - how parameters get their first values (gluon init) ----===//
#ifndef DLC_GLUON_INITIALIZER_H
#define DLC_GLUON_INITIALIZER_H

#include "dlc/Frontend/Tensor.h"

#include <memory>
#include <string>

namespace dlc::init {

/// Fills a freshly allocated parameter. Initializers draw from the device's random
/// generator (np::random::seed makes runs reproducible).
class Initializer {
public:
  virtual ~Initializer() = default;
  /// Values for a parameter named `name` of `shape` on `device`.
  virtual Tensor make(const std::string &name, const Shape &shape, DType dtype,
                      Device device) const = 0;
  virtual std::string str() const = 0;
};
using InitializerPtr = std::shared_ptr<const Initializer>;

/// Uniform in [-scale, scale] (Gluon's default, scale 0.07).
struct Uniform : Initializer {
  explicit Uniform(double scale = 0.07) : scale(scale) {}
  Tensor make(const std::string &, const Shape &, DType, Device) const override;
  std::string str() const override;
  double scale;
};

/// Normal with mean 0 and standard deviation sigma.
struct Normal : Initializer {
  explicit Normal(double sigma = 0.01) : sigma(sigma) {}
  Tensor make(const std::string &, const Shape &, DType, Device) const override;
  std::string str() const override;
  double sigma;
};

struct Constant : Initializer {
  explicit Constant(double value) : value(value) {}
  Tensor make(const std::string &, const Shape &, DType, Device) const override;
  std::string str() const override;
  double value;
};

struct Zero : Constant {
  Zero() : Constant(0) {}
};
struct One : Constant {
  One() : Constant(1) {}
};

/// Xavier/Glorot: keeps the activations' variance through a layer. With fan_in and
/// fan_out from the shape (dims 0 and 1 times the receptive field), the scale is
/// sqrt(magnitude / factor) with factor = (fan_in + fan_out) / 2 ("avg"), fan_in ("in")
/// or fan_out ("out"); values are uniform in [-scale, scale] or normal with that sigma.
struct Xavier : Initializer {
  enum class Distribution { uniform, gaussian };
  enum class Factor { avg, in, out };
  Xavier(Distribution rnd_type = Distribution::uniform, Factor factor_type = Factor::avg,
         double magnitude = 3)
      : rnd_type(rnd_type), factor_type(factor_type), magnitude(magnitude) {}
  Tensor make(const std::string &, const Shape &, DType, Device) const override;
  std::string str() const override;
  Distribution rnd_type;
  Factor factor_type;
  double magnitude;
};

} // namespace dlc::init

#endif // DLC_GLUON_INITIALIZER_H
