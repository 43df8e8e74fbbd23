//===- DLCInterfaces.td - dlc op interfaces -----------------*- tablegen -*-===//

#ifndef DLC_DIALECT_DLC_IR_DLCINTERFACES_TD
#define DLC_DIALECT_DLC_IR_DLCINTERFACES_TD

include "mlir/IR/OpBase.td"

def DLC_ScalarBodyOpInterface : OpInterface<"ScalarBodyOpInterface"> {
  let cppNamespace = "::mlir::dlc";
  let description = [{
    An element-wise op says, in `arith` and `math` ops, what it computes from one element
    of each operand: the body of the `linalg.generic` that `convert-dlc-to-linalg` makes
    of a fused region, from which kernels are generated. It is the op's definition for
    code generation, written next to the op; the hand-written kernels compute the same
    function (`lib/Runtime/ActivationMath.h` for the activations, the element-wise kernel
    files for the rest), and the tests compare the two.
  }];
  let methods = [
    InterfaceMethod<
      "The result element from the operands' elements (scalars of the element type), "
      "built at `loc`; null for an element type it has no body for.",
      "::mlir::Value", "buildScalarBody",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands)>,
  ];
}

#endif // DLC_DIALECT_DLC_IR_DLCINTERFACES_TD
