// RUN: dlc-opt %s --dlc-order-steps -split-input-file -verify-diagnostics | FileCheck %s

// An all-reduce in the middle of the step would make each device wait there for the
// other. Everything that needs no sum runs first, one device's stretch after the other;
// then the all-reduce and what reads it.
// CHECK-LABEL: func.func @reduce_last
// CHECK:      dlc.mul %arg0, %arg0
// CHECK-NEXT: dlc.exp %arg0
// CHECK-NEXT: dlc.mul %arg1, %arg1
// CHECK-NEXT: dlc.exp %arg1
// CHECK-NEXT: dlc.all_reduce
// CHECK-NEXT: dlc.sub {{.*}}cpu:0
// CHECK-NEXT: dlc.sub {{.*}}cpu:1
// CHECK-NEXT: return
func.func @reduce_last(%a0: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>},
                       %a1: tensor<4xf32> {dlc.device = #dlc.device<cpu:1>})
    -> (tensor<4xf32>, tensor<4xf32>) {
  %g0 = dlc.mul %a0, %a0 {dlc.device = #dlc.device<cpu:0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g1 = dlc.mul %a1, %a1 {dlc.device = #dlc.device<cpu:1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s0, %s1 = dlc.all_reduce sum %g0, %g1 {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<4xf32>, tensor<4xf32>
  %h0 = dlc.exp %a0 {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32>
  %h1 = dlc.exp %a1 {dlc.device = #dlc.device<cpu:1>} : tensor<4xf32>
  %u0 = dlc.sub %h0, %s0 {dlc.device = #dlc.device<cpu:0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u1 = dlc.sub %h1, %s1 {dlc.device = #dlc.device<cpu:1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %u0, %u1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A device's stretch ends at the first op whose input is not ready (the ops of one
// device never pass each other): cpu:0's copy waits for cpu:1's exp, so cpu:1 runs its
// stretch in between. A view moves to just before its first reader.
// CHECK-LABEL: func.func @stretches
// CHECK:      %[[Z0:.*]] = dlc.exp %arg0 {{.*}}cpu:0
// CHECK-NEXT: %[[X1:.*]] = dlc.exp %arg1 {{.*}}cpu:1
// CHECK-NEXT: dlc.exp %[[X1]] {{.*}}cpu:1
// CHECK-NEXT: %[[C:.*]] = dlc.copy %[[X1]]
// CHECK-NEXT: %[[Z2:.*]] = dlc.reshape %[[Z0]]
// CHECK-NEXT: %[[R:.*]] = dlc.reshape %[[C]]
// CHECK-NEXT: dlc.add %[[Z2]], %[[R]]
func.func @stretches(%a0: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>},
                     %a1: tensor<4xf32> {dlc.device = #dlc.device<cpu:1>})
    -> (tensor<2x2xf32>, tensor<4xf32>) {
  %z0 = dlc.exp %a0 {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32>
  %x1 = dlc.exp %a1 {dlc.device = #dlc.device<cpu:1>} : tensor<4xf32>
  %c = dlc.copy %x1 : tensor<4xf32> to #dlc.device<cpu:0>
  %r = dlc.reshape %c {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32> to tensor<2x2xf32>
  %z2 = dlc.reshape %z0 {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32> to tensor<2x2xf32>
  %y0 = dlc.add %z2, %r {dlc.device = #dlc.device<cpu:0>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %w1 = dlc.exp %x1 {dlc.device = #dlc.device<cpu:1>} : tensor<4xf32>
  return %y0, %w1 : tensor<2x2xf32>, tensor<4xf32>
}

// -----

// One device and no all-reduce: the order is left as it is.
// CHECK-LABEL: func.func @one_device
// CHECK:      dlc.exp %arg0
// CHECK-NEXT: dlc.reshape
// CHECK-NEXT: dlc.tanh %arg0
// CHECK-NEXT: dlc.relu
func.func @one_device(%a: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>}) -> (tensor<2x2xf32>, tensor<4xf32>) {
  %e = dlc.exp %a {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32>
  %r = dlc.reshape %e {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32> to tensor<2x2xf32>
  %t = dlc.tanh %a {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32>
  %u = dlc.relu %t {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32>
  return %r, %u : tensor<2x2xf32>, tensor<4xf32>
}

// -----

// A declaration has nothing to order.
// CHECK-LABEL: func.func private @declared
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// -----

// A body of two blocks is refused (with no dlc op in it, the pass crashed: SIGSEGV,
// creating a device attribute of a dialect nothing had loaded).
// expected-error @+1 {{dlc-order-steps: @two_blocks has 2 blocks; the runtime runs functions of one block that ends with func.return}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}
