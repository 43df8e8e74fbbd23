//===- PlaceDevices.cpp - a device for every op, copies where needed ----------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "DeviceOptions.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCPLACEDEVICES
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

struct PlaceDevicesPass : impl::DLCPlaceDevicesBase<PlaceDevicesPass> {
  using DLCPlaceDevicesBase::DLCPlaceDevicesBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
    if (failed(runnable))
      return signalPassFailure();
    if (!*runnable)
      return;
    MLIRContext *context = &getContext();
    DeviceAttr fallbackDevice = parseDeviceOption(context, defaultDevice);
    if (!fallbackDevice) {
      function.emitError() << "dlc-place-devices: default-device '" << defaultDevice
                           << "' is not kind:ordinal (cpu:0, gpu:1, ...)";
      return signalPassFailure();
    }
    StringRef deviceName = DLCDialect::getDeviceAttrName();
    // Where each value was meant to be: a fallback op's consumers follow its request,
    // not the CPU it fell back to.
    llvm::DenseMap<Value, DeviceAttr> intended;
    llvm::DenseMap<std::pair<Value, Attribute>, Value> copies;
    auto deviceOf = [&](Value v) -> DeviceAttr {
      if (DeviceAttr meant = intended.lookup(v))
        return meant;
      std::optional<DeviceAttr> known = getKnownDevice(v);
      return known ? *known : DeviceAttr();
    };
    auto copyTo = [&](Value value, DeviceAttr device) {
      Value &slot = copies[{value, device}];
      if (slot)
        return slot;
      OpBuilder builder(context);
      if (Operation *producer = value.getDefiningOp())
        builder.setInsertionPointAfter(producer);
      else
        builder.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
      slot = builder.create<CopyOp>(value.getLoc(), value, device);
      return slot;
    };

    bool failed = false;
    for (Operation &operation : llvm::make_early_inc_range(function.getBody().front())) {
      Operation *op = &operation;
      if (isa<func::ReturnOp, CopyOp, AllReduceOp>(op) ||
          op->hasTrait<mlir::OpTrait::ConstantLike>())
        continue;
      DeviceAttr target = op->getAttrOfType<DeviceAttr>(DLCDialect::getPlaceAttrName());
      op->removeAttr(DLCDialect::getPlaceAttrName());
      if (!target)
        target = op->getAttrOfType<DeviceAttr>(deviceName);
      for (Value operand : op->getOperands())
        if (!target)
          target = deviceOf(operand);
      if (!target)
        target = fallbackDevice;
      DeviceAttr meant = target;

      // An op with a CPU kernel but none for the target's kind falls back, if allowed.
      StringRef name = op->getName().getStringRef();
      if (targetRuns(function, name, DeviceKind::cpu) &&
          !targetRuns(function, name, target.getKind())) {
        if (!allowFallback) {
          op->emitError() << "no kernel for " << name << " on " << target.str()
                          << " in this build (rerun with allow-fallback to run it on cpu(0))";
          failed = true;
          continue;
        }
        target = DeviceAttr::get(context, DeviceKind::cpu, 0);
        op->emitRemark() << name << " has no kernel for " << meant.str()
                         << " in this build; placed on cpu(0)";
      }

      for (OpOperand &use : op->getOpOperands()) {
        std::optional<DeviceAttr> known = getKnownDevice(use.get());
        if (!known || *known == target)
          continue;
        if (explicitOnly) {
          op->emitError() << "operand #" << use.getOperandNumber() << " lives on "
                          << known->str() << " but the op runs on " << target.str()
                          << "; move it with dlc.copy first (explicit-only placement)";
          failed = true;
          continue;
        }
        use.set(copyTo(use.get(), target));
      }
      op->setAttr(deviceName, target);
      if (meant != target)
        for (Value result : op->getResults())
          intended[result] = meant;
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::dlc
