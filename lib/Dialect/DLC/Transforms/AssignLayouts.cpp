//===- AssignLayouts.cpp - blocked layouts for CPU activations -----------------===//
//
// The ops are walked in the order the runtime runs them; every op that becomes a kernel
// step on a host device asks its layout rule (dlc/Core/LayoutRules.h, named in the ODS)
// which layout each operand must be read in and each result written in, given the
// layouts the operands have. The rules are the eager dispatcher's, so a compiled block
// keeps the layouts eager code would.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Core/LayoutRules.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <tuple>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCASSIGNLAYOUTS
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

using CoreLayout = ::dlc::Layout;

Layout toDialect(CoreLayout layout) { return Layout(int(layout)); }

::dlc::TensorMeta metaOf(Value value) {
  ::dlc::TensorMeta meta;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return meta;
  std::string why;
  if (!runtimeTensor(type, meta.shape, meta.dtype, why))
    meta.dtype = ::dlc::DType::i64; // no tensor the rules block
  return meta;
}

std::vector<::dlc::TensorMeta> metasOf(ValueRange values) {
  std::vector<::dlc::TensorMeta> metas;
  for (Value value : values)
    metas.push_back(metaOf(value));
  return metas;
}

/// The layouts of one function, decided op by op.
class FunctionLayouts {
public:
  FunctionLayouts(func::FuncOp function, const llvm::StringMap<std::vector<CoreLayout>> &done,
                  CoreLayout blocked)
      : function_(function), done_(done), blocked_(blocked) {}

  /// Decides every layout; false (with an error emitted) when the IR cannot be handled.
  bool run() {
    Block &body = function_.getBody().front();
    pinArgumentsResultsAndViews(body);
    if (!bindArguments(body))
      return false;
    return runBlock(body);
  }

  /// The layout of each returned value, after run().
  std::vector<CoreLayout> resultLayouts() {
    std::vector<CoreLayout> layouts;
    for (Value value : function_.getBody().front().getTerminator()->getOperands())
      layouts.push_back(layoutOf(value));
    return layouts;
  }

private:
  CoreLayout layoutOf(Value value) const {
    auto it = layouts_.find(value);
    return it == layouts_.end() ? CoreLayout::plain : it->second;
  }

  /// A value whose storage someone else reads as plain memory: it stays plain. A region
  /// argument of a fused op run op by op is its operand's storage.
  void pin(Value value) {
    pinned_.insert(value);
    if (auto argument = dyn_cast<BlockArgument>(value))
      if (auto fused = dyn_cast_or_null<FusedOp>(argument.getOwner()->getParentOp()))
        pin(fused.getInputs()[argument.getArgNumber()]);
  }

  void pinArgumentsResultsAndViews(Block &body) {
    for (BlockArgument argument : body.getArguments())
      pin(argument);
    bool blockedResults = function_->hasAttr(DLCDialect::getBlockedResultsAttrName());
    Operation *ret = body.getTerminator();
    for (OpOperand &returned : ret->getOpOperands())
      if (!blockedResults ||
          function_.getResultAttr(returned.getOperandNumber(), DLCDialect::getUpdatesAttrName()))
        pin(returned.get());
    // A view reads its root's bytes as they are, with no step to convert them.
    function_.walk([&](Operation *op) {
      if (!isViewOp(op))
        return;
      pin(op->getOperand(0));
      viewed_.insert(op->getOperand(0));
      for (Value result : op->getResults())
        pin(result);
    });
  }

  /// Arguments the caller binds in a layout of a function compiled before this one.
  bool bindArguments(Block &body) {
    StringRef savedFrom = DLCDialect::getSavedFromAttrName();
    llvm::DenseSet<int64_t> updated;
    for (unsigned k = 0; k < function_.getNumResults(); ++k)
      if (auto target =
              function_.getResultAttrOfType<IntegerAttr>(k, DLCDialect::getUpdatesAttrName()))
        updated.insert(target.getInt());
    for (BlockArgument argument : body.getArguments()) {
      unsigned i = argument.getArgNumber();
      auto source = function_.getArgAttrOfType<ArrayAttr>(i, savedFrom);
      if (!source)
        continue;
      StringRef producer = cast<FlatSymbolRefAttr>(source[0]).getValue();
      int64_t result = cast<IntegerAttr>(source[1]).getInt();
      auto known = done_.find(producer);
      if (known == done_.end() || result >= int64_t(known->second.size())) {
        function_.emitError() << "argument #" << i << " is result " << result << " of @"
                              << producer << ", which has no such result before this "
                              << "function (the module lists the producer first)";
        return false;
      }
      CoreLayout layout = known->second[size_t(result)];
      if (layout == CoreLayout::plain || updated.count(i) || viewed_.count(argument) ||
          !isBlockable(argument.getType(), toDialect(layout)))
        continue;
      layouts_[argument] = layout;
      function_.setArgAttr(i, DLCDialect::getLayoutAttrName(),
                           LayoutAttr::get(function_.getContext(), toDialect(layout)));
    }
    return true;
  }

  bool runBlock(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (isViewOp(op))
        continue; // no step; views and what they view are plain
      if (auto fused = dyn_cast<FusedOp>(op)) {
        if (!runFused(fused))
          return false;
        continue;
      }
      ::dlc::LayoutPlan plan = ::dlc::plain_layouts(op->getNumOperands(), op->getNumResults());
      if (isHostKind(deviceKind(op)) && isa<DLCDialect>(op->getDialect()))
        if (::dlc::LayoutFn rule = ::dlc::layout_rule_of(op->getName().getStringRef().str()))
          if (!planWith(rule, op, op->getOperands(), op->getResults(), plan))
            return false;
      apply(op, plan);
    }
    return true;
  }

  bool runFused(FusedOp fused) {
    DeviceKind kind = deviceKind(fused);
    auto runs = [&](StringRef op) { return targetRuns(fused, op, kind); };
    FusedExecution execution = fusedExecution(fused, kind, runs);
    Block &body = fused.getBody().front();
    if (execution == FusedExecution::op_by_op) {
      // The body's ops are steps of their own over the fused op's operands.
      for (auto [argument, input] : llvm::zip(body.getArguments(), fused.getInputs())) {
        layouts_[argument] = layoutOf(input);
        if (pinned_.count(input))
          pinned_.insert(argument);
      }
      for (auto [result, yielded] :
           llvm::zip(fused.getResults(), body.getTerminator()->getOperands()))
        if (pinned_.count(result))
          pin(yielded);
      if (!runBlock(body))
        return false;
      for (auto [result, yielded] :
           llvm::zip(fused.getResults(), body.getTerminator()->getOperands()))
        layouts_[result] = layoutOf(yielded);
      record(fused);
      return true;
    }
    ::dlc::LayoutPlan plan = ::dlc::plain_layouts(fused.getNumOperands(), fused.getNumResults());
    if (!isHostKind(kind)) {
      apply(fused, plan);
      return true;
    }
    if (execution == FusedExecution::library_pooling && poolConvBackwardRegion(fused)) {
      if (!planPoolConvBackward(fused, *poolConvBackwardRegion(fused), plan))
        return false;
    } else if (execution == FusedExecution::library_pooling) {
      // The convolution's rule over the region's operands and its activation, then the
      // pooling's over that activation in the layout the convolution gives it (the
      // kernel pools the activation in the layout it was written in).
      ConvPoolRegion region = *convPoolRegion(fused);
      Value activation = region.pool.getInput();
      ::dlc::LayoutFn convRule = ::dlc::layout_rule_of(region.conv->getName().getStringRef().str());
      ::dlc::LayoutFn poolRule = ::dlc::layout_rule_of(region.pool->getName().getStringRef().str());
      ::dlc::LayoutPlan conv, pool;
      if (!convRule || !poolRule ||
          !planWith(convRule, region.conv, fused.getInputs(), ValueRange(activation), conv))
        return false;
      layouts_[activation] = conv.outputs[0];
      bool planned = planWith(poolRule, region.pool, ValueRange(activation),
                              region.pool->getResults(), pool);
      layouts_.erase(activation);
      if (!planned)
        return false;
      if (pool.inputs[0] != conv.outputs[0]) {
        fused.emitError() << "dlc-assign-layouts: the pooling of a " << kConvPoolRegion
                          << " region wants its input in another layout than the "
                             "convolution writes";
        return false;
      }
      plan.inputs = conv.inputs;
      plan.outputs.clear();
      if (region.yieldsActivation)
        plan.outputs.push_back(conv.outputs[0]);
      plan.outputs.insert(plan.outputs.end(), pool.outputs.begin(), pool.outputs.end());
    } else if (execution == FusedExecution::library_norm) {
      // The batch norm's rule (its gradient's) over the region's operands; the
      // activation's output, read for its gradient's mask, in its gradient's layout.
      NormActivationRegion region = *normActivationRegion(fused);
      ::dlc::LayoutFn rule = ::dlc::layout_rule_of(region.norm->getName().getStringRef().str());
      if (!rule)
        return false;
      if (!region.backward) {
        // A residual goes in the output's layout.
        if (!planWith(rule, region.norm, fused.getInputs().take_front(3), fused.getResults(),
                      plan))
          return false;
        if (region.add)
          plan.inputs.push_back(plan.outputs[0]);
      } else {
        SmallVector<Value> normInputs{fused.getInputs()[0]};
        normInputs.append(fused.getInputs().begin() + 2, fused.getInputs().end());
        ::dlc::LayoutPlan norm;
        if (!planWith(rule, region.norm, normInputs, fused.getResults().take_front(3), norm))
          return false;
        plan.inputs = {norm.inputs[0], norm.inputs[0]};
        plan.inputs.insert(plan.inputs.end(), norm.inputs.begin() + 1, norm.inputs.end());
        plan.outputs = norm.outputs;
        if (fused.getNumResults() == 4) // the activation's gradient, in dz's layout
          plan.outputs.push_back(norm.inputs[0]);
      }
    } else if (execution == FusedExecution::library_epilogue) {
      // The library op's rule, over the region's operands and results.
      Operation *library = &body.front();
      if (::dlc::LayoutFn rule = ::dlc::layout_rule_of(library->getName().getStringRef().str()))
        if (!planWith(rule, library, fused.getInputs(), fused.getResults(), plan))
          return false;
    } else {
      // An element-wise chain: the element-wise rule over its non-scalar inputs (the
      // scalars are broadcast, one element, and stay plain).
      SmallVector<bool> scalar = fusedScalarValues(fused);
      std::vector<CoreLayout> current;
      std::vector<::dlc::TensorMeta> ins;
      for (auto [i, input] : llvm::enumerate(fused.getInputs()))
        if (!scalar[i]) {
          current.push_back(layoutOf(input));
          ins.push_back(metaOf(input));
        }
      std::vector<::dlc::TensorMeta> outs = metasOf(fused.getResults());
      if (!ins.empty() && !outs.empty()) {
        ::dlc::LayoutPlan tensors =
            ::dlc::elementwise_layouts(current, ins, outs, ::dlc::Attrs(), blocked_);
        for (size_t i = 0, t = 0; i < fused.getNumOperands(); ++i)
          if (!scalar[i])
            plan.inputs[i] = tensors.inputs[t++];
        plan.outputs = tensors.outputs;
      }
    }
    apply(fused, plan);
    return true;
  }

  /// A max_pool2d_backward_conv2d region's plan: the pooling gradient's rule over its
  /// two operands, then the convolution gradients' over the activation gradient in the
  /// layout the pooling's gives it (the kernel passes it on as written) and their other
  /// operand.
  bool planPoolConvBackward(FusedOp fused, PoolConvBackwardRegion region,
                            ::dlc::LayoutPlan &plan) {
    auto ruleOf = [](Operation *op) {
      return ::dlc::layout_rule_of(op->getName().getStringRef().str());
    };
    Value gradient = region.pool.getResult();
    ValueRange inputs = fused.getInputs();
    ::dlc::LayoutPlan pool, data, filter;
    if (!ruleOf(region.pool) || !ruleOf(region.filter) || (region.data && !ruleOf(region.data)) ||
        !planWith(ruleOf(region.pool), region.pool, inputs.take_front(2), ValueRange(gradient),
                  pool))
      return false;
    layouts_[gradient] = pool.outputs[0];
    bool planned =
        planWith(ruleOf(region.filter), region.filter, ValueRange{gradient, inputs.back()},
                 region.filter->getResults(), filter) &&
        (!region.data || planWith(ruleOf(region.data), region.data,
                                  ValueRange{gradient, inputs[2]},
                                  ValueRange(region.data.getResult()), data));
    layouts_.erase(gradient);
    if (!planned)
      return false;
    if (filter.inputs[0] != pool.outputs[0] || (region.data && data.inputs[0] != pool.outputs[0])) {
      fused.emitError() << "dlc-assign-layouts: the convolution gradients of a "
                        << kPoolConvBackwardRegion
                        << " region want the activation's gradient in another layout than "
                           "the pooling's gradient writes";
      return false;
    }
    plan.inputs = {pool.inputs[0], pool.inputs[1]};
    plan.outputs.clear();
    if (region.data) {
      plan.inputs.push_back(data.inputs[1]);
      plan.outputs.push_back(data.outputs[0]);
    }
    plan.inputs.push_back(filter.inputs[1]);
    plan.outputs.insert(plan.outputs.end(), filter.outputs.begin(), filter.outputs.end());
    return true;
  }

  /// Runs `rule` for an op reading `inputs` and writing `outputs`, with `attrsOf`'s
  /// attributes.
  bool planWith(::dlc::LayoutFn rule, Operation *attrsOf, ValueRange inputs,
                ValueRange outputs, ::dlc::LayoutPlan &plan) {
    ::dlc::Attrs attrs;
    std::string error;
    if (!readKernelAttrs(attrsOf, attrs, error)) {
      attrsOf->emitError() << error;
      return false;
    }
    std::vector<CoreLayout> current;
    for (Value input : inputs)
      current.push_back(layoutOf(input));
    plan = rule(current, metasOf(inputs), metasOf(outputs), attrs, blocked_);
    return true;
  }

  /// Converts the operands `plan` wants in the other layout, and records the results'.
  void apply(Operation *op, const ::dlc::LayoutPlan &plan) {
    for (OpOperand &operand : op->getOpOperands()) {
      CoreLayout wanted = plan.inputs[operand.getOperandNumber()];
      if (layoutOf(operand.get()) != wanted)
        operand.set(converted(operand.get(), wanted, op));
    }
    for (OpResult result : op->getResults()) {
      CoreLayout layout = plan.outputs[result.getResultNumber()];
      layouts_[result] = layout;
      if (layout == CoreLayout::plain || !pinned_.count(result))
        continue;
      // Read as plain by someone else: the op writes a blocked value, and a conversion
      // right after it makes the plain one that everything else reads.
      OpBuilder builder(op->getContext());
      builder.setInsertionPointAfter(op);
      auto plain = builder.create<ToLayoutOp>(op->getLoc(), result.getType(), result,
                                              LayoutAttr::get(op->getContext(), Layout::plain));
      setDevice(plain, result, op);
      result.replaceAllUsesExcept(plain.getResult(), plain);
      pinned_.insert(plain.getResult());
      layouts_[plain.getResult()] = CoreLayout::plain;
    }
    record(op);
  }

  /// `value` in `layout`, converted right before `user` (once per value, layout and the
  /// block the conversion can be seen from).
  Value converted(Value value, CoreLayout layout, Operation *user) {
    for (Block *block = user->getBlock(); block;
         block = block->getParentOp() ? block->getParentOp()->getBlock() : nullptr) {
      auto known = conversions_.find({block, value, int(layout)});
      if (known != conversions_.end())
        return known->second;
    }
    OpBuilder builder(user);
    auto conversion = builder.create<ToLayoutOp>(
        user->getLoc(), value.getType(), value,
        LayoutAttr::get(user->getContext(), toDialect(layout)));
    setDevice(conversion, value, user);
    layouts_[conversion.getResult()] = layout;
    conversions_[{user->getBlock(), value, int(layout)}] = conversion.getResult();
    return conversion.getResult();
  }

  /// A conversion runs where the value lives (a copy's target may lack the kernel).
  static void setDevice(ToLayoutOp conversion, Value value, Operation *user) {
    std::optional<DeviceAttr> device = getKnownDevice(value);
    if (!device)
      if (auto own = user->getAttrOfType<DeviceAttr>(DLCDialect::getDeviceAttrName()))
        device = own;
    if (device && user->getParentOfType<FusedOp>() == nullptr)
      conversion->setAttr(DLCDialect::getDeviceAttrName(), *device);
  }

  /// Writes `op`'s result layouts into its `dlc.layouts` (left out when all are plain).
  void record(Operation *op) {
    SmallVector<Attribute> layouts;
    bool blocked = false;
    for (Value result : op->getResults()) {
      blocked |= layoutOf(result) != CoreLayout::plain;
      layouts.push_back(LayoutAttr::get(op->getContext(), toDialect(layoutOf(result))));
    }
    if (blocked)
      op->setAttr(DLCDialect::getLayoutsAttrName(), ArrayAttr::get(op->getContext(), layouts));
    else
      op->removeAttr(DLCDialect::getLayoutsAttrName());
  }

  func::FuncOp function_;
  const llvm::StringMap<std::vector<CoreLayout>> &done_;
  const CoreLayout blocked_; // the blocked layout the rules may choose
  llvm::DenseMap<Value, CoreLayout> layouts_;
  llvm::DenseSet<Value> pinned_, viewed_;
  llvm::DenseMap<std::tuple<Block *, Value, int>, Value> conversions_;
};

struct AssignLayoutsPass : impl::DLCAssignLayoutsBase<AssignLayoutsPass> {
  using DLCAssignLayoutsBase::DLCAssignLayoutsBase;

  void runOnOperation() override {
    std::optional<Layout> named = symbolizeLayout(layout);
    if (!named || *named == Layout::plain) {
      getOperation().emitError() << "dlc-assign-layouts: layout '" << layout
                                 << "' is not a blocked layout; expected nChw16c or nChw8c";
      return signalPassFailure();
    }
    llvm::StringMap<std::vector<CoreLayout>> done;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
      if (failed(runnable))
        return signalPassFailure();
      if (!*runnable)
        continue;
      FunctionLayouts layouts(function, done, CoreLayout(int(*named)));
      if (!layouts.run())
        return signalPassFailure();
      done[function.getName()] = layouts.resultLayouts();
    }
  }
};

} // namespace
} // namespace mlir::dlc
