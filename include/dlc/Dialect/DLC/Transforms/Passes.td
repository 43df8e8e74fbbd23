//===- Passes.td - dlc dialect passes ------------------------*- tablegen -*-===//
#ifndef DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD
#define DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DLCPlanMemory : Pass<"dlc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Plan the buffers of a function's intermediates and report them";
  let description = [{
    Lowers the function as hybridize() does (one kernel call per op, `dlc.reshape` a view
    of its input) and places every intermediate in one arena per device, first fit, a
    block reused as soon as its last reader has run. Arguments and results stay in the
    caller's buffers. Emits a remark per op with the place of each result, and one on
    the function with the arena's size, what the intermediates would take without
    reuse, and how many reuse freed memory. The IR is not changed.

    ```mlir
    // dlc-opt --dlc-plan-memory
    func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
      %0 = dlc.relu %x : tensor<64xf32>          // remark: result #0 at arena offset 0
      %1 = dlc.tanh %0 : tensor<64xf32>          // remark: result #0 at arena offset 256
      %2 = dlc.exp %1 : tensor<64xf32>           // remark: result #0 at arena offset 0
      return %2 : tensor<64xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCFuse : Pass<"dlc-fuse", "mlir::func::FuncOp"> {
  let summary = "Group element-wise chains and library-op epilogues into dlc.fused regions";
  let description = [{
    Two rewrites, each a `dlc.fused` region the runtime runs as one kernel:

    * **Epilogues**: `dlc.relu` of a `dlc.conv2d` or `dlc.dense` whose result has no other
      use becomes a region of kind `conv2d_relu` / `dense_relu`; the library kernel applies
      the ReLU before it stores (oneDNN post-op), saving a pass over the output.
    * **Element-wise chains**: producer-consumer chains of float32 element-wise ops on
      one device (unary ops, `relu_backward`, and binary ops whose operands have the
      result's shape or one element) become a region of kind `elementwise`, run in one
      pass over cache-sized chunks. A value used outside the region is a result of it.

    Ops stay in place when grouping them would move a use before its definition; regions
    never span devices.

    ```mlir
    // before
    %c = dlc.conv2d %x, %w, %b : (...) -> tensor<4x8x6x6xf32>
    %r = dlc.relu %c : tensor<4x8x6x6xf32>
    // after
    %r = dlc.fused "conv2d_relu" (%x, %w, %b) : (...) -> tensor<4x8x6x6xf32> {
    ^bb0(%a: ..., %b2: ..., %c2: ...):
      %0 = dlc.conv2d %a, %b2, %c2 : (...) -> tensor<4x8x6x6xf32>
      %1 = dlc.relu %0 : tensor<4x8x6x6xf32>
      dlc.yield %1 : tensor<4x8x6x6xf32>
    }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"32",
           "most ops in one element-wise region">,
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "fold ReLU epilogues into conv2d and dense">,
    Option<"elementwise", "elementwise", "bool", /*default=*/"true",
           "group element-wise chains">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

#endif // DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD
