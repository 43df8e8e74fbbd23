//===- Passes.td - conversions out of the dlc dialect ------*- tablegen -*-===//
#ifndef DLC_CONVERSION_PASSES_TD
#define DLC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDLCToLinalg : Pass<"convert-dlc-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Turn element-wise dlc.fused regions into linalg.generic ops on tensors";
  let description = [{
    The first step of code generation: each `dlc.fused "elementwise"` region becomes one
    `linalg.generic` over its result's shape, all loops parallel. Broadcasting is made
    explicit in the indexing maps (numpy's rules: trailing dimensions aligned, a
    dimension of 1 read at index 0, a rank-0 operand read everywhere); each result is
    written into a `tensor.empty`. The body is built from each op's
    `ScalarBodyOpInterface` (`arith` and `math` ops on one element, computed in f32 as the
    kernels do). From there on the upstream passes apply: bufferization, tiling,
    vectorization, lowering to loops. Other regions (`conv2d_relu`, `dense_relu`) and
    the ops outside regions are left as they are; a region holding an op without a scalar
    body is an error naming it.

    ```mlir
    // dlc-opt --convert-dlc-to-linalg
    %y = dlc.fused "elementwise" (%x, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> {
    ^bb0(%a: tensor<4x3xf32>, %c: tensor<3xf32>):
      %s = dlc.add %a, %c : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
      %t = dlc.tanh %s : tensor<4x3xf32>
      dlc.yield %t : tensor<4x3xf32>
    }
    // becomes
    //   %e = tensor.empty() : tensor<4x3xf32>
    //   %y = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1),
    //                                         (d0, d1) -> (d0, d1)], ...}
    //       ins(%x, %b : ...) outs(%e : ...) {
    //   ^bb0(%a: f32, %c: f32, %out: f32):
    //     %s = arith.addf %a, %c : f32
    //     %t = math.tanh %s : f32
    //     linalg.yield %t : f32
    //   } -> tensor<4x3xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect", "mlir::tensor::TensorDialect"];
}

#endif // DLC_CONVERSION_PASSES_TD
