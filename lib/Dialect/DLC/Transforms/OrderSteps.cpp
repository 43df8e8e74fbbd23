//===- OrderSteps.cpp - order a multi-device function for its device queues ----===//
//
// The runtime runs ops in function order, each on its device's in-order queue, and
// batches consecutive ops of one device into one task. Two things follow: an all-reduce
// placed mid-backward makes every device wait for the slowest there, and alternating
// devices op by op costs a task per op. So: everything that needs no all-reduce result
// first, then the all-reduces and what depends on them; within each part, long
// stretches of one device. Each device's ops keep their relative order, so each draws
// its random seeds in the same sequence as before.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <functional>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCORDERSTEPS
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

class StepOrder {
public:
  explicit StepOrder(func::FuncOp function)
      : function_(function), fallback_(functionDevice(function)) {}

  /// Orders the ops of the function's one block.
  void run() {
    Block &body = function_.getBody().front();
    SmallVector<Operation *> steps;
    bool allReduce = false;
    llvm::DenseSet<Value> late; // needs an all-reduce's result
    llvm::DenseSet<Operation *> lateOps;
    for (Operation &op : body.without_terminator()) {
      bool isLate = isa<AllReduceOp>(&op) ||
                    llvm::any_of(op.getOperands(), [&](Value v) { return late.contains(v); });
      if (isLate) {
        late.insert(op.getResults().begin(), op.getResults().end());
        lateOps.insert(&op);
      }
      allReduce = allReduce || isa<AllReduceOp>(&op);
      if (isViewOp(&op))
        continue;
      steps.push_back(&op);
      device_[&op] = deviceOf(&op);
      if (auto reduce = dyn_cast<AllReduceOp>(&op))
        for (Attribute device : reduce.getDevices())
          noteDevice(cast<DeviceAttr>(device));
      else
        noteDevice(device_[&op]);
    }
    if (!allReduce && devices_.size() <= 1)
      return;
    SmallVector<Operation *> early, afterReduce;
    for (Operation *op : steps)
      (lateOps.contains(op) ? afterReduce : early).push_back(op);
    SmallVector<Operation *> order = byDevice(early);
    for (Operation *op : byDevice(afterReduce))
      order.push_back(op);

    Operation *end = body.getTerminator();
    llvm::DenseSet<Operation *> placed;
    std::function<void(Operation *)> place = [&](Operation *op) {
      for (Value operand : op->getOperands())
        if (Operation *view = operand.getDefiningOp();
            view && view->getBlock() == &body && isViewOp(view) && !placed.contains(view))
          place(view);
      op->moveBefore(end);
      placed.insert(op);
    };
    SmallVector<Operation *> views; // views no step reads: at the end, as they were
    for (Operation &op : body.without_terminator())
      if (isViewOp(&op))
        views.push_back(&op);
    for (Operation *op : order)
      place(op);
    for (Operation *view : views)
      if (!placed.contains(view))
        place(view);
  }

private:
  DeviceAttr deviceOf(Operation *op) {
    if (auto copy = dyn_cast<CopyOp>(op))
      return copy.getDevice();
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      return cast<DeviceAttr>(reduce.getDevices()[0]);
    return stepDevice(op, fallback_);
  }

  void noteDevice(DeviceAttr device) {
    if (!llvm::is_contained(devices_, device))
      devices_.push_back(device);
  }

  /// The value whose storage `value` views (itself unless a view op defines it).
  static Value rootOf(Value value) {
    while (Operation *op = value.getDefiningOp()) {
      if (!isViewOp(op))
        break;
      value = op->getOperand(0);
    }
    return value;
  }

  /// `part` reordered: each device in turn runs its ready ops, in order, until one is
  /// not ready; when no device can go on, the first op left (an all-reduce, or an op it
  /// feeds) is taken as it is.
  SmallVector<Operation *> byDevice(ArrayRef<Operation *> part) {
    llvm::DenseSet<Value> pending;
    for (Operation *op : part)
      pending.insert(op->getResults().begin(), op->getResults().end());
    auto take = [&](Operation *op, SmallVector<Operation *> &ordered) {
      for (Value result : op->getResults())
        pending.erase(result);
      ordered.push_back(op);
    };
    SmallVector<Operation *> ordered;
    std::vector<bool> done(part.size(), false);
    size_t left = part.size();
    while (left > 0) {
      size_t before = left;
      for (DeviceAttr device : devices_) {
        bool progress = true;
        while (progress) {
          progress = false;
          for (size_t i = 0; i < part.size(); ++i) {
            if (done[i] || device_[part[i]] != device || isa<AllReduceOp>(part[i]))
              continue;
            bool ready = llvm::all_of(part[i]->getOperands(),
                                      [&](Value v) { return !pending.contains(rootOf(v)); });
            if (!ready)
              break; // this device's ops keep their order
            take(part[i], ordered);
            done[i] = true;
            --left;
            progress = true;
          }
        }
      }
      if (left == before)
        for (size_t i = 0; i < part.size(); ++i)
          if (!done[i]) {
            take(part[i], ordered);
            done[i] = true;
            --left;
            break;
          }
    }
    return ordered;
  }

  func::FuncOp function_;
  DeviceAttr fallback_;
  llvm::DenseMap<Operation *, DeviceAttr> device_;
  SmallVector<DeviceAttr> devices_;
};

struct OrderStepsPass : impl::DLCOrderStepsBase<OrderStepsPass> {
  void runOnOperation() override {
    FailureOr<bool> runnable = hasRunnableBody(getOperation(), getArgument());
    if (failed(runnable))
      return signalPassFailure();
    if (*runnable)
      StepOrder(getOperation()).run();
  }
};

} // namespace
} // namespace mlir::dlc
