//===- ReportFusion.cpp - what each region fused, and what it did not -----------===//
//
// dlc-opt --dlc-report-fusion: a remark per dlc.fused region naming its kind, the ops
// it holds and how it runs on its device (one kernel or op by op, DLCExecution's
// fusedExecution), then one per neighbour outside any region (the producers of its
// operands and the readers of its results, the region's edges in the graph) saying why
// that neighbour stayed apart: the value between them has other readers (which every
// fusion pass refuses), or no pass has a rule for that op next to that region. It
// changes nothing.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCREPORTFUSION
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

StringRef executionName(FusedExecution execution) {
  switch (execution) {
  case FusedExecution::library_epilogue:
    return "one library kernel with an epilogue";
  case FusedExecution::elementwise:
    return "one element-wise step";
  case FusedExecution::library_pooling:
    return "one convolution kernel with the pooling";
  case FusedExecution::library_norm:
    return "one batch norm kernel with the activation";
  case FusedExecution::op_by_op:
    return "op by op";
  }
  return "op by op";
}

/// Why `neighbour`, which produces `value` for `region` or reads it from it, is not in
/// the region. (The verifier keeps both on the region's device: operands live where
/// their op runs.)
std::string whyApart(FusedOp region, Operation *neighbour, Value value, bool producer) {
  std::string why;
  llvm::raw_string_ostream out(why);
  const auto readers = std::distance(value.use_begin(), value.use_end());
  if (readers > 1) {
    out << (producer ? "its result has " : "the region's result has ") << readers
        << " readers, which would all need it from "
        << (producer ? "the region" : "outside the region");
  } else {
    out << "no pass folds " << neighbour->getName() << " into a region of kind \""
        << region.getKind().value_or("unnamed") << "\"";
  }
  return why;
}

class ReportFusionPass : public impl::DLCReportFusionBase<ReportFusionPass> {
public:
  void runOnOperation() override {
    getOperation().walk([&](FusedOp region) {
      DeviceKind kind = deviceKind(region);
      auto runs = [&](StringRef op) { return targetRuns(region, op, kind); };
      std::string held;
      llvm::raw_string_ostream ops(held);
      llvm::interleave(
          region.getBody().front().without_terminator(), ops,
          [&](Operation &op) { ops << op.getName(); }, " + ");
      // At the region's location, without printing the region.
      mlir::emitRemark(region.getLoc())
          << "fused \"" << region.getKind().value_or("unnamed") << "\" (" << held << ") runs as "
          << executionName(fusedExecution(region, kind, runs));
      llvm::SetVector<Operation *> reported;
      for (Value input : region.getInputs()) {
        Operation *producer = input.getDefiningOp();
        if (!producer || isa<FusedOp>(producer) || isViewOp(producer) ||
            producer->hasTrait<mlir::OpTrait::ConstantLike>() || !reported.insert(producer))
          continue;
        mlir::emitRemark(region.getLoc()) << "not with the producer " << producer->getName() << ": "
                                          << whyApart(region, producer, input, /*producer=*/true);
      }
      for (Value result : region.getResults())
        for (Operation *reader : result.getUsers()) {
          if (isa<FusedOp, func::ReturnOp>(reader) || isViewOp(reader) || !reported.insert(reader))
            continue;
          mlir::emitRemark(region.getLoc()) << "not with the reader " << reader->getName() << ": "
                                            << whyApart(region, reader, result, /*producer=*/false);
        }
    });
  }
};

} // namespace

} // namespace mlir::dlc
