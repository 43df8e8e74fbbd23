//===- ApproximateMath.cpp - transcendental functions as vectorizable arithmetic ---===//
//
// In a host kernel, a math function that becomes a libm call keeps its loop scalar:
// LLVM does not vectorize across calls. MLIR's polynomial approximations (tanh, erf,
// exp, log, ...; a few ulp of float32) are plain arithmetic that LLVM's loop vectorizer
// turns into SIMD code. Ops without an approximation stay as they are, for the libm
// lowering after.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCAPPROXIMATEMATH
#include "dlc/Conversion/Passes.h.inc"

namespace {

struct DLCApproximateMathPass : impl::DLCApproximateMathBase<DLCApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dlc
