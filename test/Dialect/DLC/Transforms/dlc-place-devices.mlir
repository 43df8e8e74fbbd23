// RUN: dlc-opt %s --dlc-place-devices -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not dlc-opt %s --dlc-place-devices="explicit-only=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=EXPLICIT
// RUN: dlc-opt %s --dlc-place-devices="allow-fallback=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=FALLBACK
// RUN: not dlc-opt %s --dlc-place-devices="default-device=tpu:0" 2>&1 | FileCheck %s --check-prefix=BADOPT

// Ops run where their inputs live; an op without inputs on the default device; constants
// stay device-free. No copy is needed.
// CHECK-LABEL: func.func @propagate
// CHECK-NOT: dlc.copy
// CHECK: dlc.random_uniform {dlc.device = #dlc.device<cpu:0>
// CHECK: %[[C:.*]] = dlc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: dlc.mul %arg0, %[[C]] {dlc.device = #dlc.device<cpu:1>}
// CHECK: dlc.relu {{.*}} {dlc.device = #dlc.device<cpu:1>}
// BADOPT: default-device 'tpu:0' is not kind:ordinal
func.func @propagate(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu:1>}) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = dlc.random_uniform {seed = 1 : i64} : tensor<4xf32>
  %c = dlc.constant dense<2.0> : tensor<f32>
  %m = dlc.mul %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = dlc.relu %m : tensor<4xf32>
  return %y, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// A request to run elsewhere copies the operands once per value and device, right after
// their definition; the op's consumers follow it.
// CHECK-LABEL: func.func @request
// CHECK-NEXT: %[[X1:.*]] = dlc.copy %arg0 : tensor<4xf32> to #dlc.device<cpu:1>
// CHECK-NEXT: %[[A:.*]] = dlc.add %[[X1]], %[[X1]] {dlc.device = #dlc.device<cpu:1>}
// CHECK-NEXT: %[[B:.*]] = dlc.mul %[[A]], %[[X1]] {dlc.device = #dlc.device<cpu:1>}
// CHECK-NOT: dlc.copy
// CHECK: return %[[B]]
// EXPLICIT: dlc-place-devices.mlir:{{[0-9]+}} offset :{{[0-9]+}}:8: error: operand #0 lives on cpu(0)
// EXPLICIT-SAME: but the op runs on cpu(1); move it with dlc.copy first (explicit-only placement)
func.func @request(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4xf32> {
  %a = dlc.add %x, %x {dlc.place = #dlc.device<cpu:1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = dlc.mul %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// What a device kind can run is the module's `dlc.targets` (hybridize() fills it in from
// the kernel table), not the kernels linked into dlc-opt. An op asked to run on a GPU
// that cannot run it: an error, or with allow-fallback a CPU placement with a remark,
// and a copy back for consumers that still run on the GPU.
// FALLBACK: remark: dlc.exp has no kernel for gpu(0) in this build; placed on cpu(0)
// FALLBACK-LABEL: func.func @fallback
// FALLBACK: %[[X:.*]] = dlc.copy %arg0 : tensor<4xf32> to #dlc.device<cpu:0>
// FALLBACK: %[[E:.*]] = dlc.exp %[[X]] {dlc.device = #dlc.device<cpu:0>}
// FALLBACK: %[[BACK:.*]] = dlc.copy %[[E]] : tensor<4xf32> to #dlc.device<gpu:0>
// FALLBACK: %[[S:.*]] = dlc.add %[[BACK]], %[[BACK]] {dlc.device = #dlc.device<gpu:0>}
// FALLBACK: dlc.fused(%[[S]]) {dlc.device = #dlc.device<gpu:0>}
module attributes {dlc.targets = [#dlc.target<cpu, ops = ["dlc.add", "dlc.exp"]>,
                                  #dlc.target<gpu, ops = ["dlc.add"]>]} {
func.func @fallback(%x: tensor<4xf32> {dlc.device = #dlc.device<gpu:0>}) -> tensor<4xf32> {
  // expected-error @+1 {{no kernel for dlc.exp on gpu(0) in this build (rerun with allow-fallback to run it on cpu(0))}}
  %e = dlc.exp %x : tensor<4xf32>
  %s = dlc.add %e, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %f = dlc.fused (%s) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dlc.yield %a : tensor<4xf32>
  }
  return %f : tensor<4xf32>
}
}

// -----

// A GPU target that runs the op keeps it there; so does a module that describes no
// targets (every op runs everywhere).
// CHECK-LABEL: func.func @gpu_runs_it
// CHECK-NOT: dlc.copy
// CHECK: dlc.exp %arg0 {dlc.device = #dlc.device<gpu:0>}
// FALLBACK-NOT: remark
// FALLBACK-LABEL: func.func @gpu_runs_it
// FALLBACK-NOT: dlc.copy
module attributes {dlc.targets = [#dlc.target<cpu, ops = ["dlc.exp"]>,
                                  #dlc.target<gpu, ops = ["dlc.exp"]>]} {
func.func @gpu_runs_it(%x: tensor<4xf32> {dlc.device = #dlc.device<gpu:0>}) -> tensor<4xf32> {
  %e = dlc.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}
}

// -----

// CHECK-LABEL: func.func @undescribed
// CHECK-NOT: dlc.copy
// CHECK: dlc.exp %arg0 {dlc.device = #dlc.device<gpu:0>}
func.func @undescribed(%x: tensor<4xf32> {dlc.device = #dlc.device<gpu:0>}) -> tensor<4xf32> {
  %e = dlc.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// Pinned host memory computes with the cpu's kernels: no fallback, no copy.
// CHECK-LABEL: func.func @pinned
// CHECK-NOT: dlc.copy
// CHECK: dlc.exp %arg0 {dlc.device = #dlc.device<cpu_pinned:0>}
module attributes {dlc.targets = [#dlc.target<cpu, ops = ["dlc.exp"]>]} {
func.func @pinned(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu_pinned:0>}) -> tensor<4xf32> {
  %e = dlc.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}
}

// -----

// A declaration has no ops to place (it crashed the pass: SIGSEGV); the body beside it is
// placed.
// CHECK-LABEL: func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @beside_a_declaration
// CHECK: dlc.relu %{{.*}} {dlc.device = #dlc.device<cpu:0>}
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
func.func @beside_a_declaration(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dlc.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

