// RUN: dlc-opt %s --dlc-approximate-math | FileCheck %s

// tanh, erf, exp and log become arithmetic (no math op, no call left); sqrt, which
// MLIR does not approximate, stays for its LLVM intrinsic.
// CHECK-LABEL: func.func @activations
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK: math.sqrt
// CHECK-NOT: call
// CHECK: return
func.func @activations(%x: f32) -> f32 {
  %t = math.tanh %x : f32
  %e = math.erf %t : f32
  %p = math.exp %e : f32
  %l = math.log %p : f32
  %s = math.sqrt %l : f32
  return %s : f32
}
