// RUN: dlc-opt %s --dlc-drop-unread-saved -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-keep-pool-indices --dlc-drop-unread-saved -split-input-file | FileCheck %s --check-prefix=POOL

// The backward no longer reads the first saved value: its argument and the forward's
// result go, the later saved result moves up and its argument follows (number and name).
// A saved value still read stays; one computed only to be saved is no longer computed.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<8xf32>, tensor<8xf32> {dlc.saved})
// CHECK-NOT: dlc.tanh
// CHECK: %[[R:.*]] = dlc.relu
// CHECK: %[[Y:.*]] = dlc.exp %[[R]]
// CHECK-NOT: dlc.tanh
// CHECK: return %[[Y]], %[[Y]] : tensor<8xf32>, tensor<8xf32>
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%arg0: tensor<8xf32>, %arg1: tensor<8xf32> {dlc.name = "saved.1", dlc.saved_from = [@forward, 1]})
// CHECK: dlc.mul %arg0, %arg1
func.func @forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {dlc.saved}, tensor<8xf32> {dlc.saved}, tensor<8xf32> {dlc.saved}) {
  %t = dlc.tanh %x : tensor<8xf32>
  %r = dlc.relu %x : tensor<8xf32>
  %y = dlc.exp %r : tensor<8xf32>
  return %y, %r, %t, %y : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
func.func @backward(%dy: tensor<8xf32>, %r: tensor<8xf32> {dlc.name = "saved.1", dlc.saved_from = [@forward, 1]},
                    %t: tensor<8xf32> {dlc.name = "saved.2", dlc.saved_from = [@forward, 2]},
                    %y: tensor<8xf32> {dlc.name = "saved.3", dlc.saved_from = [@forward, 3]}) -> tensor<8xf32> {
  %d = dlc.mul %dy, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

// An output the backward also saved, now unread: the argument goes, the output stays
// (it has no dlc.saved). A result written back into an argument (dlc.updates) keeps its
// attribute past the dropped result. Arguments that are not saved values stay where
// they are, read or not.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<8xf32>, tensor<4xf32> {dlc.updates = 1 : i64})
// CHECK: return %{{.*}}, %arg1 : tensor<8xf32>, tensor<4xf32>
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%arg0: tensor<8xf32>, %arg1: tensor<8xf32> {dlc.name = "forward.data"})
// CHECK-NEXT: return %arg0
func.func @forward(%x: tensor<8xf32>, %stat: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32> {dlc.saved}, tensor<4xf32> {dlc.updates = 1 : i64}) {
  %y = dlc.relu %x : tensor<8xf32>
  return %y, %x, %stat : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
}
func.func @backward(%dy: tensor<8xf32>, %out: tensor<8xf32> {dlc.name = "saved.0", dlc.saved_from = [@forward, 0]},
                    %x: tensor<8xf32> {dlc.name = "forward.data"},
                    %s: tensor<8xf32> {dlc.name = "saved.1", dlc.saved_from = [@forward, 1]}) -> tensor<8xf32> {
  return %dy : tensor<8xf32>
}

// -----

// After dlc-keep-pool-indices the pooling's gradient reads the indices: the pooling's
// input, a block's activation, is no longer returned by the forward.
// POOL-LABEL: func.func @pool_forward
// POOL-SAME: -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xui8> {dlc.saved})
// POOL: %[[R:.*]] = dlc.relu
// POOL: %[[Y:.*]], %[[WHERE:.*]] = dlc.max_pool2d_indexed %[[R]]
// POOL: return %[[Y]], %[[WHERE]]
// POOL-LABEL: func.func @pool_backward
// POOL-SAME: (%arg0: tensor<1x16x4x4xf32>, %arg1: tensor<1x16x4x4xui8> {dlc.device = #dlc.device<cpu:0>, dlc.name = "saved.1", dlc.saved_from = [@pool_forward, 1]})
// POOL: dlc.max_pool2d_backward_indexed %arg0, %arg1
func.func @pool_forward(%x: tensor<1x16x8x8xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32> {dlc.saved}) {
  %r = dlc.relu %x : tensor<1x16x8x8xf32>
  %y = dlc.max_pool2d %r {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  return %y, %r : tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>
}
func.func @pool_backward(%dy: tensor<1x16x4x4xf32>, %r: tensor<1x16x8x8xf32> {dlc.name = "saved.1", dlc.saved_from = [@pool_forward, 1], dlc.device = #dlc.device<cpu:0>}) -> tensor<1x16x8x8xf32> {
  %dx = dlc.max_pool2d_backward %dy, %r {dlc.device = #dlc.device<cpu:0>, kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %dx : tensor<1x16x8x8xf32>
}
