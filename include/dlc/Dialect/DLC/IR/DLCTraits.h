//===- DLCTraits.h - op traits of the dlc dialect ----------------------------===//
#ifndef DLC_DIALECT_DLC_IR_DLCTRAITS_H
#define DLC_DIALECT_DLC_IR_DLCTRAITS_H

#include "dlc/Core/OpFacts.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "mlir/IR/OpDefinition.h"

#include <optional>

namespace mlir::dlc {

/// The device `value` is known to live on: the `dlc.device` of its producer, the
/// target of a `dlc.copy`, the matching entry of a `dlc.all_reduce`, the `dlc.device`
/// argument attribute of a function, or the device of the matching `dlc.fused`
/// operand. None when nothing says (the placement pass makes every device explicit).
std::optional<DeviceAttr> getKnownDevice(Value value);

/// Whether a value of `type` may take `layout`: always for plain; for a blocked layout,
/// dlc/Core/Layout.h's rule (4-D float32 or a pooling's uint8 indices, channels a multiple
/// of the block).
bool isBlockable(Type type, Layout layout);

/// Verifies that the operands known to live on a device share one, and that it is the
/// op's own `dlc.device` when the op has one.
LogicalResult verifySameOperandsDevice(Operation *op);

namespace OpTrait {
template <typename ConcreteType>
class SameOperandsDevice
    : public ::mlir::OpTrait::TraitBase<ConcreteType, SameOperandsDevice> {
public:
  static LogicalResult verifyTrait(Operation *op) { return verifySameOperandsDevice(op); }
};

// Markers (DLCOps.td says what each means); passes test them with hasTrait, and the
// MLIR-free layers read the same facts from dlc/Core/OpFacts.h.
template <typename ConcreteType>
class ElementwiseKernel : public ::mlir::OpTrait::TraitBase<ConcreteType, ElementwiseKernel> {};
template <typename ConcreteType>
class Broadcasting : public ::mlir::OpTrait::TraitBase<ConcreteType, Broadcasting> {};
template <typename ConcreteType>
class BatchShapedResult : public ::mlir::OpTrait::TraitBase<ConcreteType, BatchShapedResult> {};
/// DLC_LayoutRule<rule>: the op's layouts follow `Rule` (dlc/Core/LayoutRules.h).
template <::dlc::LayoutRule Rule> struct LayoutRule {
  template <typename ConcreteType>
  class Impl : public ::mlir::OpTrait::TraitBase<ConcreteType, Impl> {
  public:
    static constexpr ::dlc::LayoutRule rule = Rule;
  };
};
} // namespace OpTrait
} // namespace mlir::dlc

#endif // DLC_DIALECT_DLC_IR_DLCTRAITS_H
