//===- DLCInterfaces.td - dlc op interfaces -----------------*- tablegen -*-===//

#ifndef DLC_DIALECT_DLC_IR_DLCINTERFACES_TD
#define DLC_DIALECT_DLC_IR_DLCINTERFACES_TD

include "mlir/IR/OpBase.td"

def DLC_ScalarBodyOpInterface : OpInterface<"ScalarBodyOpInterface"> {
  let cppNamespace = "::mlir::dlc";
  let description = [{
    An element-wise op says, in `arith` and `math` ops, what it computes from one element
    of each operand: the body of the `linalg.generic` that `convert-dlc-to-linalg` makes
    of a fused region, from which kernels are generated. The body is not written here:
    each op's functor in `include/dlc/Core/ElementwiseMath.h`, which the CPU and CUDA
    kernels also run, is instantiated with a value type that builds the ops
    (`lib/Dialect/DLC/IR/DLCScalarBodies.cpp`), so the generated and the hand-written
    kernels compute one function, and the tests compare the two.
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
