//===- ShardDataParallel.cpp - one training step, replicated over devices -----===//
//
// The body is cloned op by op, replica after replica, so that each gradient's
// dlc.all_reduce can follow its last replica immediately: the sums of the last layers'
// gradients are then in the program before the first layers' backward, where a runtime
// can overlap them (as MXNet's KVStore and PyTorch's DDP buckets do).
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "DeviceOptions.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCSHARDDATAPARALLEL
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// A slice that keeps the whole batch axis of samples (ViT's first token of every image:
/// x[:, 0:1]) keeps a replica's whole part; so does its gradient, whose `shape` is the
/// sliced input's. The positions are attributes, so they are rewritten before the
/// result types are inferred again.
void keepWholeBatchInSlices(Operation *clone, int64_t axis, int64_t whole, int64_t part) {
  auto partOf = [&](ArrayRef<int64_t> begin, ArrayRef<int64_t> end, ArrayRef<int64_t> step,
                    Value sliced) -> std::optional<SmallVector<int64_t>> {
    auto type = cast<RankedTensorType>(sliced.getType());
    if (int64_t(end.size()) <= axis || type.getRank() <= axis || type.getDimSize(axis) != part ||
        begin[size_t(axis)] != 0 || end[size_t(axis)] != whole || step[size_t(axis)] != 1)
      return std::nullopt;
    SmallVector<int64_t> cut(end);
    cut[size_t(axis)] = part;
    return cut;
  };
  MLIRContext *context = clone->getContext();
  if (auto slice = dyn_cast<SliceOp>(clone)) {
    if (auto end = partOf(slice.getBegin(), slice.getEnd(), slice.getStep(), slice.getInput()))
      slice.setEndAttr(DenseI64ArrayAttr::get(context, *end));
  } else if (auto back = dyn_cast<SliceBackwardOp>(clone)) {
    SmallVector<int64_t> shape(back.getShape());
    if (int64_t(shape.size()) <= axis || shape[size_t(axis)] != whole)
      return;
    if (auto end = partOf(back.getBegin(), back.getEnd(), back.getStep(), back.getGradOutput())) {
      back.setEndAttr(DenseI64ArrayAttr::get(context, *end));
      shape[size_t(axis)] = part;
      back.setShapeAttr(DenseI64ArrayAttr::get(context, shape));
    }
  }
}

/// Result types of a replica's clone, whose operands may now be batch parts.
void refreshTypes(Operation *original, Operation *clone, int64_t axis, int64_t whole,
                  int64_t part) {
  keepWholeBatchInSlices(clone, axis, whole, part);
  if (auto infer = dyn_cast<InferTypeOpInterface>(clone)) {
    SmallVector<Type> types;
    if (succeeded(infer.inferReturnTypes(clone->getContext(), clone->getLoc(),
                                         clone->getOperands(), clone->getAttrDictionary(),
                                         clone->getPropertiesStorage(), clone->getRegions(),
                                         types)))
      for (auto [result, type] : llvm::zip(clone->getResults(), types))
        result.setType(type);
    return;
  }
  if (clone->hasTrait<mlir::OpTrait::SameOperandsAndResultType>() && clone->getNumOperands()) {
    for (Value result : clone->getResults())
      result.setType(clone->getOperand(0).getType());
    return;
  }
  if (clone->hasTrait<mlir::OpTrait::SameOperandsAndResultShape>() && clone->getNumOperands()) {
    auto shape = cast<RankedTensorType>(clone->getOperand(0).getType()).getShape();
    for (Value result : clone->getResults())
      result.setType(RankedTensorType::get(
          shape, cast<RankedTensorType>(result.getType()).getElementType()));
    return;
  }
  // A split's result types are written (they give the part sizes): a part keeps its
  // size along the split axis and takes the operand's other dimensions (GPT-2's fused
  // query-key-value projection, cut along its features). Parts of the batch axis itself
  // keep their types, which the verifier then checks against the cut operand.
  if (auto split = dyn_cast<SplitOp>(clone)) {
    auto input = cast<RankedTensorType>(split.getInput().getType());
    const int64_t along = split.getAxis();
    if (along == axis)
      return;
    for (Value result : clone->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<int64_t> shape(input.getShape());
      shape[size_t(along)] = type.getDimSize(along);
      result.setType(RankedTensorType::get(shape, type.getElementType()));
    }
    return;
  }
  // Ops whose result type is written, not inferred, and holds the samples (reshapes,
  // broadcasts, the input gradients of convolution and pooling): the whole batch's axis
  // becomes a part's. Weight-shaped results (conv2d_backward_filter) keep their type.
  // Only when an operand became a part (a weight gradient's marking reshape stays whole).
  bool operandCut = llvm::any_of(llvm::zip(original->getOperands(), clone->getOperands()),
                                 [](auto pair) {
                                   return std::get<0>(pair).getType() != std::get<1>(pair).getType();
                                 });
  if (!operandCut || !clone->hasTrait<OpTrait::BatchShapedResult>())
    return;
  for (Value result : clone->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || type.getRank() <= axis)
      continue;
    SmallVector<int64_t> shape(type.getShape());
    if (shape[size_t(axis)] == whole) {
      shape[size_t(axis)] = part;
    } else if (axis == 0 && isa<ReshapeOp>(clone) && shape[0] % whole == 0) {
      // A reshape that merges the leading batch axis with the next ones (a language
      // model's (batch, length) labels flattened for its loss): each sample fills
      // shape[0] / whole rows, in order, so a part fills as many per sample.
      shape[0] = shape[0] / whole * part;
    } else {
      continue;
    }
    result.setType(RankedTensorType::get(shape, type.getElementType()));
  }
}

/// Whether `op` broadcasts a value shared by the samples along the batch axis for ops
/// that read it beside the samples (ViT's [CLS] token, one row per image, concatenated
/// with the image's patches): an explicit broadcast_to from size 1 to the whole batch
/// whose result meets a per-sample value of its rank and batch size at one of its users.
/// Each replica then needs one row per sample of its part.
bool broadcastsAlongSamples(Operation *op, const llvm::DenseSet<Value> &samples, int64_t axis,
                            int64_t whole) {
  auto broadcast = dyn_cast<BroadcastToOp>(op);
  if (!broadcast)
    return false;
  auto from = cast<RankedTensorType>(broadcast.getInput().getType());
  auto to = cast<RankedTensorType>(broadcast.getType());
  if (from.getRank() != to.getRank() || to.getRank() <= axis || from.getDimSize(axis) != 1 ||
      to.getDimSize(axis) != whole)
    return false;
  return llvm::any_of(broadcast->getUsers(), [&](Operation *user) {
    return llvm::any_of(user->getOperands(), [&](Value v) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      return samples.contains(v) && type && type.getRank() == to.getRank() &&
             type.getDimSize(axis) == whole;
    });
  });
}

/// Whether an op that reads `value`, or a value computed from it (a few ops deep), also
/// reads one of `samples`.
bool reachesSamples(Value value, const llvm::DenseSet<Value> &samples, int depth = 6) {
  for (Operation *user : value.getUsers()) {
    if (llvm::any_of(user->getOperands(), [&](Value v) { return samples.contains(v); }))
      return true;
    if (depth > 0 && llvm::any_of(user->getResults(), [&](Value result) {
          return reachesSamples(result, samples, depth - 1);
        }))
      return true;
  }
  return false;
}

struct ShardDataParallelPass : impl::DLCShardDataParallelBase<ShardDataParallelPass> {
  using DLCShardDataParallelBase::DLCShardDataParallelBase;

  void runOnOperation() override {
    SmallVector<DeviceAttr> targets;
    for (const std::string &text : devices) {
      DeviceAttr device = parseDeviceOption(&getContext(), text);
      if (!device) {
        getOperation().emitError() << "dlc-shard-data-parallel: device '" << text
                                   << "' is not kind:ordinal (cpu:0, gpu:1, ...)";
        return signalPassFailure();
      }
      targets.push_back(device);
    }
    if (processes < 1) {
      getOperation().emitError() << "dlc-shard-data-parallel: processes=" << int64_t(processes)
                                 << "; a job has at least one process";
      return signalPassFailure();
    }
    if (targets.empty() || (targets.size() < 2 && processes < 2)) {
      getOperation().emitError()
          << "dlc-shard-data-parallel: needs at least two devices (devices=cpu:0,cpu:1), "
             "or one device in each of several processes (devices=cpu:1 processes=2)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> functions;
    for (auto function : getOperation().getOps<func::FuncOp>())
      for (unsigned i = 0; i < function.getNumArguments(); ++i)
        if (function.getArgAttr(i, DLCDialect::getBatchAttrName())) {
          functions.push_back(function);
          break;
        }
    for (func::FuncOp function : functions) {
      FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
      if (failed(runnable) || (*runnable && failed(shard(function, targets))))
        return signalPassFailure();
    }
  }

  LogicalResult shard(func::FuncOp function, ArrayRef<DeviceAttr> targets) {
    const size_t replicas = targets.size();
    MLIRContext *context = function.getContext();
    StringRef deviceName = DLCDialect::getDeviceAttrName();
    Block &body = function.getBody().front();

    // Check the batch arguments before changing anything.
    for (BlockArgument arg : body.getArguments()) {
      if (!function.getArgAttr(arg.getArgNumber(), DLCDialect::getBatchAttrName()))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      if (batchAxis < 0 || batchAxis >= type.getRank())
        return function.emitError() << "argument #" << arg.getArgNumber() << " ("
                                    << type << ") has no batch axis " << int64_t(batchAxis);
      int64_t samples = type.getDimSize(batchAxis);
      if (samples % int64_t(replicas) != 0)
        return function.emitError()
               << "batch of " << samples << " samples (argument #" << arg.getArgNumber()
               << ", axis " << int64_t(batchAxis) << ") does not split evenly over " << replicas
               << " devices";
    }

    int64_t wholeBatch = -1;
    for (BlockArgument arg : body.getArguments())
      if (function.getArgAttr(arg.getArgNumber(), DLCDialect::getBatchAttrName())) {
        int64_t samples = cast<RankedTensorType>(arg.getType()).getDimSize(batchAxis);
        if (wholeBatch >= 0 && samples != wholeBatch)
          return function.emitError() << "the dlc.batch arguments disagree on the batch size: "
                                      << wholeBatch << " and " << samples;
        wholeBatch = samples;
      }
    const int64_t partBatch = wholeBatch / int64_t(replicas);
    // Values computed from the samples (not yet summed over the replicas).
    llvm::DenseSet<Value> samples;
    for (BlockArgument arg : body.getArguments())
      if (function.getArgAttr(arg.getArgNumber(), DLCDialect::getBatchAttrName()))
        samples.insert(arg);
    for (Operation &op : body.without_terminator())
      if (!op.hasAttr(DLCDialect::getGradientAttrName()) &&
          llvm::any_of(op.getOperands(), [&](Value v) { return samples.contains(v); }))
        for (Value result : op.getResults())
          samples.insert(result);

    // The new signature: batch arguments once, the others once per device.
    SmallVector<Type> argumentTypes;
    SmallVector<DictionaryAttr> argumentAttrs;
    SmallVector<SmallVector<unsigned>> newIndex(body.getNumArguments());
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      NamedAttrList attrs(function.getArgAttrDict(i));
      if (function.getArgAttr(i, DLCDialect::getBatchAttrName())) {
        newIndex[i].push_back(argumentTypes.size());
        argumentTypes.push_back(arg.getType());
        argumentAttrs.push_back(attrs.getDictionary(context));
        continue;
      }
      for (size_t d = 0; d < replicas; ++d) {
        attrs.set(deviceName, targets[d]);
        newIndex[i].push_back(argumentTypes.size());
        argumentTypes.push_back(arg.getType());
        argumentAttrs.push_back(attrs.getDictionary(context));
      }
    }
    Block *entry = new Block();
    for (Type type : argumentTypes)
      entry->addArgument(type, function.getLoc());

    OpBuilder builder(context); // the new block has no region yet
    builder.setInsertionPointToEnd(entry);
    std::vector<IRMapping> mapping(replicas);
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!function.getArgAttr(i, DLCDialect::getBatchAttrName())) {
        for (size_t d = 0; d < replicas; ++d)
          mapping[d].map(arg, entry->getArgument(newIndex[i][d]));
        continue;
      }
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> partShape(type.getShape());
      partShape[size_t(batchAxis)] /= int64_t(replicas);
      auto partType = RankedTensorType::get(partShape, type.getElementType());
      std::optional<DeviceAttr> home =
          function.getArgAttrOfType<DeviceAttr>(i, deviceName)
              ? std::optional<DeviceAttr>(function.getArgAttrOfType<DeviceAttr>(i, deviceName))
              : std::nullopt;
      // One device (of several processes) takes its process's samples whole.
      SmallVector<Value> parts{entry->getArgument(newIndex[i][0])};
      if (replicas > 1) {
        auto split = builder.create<SplitOp>(arg.getLoc(), SmallVector<Type>(replicas, partType),
                                             entry->getArgument(newIndex[i][0]),
                                             builder.getI64IntegerAttr(batchAxis));
        if (home)
          split->setAttr(deviceName, *home);
        parts.assign(split.getResults().begin(), split.getResults().end());
      }
      for (size_t d = 0; d < replicas; ++d) {
        Value part = parts[d];
        if (!home || *home != targets[d])
          part = builder.create<CopyOp>(arg.getLoc(), part, targets[d]);
        mapping[d].map(arg, part);
      }
    }

    // Gradients wait in a bucket until it holds bucket-bytes, then are summed by one
    // all-reduce of their concatenation (fewer, larger transfers), or sooner if an op
    // needs one of them.
    struct Pending {
      Value original;
      SmallVector<Value> replicas;
    };
    SmallVector<Pending> bucket;
    int64_t pendingBytes = 0;
    SmallVector<Attribute> deviceList(targets.begin(), targets.end());
    auto placeOn = [&](Operation *op, size_t d) {
      op->setAttr(deviceName, targets[d]);
      return op->getResult(0);
    };
    // Over the replicas of this process and, with processes=N, those of the others.
    auto allReduce = [&](Location loc, ArrayRef<Value> parts, ReduceKind kind) {
      return builder.create<AllReduceOp>(
          loc, SmallVector<Type>(replicas, parts.front().getType()),
          ReduceKindAttr::get(context, kind), parts, builder.getArrayAttr(deviceList),
          builder.getI64IntegerAttr(processes));
    };
    auto flush = [&]() {
      if (bucket.empty())
        return;
      Location loc = bucket.back().original.getLoc();
      auto sumOf = [&](ArrayRef<Value> parts) {
        return allReduce(loc, parts, ReduceKind::sum);
      };
      if (bucket.size() == 1) {
        auto sum = sumOf(bucket.front().replicas);
        for (size_t d = 0; d < replicas; ++d)
          mapping[d].map(bucket.front().original, sum.getResult(unsigned(d)));
      } else {
        Type element = cast<RankedTensorType>(bucket.front().original.getType()).getElementType();
        SmallVector<Type> flatTypes;
        int64_t total = 0;
        for (const Pending &p : bucket) {
          int64_t n = cast<RankedTensorType>(p.original.getType()).getNumElements();
          flatTypes.push_back(RankedTensorType::get({n}, element));
          total += n;
        }
        SmallVector<Value> flats;
        for (size_t d = 0; d < replicas; ++d) {
          SmallVector<Value> pieces;
          for (auto [p, flatType] : llvm::zip(bucket, flatTypes))
            pieces.push_back(placeOn(builder.create<ReshapeOp>(loc, flatType, p.replicas[d]), d));
          flats.push_back(placeOn(builder.create<ConcatOp>(
                                      loc, RankedTensorType::get({total}, element), pieces,
                                      builder.getI64IntegerAttr(0)),
                                  d));
        }
        auto sum = sumOf(flats);
        for (size_t d = 0; d < replicas; ++d) {
          auto split = builder.create<SplitOp>(loc, flatTypes, sum.getResult(unsigned(d)),
                                               builder.getI64IntegerAttr(0));
          split->setAttr(deviceName, targets[d]);
          for (auto [k, p] : llvm::enumerate(bucket))
            mapping[d].map(p.original,
                           placeOn(builder.create<ReshapeOp>(loc, p.original.getType(),
                                                             split.getResult(unsigned(k))),
                                   d));
        }
      }
      bucket.clear();
      pendingBytes = 0;
    };

    // SyncBatchNorm: whole-batch statistics for every replica.
    llvm::DenseSet<Value> syncedMeans; // original batch_norm means now whole-batch
    auto scalar = [&](Location loc, Type element, double value) -> Value {
      auto type = RankedTensorType::get({}, element);
      return builder.create<ConstantOp>(
          loc, DenseElementsAttr::get(type, builder.getFloatAttr(element, value)));
    };
    auto perChannel = [&](Location loc, Value vector, RankedTensorType like, size_t d) {
      SmallVector<int64_t> shape(size_t(like.getRank()), 1);
      shape[1] = like.getDimSize(1);
      return placeOn(builder.create<ReshapeOp>(
                         loc, RankedTensorType::get(shape, like.getElementType()), vector),
                     d);
    };
    auto allMean = allReduce;
    auto syncForward = [&](BatchNormOp original, ArrayRef<Operation *> clones) {
      Location loc = original.getLoc();
      auto input = cast<RankedTensorType>(cast<BatchNormOp>(clones[0]).getInput().getType());
      Type element = input.getElementType();
      SmallVector<Value> means, moments;
      for (size_t d = 0; d < replicas; ++d) {
        auto bn = cast<BatchNormOp>(clones[d]);
        Value m = bn.getResult(1), v = bn.getResult(2);
        means.push_back(m);
        moments.push_back(placeOn(
            builder.create<AddOp>(loc, v, placeOn(builder.create<MulOp>(loc, m, m), d)), d));
      }
      auto mean = allMean(loc, means, ReduceKind::mean);
      auto moment = allMean(loc, moments, ReduceKind::mean);
      Value epsilon = scalar(loc, element, original.getEpsilon().convertToDouble());
      for (size_t d = 0; d < replicas; ++d) {
        auto bn = cast<BatchNormOp>(clones[d]);
        Value m = mean.getResult(unsigned(d));
        Value var = placeOn(builder.create<SubOp>(loc, moment.getResult(unsigned(d)),
                                                  placeOn(builder.create<MulOp>(loc, m, m), d)),
                            d);
        Value rstd = placeOn(
            builder.create<RsqrtOp>(loc, placeOn(builder.create<AddOp>(loc, var, epsilon), d)), d);
        Value centered = placeOn(
            builder.create<SubOp>(loc, bn.getInput(), perChannel(loc, m, input, d)), d);
        Value normalized = placeOn(
            builder.create<MulOp>(loc, centered, perChannel(loc, rstd, input, d)), d);
        Value scaled = placeOn(
            builder.create<MulOp>(loc, normalized, perChannel(loc, bn.getGamma(), input, d)), d);
        Value shifted = placeOn(
            builder.create<AddOp>(loc, scaled, perChannel(loc, bn.getBeta(), input, d)), d);
        mapping[d].map(original.getResult(0), shifted);
        mapping[d].map(original.getResult(1), m);
        mapping[d].map(original.getResult(2), var);
      }
      syncedMeans.insert(original.getResult(1));
    };
    auto syncBackward = [&](BatchNormBackwardOp original, ArrayRef<Operation *> clones) {
      Location loc = original.getLoc();
      auto input = cast<RankedTensorType>(cast<BatchNormBackwardOp>(clones[0]).getInput().getType());
      Type element = input.getElementType();
      SmallVector<Value> gammaSums, betaSums;
      for (Operation *clone : clones) {
        gammaSums.push_back(clone->getResult(1));
        betaSums.push_back(clone->getResult(2));
      }
      auto sumGamma = allMean(loc, gammaSums, ReduceKind::sum);
      auto sumBeta = allMean(loc, betaSums, ReduceKind::sum);
      double count = double(input.getNumElements() / input.getDimSize(1)) * double(replicas) *
                     double(processes);
      Value inverseCount = scalar(loc, element, 1.0 / count);
      Value epsilon = scalar(loc, element, original.getEpsilon().convertToDouble());
      for (size_t d = 0; d < replicas; ++d) {
        auto bn = cast<BatchNormBackwardOp>(clones[d]);
        // dx = gamma * rstd * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n), whole batch.
        Value rstd = placeOn(builder.create<RsqrtOp>(
                                 loc, placeOn(builder.create<AddOp>(loc, bn.getOperand(4),
                                                                    epsilon),
                                              d)),
                             d);
        Value rstd4 = perChannel(loc, rstd, input, d);
        Value xhat = placeOn(
            builder.create<MulOp>(
                loc,
                placeOn(builder.create<SubOp>(loc, bn.getInput(),
                                              perChannel(loc, bn.getOperand(3), input, d)),
                        d),
                rstd4),
            d);
        Value meanDy = perChannel(
            loc, placeOn(builder.create<MulOp>(loc, sumBeta.getResult(unsigned(d)), inverseCount), d),
            input, d);
        Value meanDyXhat = perChannel(
            loc, placeOn(builder.create<MulOp>(loc, sumGamma.getResult(unsigned(d)), inverseCount), d),
            input, d);
        Value inner = placeOn(
            builder.create<SubOp>(
                loc, placeOn(builder.create<SubOp>(loc, bn.getGradOutput(), meanDy), d),
                placeOn(builder.create<MulOp>(loc, xhat, meanDyXhat), d)),
            d);
        Value scale = placeOn(builder.create<MulOp>(loc, perChannel(loc, bn.getGamma(), input, d),
                                                    rstd4),
                              d);
        mapping[d].map(original.getResult(0),
                       placeOn(builder.create<MulOp>(loc, inner, scale), d));
      }
    };

    // The body, op by op and replica by replica; gradients summed as soon as they exist.
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());
    for (Operation &operation : body.without_terminator()) {
      Operation *op = &operation;
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return llvm::any_of(bucket, [&](const Pending &p) { return p.original == v; });
          }))
        flush();
      if (op->hasTrait<mlir::OpTrait::ConstantLike>()) {
        // Shared by the replicas; a splat with the whole batch's axis that per-sample ops
        // read, directly or through reshapes and arithmetic (a loss's head gradient,
        // broadcast over a language model's positions), is cut to one part's size.
        Operation *shared = builder.clone(*op);
        auto type = dyn_cast<RankedTensorType>(shared->getResult(0).getType());
        auto splat = dyn_cast_or_null<SplatElementsAttr>(shared->getAttr("value"));
        bool readPerSample = reachesSamples(op->getResult(0), samples);
        if (splat && type && type.getRank() > batchAxis &&
            type.getDimSize(batchAxis) == wholeBatch && readPerSample) {
          SmallVector<int64_t> shape(type.getShape());
          shape[size_t(batchAxis)] = partBatch;
          auto local = RankedTensorType::get(shape, type.getElementType());
          shared->setAttr("value", splat.resizeSplat(local));
          shared->getResult(0).setType(local);
        }
        for (size_t d = 0; d < replicas; ++d)
          mapping[d].map(op->getResults(), shared->getResults());
        continue;
      }
      SmallVector<Operation *> clones;
      for (size_t d = 0; d < replicas; ++d) {
        Operation *clone = builder.clone(*op, mapping[d]);
        if (!isa<CopyOp>(clone))
          clone->setAttr(deviceName, targets[d]);
        clone->removeAttr(DLCDialect::getGradientAttrName());
        refreshTypes(op, clone, batchAxis, wholeBatch, partBatch);
        if (broadcastsAlongSamples(op, samples, batchAxis, wholeBatch)) {
          auto type = cast<RankedTensorType>(clone->getResult(0).getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[size_t(batchAxis)] = partBatch;
          clone->getResult(0).setType(RankedTensorType::get(shape, type.getElementType()));
        }
        clones.push_back(clone);
      }
      if (syncBatchNorm) {
        if (auto bn = dyn_cast<BatchNormOp>(op); bn && bn.getTraining())
          syncForward(bn, clones);
        if (auto back = dyn_cast<BatchNormBackwardOp>(op);
            back && syncedMeans.contains(back->getOperand(3)))
          syncBackward(back, clones);
      }
      if (!op->hasAttr(DLCDialect::getGradientAttrName()))
        continue;
      if (op->getNumResults() != 1)
        return op->emitError() << "dlc.gradient marks an op with one result";
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      if (!bucket.empty() && cast<RankedTensorType>(bucket.front().original.getType())
                                     .getElementType() != type.getElementType())
        flush();
      int64_t bytes = type.getNumElements() * int64_t(type.getElementTypeBitWidth() / 8);
      if (bytes >= bucketBytes)
        flush(); // a large gradient is summed alone: no copy into a bucket
      Pending pending{op->getResult(0), {}};
      for (Operation *clone : clones)
        pending.replicas.push_back(clone->getResult(0));
      bucket.push_back(std::move(pending));
      pendingBytes += bytes;
      if (pendingBytes >= bucketBytes)
        flush();
    }
    flush();

    // Results: updates per replica, per-sample values gathered, the rest from replica 0.
    SmallVector<Value> results;
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> resultAttrs;
    for (OpOperand &operand : returnOp->getOpOperands()) {
      unsigned k = operand.getOperandNumber();
      Value value = operand.get();
      NamedAttrList attrs(function.getResultAttrDict(k));
      if (auto update =
              function.getResultAttrOfType<IntegerAttr>(k, DLCDialect::getUpdatesAttrName())) {
        unsigned target = unsigned(update.getInt());
        if (target >= newIndex.size() || newIndex[target].size() != replicas)
          return function.emitError() << "result #" << k
                                      << " updates a batch argument, which has no replicas";
        for (size_t d = 0; d < replicas; ++d) {
          attrs.set(DLCDialect::getUpdatesAttrName(),
                    builder.getI64IntegerAttr(newIndex[target][d]));
          results.push_back(mapping[d].lookup(value));
          resultTypes.push_back(value.getType());
          resultAttrs.push_back(attrs.getDictionary(context));
        }
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(mapping[0].lookup(value).getType());
      if (samples.contains(value) && type && type.getRank() > batchAxis) {
        SmallVector<Value> parts;
        for (size_t d = 0; d < replicas; ++d) {
          Value part = mapping[d].lookup(value);
          if (d > 0)
            part = builder.create<CopyOp>(value.getLoc(), part, targets[0]);
          parts.push_back(part);
        }
        SmallVector<int64_t> wholeShape(type.getShape());
        wholeShape[size_t(batchAxis)] *= int64_t(replicas);
        auto whole = builder.create<ConcatOp>(
            value.getLoc(), RankedTensorType::get(wholeShape, type.getElementType()), parts,
            builder.getI64IntegerAttr(batchAxis));
        whole->setAttr(deviceName, targets[0]);
        results.push_back(whole);
        resultTypes.push_back(whole.getType());
      } else {
        results.push_back(mapping[0].lookup(value));
        resultTypes.push_back(value.getType());
      }
      resultAttrs.push_back(attrs.getDictionary(context));
    }
    builder.create<func::ReturnOp>(returnOp.getLoc(), results);

    // Swap the body and the signature.
    body.dropAllDefinedValueUses();
    function.getBody().getBlocks().clear();
    function.getBody().push_back(entry);
    function.setFunctionType(FunctionType::get(context, argumentTypes, resultTypes));
    function.setAllArgAttrs(argumentAttrs);
    function.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace
} // namespace mlir::dlc
