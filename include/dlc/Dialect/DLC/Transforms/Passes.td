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

#endif // DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD
