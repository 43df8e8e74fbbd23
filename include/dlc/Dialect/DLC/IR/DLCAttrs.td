//===- DLCAttrs.td - dlc attributes and enums -------------*- tablegen -*-===//

#ifndef DLC_DIALECT_DLC_IR_DLCATTRS_TD
#define DLC_DIALECT_DLC_IR_DLCATTRS_TD

include "dlc/Dialect/DLC/IR/DLCDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

// The numeric values are MXNet's device type ids, so that a checkpoint or a log that
// stores them reads the same in both systems.
def DLC_DeviceKind : I32EnumAttr<"DeviceKind", "kind of device", [
    I32EnumAttrCase<"cpu", 1>,
    I32EnumAttrCase<"gpu", 2>,
    I32EnumAttrCase<"cpu_pinned", 3>,
    I32EnumAttrCase<"cpu_shared", 5>
  ]> {
  let cppNamespace = "::mlir::dlc";
  let genSpecializedAttr = 0;
}

def DLC_DeviceAttr : AttrDef<DLC_Dialect, "Device"> {
  let mnemonic = "device";
  let summary = "A device: kind and ordinal";
  let description = [{
    Names one device, as `cpu(0)` or `gpu(1)` do in the eager API.

    ```mlir
    #dlc.device<gpu:1>
    #dlc.device<cpu:0>
    #dlc.device<cpu_pinned:0>
    ```
  }];
  let parameters = (ins EnumParameter<DLC_DeviceKind>:$kind, "int64_t":$ordinal);
  // Written by hand: the declarative format would print `gpu : 1`.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Prints as the eager API does: `gpu(1)`.
    std::string str() const;
  }];
}

def DLC_DeviceArrayAttr : TypedArrayAttrBase<DLC_DeviceAttr, "array of devices">;

def DLC_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>,
    I32EnumAttrCase<"min", 3>
  ]> {
  let cppNamespace = "::mlir::dlc";
}

def DLC_ComparePredicate : I32EnumAttr<"ComparePredicate", "comparison", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>
  ]> {
  let cppNamespace = "::mlir::dlc";
}

#endif // DLC_DIALECT_DLC_IR_DLCATTRS_TD
