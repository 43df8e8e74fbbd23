// RUN: dlc-opt %s --dlc-fuse -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-fuse="epilogues=false" -split-input-file | FileCheck %s --check-prefix=NOEPI
// RUN: dlc-opt %s --dlc-fuse="max-ops=2" -split-input-file | FileCheck %s --check-prefix=MAX2
// RUN: dlc-opt %s --dlc-fuse="elementwise=false" -split-input-file | FileCheck %s --check-prefix=FOLD

// A ReLU after a convolution whose output has no other use folds into it.
// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[F:.*]] = dlc.fused "conv2d_relu"(%arg0, %arg1, %arg2) {dlc.device = #dlc.device<cpu:0>}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x3x8x8xf32>, %[[W:.*]]: tensor<8x3x3x3xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[C:.*]] = dlc.conv2d %[[X]], %[[W]], %[[B]] : {{.*}} -> tensor<4x8x6x6xf32>
// CHECK-NEXT: %[[R:.*]] = dlc.relu %[[C]] : tensor<4x8x6x6xf32>
// CHECK-NEXT: dlc.yield %[[R]]
// CHECK: return %[[F]]
// NOEPI-LABEL: func.func @conv_relu
// NOEPI-NEXT: dlc.conv2d
// NOEPI-NEXT: dlc.relu
func.func @conv_relu(%x: tensor<4x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<4x8x6x6xf32> {
  %c = dlc.conv2d %x, %w, %b {dlc.device = #dlc.device<cpu:0>} : (tensor<4x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<4x8x6x6xf32>
  %r = dlc.relu %c {dlc.device = #dlc.device<cpu:0>} : tensor<4x8x6x6xf32>
  return %r : tensor<4x8x6x6xf32>
}

// -----

// ReLU6 after a convolution folds into it too (oneDNN's clip post-op).
// CHECK-LABEL: func.func @conv_relu6
// CHECK: %[[F:.*]] = dlc.fused "conv2d_relu6"(%arg0, %arg1) {dlc.device = #dlc.device<cpu:0>}
// CHECK: dlc.conv2d
// CHECK-NEXT: dlc.relu6
// CHECK: return %[[F]]
// NOEPI-LABEL: func.func @conv_relu6
// NOEPI-NEXT: dlc.conv2d
// NOEPI-NEXT: dlc.relu6
func.func @conv_relu6(%x: tensor<4x8x8x8xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<4x8x6x6xf32> {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>, groups = 8 : i64} : (tensor<4x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<4x8x6x6xf32>
  %r = dlc.relu6 %c {dlc.device = #dlc.device<cpu:0>} : tensor<4x8x6x6xf32>
  return %r : tensor<4x8x6x6xf32>
}

// -----

// SiLU after a convolution folds into it as well (oneDNN's swish post-op).
// CHECK-LABEL: func.func @conv_silu
// CHECK: %[[F:.*]] = dlc.fused "conv2d_silu"(%arg0, %arg1) {dlc.device = #dlc.device<cpu:0>}
// CHECK: dlc.conv2d
// CHECK-NEXT: dlc.silu
// CHECK: return %[[F]]
// NOEPI-LABEL: func.func @conv_silu
// NOEPI-NEXT: dlc.conv2d
// NOEPI-NEXT: dlc.silu
func.func @conv_silu(%x: tensor<4x8x8x8xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<4x8x6x6xf32> {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>, groups = 8 : i64} : (tensor<4x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<4x8x6x6xf32>
  %r = dlc.silu %c {dlc.device = #dlc.device<cpu:0>} : tensor<4x8x6x6xf32>
  return %r : tensor<4x8x6x6xf32>
}

// -----

// Dense + ReLU likewise; but not when the dense output is used again (it must be stored).
// CHECK-LABEL: func.func @dense_relu
// CHECK: dlc.fused "dense_relu"
// CHECK-LABEL: func.func @dense_used_twice
// CHECK: %[[D:.*]] = dlc.dense
// CHECK-NEXT: %[[R:.*]] = dlc.relu %[[D]]
// CHECK-NOT: dlc.fused
func.func @dense_relu(%x: tensor<4x16xf32>, %w: tensor<5x16xf32>) -> tensor<4x5xf32> {
  %d = dlc.dense %x, %w : (tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<4x5xf32>
  %r = dlc.relu %d : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}
func.func @dense_used_twice(%x: tensor<4x16xf32>, %w: tensor<5x16xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %d = dlc.dense %x, %w : (tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<4x5xf32>
  %r = dlc.relu %d : tensor<4x5xf32>
  return %r, %d : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

// GELU after a dense layer (BERT's feed-forward, predicting) is its epilogue too; in
// training the backward reads the dense output again, and nothing is fused.
// CHECK-LABEL: func.func @dense_gelu
// CHECK: dlc.fused "dense_gelu"
// CHECK-LABEL: func.func @dense_gelu_training
// CHECK: %[[D:.*]] = dlc.dense
// CHECK-NEXT: dlc.gelu %[[D]]
// CHECK-NOT: dlc.fused "dense_gelu"
func.func @dense_gelu(%x: tensor<4x16xf32>, %w: tensor<5x16xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %d = dlc.dense %x, %w, %b : (tensor<4x16xf32>, tensor<5x16xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %g = dlc.gelu %d : tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}
func.func @dense_gelu_training(%x: tensor<4x16xf32>, %w: tensor<5x16xf32>, %dy: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %d = dlc.dense %x, %w : (tensor<4x16xf32>, tensor<5x16xf32>) -> tensor<4x5xf32>
  %g = dlc.gelu %d : tensor<4x5xf32>
  %dx = dlc.gelu_backward %dy, %d : tensor<4x5xf32>
  return %g, %dx : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

// The gradient of relu -> max_pool2d: the ReLU's mask at the pooling's input folds into
// the pooling's backward. Not when the mask is another tensor's, nor when the pooling's
// gradient is read again.
// CHECK-LABEL: func.func @pool_backward_relu
// CHECK: %[[F:.*]] = dlc.fused "max_pool2d_backward_relu"(%arg0, %arg1)
// CHECK-NEXT: ^bb0(%[[DY:.*]]: tensor<2x16x4x4xf32>, %[[X:.*]]: tensor<2x16x8x8xf32>):
// CHECK-NEXT: %[[G:.*]] = dlc.max_pool2d_backward %[[DY]], %[[X]]
// CHECK-NEXT: %[[R:.*]] = dlc.relu_backward %[[G]], %[[X]] : tensor<2x16x8x8xf32>
// CHECK-NEXT: dlc.yield %[[R]]
// CHECK: return %[[F]]
// CHECK-LABEL: func.func @pool_backward_other_mask
// CHECK-NOT: max_pool2d_backward_relu
// CHECK-LABEL: func.func @pool_backward_read_again
// CHECK-NOT: max_pool2d_backward_relu
// CHECK: return
// NOEPI-LABEL: func.func @pool_backward_relu
// NOEPI-NEXT: dlc.max_pool2d_backward
// NOEPI-NEXT: dlc.relu_backward
func.func @pool_backward_relu(%dy: tensor<2x16x4x4xf32>, %x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
  %g = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  %r = dlc.relu_backward %g, %x : tensor<2x16x8x8xf32>
  return %r : tensor<2x16x8x8xf32>
}
func.func @pool_backward_other_mask(%dy: tensor<2x16x4x4xf32>, %x: tensor<2x16x8x8xf32>, %m: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
  %g = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  %r = dlc.relu_backward %g, %m : tensor<2x16x8x8xf32>
  return %r : tensor<2x16x8x8xf32>
}
func.func @pool_backward_read_again(%dy: tensor<2x16x4x4xf32>, %x: tensor<2x16x8x8xf32>) -> (tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>) {
  %g = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
  %r = dlc.relu_backward %g, %x : tensor<2x16x8x8xf32>
  return %r, %g : tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>
}

// -----

// Two element-wise chains meeting in an add (BatchNorm's running-mean update) become one
// region; the scalar constants are its inputs. A value also returned is a region result.
// CHECK-LABEL: func.func @running_mean
// CHECK: %[[K1:.*]] = dlc.constant
// CHECK: %[[K2:.*]] = dlc.constant
// CHECK: %[[F:.*]]:2 = dlc.fused "elementwise"(%arg0, %[[K1]], %arg1, %[[K2]]) : (tensor<8xf32>, tensor<f32>, tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK: dlc.mul
// CHECK-NEXT: dlc.mul
// CHECK-NEXT: dlc.add
// CHECK-NEXT: dlc.neg
// CHECK: return %[[F]]#1, %[[F]]#0
// With at most two ops per region the chain splits.
// MAX2-LABEL: func.func @running_mean
// MAX2-COUNT-2: dlc.fused "elementwise"
func.func @running_mean(%batch: tensor<8xf32>, %running: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %k1 = dlc.constant dense<0.1> : tensor<f32>
  %k2 = dlc.constant dense<0.9> : tensor<f32>
  %a = dlc.mul %batch, %k1 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %b = dlc.mul %running, %k2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %s = dlc.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = dlc.neg %s : tensor<8xf32>
  return %n, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// Not fused: a broadcast that is not a single element, a non-f32 chain, a chain cut by
// a copy to another device, and a chain interrupted by a reader outside it.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: dlc.fused
// CHECK: return
func.func @negative(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4xi32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xi32>, tensor<4x8xf32>) {
  %0 = dlc.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = dlc.relu %0 : tensor<4x8xf32>
  %2 = dlc.neg %i : tensor<4xi32>
  %3 = dlc.relu %2 : tensor<4xi32>
  %4 = dlc.exp %y {dlc.device = #dlc.device<cpu:0>} : tensor<4x8xf32>
  %c = dlc.copy %4 : tensor<4x8xf32> to #dlc.device<cpu:1>
  %5 = dlc.tanh %c {dlc.device = #dlc.device<cpu:1>} : tensor<4x8xf32>
  return %1, %3, %5 : tensor<4x8xf32>, tensor<4xi32>, tensor<4x8xf32>
}

// The softmax reads exp's result, so exp's group ends there; tanh and add start another
// region that takes exp's result as an input.
// CHECK-LABEL: func.func @interrupted
// CHECK: %[[E:.*]] = dlc.exp
// CHECK-NEXT: %[[S:.*]] = dlc.softmax %[[E]]
// CHECK-NEXT: dlc.fused "elementwise"(%[[E]], %[[S]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dlc.tanh
// CHECK-NEXT: dlc.add
func.func @interrupted(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = dlc.exp %x : tensor<4x8xf32>
  %1 = dlc.softmax %0 : tensor<4x8xf32>
  %2 = dlc.tanh %0 : tensor<4x8xf32>
  %3 = dlc.add %2, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Inference BatchNorm after a convolution folds into it: scale = gamma * rsqrt(var + eps)
// per output channel multiplies the weights, and the bias becomes
// (bias - mean) * scale + beta; the ReLU after it then becomes the epilogue.
// FOLD-LABEL: func.func @conv_batch_norm
// FOLD: %[[EPS:.*]] = dlc.constant dense<1.000000e-03> : tensor<f32>
// FOLD: %[[V:.*]] = dlc.add %arg5, %[[EPS]]
// FOLD: %[[INV:.*]] = dlc.rsqrt %[[V]]
// FOLD: %[[SCALE:.*]] = dlc.mul %arg2, %[[INV]]
// FOLD: %[[COL:.*]] = dlc.reshape %[[SCALE]] {{.*}} : tensor<8xf32> to tensor<8x1x1x1xf32>
// FOLD: %[[W:.*]] = dlc.mul %arg1, %[[COL]] {{.*}} : (tensor<8x3x3x3xf32>, tensor<8x1x1x1xf32>) -> tensor<8x3x3x3xf32>
// FOLD: %[[SHIFT:.*]] = dlc.neg %arg4
// FOLD: %[[B0:.*]] = dlc.mul %[[SHIFT]], %[[SCALE]]
// FOLD: %[[B:.*]] = dlc.add %[[B0]], %arg3
// FOLD: dlc.fused "conv2d_relu"(%arg0, %[[W]], %[[B]])
// FOLD-NEXT: ^bb0
// With element-wise fusion too (the default), the parameter arithmetic is two regions.
// CHECK-LABEL: func.func @conv_batch_norm
// CHECK-COUNT-2: dlc.fused "elementwise"
// CHECK: dlc.fused "conv2d_relu"
// CHECK-NOT: dlc.batch_norm
// CHECK-LABEL: func.func @conv_batch_norm_training
// NOEPI-LABEL: func.func @conv_batch_norm
// NOEPI: dlc.conv2d %arg0, %{{.*}}, %{{.*}} {dlc.device = #dlc.device<cpu:0>}
// NOEPI-NEXT: dlc.relu
func.func @conv_batch_norm(%x: tensor<2x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %g: tensor<8xf32>,
                           %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> tensor<2x8x6x6xf32> {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  %n = dlc.batch_norm %c, %g, %b, %m, %v {epsilon = 1.0e-3 : f64, dlc.device = #dlc.device<cpu:0>} : (tensor<2x8x6x6xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32>
  %r = dlc.relu %n {dlc.device = #dlc.device<cpu:0>} : tensor<2x8x6x6xf32>
  return %r : tensor<2x8x6x6xf32>
}

// Training BatchNorm normalizes with the batch's statistics: nothing to fold.
// CHECK: dlc.batch_norm {{.*}} {training}
func.func @conv_batch_norm_training(%x: tensor<2x3x8x8xf32>, %w: tensor<8x3x3x3xf32>, %g: tensor<8xf32>) -> tensor<2x8x6x6xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  %n:3 = dlc.batch_norm %c, %g, %g {training} : (tensor<2x8x6x6xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x6x6xf32>, tensor<8xf32>, tensor<8xf32>)
  return %n#0 : tensor<2x8x6x6xf32>
}

// -----

// Inference BatchNorm before convolutions without padding folds into them: it is
// x * scale + shift per input channel (shift = beta - mean * scale), so each weight
// takes scale along its input channels and the bias gains the sum of the weights times
// shift; the convolutions then read the norm's input.
// FOLD-LABEL: func.func @batch_norm_conv
// FOLD: %[[INV:.*]] = dlc.rsqrt
// FOLD: %[[SCALE:.*]] = dlc.mul %arg2, %[[INV]]
// FOLD: %[[MS:.*]] = dlc.mul %arg4, %[[SCALE]]
// FOLD: %[[SHIFT:.*]] = dlc.sub %arg3, %[[MS]]
// FOLD: %[[SROW:.*]] = dlc.reshape %[[SCALE]] : tensor<4xf32> to tensor<1x4x1x1xf32>
// FOLD: %[[TROW:.*]] = dlc.reshape %[[SHIFT]] : tensor<4xf32> to tensor<1x4x1x1xf32>
// FOLD: %[[W:.*]] = dlc.mul %arg6, %[[SROW]] : (tensor<8x4x2x2xf32>, tensor<1x4x1x1xf32>) -> tensor<8x4x2x2xf32>
// FOLD: %[[WT:.*]] = dlc.mul %arg6, %[[TROW]]
// FOLD: %[[SUM:.*]] = dlc.reduce sum %[[WT]] {axes = array<i64: 1, 2, 3>} : (tensor<8x4x2x2xf32>) -> tensor<8xf32>
// FOLD: %[[B:.*]] = dlc.add %arg7, %[[SUM]]
// FOLD: dlc.conv2d %arg0, %[[W]], %[[B]]
// FOLD: %[[W2:.*]] = dlc.mul %arg6, %[[SROW]]
// FOLD: %[[WT2:.*]] = dlc.mul %arg6, %[[TROW]]
// FOLD: %[[SUM2:.*]] = dlc.reduce sum %[[WT2]]
// FOLD: dlc.conv2d %arg0, %[[W2]], %[[SUM2]] {stride
// FOLD-NOT: dlc.batch_norm
// FOLD: return
func.func @batch_norm_conv(%x: tensor<2x4x9x9xf32>, %unused: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                           %m: tensor<4xf32>, %v: tensor<4xf32>, %w: tensor<8x4x2x2xf32>, %c: tensor<8xf32>)
    -> (tensor<2x8x8x8xf32>, tensor<2x8x4x4xf32>) {
  %n = dlc.batch_norm %x, %g, %b, %m, %v : (tensor<2x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x9x9xf32>
  %y = dlc.conv2d %n, %w, %c : (tensor<2x4x9x9xf32>, tensor<8x4x2x2xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %z = dlc.conv2d %n, %w {stride = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<8x4x2x2xf32>) -> tensor<2x8x4x4xf32>
  return %y, %z : tensor<2x8x8x8xf32>, tensor<2x8x4x4xf32>
}

// Before flatten -> dense the norm folds into the dense weights: feature c·S + s is
// channel c's, so the weights, seen as (units, C, S), take scale along C, and the bias
// gains their sum times shift; the dense layers read a flatten of the norm's input.
// FOLD-LABEL: func.func @batch_norm_flatten_dense
// FOLD: %[[SCALE:.*]] = dlc.mul %arg1, %{{.*}} : (tensor<4xf32>
// FOLD: %[[SHIFT:.*]] = dlc.sub %arg2
// FOLD: %[[SROW:.*]] = dlc.reshape %[[SCALE]] : tensor<4xf32> to tensor<1x4x1xf32>
// FOLD: %[[TROW:.*]] = dlc.reshape %[[SHIFT]] : tensor<4xf32> to tensor<1x4x1xf32>
// FOLD: %[[FLAT:.*]] = dlc.flatten %arg0 : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
// FOLD: %[[W3:.*]] = dlc.reshape %arg5 : tensor<10x36xf32> to tensor<10x4x9xf32>
// FOLD: %[[WS:.*]] = dlc.mul %[[W3]], %[[SROW]] : (tensor<10x4x9xf32>, tensor<1x4x1xf32>) -> tensor<10x4x9xf32>
// FOLD: %[[W:.*]] = dlc.reshape %[[WS]] : tensor<10x4x9xf32> to tensor<10x36xf32>
// FOLD: %[[WT:.*]] = dlc.mul %[[W3]], %[[TROW]]
// FOLD: %[[SUM:.*]] = dlc.reduce sum %[[WT]] {axes = array<i64: 1, 2>} : (tensor<10x4x9xf32>) -> tensor<10xf32>
// FOLD: %[[B:.*]] = dlc.add %arg6, %[[SUM]]
// FOLD: dlc.dense %[[FLAT]], %[[W]], %[[B]]
// FOLD: dlc.dense %[[FLAT]], %{{.*}}, %{{.*}} :
// FOLD-NOT: dlc.batch_norm
// FOLD: return
func.func @batch_norm_flatten_dense(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                                    %m: tensor<4xf32>, %v: tensor<4xf32>, %w: tensor<10x36xf32>,
                                    %c: tensor<10xf32>) -> (tensor<2x10xf32>, tensor<2x10xf32>) {
  %n = dlc.batch_norm %x, %g, %b, %m, %v : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %f = dlc.flatten %n : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  %y = dlc.dense %f, %w, %c : (tensor<2x36xf32>, tensor<10x36xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %z = dlc.dense %f, %w : (tensor<2x36xf32>, tensor<10x36xf32>) -> tensor<2x10xf32>
  return %y, %z : tensor<2x10xf32>, tensor<2x10xf32>
}

// Gluon's Flatten traces to a reshape that keeps the batch dimension: the same fold.
// FOLD-LABEL: func.func @batch_norm_reshape_dense
// FOLD: %[[FLAT:.*]] = dlc.reshape %arg0 : tensor<2x4x3x3xf32> to tensor<2x36xf32>
// FOLD: dlc.dense %[[FLAT]]
// FOLD-NOT: dlc.batch_norm
// FOLD: return
func.func @batch_norm_reshape_dense(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %w: tensor<10x36xf32>)
    -> tensor<2x10xf32> {
  %n = dlc.batch_norm %x, %g, %g, %g, %g : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %f = dlc.reshape %n : tensor<2x4x3x3xf32> to tensor<2x36xf32>
  %y = dlc.dense %f, %w : (tensor<2x36xf32>, tensor<10x36xf32>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// A flatten read by anything but dense layers keeps the norm.
// FOLD-LABEL: func.func @batch_norm_flatten_other_reader
// FOLD: dlc.batch_norm
func.func @batch_norm_flatten_other_reader(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %w: tensor<10x36xf32>)
    -> (tensor<2x10xf32>, tensor<2x36xf32>) {
  %n = dlc.batch_norm %x, %g, %g, %g, %g : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %f = dlc.flatten %n : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32>
  %y = dlc.dense %f, %w : (tensor<2x36xf32>, tensor<10x36xf32>) -> tensor<2x10xf32>
  return %y, %f : tensor<2x10xf32>, tensor<2x36xf32>
}

// A padded convolution's border windows would see zeros where the norm gave shift,
// and any other reader needs the normalized values: the norm stays.
// FOLD-LABEL: func.func @batch_norm_padded_conv
// FOLD: dlc.batch_norm
// FOLD-LABEL: func.func @batch_norm_other_reader
// FOLD: dlc.batch_norm
func.func @batch_norm_padded_conv(%x: tensor<2x4x9x9xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %w: tensor<8x4x3x3xf32>)
    -> tensor<2x8x9x9xf32> {
  %n = dlc.batch_norm %x, %g, %g, %m, %m : (tensor<2x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x9x9xf32>
  %y = dlc.conv2d %n, %w {padding = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x9x9xf32>
  return %y : tensor<2x8x9x9xf32>
}
func.func @batch_norm_other_reader(%x: tensor<2x4x9x9xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %w: tensor<8x4x2x2xf32>)
    -> (tensor<2x8x8x8xf32>, tensor<2x4x9x9xf32>) {
  %n = dlc.batch_norm %x, %g, %g, %m, %m : (tensor<2x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x9x9xf32>
  %y = dlc.conv2d %n, %w : (tensor<2x4x9x9xf32>, tensor<8x4x2x2xf32>) -> tensor<2x8x8x8xf32>
  return %y, %n : tensor<2x8x8x8xf32>, tensor<2x4x9x9xf32>
}
