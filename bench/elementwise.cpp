//===- elementwise.cpp - a chain of transcendental element-wise ops ------------===//
//
// What generated kernels change most: a GELU-and-tanh chain over many elements (the
// shape of a transformer's activation code), eager (a kernel and a pass over memory per
// op) and hybridized (one fused region: generated code by default, the interpreted
// chain of kernels with DLC_GENERATED_KERNELS=0). "batch" is the element count, so
// samples/s reads as elements/s.
//
// Usage: dlc-bench-elementwise [elements ...]   (default: 65536 1048576)
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"

#include "dlc/gluon.h"

#include <cstdlib>
#include <string>

using namespace dlc;
using namespace dlc::gluon;

namespace {

class ActivationChain : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor g = npx::gelu(x);
    Tensor t = np::tanh(g * 0.75 + x);
    Tensor s = npx::sigmoid(t - g);
    return np::exp(s * 0.5) * t + np::log(s + 1.0);
  }
  std::string kind() const override { return "ActivationChain"; }
};

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty())
    sizes = {65536, 1048576};
  np::random::seed(3);
  for (int64_t n : sizes) {
    Tensor x = np::random::uniform(-3.0, 3.0, {n});
    ActivationChain eager, hybrid;
    hybrid.hybridize();
    int repeats = n >= 1000000 ? 20 : 200;
    bench::report("activation_chain_eager", n, bench::timeIt([&] { eager(x); }, 3, repeats));
    bench::report("activation_chain_hybrid", n, bench::timeIt([&] { hybrid(x); }, 3, repeats));
  }
  return 0;
}
