//===- PlaceDevices.cpp - a device for every op, copies where needed ----------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "DeviceOptions.h"

#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCPLACEDEVICES
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kPlace = "dlc.place";

/// What each kind of device can run, as the module's `dlc.targets` says (everything,
/// when it says nothing).
class Targets {
public:
  explicit Targets(Operation *scope) {
    ModuleOp module = scope->getParentOfType<ModuleOp>();
    described_ = module && module->hasAttr(DLCDialect::getTargetsAttrName());
    if (described_)
      for (Attribute entry :
           module->getAttrOfType<ArrayAttr>(DLCDialect::getTargetsAttrName()))
        targets_.push_back(cast<TargetAttr>(entry));
  }

  /// Whether devices of `kind` have a kernel for `op`. Host memory kinds compute with
  /// the cpu's kernels.
  bool runs(StringRef op, DeviceKind kind) const {
    if (!described_)
      return true;
    if (kind == DeviceKind::cpu_pinned || kind == DeviceKind::cpu_shared)
      kind = DeviceKind::cpu;
    return llvm::any_of(targets_, [&](TargetAttr target) {
      return target.getKind() == kind && target.runs(op);
    });
  }

private:
  bool described_ = false;
  SmallVector<TargetAttr> targets_;
};

struct PlaceDevicesPass : impl::DLCPlaceDevicesBase<PlaceDevicesPass> {
  using DLCPlaceDevicesBase::DLCPlaceDevicesBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    MLIRContext *context = &getContext();
    DeviceAttr fallbackDevice = parseDeviceOption(context, defaultDevice);
    if (!fallbackDevice) {
      function.emitError() << "dlc-place-devices: default-device '" << defaultDevice
                           << "' is not kind:ordinal (cpu:0, gpu:1, ...)";
      return signalPassFailure();
    }
    Targets targets(function);
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
      DeviceAttr target = op->getAttrOfType<DeviceAttr>(kPlace);
      op->removeAttr(kPlace);
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
      if (targets.runs(name, DeviceKind::cpu) && !targets.runs(name, target.getKind())) {
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
