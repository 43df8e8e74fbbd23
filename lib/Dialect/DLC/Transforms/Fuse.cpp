//===- Fuse.cpp - element-wise chains and epilogues into dlc.fused regions ----===//
//
// Grouping walks the function once, in order: an element-wise op joins the open group
// of one of its operands' producers; any other op reading a group's value closes that
// group. Closing on outside use is what lets each region sit where its last op was: every
// outside use of a region value comes after it, and every outside input was defined
// before it.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"

#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "Outline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <memory>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCFUSE
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

FusedOp outline(ArrayRef<Operation *> ops, StringRef kind) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  SmallVector<Value> outputs;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) { return !members.contains(user); }))
        outputs.push_back(result);
  return outline(ops, kind, outputs);
}

FusedOp outline(ArrayRef<Operation *> ops, StringRef kind, ArrayRef<Value> outputs) {
  llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (!members.contains(operand.getDefiningOp()))
        inputs.insert(operand);

  SmallVector<Location> locations;
  for (Operation *op : ops)
    locations.push_back(op->getLoc());
  Location location = FusedLoc::get(ops.front()->getContext(), locations);
  OpBuilder builder(ops.back());
  SmallVector<Type> outputTypes;
  for (Value v : outputs)
    outputTypes.push_back(v.getType());
  auto fused = builder.create<FusedOp>(location, outputTypes, builder.getStringAttr(kind),
                                       inputs.getArrayRef());
  if (Attribute device = ops.front()->getAttr(DLCDialect::getDeviceAttrName()))
    fused->setAttr(DLCDialect::getDeviceAttrName(), device);
  Block *body = new Block();
  fused.getBody().push_back(body);
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  OpBuilder inside = OpBuilder::atBlockEnd(body);
  for (Operation *op : ops) {
    Operation *clone = inside.clone(*op, mapping);
    clone->removeAttr(DLCDialect::getDeviceAttrName()); // the region carries it
  }
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  inside.create<YieldOp>(location, yielded);

  for (auto [old, replacement] : llvm::zip(outputs, fused.getResults()))
    Value(old).replaceUsesWithIf(replacement, [&](OpOperand &use) {
      return !members.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  return fused;
}

namespace {

Attribute deviceOf(Operation *op) { return op->getAttr(DLCDialect::getDeviceAttrName()); }

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

/// Element-wise ops the runtime can run chunk by chunk: float32, every operand of the
/// result's shape or a single element.
bool fusibleElementwise(Operation *op) {
  if (!op->hasTrait<OpTrait::ElementwiseKernel>() || op->getNumResults() != 1 ||
      !isF32Tensor(op->getResult(0).getType()))
    return false;
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.getElementType().isF32() ||
        (type.getShape() != result.getShape() && type.getNumElements() != 1))
      return false;
  }
  return true;
}

struct FusePass : impl::DLCFuseBase<FusePass> {
  using DLCFuseBase::DLCFuseBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
    if (failed(runnable))
      return signalPassFailure();
    if (!*runnable)
      return;
    if (foldBatchNorm) {
      foldBatchNorms(function);
      foldBatchNormsIntoConsumers(function);
    }
    if (epilogues)
      foldEpilogues(function);
    if (elementwise)
      groupElementwise(function);
  }

  /// Gives an op the device of `anchor` (when it has one) and returns its result: the
  /// ops a folding creates run where the folded op did.
  static auto placedLike(Operation *anchor) {
    return [device = deviceOf(anchor)](Operation *op) {
      if (device)
        op->setAttr(DLCDialect::getDeviceAttrName(), device);
      return op->getResult(0);
    };
  }

  /// gamma * rsqrt(var + epsilon), per channel: what an inference batch_norm multiplies
  /// by (`placed` gives each new op the norm's device).
  template <typename Placed> Value normScale(OpBuilder &b, BatchNormOp norm, Placed placed) {
    Location loc = norm.getLoc();
    auto channels = cast<RankedTensorType>(norm.getGamma().getType());
    auto scalarType = RankedTensorType::get({}, channels.getElementType());
    Value epsilon = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(scalarType,
                                    b.getFloatAttr(channels.getElementType(),
                                                   norm.getEpsilon().convertToDouble())));
    Value var = norm.getRunningStats()[1];
    Value inverse = placed(b.create<RsqrtOp>(loc, placed(b.create<AddOp>(loc, var, epsilon))));
    return placed(b.create<MulOp>(loc, norm.getGamma(), inverse));
  }

  /// Whether `norm` is an inference batch_norm over axis 1 of a float32 tensor whose
  /// statistics outputs nobody reads.
  static bool foldableNorm(BatchNormOp norm) {
    return !norm.getTraining() && norm.getRunningStats().size() == 2 && norm.getAxis() == 1 &&
           isF32Tensor(norm.getType(0)) &&
           llvm::all_of(norm.getBatchStats(), [](Value v) { return v.use_empty(); });
  }

  /// A convolution that reads `value` as its input with no padding (so every window sees
  /// only normalized values), one group, on `device`.
  static bool unpaddedConsumer(OpOperand &use, Attribute device) {
    auto conv = dyn_cast<Conv2DOp>(use.getOwner());
    return conv && use.getOperandNumber() == 0 && conv.getGroups() == 1 &&
           llvm::all_of(conv.getPadding(), [](int64_t p) { return p == 0; }) &&
           deviceOf(conv) == device;
  }

  /// Whether `op` flattens its operand (N, d1, ...) to (N, d1·...): dlc.flatten, or the
  /// reshape Gluon's Flatten traces to.
  static bool isFlatten(Operation *op) {
    if (isa<FlattenOp>(op))
      return true;
    auto reshape = dyn_cast<ReshapeOp>(op);
    if (!reshape)
      return false;
    auto from = dyn_cast<RankedTensorType>(reshape->getOperand(0).getType());
    auto to = dyn_cast<RankedTensorType>(reshape.getType());
    return from && to && from.hasStaticShape() && to.hasStaticShape() && from.getRank() >= 2 &&
           to.getRank() == 2 && from.getDimSize(0) == to.getDimSize(0);
  }

  /// A flatten of `value` on `device` whose every reader is a dense layer's input there.
  static bool flattenIntoDense(OpOperand &use, Attribute device) {
    Operation *flatten = use.getOwner();
    return isFlatten(flatten) && deviceOf(flatten) == device && !flatten->use_empty() &&
           llvm::all_of(flatten->getUses(), [&](OpOperand &read) {
             auto dense = dyn_cast<DenseOp>(read.getOwner());
             return dense && read.getOperandNumber() == 0 && deviceOf(dense) == device;
           });
  }

  /// batch_norm (inference) -> conv2d without padding becomes conv2d on the norm's input:
  /// the norm is x * scale + shift per input channel (shift = beta - mean * scale), so
  /// the weights take scale along their input channels and the bias gains the sum of the
  /// weights times shift. (With padding the border windows would see zeros where the
  /// norm gave shift: not the same function.) MaxPool -> BatchNorm -> Conv2D, the seed's
  /// blocks, runs one pass over the activations fewer. batch_norm -> flatten -> dense
  /// (the last block before a classifier) folds the same way: the flattened feature
  /// c·S + s is channel c's, so the dense weights, seen as (units, C, S), take scale
  /// along C.
  void foldBatchNormsIntoConsumers(func::FuncOp function) {
    SmallVector<BatchNormOp> norms;
    function.walk([&](BatchNormOp norm) {
      Value out = norm.getResult(0);
      if (foldableNorm(norm) && !out.use_empty() &&
          llvm::all_of(out.getUses(), [&](OpOperand &use) {
            return unpaddedConsumer(use, deviceOf(norm)) ||
                   flattenIntoDense(use, deviceOf(norm));
          }))
        norms.push_back(norm);
    });
    for (BatchNormOp norm : norms) {
      OpBuilder b(norm);
      Location loc = norm.getLoc();
      auto placed = placedLike(norm);
      Value scale = normScale(b, norm, placed);
      Value shift = placed(b.create<SubOp>(
          loc, norm.getBeta(),
          placed(b.create<MulOp>(loc, norm.getRunningStats()[0], scale))));
      auto channels = cast<RankedTensorType>(scale.getType());
      auto rowType = RankedTensorType::get({1, channels.getDimSize(0), 1, 1},
                                           channels.getElementType());
      Value scaleRow = placed(b.create<ReshapeOp>(loc, rowType, scale));
      Value shiftRow = placed(b.create<ReshapeOp>(loc, rowType, shift));
      for (OpOperand &use : llvm::make_early_inc_range(norm.getResult(0).getUses())) {
        if (isFlatten(use.getOwner())) {
          foldIntoDenseLayers(b, norm, use.getOwner(), scale, shift);
          continue;
        }
        auto conv = cast<Conv2DOp>(use.getOwner());
        b.setInsertionPoint(conv);
        Value weight = placed(b.create<MulOp>(loc, conv.getWeight(), scaleRow));
        Value shifted = placed(b.create<MulOp>(loc, conv.getWeight(), shiftRow));
        Value added = placed(b.create<ReduceOp>(loc, ReduceKind::sum, shifted,
                                                b.getDenseI64ArrayAttr({1, 2, 3}), false));
        Value bias = conv.getBias() ? placed(b.create<AddOp>(loc, conv.getBias(), added)) : added;
        Operation *folded = b.clone(*conv);
        folded->setOperands({norm.getInput(), weight, bias});
        conv.getResult().replaceAllUsesWith(folded->getResult(0));
        conv->erase();
      }
      norm->erase();
    }
  }

  /// The dense layers reading `flatten` of `norm` read a flatten of the norm's input,
  /// with weights (units, C·S) scaled per channel c and the bias plus the weights
  /// times shift summed.
  void foldIntoDenseLayers(OpBuilder &b, BatchNormOp norm, Operation *flatten, Value scale,
                           Value shift) {
    Location loc = norm.getLoc();
    auto placed = placedLike(norm);
    auto features = cast<RankedTensorType>(flatten->getResult(0).getType());
    const int64_t channels = cast<RankedTensorType>(scale.getType()).getDimSize(0);
    const int64_t perChannel = features.getDimSize(1) / channels;
    Type element = features.getElementType();
    auto rowType = RankedTensorType::get({1, channels, 1}, element);
    b.setInsertionPoint(flatten);
    Value scaleRow = placed(b.create<ReshapeOp>(loc, rowType, scale));
    Value shiftRow = placed(b.create<ReshapeOp>(loc, rowType, shift));
    Operation *unnormalized = b.clone(*flatten);
    unnormalized->setOperand(0, norm.getInput());
    for (OpOperand &read : llvm::make_early_inc_range(flatten->getUses())) {
      auto dense = cast<DenseOp>(read.getOwner());
      b.setInsertionPoint(dense);
      auto weightType = cast<RankedTensorType>(dense.getWeight().getType());
      auto split = RankedTensorType::get({weightType.getDimSize(0), channels, perChannel}, element);
      Value weight3 = placed(b.create<ReshapeOp>(loc, split, dense.getWeight()));
      Value weight = placed(b.create<ReshapeOp>(
          loc, weightType, placed(b.create<MulOp>(loc, weight3, scaleRow))));
      Value added = placed(b.create<ReduceOp>(loc, ReduceKind::sum,
                                              placed(b.create<MulOp>(loc, weight3, shiftRow)),
                                              b.getDenseI64ArrayAttr({1, 2}), false));
      Value bias = dense.getBias() ? placed(b.create<AddOp>(loc, dense.getBias(), added)) : added;
      dense->setOperands({unnormalized->getResult(0), weight, bias});
    }
    flatten->erase();
  }

  /// conv2d -> batch_norm (inference) becomes conv2d with scaled weights and a new bias.
  void foldBatchNorms(func::FuncOp function) {
    SmallVector<BatchNormOp> norms;
    function.walk([&](BatchNormOp norm) {
      auto conv = norm.getInput().getDefiningOp<Conv2DOp>();
      if (conv && !norm.getTraining() && norm.getRunningStats().size() == 2 &&
          conv->hasOneUse() && norm.getAxis() == 1 && deviceOf(conv) == deviceOf(norm) &&
          isF32Tensor(norm.getType(0)))
        norms.push_back(norm);
    });
    for (BatchNormOp norm : norms) {
      auto conv = norm.getInput().getDefiningOp<Conv2DOp>();
      OpBuilder b(norm);
      Location loc = norm.getLoc();
      auto placed = placedLike(norm);
      Value mean = norm.getRunningStats()[0];
      Value scale = normScale(b, norm, placed);
      auto weightType = cast<RankedTensorType>(conv.getWeight().getType());
      auto columnType = RankedTensorType::get({weightType.getDimSize(0), 1, 1, 1},
                                              weightType.getElementType());
      Value column = placed(b.create<ReshapeOp>(loc, columnType, scale));
      Value weight = placed(b.create<MulOp>(loc, conv.getWeight(), column));
      Value shifted = conv.getBias()
                          ? placed(b.create<SubOp>(loc, conv.getBias(), mean))
                          : placed(b.create<NegOp>(loc, mean));
      Value bias = placed(
          b.create<AddOp>(loc, placed(b.create<MulOp>(loc, shifted, scale)), norm.getBeta()));
      Operation *folded = b.clone(*conv);
      folded->setOperands({conv.getInput(), weight, bias});
      norm.getResult(0).replaceAllUsesWith(folded->getResult(0));
      norm->erase();
      conv->erase();
    }
  }

  void foldEpilogues(func::FuncOp function) {
    SmallVector<std::pair<Operation *, Operation *>> pairs;
    auto joins = [](Operation *producer, Operation *epilogue) {
      return producer->hasOneUse() && deviceOf(producer) == deviceOf(epilogue) &&
             producer->getBlock() == epilogue->getBlock() &&
             isF32Tensor(epilogue->getResult(0).getType());
    };
    function.walk([&](ReluOp relu) {
      Operation *producer = relu.getInput().getDefiningOp();
      if (producer && isa<Conv2DOp, DenseOp>(producer) && joins(producer, relu))
        pairs.push_back({producer, relu});
    });
    // The gradient of relu -> max_pool2d: the pooling's backward passes a window's
    // gradient to its maximum, which is where x > 0 exactly when the maximum is > 0, so
    // the mask is a test on a value the backward already holds.
    function.walk([&](ReluBackwardOp relu) {
      auto pool = relu->getOperand(0).getDefiningOp<MaxPool2DBackwardOp>();
      if (pool && relu->getOperand(1) == pool->getOperand(1) && joins(pool, relu))
        pairs.push_back({pool, relu});
    });
    // ReLU6 after a convolution (MobileNetV2's): oneDNN's clip post-op on host devices
    // (elsewhere the region runs op by op: DLCExecution's fusedExecution).
    function.walk([&](Relu6Op relu6) {
      auto conv = relu6.getInput().getDefiningOp<Conv2DOp>();
      if (conv && joins(conv, relu6))
        pairs.push_back({conv, relu6});
    });
    // SiLU after a convolution (EfficientNet's, after canonicalize made x * sigmoid(x)
    // one op): oneDNN's swish post-op on host devices, op by op elsewhere.
    function.walk([&](SiluOp silu) {
      auto conv = silu.getInput().getDefiningOp<Conv2DOp>();
      if (conv && joins(conv, silu))
        pairs.push_back({conv, silu});
    });
    // GELU after a dense layer (BERT's feed-forward): oneDNN's gelu_erf post-op on host
    // devices, op by op elsewhere.
    function.walk([&](GeluOp gelu) {
      auto dense = gelu.getInput().getDefiningOp<DenseOp>();
      if (dense && joins(dense, gelu))
        pairs.push_back({dense, gelu});
    });
    for (auto [producer, relu] : pairs)
      outline({producer, relu}, isa<Relu6Op>(relu)        ? "conv2d_relu6"
                                : isa<SiluOp>(relu)       ? "conv2d_silu"
                                : isa<GeluOp>(relu)       ? "dense_gelu"
                                : isa<Conv2DOp>(producer) ? "conv2d_relu"
                                : isa<DenseOp>(producer)  ? "dense_relu"
                                                          : "max_pool2d_backward_relu");
  }

  void groupElementwise(func::FuncOp function) {
    struct Group {
      SmallVector<Operation *> ops;
      bool open = true;
    };
    std::vector<std::unique_ptr<Group>> groups;
    llvm::DenseMap<Operation *, Group *> groupOf;
    for (Block &block : function.getBody()) {
      for (Operation &operation : block) {
        Operation *op = &operation;
        bool candidate = fusibleElementwise(op);
        Group *target = nullptr;
        if (candidate)
          for (Value operand : op->getOperands()) {
            Group *g = groupOf.lookup(operand.getDefiningOp());
            if (!g || !g->open || deviceOf(g->ops.front()) != deviceOf(op) || g == target)
              continue;
            if (!target) {
              if (int64_t(g->ops.size()) < maxOps)
                target = g;
            } else if (int64_t(target->ops.size() + g->ops.size()) < maxOps) {
              // Two open chains meet here (a + b of two chains): one region. Safe, as
              // neither chain's values have been read outside it yet.
              for (Operation *moved : g->ops)
                groupOf[moved] = target;
              target->ops.append(g->ops.begin(), g->ops.end());
              llvm::sort(target->ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
              g->ops.clear();
              g->open = false;
            }
          }
        for (Value operand : op->getOperands())
          if (Group *g = groupOf.lookup(operand.getDefiningOp()); g && g != target)
            g->open = false; // read outside the group: it ends here
        if (!candidate)
          continue;
        if (!target) {
          groups.push_back(std::make_unique<Group>());
          target = groups.back().get();
        }
        target->ops.push_back(op);
        groupOf[op] = target;
      }
    }
    for (const auto &group : groups)
      if (group->ops.size() > 1)
        outline(group->ops, "elementwise");
  }
};

} // namespace
} // namespace mlir::dlc
