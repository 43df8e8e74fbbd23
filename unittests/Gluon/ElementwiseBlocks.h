//===- ElementwiseBlocks.h - blocks made of element-wise ops (tests) ----------===//
#ifndef DLC_UNITTESTS_GLUON_ELEMENTWISEBLOCKS_H
#define DLC_UNITTESTS_GLUON_ELEMENTWISEBLOCKS_H

#include "dlc/gluon.h"

namespace dlc::testing {

/// Every element-wise op dlc-fuse joins, with scalars broadcast, in one block.
class EveryElementwiseOp : public gluon::HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor p = np::exp(x * 0.5); // positive, for log, sqrt and pow
    Tensor a = np::log(p) + np::sqrt(p) - np::rsqrt(p);
    Tensor b = npx::relu(a) * npx::sigmoid(x) / (p + 1.0);
    Tensor c = np::power(p, x * 0.25) + np::maximum(a, b) - np::minimum(a, x);
    Tensor d = np::tanh(c) + npx::gelu(b) - np::negative(x);
    Tensor e = npx::erf(d) + npx::softrelu(c * 8.0) - npx::hard_swish(x * 4.0);
    Tensor six = npx::relu6(x * 8.0 + 2.0); // both kinks, at 0 and 6
    Tensor f = npx::softsign(c) + npx::silu(d) - npx::selu(x * 3.0);
    Tensor g = npx::leaky_relu(e, 0.1) + npx::elu(x * 3.0, 0.7);
    return npx::relu_backward(d, a) + npx::gelu_backward(d, x) + e + six +
           npx::relu6_backward(c, six) + f + g;
  }
  std::string kind() const override { return "EveryElementwiseOp"; }
};

} // namespace dlc::testing

#endif // DLC_UNITTESTS_GLUON_ELEMENTWISEBLOCKS_H
