// RUN: dlc-opt %s --dlc-keep-pool-indices -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-keep-pool-indices --dlc-assign-layouts -split-input-file | FileCheck %s --check-prefix=LAYOUT

// One function (a training step): the pooling writes its indices, the gradient reads
// them instead of the pooling's input. With the layouts, the indices take the output's.
// CHECK-LABEL: func.func @step
// CHECK: %[[Y:.*]], %[[WHERE:.*]] = dlc.max_pool2d_indexed %{{.*}} {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x9x9xf32>) -> (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>)
// CHECK: %[[DX:.*]] = dlc.max_pool2d_backward_indexed %arg1, %[[WHERE]] {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>) -> tensor<2x16x9x9xf32>
// CHECK-NOT: dlc.max_pool2d_backward %
// CHECK: return %[[Y]], %[[DX]]
// LAYOUT-LABEL: func.func @step
// LAYOUT: %[[R:.*]] = dlc.relu
// LAYOUT-SAME: dlc.layouts = [#dlc.layout<nChw16c>]
// LAYOUT: dlc.max_pool2d_indexed %[[R]] {dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<nChw16c>]
// LAYOUT: dlc.max_pool2d_backward_indexed {{.*}}dlc.layouts = [#dlc.layout<nChw16c>]
func.func @step(%x: tensor<2x16x9x9xf32>, %dy: tensor<2x16x3x3xf32>, %w: tensor<16x16x1x1xf32>) -> (tensor<2x16x3x3xf32>, tensor<2x16x9x9xf32>) {
  %c = dlc.conv2d %x, %w : (tensor<2x16x9x9xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x9x9xf32>
  %r = dlc.relu %c : tensor<2x16x9x9xf32>
  %y = dlc.max_pool2d %r {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x9x9xf32>) -> tensor<2x16x3x3xf32>
  %dx = dlc.max_pool2d_backward %dy, %r {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x3x3xf32>, tensor<2x16x9x9xf32>) -> tensor<2x16x9x9xf32>
  return %y, %dx : tensor<2x16x3x3xf32>, tensor<2x16x9x9xf32>
}

// -----

// Forward and backward apart: the indices become a result of @forward (marked
// dlc.saved, before the one that writes an argument back) and a new last argument of
// @backward, saved from it. dlc-fuse's ReLU-gradient region becomes the indexed
// gradient with `relu`. The input the gradient no longer reads stays an argument.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>, tensor<1x16x4x4xui8> {dlc.saved}, tensor<16xf32> {dlc.updates = 1 : i64})
// CHECK: %[[Y:.*]], %[[WHERE:.*]] = dlc.max_pool2d_indexed %arg0
// CHECK: return %[[Y]], %arg0, %[[WHERE]], %arg1
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %arg1: tensor<1x16x8x8xf32> {dlc.device = #dlc.device<cpu:0>, dlc.name = "saved.1", dlc.saved_from = [@forward, 1]}
// CHECK-SAME: %arg2: tensor<1x16x4x4xui8> {dlc.device = #dlc.device<cpu:0>, dlc.name = "saved.2", dlc.saved_from = [@forward, 2]}
// CHECK: %[[DX:.*]] = dlc.max_pool2d_backward_indexed %arg0, %arg2 {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, relu, stride = array<i64: 2, 2>}
// CHECK-NOT: dlc.fused
// CHECK: return %[[DX]]
func.func @forward(%x: tensor<1x16x8x8xf32>, %stat: tensor<16xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>, tensor<16xf32> {dlc.updates = 1 : i64}) {
  %y = dlc.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  return %y, %x, %stat : tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>, tensor<16xf32>
}
func.func @backward(%dy: tensor<1x16x4x4xf32>, %x: tensor<1x16x8x8xf32> {dlc.name = "saved.1", dlc.saved_from = [@forward, 1], dlc.device = #dlc.device<cpu:0>}) -> tensor<1x16x8x8xf32> {
  %dx = dlc.fused "max_pool2d_backward_relu" (%dy, %x) {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  ^bb0(%a: tensor<1x16x4x4xf32>, %b: tensor<1x16x8x8xf32>):
    %g = dlc.max_pool2d_backward %a, %b {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
    %m = dlc.relu_backward %g, %b : tensor<1x16x8x8xf32>
    dlc.yield %m : tensor<1x16x8x8xf32>
  }
  return %dx : tensor<1x16x8x8xf32>
}

// -----

// Left alone: a gradient whose pooling has other window attributes, one on a GPU, a
// window of more taps than a byte holds, and a pooling whose gradient reads another
// value.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: indexed
// CHECK: return
func.func @left_alone(%x: tensor<1x16x20x20xf32>, %dy: tensor<1x16x10x10xf32>, %dy2: tensor<1x16x1x1xf32>, %z: tensor<1x16x20x20xf32>) -> (tensor<1x16x10x10xf32>, tensor<1x16x20x20xf32>, tensor<1x16x20x20xf32>, tensor<1x16x1x1xf32>, tensor<1x16x20x20xf32>, tensor<1x16x20x20xf32>) {
  %y = dlc.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x20x20xf32>) -> tensor<1x16x10x10xf32>
  %other = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode} : (tensor<1x16x10x10xf32>, tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %gpu = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dlc.device = #dlc.device<gpu:0>} : (tensor<1x16x10x10xf32>, tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %big = dlc.max_pool2d %x {kernel = array<i64: 20, 20>, stride = array<i64: 20, 20>} : (tensor<1x16x20x20xf32>) -> tensor<1x16x1x1xf32>
  %bigdx = dlc.max_pool2d_backward %dy2, %x {kernel = array<i64: 20, 20>, stride = array<i64: 20, 20>} : (tensor<1x16x1x1xf32>, tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %elsewhere = dlc.max_pool2d_backward %dy, %z {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x10x10xf32>, tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  return %y, %other, %gpu, %big, %bigdx, %elsewhere : tensor<1x16x10x10xf32>, tensor<1x16x20x20xf32>, tensor<1x16x20x20xf32>, tensor<1x16x1x1xf32>, tensor<1x16x20x20xf32>, tensor<1x16x20x20xf32>
}

// -----

// A module whose CPU target lacks the indexed kernels keeps the gradient as it is.
// CHECK-LABEL: func.func @no_kernels
// CHECK-NOT: indexed
// CHECK: return
module attributes {dlc.targets = [#dlc.target<cpu, ops = ["dlc.max_pool2d", "dlc.max_pool2d_backward"]>]} {
func.func @no_kernels(%x: tensor<1x16x8x8xf32>, %dy: tensor<1x16x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>) {
  %y = dlc.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %dx = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %y, %dx : tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>
}
}
