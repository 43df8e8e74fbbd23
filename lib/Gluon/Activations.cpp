//===- Activations.cpp - gluon.nn's activation layers -------------------------===//
#include "dlc/Gluon/Activations.h"

#include "dlc/Frontend/NumPy.h"

#include <cmath>
#include <sstream>

namespace dlc::gluon::nn {

namespace {
std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void requireFinite(const char *layer, const char *what, double value) {
  if (!std::isfinite(value))
    throw ValueError(std::string(layer) + ": " + what + " must be a finite number, got " +
                     number(value));
}
} // namespace

LeakyReLU::LeakyReLU(double alpha) : alpha_(alpha) {
  requireFinite("LeakyReLU", "alpha", alpha);
}
Tensor LeakyReLU::forward(const Tensor &x) { return npx::leaky_relu(x, alpha_); }
std::string LeakyReLU::kind() const { return "LeakyReLU(" + number(alpha_) + ")"; }

PReLU::PReLU(init::InitializerPtr alpha_initializer, int64_t in_channels)
    : in_channels_(in_channels) {
  if (in_channels < 1)
    throw ValueError("PReLU: in_channels must be at least 1, got " + std::to_string(in_channels));
  alpha = register_parameter(
      "alpha", std::make_shared<Parameter>(
                   "alpha", Shape{in_channels}, DType::f32,
                   alpha_initializer ? alpha_initializer
                                     : std::make_shared<init::Constant>(0.25)));
}
Tensor PReLU::forward(const Tensor &x) { return npx::prelu(x, alpha->data(x.device())); }
std::string PReLU::kind() const { return "PReLU(" + std::to_string(in_channels_) + ")"; }

ELU::ELU(double alpha) : alpha_(alpha) { requireFinite("ELU", "alpha", alpha); }
Tensor ELU::forward(const Tensor &x) { return npx::elu(x, alpha_); }
std::string ELU::kind() const { return "ELU(" + number(alpha_) + ")"; }

Tensor SELU::forward(const Tensor &x) { return npx::selu(x); }

GELU::GELU(std::string approximation) : tanh_(approximation == "tanh") {
  if (approximation != "erf" && approximation != "tanh")
    throw ValueError("GELU: approximation '" + approximation + "' is not one of 'erf' (exact) "
                     "and 'tanh'");
}
Tensor GELU::forward(const Tensor &x) { return tanh_ ? npx::gelu_tanh(x) : npx::gelu(x); }

Swish::Swish(double beta) : beta_(beta) { requireFinite("Swish", "beta", beta); }
Tensor Swish::forward(const Tensor &x) {
  return beta_ == 1.0 ? npx::silu(x) : x * npx::sigmoid(x * beta_);
}
std::string Swish::kind() const { return "Swish(" + number(beta_) + ")"; }

Tensor SiLU::forward(const Tensor &x) { return npx::silu(x); }

HardSigmoid::HardSigmoid(double alpha, double beta) : alpha_(alpha), beta_(beta) {
  requireFinite("HardSigmoid", "alpha", alpha);
  requireFinite("HardSigmoid", "beta", beta);
}
Tensor HardSigmoid::forward(const Tensor &x) { return npx::hard_sigmoid(x, alpha_, beta_); }
std::string HardSigmoid::kind() const {
  return "HardSigmoid(" + number(alpha_) + ", " + number(beta_) + ")";
}

Tensor HardSwish::forward(const Tensor &x) { return npx::hard_swish(x); }

} // namespace dlc::gluon::nn
