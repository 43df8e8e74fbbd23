//===- DLCToLinalg.cpp - element-wise dlc.fused regions as linalg.generic ------===//
//
// One linalg.generic per region, iterating over the region's result shape. An operand
// of another shape broadcasts to it as numpy does, which the indexing map spells out:
// its dimensions align with the result's trailing ones, and a dimension of 1 that the
// result stretches is read at index 0. The body is the region's ops, each replaced by
// its scalar body (ScalarBodyOpInterface), so the generated code computes what the
// interpreted kernels do.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToLinalg/DLCToLinalg.h"
#include "dlc/Conversion/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_CONVERTDLCTOLINALG
#include "dlc/Conversion/Passes.h.inc"

SmallVector<Value> buildElementwiseBody(OpBuilder &builder, Block &region,
                                        ValueRange scalars, Operation *&unsupported) {
  IRMapping elements;
  for (auto [argument, scalar] : llvm::zip(region.getArguments(), scalars))
    elements.map(argument, scalar);
  for (Operation &op : region.without_terminator()) {
    auto body = dyn_cast<ScalarBodyOpInterface>(&op);
    SmallVector<Value> operands;
    for (Value operand : op.getOperands())
      operands.push_back(elements.lookup(operand));
    Value element = body ? body.buildScalarBody(builder, op.getLoc(), operands) : Value();
    if (!element) {
      unsupported = unsupported ? unsupported : &op;
      element = operands.empty() ? Value() : operands.front(); // keeps the IR whole
    }
    elements.map(op.getResult(0), element);
  }
  SmallVector<Value> yielded;
  for (Value value : region.getTerminator()->getOperands())
    yielded.push_back(elements.lookup(value));
  return yielded;
}

namespace {

/// How `operand` is read at each point of `result`'s iteration space; failure when it
/// does not broadcast to it.
FailureOr<AffineMap> broadcastMap(RankedTensorType operand, RankedTensorType result,
                                  MLIRContext *context) {
  int64_t rank = result.getRank(), operandRank = operand.getRank();
  if (operandRank > rank)
    return failure();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operandRank; ++j) {
    int64_t dim = rank - operandRank + j;
    int64_t size = operand.getDimSize(j), target = result.getDimSize(dim);
    if (size == target)
      exprs.push_back(getAffineDimExpr(unsigned(dim), context));
    else if (size == 1)
      exprs.push_back(getAffineConstantExpr(0, context));
    else
      return failure();
  }
  return AffineMap::get(unsigned(rank), 0, exprs, context);
}

LogicalResult convertRegion(FusedOp fused) {
  auto result = dyn_cast<RankedTensorType>(fused->getResult(0).getType());
  if (!result)
    return fused.emitError() << "convert-dlc-to-linalg: the region's results are not ranked";
  MLIRContext *context = fused.getContext();
  SmallVector<AffineMap> maps;
  for (Value operand : fused.getInputs()) {
    FailureOr<AffineMap> map =
        broadcastMap(cast<RankedTensorType>(operand.getType()), result, context);
    if (failed(map))
      return fused.emitError() << "convert-dlc-to-linalg: operand " << operand.getType()
                               << " does not broadcast to the region's shape " << result;
    maps.push_back(*map);
  }
  OpBuilder builder(fused);
  Location loc = fused.getLoc();
  SmallVector<Value> outputs;
  for (Type type : fused->getResultTypes()) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getShape() != result.getShape())
      return fused.emitError() << "convert-dlc-to-linalg: results of different shapes ("
                               << tensor << ", " << result << ")";
    outputs.push_back(
        builder.create<tensor::EmptyOp>(loc, tensor.getShape(), tensor.getElementType()));
    maps.push_back(AffineMap::getMultiDimIdentityMap(unsigned(result.getRank()), context));
  }
  SmallVector<utils::IteratorType> iterators(size_t(result.getRank()),
                                             utils::IteratorType::parallel);
  Block &region = fused.getBody().front();
  Operation *unsupported = nullptr;
  auto generic = builder.create<linalg::GenericOp>(
      loc, fused->getResultTypes(), fused.getInputs(), outputs, maps, iterators,
      [&](OpBuilder &b, Location bodyLoc, ValueRange scalars) {
        b.create<linalg::YieldOp>(bodyLoc,
                                  buildElementwiseBody(b, region, scalars, unsupported));
      });
  if (unsupported) {
    generic->erase();
    for (Value output : outputs)
      output.getDefiningOp()->erase();
    return unsupported->emitError()
           << "convert-dlc-to-linalg: " << unsupported->getName() << " on "
           << unsupported->getResult(0).getType() << " has no scalar body";
  }
  if (Attribute device = fused->getAttr(DLCDialect::getDeviceAttrName()))
    generic->setAttr(DLCDialect::getDeviceAttrName(), device);
  fused->replaceAllUsesWith(generic->getResults());
  fused->erase();
  return success();
}

struct ConvertDLCToLinalgPass : impl::ConvertDLCToLinalgBase<ConvertDLCToLinalgPass> {
  void runOnOperation() override {
    SmallVector<FusedOp> regions;
    getOperation().walk([&](FusedOp fused) {
      if (fused.getKind() && *fused.getKind() == "elementwise")
        regions.push_back(fused);
    });
    for (FusedOp fused : regions)
      if (failed(convertRegion(fused)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dlc
