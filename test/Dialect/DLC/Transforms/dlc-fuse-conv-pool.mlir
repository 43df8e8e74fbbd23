// RUN: dlc-opt %s --dlc-fuse-conv-pool -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-fuse-conv-pool --dlc-assign-layouts -split-input-file | FileCheck %s --check-prefix=LAYOUT

// A conv2d_relu region and the indexed pooling of its output: one region whose body is
// the convolution, the ReLU and the pooling. Nothing else reads the activation, so the
// region yields the pooling's results only. With the layouts, the region's results
// take the blocked layout the convolution's output would have had.
// CHECK-LABEL: func.func @block
// CHECK: %[[F:.*]]:2 = dlc.fused "conv2d_max_pool2d"(%arg0, %arg1, %arg2) {dlc.device = #dlc.device<cpu:0>}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<2x3x9x9xf32>, %[[W:.*]]: tensor<16x3x2x2xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[C:.*]] = dlc.conv2d %[[X]], %[[W]], %[[B]] : {{.*}} -> tensor<2x16x8x8xf32>
// CHECK-NEXT: %[[R:.*]] = dlc.relu %[[C]] : tensor<2x16x8x8xf32>
// CHECK-NEXT: %[[Y:.*]], %[[WHERE:.*]] = dlc.max_pool2d_indexed %[[R]] {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>}
// CHECK-NEXT: dlc.yield %[[Y]], %[[WHERE]] : tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>
// CHECK: return %[[F]]#0, %[[F]]#1
// LAYOUT-LABEL: func.func @block
// LAYOUT: dlc.fused "conv2d_max_pool2d"{{.*}}dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<nChw16c>]
func.func @block(%x: tensor<2x3x9x9xf32>, %w: tensor<16x3x2x2xf32>, %b: tensor<16xf32>) -> (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>) {
  %r = dlc.fused "conv2d_relu" (%x, %w, %b) {dlc.device = #dlc.device<cpu:0>} : (tensor<2x3x9x9xf32>, tensor<16x3x2x2xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32> {
  ^bb0(%a: tensor<2x3x9x9xf32>, %c: tensor<16x3x2x2xf32>, %d: tensor<16xf32>):
    %0 = dlc.conv2d %a, %c, %d : (tensor<2x3x9x9xf32>, tensor<16x3x2x2xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
    %1 = dlc.relu %0 : tensor<2x16x8x8xf32>
    dlc.yield %1 : tensor<2x16x8x8xf32>
  }
  %y, %where = dlc.max_pool2d_indexed %r {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x8x8xf32>) -> (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>)
  return %y, %where : tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>
}

// -----

// A convolution without a ReLU whose output is also returned (a forward that saves
// it for its backward): the activation is the region's first result, in the
// convolution's layout as well.
// CHECK-LABEL: func.func @saved_activation
// CHECK: %[[F:.*]]:3 = dlc.fused "conv2d_max_pool2d"(%arg0, %arg1) {dlc.device = #dlc.device<cpu:0>}
// CHECK: %[[C:.*]] = dlc.conv2d
// CHECK-NEXT: %[[Y:.*]], %[[WHERE:.*]] = dlc.max_pool2d_indexed %[[C]]
// CHECK-NEXT: dlc.yield %[[C]], %[[Y]], %[[WHERE]]
// CHECK: return %[[F]]#1, %[[F]]#0, %[[F]]#2
// LAYOUT-LABEL: func.func @saved_activation
// LAYOUT: dlc.fused "conv2d_max_pool2d"{{.*}}dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<nChw16c>, #dlc.layout<nChw16c>]
func.func @saved_activation(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x1x1xf32>) -> (tensor<1x32x4x4xf32>, tensor<1x32x8x8xf32>, tensor<1x32x4x4xui8>) {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %y, %where = dlc.max_pool2d_indexed %c {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x32x8x8xf32>) -> (tensor<1x32x4x4xf32>, tensor<1x32x4x4xui8>)
  return %y, %c, %where : tensor<1x32x4x4xf32>, tensor<1x32x8x8xf32>, tensor<1x32x4x4xui8>
}

// -----

// Left alone: a pooling on a GPU, one whose activation another op reads before it,
// one after a ReLU6 region (a post-op the fused step has no path for), a pooling of an
// argument, and a pooling that keeps no indices (prediction's).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: conv2d_max_pool2d
// CHECK: return
func.func @left_alone(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x1x1xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>) {
  %g = dlc.conv2d %x, %w {dlc.device = #dlc.device<gpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %gy, %gi = dlc.max_pool2d_indexed %g {dlc.device = #dlc.device<gpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>)
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %before = dlc.neg %c {dlc.device = #dlc.device<cpu:0>} : tensor<1x16x8x8xf32>
  %cy, %ci = dlc.max_pool2d_indexed %c {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>)
  %r6 = dlc.fused "conv2d_relu6" (%x, %w) {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  ^bb0(%a: tensor<1x16x8x8xf32>, %b: tensor<16x16x1x1xf32>):
    %0 = dlc.conv2d %a, %b : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
    %1 = dlc.relu6 %0 : tensor<1x16x8x8xf32>
    dlc.yield %1 : tensor<1x16x8x8xf32>
  }
  %ry, %ri = dlc.max_pool2d_indexed %r6 {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>)
  %ay, %ai = dlc.max_pool2d_indexed %x {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>)
  %p = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %py = dlc.max_pool2d %p {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  return %gy, %gi, %before, %cy, %ci, %ry, %ri, %ay, %ai, %py : tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8>, tensor<1x16x4x4xf32>
}

// -----

// The gradients: the pooling's gradient (ReLU's folded in) read only by the
// convolution's data and filter gradients becomes one region with them, ordered
// pooling, data, filter whatever their order was, where the last of them was. The
// activation's gradient is no result. With the layouts, it stays in the blocked layout
// the pooling's gradient writes and the data gradient is blocked too.
// CHECK-LABEL: func.func @gradients
// CHECK: %[[F:.*]]:3 = dlc.fused "max_pool2d_backward_conv2d"(%arg0, %arg1, %arg2, %arg3) {dlc.device = #dlc.device<cpu:0>}
// CHECK-NEXT: ^bb0(%[[DY:.*]]: tensor<2x16x3x3xf32>, %[[WHERE:.*]]: tensor<2x16x3x3xui8>, %[[W:.*]]: tensor<16x16x2x2xf32>, %[[X:.*]]: tensor<2x16x9x9xf32>):
// CHECK-NEXT: %[[G:.*]] = dlc.max_pool2d_backward_indexed %[[DY]], %[[WHERE]] {kernel = array<i64: 4, 4>, relu, stride = array<i64: 2, 2>}
// CHECK-NEXT: %[[DX:.*]] = dlc.conv2d_backward_data %[[G]], %[[W]]
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = dlc.conv2d_backward_filter %[[G]], %[[X]]
// CHECK-NEXT: dlc.yield %[[DX]], %[[DW]], %[[DB]]
// CHECK: return %[[F]]#0, %[[F]]#1, %[[F]]#2
// LAYOUT-LABEL: func.func @gradients
// LAYOUT: dlc.fused "max_pool2d_backward_conv2d"{{.*}}dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]
func.func @gradients(%dy: tensor<2x16x3x3xf32>, %where: tensor<2x16x3x3xui8>, %w: tensor<16x16x2x2xf32>, %x: tensor<2x16x9x9xf32>) -> (tensor<2x16x9x9xf32>, tensor<16x16x2x2xf32>, tensor<16xf32>) {
  %g = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>, relu} : (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>) -> tensor<2x16x8x8xf32>
  %dw, %db = dlc.conv2d_backward_filter %g, %x {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x8x8xf32>, tensor<2x16x9x9xf32>) -> (tensor<16x16x2x2xf32>, tensor<16xf32>)
  %dx = dlc.conv2d_backward_data %g, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x8x8xf32>, tensor<16x16x2x2xf32>) -> tensor<2x16x9x9xf32>
  return %dx, %dw, %db : tensor<2x16x9x9xf32>, tensor<16x16x2x2xf32>, tensor<16xf32>
}

// -----

// A first block's gradients: no data gradient (the network's input needs none).
// CHECK-LABEL: func.func @filter_only
// CHECK: %[[F:.*]] = dlc.fused "max_pool2d_backward_conv2d"(%arg0, %arg1, %arg2)
// CHECK: dlc.max_pool2d_backward_indexed
// CHECK-NEXT: dlc.conv2d_backward_filter
// CHECK-NEXT: dlc.yield
// CHECK: return %[[F]]
func.func @filter_only(%dy: tensor<2x16x3x3xf32>, %where: tensor<2x16x3x3xui8>, %x: tensor<2x3x9x9xf32>) -> tensor<16x3x2x2xf32> {
  %g = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<2x16x3x3xf32>, tensor<2x16x3x3xui8>) -> tensor<2x16x8x8xf32>
  %dw = dlc.conv2d_backward_filter %g, %x {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x8x8xf32>, tensor<2x3x9x9xf32>) -> tensor<16x3x2x2xf32>
  return %dw : tensor<16x3x2x2xf32>
}

// -----

// Left alone: an activation gradient something else reads too, one on a GPU, one with
// no filter gradient, and one whose data gradient's result is read between the two
// convolution gradients (the region could not take the last one's place).
// CHECK-LABEL: func.func @gradients_left_alone
// CHECK-NOT: max_pool2d_backward_conv2d
// CHECK: return
func.func @gradients_left_alone(%dy: tensor<1x16x3x3xf32>, %where: tensor<1x16x3x3xui8>, %w: tensor<16x16x2x2xf32>, %x: tensor<1x16x9x9xf32>) -> (tensor<1x16x8x8xf32>, tensor<16x16x2x2xf32>, tensor<16x16x2x2xf32>, tensor<1x16x9x9xf32>, tensor<1x16x9x9xf32>, tensor<16x16x2x2xf32>) {
  %g1 = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<1x16x3x3xf32>, tensor<1x16x3x3xui8>) -> tensor<1x16x8x8xf32>
  %other = dlc.neg %g1 {dlc.device = #dlc.device<cpu:0>} : tensor<1x16x8x8xf32>
  %dw1 = dlc.conv2d_backward_filter %g1, %x {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<1x16x9x9xf32>) -> tensor<16x16x2x2xf32>
  %g2 = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<gpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<1x16x3x3xf32>, tensor<1x16x3x3xui8>) -> tensor<1x16x8x8xf32>
  %dw2 = dlc.conv2d_backward_filter %g2, %x {dlc.device = #dlc.device<gpu:0>} : (tensor<1x16x8x8xf32>, tensor<1x16x9x9xf32>) -> tensor<16x16x2x2xf32>
  %g3 = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<1x16x3x3xf32>, tensor<1x16x3x3xui8>) -> tensor<1x16x8x8xf32>
  %dx3 = dlc.conv2d_backward_data %g3, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x2x2xf32>) -> tensor<1x16x9x9xf32>
  %g4 = dlc.max_pool2d_backward_indexed %dy, %where {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<1x16x3x3xf32>, tensor<1x16x3x3xui8>) -> tensor<1x16x8x8xf32>
  %dx4 = dlc.conv2d_backward_data %g4, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<16x16x2x2xf32>) -> tensor<1x16x9x9xf32>
  %between = dlc.neg %dx4 {dlc.device = #dlc.device<cpu:0>} : tensor<1x16x9x9xf32>
  %dw4 = dlc.conv2d_backward_filter %g4, %x {dlc.device = #dlc.device<cpu:0>} : (tensor<1x16x8x8xf32>, tensor<1x16x9x9xf32>) -> tensor<16x16x2x2xf32>
  return %other, %dw1, %dw2, %dx3, %between, %dw4 : tensor<1x16x8x8xf32>, tensor<16x16x2x2xf32>, tensor<16x16x2x2xf32>, tensor<1x16x9x9xf32>, tensor<1x16x9x9xf32>, tensor<16x16x2x2xf32>
}
