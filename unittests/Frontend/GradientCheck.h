//===- GradientCheck.h - random tensors and finite-difference checks (tests) --===//
#ifndef DLC_UNITTESTS_FRONTEND_GRADIENTCHECK_H
#define DLC_UNITTESTS_FRONTEND_GRADIENTCHECK_H

#include "dlc/gluon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace dlc::testing {

/// Element by element, |want - got| <= tolerance * max(1, |want|).
inline void expectClose(const std::vector<float> &want, const std::vector<float> &got,
                        double tolerance, const std::string &what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(want[i], got[i], tolerance * std::max(1.0, double(std::abs(want[i]))))
        << what << " element " << i;
}

/// Keeps eager CPU tensors plain while alive (dlc/Core/Layout.h). Compiled programs
/// compute on plain tensors; a test comparing them with eager code at rounding-level
/// tolerances runs the eager side on the same kernels, since blocked ones add up in
/// another order (LayoutTest compares blocked with plain eager execution).
class PlainLayouts {
public:
  PlainLayouts() : before_(blocked_layouts_enabled()) { use_blocked_layouts(false); }
  ~PlainLayouts() { use_blocked_layouts(before_); }
  PlainLayouts(const PlainLayouts &) = delete;
  PlainLayouts &operator=(const PlainLayouts &) = delete;

private:
  bool before_;
};

/// Uniform values in [-1, 1] kept at least `margin` away from 0, so that kinks (relu,
/// max) at 0 are never within a finite-difference step.
inline Tensor randomTensor(const Shape &shape, uint32_t seed, float margin = 0.05f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> magnitude(margin, 1.f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> values(size_t(shape_rules::numElements(shape)));
  for (float &v : values)
    v = negative(generator) ? -magnitude(generator) : magnitude(generator);
  return np::array(values, shape);
}

inline double weightedSum(const Tensor &y, const std::vector<float> &weights) {
  std::vector<float> a = y.to_vector<float>();
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i)
    total += double(a[i]) * double(weights[i]);
  return total;
}

/// Checks `gradient` of sum(f(x) * weights) with respect to x against central
/// differences at every element of x.
inline void expectGradient(const Tensor &x, const Tensor &gradient,
                           const std::function<Tensor(const Tensor &)> &f,
                           const Tensor &weights, const std::string &what,
                           double tolerance = 2e-2, float step = 1e-2f) {
  std::vector<float> base = x.to_vector<float>(), analytic = gradient.to_vector<float>();
  std::vector<float> w = weights.to_vector<float>();
  ASSERT_EQ(base.size(), analytic.size()) << what;
  for (size_t i = 0; i < base.size(); ++i) {
    std::vector<float> plus = base, minus = base;
    plus[i] += step;
    minus[i] -= step;
    double numeric = (weightedSum(f(np::array(plus, x.shape())), w) -
                      weightedSum(f(np::array(minus, x.shape())), w)) /
                     (2 * double(step));
    EXPECT_NEAR(analytic[i], numeric, tolerance * std::max(1.0, std::abs(numeric)))
        << what << " element " << i;
  }
}

/// Records `f` on `inputs` (each attach_grad()-ed), back-propagates random head weights,
/// and checks every input's gradient against finite differences.
inline void checkAutograd(const std::vector<Tensor> &inputs,
                          const std::function<Tensor(const std::vector<Tensor> &)> &f,
                          const std::string &what, double tolerance = 2e-2,
                          float step = 1e-2f) {
  std::vector<Tensor> leaves;
  for (const Tensor &input : inputs) {
    Tensor leaf = input.copyto(input.device());
    leaf.attach_grad();
    leaves.push_back(leaf);
  }
  Tensor out;
  {
    autograd::Record record;
    out = f(leaves);
  }
  Tensor weights = randomTensor(out.shape(), 1234);
  out.backward(weights);
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto partial = [&](const Tensor &v) {
      std::vector<Tensor> args = inputs;
      args[k] = v;
      return f(args);
    };
    expectGradient(inputs[k], leaves[k].grad(), partial, weights,
                   what + " input #" + std::to_string(k), tolerance, step);
  }
}

} // namespace dlc::testing

#endif // DLC_UNITTESTS_FRONTEND_GRADIENTCHECK_H
