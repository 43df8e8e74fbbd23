// RUN: dlc-opt %s --dlc-report-fusion -split-input-file -verify-diagnostics | FileCheck %s

// Each region is reported at its location with its ops and how it runs, then each
// neighbour outside a region with the reason it stayed apart. Nothing changes.
// CHECK-LABEL: func.func @step
// CHECK: dlc.fused "batch_norm_activation"
func.func @step(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  // expected-remark@+3 {{fused "batch_norm_activation" (dlc.batch_norm + dlc.relu) runs as one batch norm kernel with the activation}}
  // expected-remark@+2 {{not with the producer dlc.conv2d: its result has 2 readers, which would all need it from the region}}
  // expected-remark@+1 {{not with the reader dlc.exp: no pass folds dlc.exp into a region of kind "batch_norm_activation"}}
  %n:3 = dlc.fused "batch_norm_activation"(%c, %g, %b) {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<2x16x6x6xf32>, %ga: tensor<16xf32>, %ba: tensor<16xf32>):
    %y:3 = dlc.batch_norm %a, %ga, %ba {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %r = dlc.relu %y#0 : tensor<2x16x6x6xf32>
    dlc.yield %r, %y#1, %y#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
  %e = dlc.exp %n#0 {dlc.device = #dlc.device<cpu:0>} : tensor<2x16x6x6xf32>
  return %c, %e : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>
}

// -----

// A region that runs op by op (a kind no kernel takes), its result read twice.
func.func @op_by_op(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %a = dlc.exp %x {dlc.device = #dlc.device<cpu:0>} : tensor<64xf32>
  // expected-remark@+3 {{fused "mystery" (dlc.tanh) runs as op by op}}
  // expected-remark@+2 {{not with the producer dlc.exp: no pass folds dlc.exp into a region of kind "mystery"}}
  // expected-remark@+1 {{not with the reader dlc.neg: the region's result has 2 readers, which would all need it from outside the region}}
  %f = dlc.fused "mystery"(%a) {dlc.device = #dlc.device<cpu:0>} : (tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%v: tensor<64xf32>):
    %t = dlc.tanh %v : tensor<64xf32>
    dlc.yield %t : tensor<64xf32>
  }
  %n = dlc.neg %f {dlc.device = #dlc.device<cpu:0>} : tensor<64xf32>
  return %f, %n : tensor<64xf32>, tensor<64xf32>
}
