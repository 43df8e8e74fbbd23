// RUN: dlc-opt %s --dlc-choose-conv-algorithms=choose=winograd -split-input-file -verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --dlc-choose-conv-algorithms=choose=direct -split-input-file | FileCheck %s --check-prefix=DIRECT
// RUN: dlc-opt %s --dlc-choose-conv-algorithms=choose=timed -split-input-file | FileCheck %s --check-prefix=DIRECT
// RUN: dlc-opt %s --dlc-choose-conv-algorithms -split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: dlc-opt %s --dlc-pipeline="cpu conv-algorithms=winograd generate-kernels=false" -split-input-file | FileCheck %s --check-prefix=PIPELINE

// The shapes a Winograd transform exists for (3x3 window, stride 1, no dilation, one
// group) get it, forward and both gradients, a fused region's convolution included;
// 1x1 windows, strides, dilations and groups stay direct (2x2 windows: below). Without a timer
// (dlc-opt links no kernels), `timed` changes nothing, as `direct` does; `auto`, the
// default, leaves these small ones direct (8 output tiles; see below).
// CHECK-LABEL: func.func @eligible
// CHECK: dlc.conv2d %arg0, %arg1 algorithm winograd {padding = array<i64: 1, 1>}
// CHECK: dlc.conv2d_backward_data %{{.*}}, %arg1 algorithm winograd {padding
// CHECK: dlc.conv2d_backward_filter %{{.*}}, %arg0 algorithm winograd {padding
// CHECK: dlc.fused "conv2d_relu"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dlc.conv2d {{.*}} algorithm winograd
// DIRECT-LABEL: func.func @eligible
// DIRECT-NOT: algorithm
// DIRECT: return
// AUTO-LABEL: func.func @eligible
// AUTO-NOT: algorithm
// AUTO: return
// PIPELINE-LABEL: func.func @eligible
// PIPELINE: dlc.fused "conv2d_relu"
// PIPELINE: dlc.conv2d {{.*}} algorithm winograd
func.func @eligible(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> (tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<2x16x8x8xf32>) {
  %y = dlc.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
  %dx = dlc.conv2d_backward_data %y, %w {padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
  %dw = dlc.conv2d_backward_filter %y, %x {padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>) -> tensor<16x16x3x3xf32>
  %r = dlc.fused "conv2d_relu"(%x, %w) : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32> {
  ^bb0(%a: tensor<2x16x8x8xf32>, %b: tensor<16x16x3x3xf32>):
    %c = dlc.conv2d %a, %b {padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
    %d = dlc.relu %c : tensor<2x16x8x8xf32>
    dlc.yield %d : tensor<2x16x8x8xf32>
  }
  return %y, %dx, %dw, %r : tensor<2x16x8x8xf32>, tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<2x16x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @not_eligible
// CHECK-NOT: algorithm
// CHECK: return
func.func @not_eligible(%x: tensor<2x16x8x8xf32>, %w1: tensor<16x16x1x1xf32>, %w2: tensor<16x16x2x2xf32>,
                        %w3: tensor<16x16x3x3xf32>, %wg: tensor<16x8x3x3xf32>)
    -> (tensor<2x16x8x8xf32>, tensor<2x16x7x4xf32>, tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) {
  %a = dlc.conv2d %x, %w1 : (tensor<2x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x8x8xf32>
  %b = dlc.conv2d %x, %w2 {stride = array<i64: 1, 2>} : (tensor<2x16x8x8xf32>, tensor<16x16x2x2xf32>) -> tensor<2x16x7x4xf32>
  %c = dlc.conv2d %x, %w3 {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x4x4xf32>
  %d = dlc.conv2d %x, %w3 {dilation = array<i64: 2, 2>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x4x4xf32>
  %e = dlc.conv2d %x, %wg {groups = 2, padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x8x8xf32>
  return %a, %b, %c, %d, %e : tensor<2x16x8x8xf32>, tensor<2x16x7x4xf32>, tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>
}

// -----

// A convolution placed on a GPU keeps cuDNN's own choice: no algorithm.
// CHECK-LABEL: func.func @on_gpu
// CHECK: dlc.conv2d %arg0, %arg1 {dlc.device = #dlc.device<gpu:0>
func.func @on_gpu(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32> {
  %y = dlc.conv2d %x, %w {dlc.device = #dlc.device<gpu:0>, padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
  return %y : tensor<2x16x8x8xf32>
}

// -----

// `auto`: Winograd for the forward convolutions whose weights stay prepared between
// runs (dlc.prepared_operands, on the op or on its conv2d_relu region), where the
// transform of the weights is paid once (512 channels of 7x7: 116 million
// multiply-accumulates); the one whose weights change every run and the gradient stay
// direct (4 output tiles of 4x4, fewer than the 32 the other kernels need).
// AUTO-LABEL: func.func @kept_weights
// AUTO: dlc.conv2d %arg0, %arg1 algorithm winograd {dlc.prepared_operands = array<i64: 1>
// AUTO: dlc.fused "conv2d_relu"(%arg0, %arg1) {dlc.prepared_operands = array<i64: 1>}
// AUTO-NEXT: ^bb0
// AUTO-NEXT: dlc.conv2d {{.*}} algorithm winograd
// AUTO: dlc.conv2d %arg0, %arg2 {padding
// AUTO: dlc.conv2d_backward_data %arg0, %arg1 {padding
// With choose=winograd (the CHECK run) every one of them takes it.
// CHECK-LABEL: func.func @kept_weights
// CHECK-COUNT-4: algorithm winograd
func.func @kept_weights(%x: tensor<1x512x7x7xf32>, %w: tensor<512x512x3x3xf32>, %v: tensor<512x512x3x3xf32>)
    -> (tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>) {
  %y = dlc.conv2d %x, %w {dlc.prepared_operands = array<i64: 1>, padding = array<i64: 1, 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x7x7xf32>
  %r = dlc.fused "conv2d_relu"(%x, %w) {dlc.prepared_operands = array<i64: 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x7x7xf32> {
  ^bb0(%a: tensor<1x512x7x7xf32>, %b: tensor<512x512x3x3xf32>):
    %c = dlc.conv2d %a, %b {padding = array<i64: 1, 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x7x7xf32>
    %d = dlc.relu %c : tensor<1x512x7x7xf32>
    dlc.yield %d : tensor<1x512x7x7xf32>
  }
  %z = dlc.conv2d %x, %v {padding = array<i64: 1, 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x7x7xf32>
  %dx = dlc.conv2d_backward_data %x, %w {padding = array<i64: 1, 1>} : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<1x512x7x7xf32>
  return %y, %r, %z, %dx : tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>, tensor<1x512x7x7xf32>
}

// -----

// A forward recorded for training (a backward reads its results: dlc.saved_from) does
// not take Winograd for kept weights under `auto`: the trainer changes them every step,
// so they are not kept either; with 8 tiles the convolution stays direct.
// AUTO-LABEL: func.func @forward
// AUTO-NOT: algorithm
// AUTO-NOT: prepared_operands
// AUTO: func.func @backward
func.func @forward(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32> {
  %y = dlc.conv2d %x, %w {dlc.prepared_operands = array<i64: 1>, padding = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
  return %y : tensor<2x16x8x8xf32>
}
func.func @backward(%y: tensor<2x16x8x8xf32> {dlc.saved_from = [@forward, 0]}) -> tensor<2x16x8x8xf32> {
  %d = dlc.neg %y : tensor<2x16x8x8xf32>
  return %d : tensor<2x16x8x8xf32>
}

// -----

// `auto` elsewhere (weights that change, gradients): Winograd with at least 32 output
// tiles of 4x4 (batch 8 of 7x7: 8*2*2), where the kernels that transform the weights on
// each call win; direct with fewer (batch 4 of 7x7: 16). In a forward recorded for
// training, the convolutions' weights are no longer kept (the trainer changes them
// every step); the 1x1 convolution is no candidate and keeps its mark.
// AUTO-LABEL: func.func @train_forward
// AUTO: dlc.conv2d %arg0, %arg2 algorithm winograd {padding
// AUTO: dlc.conv2d %arg1, %arg2 {padding
// AUTO: dlc.conv2d %arg0, %arg3 {dlc.prepared_operands = array<i64: 1>}
// AUTO-LABEL: func.func @train_backward
// AUTO: dlc.conv2d_backward_data %arg0, %arg1 algorithm winograd
// AUTO: dlc.conv2d_backward_filter %arg0, %arg2 algorithm winograd
// AUTO: dlc.conv2d_backward_data %arg3, %arg1 {padding
func.func @train_forward(%x: tensor<8x512x7x7xf32>, %s: tensor<4x512x7x7xf32>, %w: tensor<512x512x3x3xf32>, %p: tensor<512x512x1x1xf32>)
    -> (tensor<8x512x7x7xf32>, tensor<4x512x7x7xf32>, tensor<8x512x7x7xf32>) {
  %y = dlc.conv2d %x, %w {dlc.prepared_operands = array<i64: 1>, padding = array<i64: 1, 1>} : (tensor<8x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<8x512x7x7xf32>
  %z = dlc.conv2d %s, %w {dlc.prepared_operands = array<i64: 1>, padding = array<i64: 1, 1>} : (tensor<4x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<4x512x7x7xf32>
  %o = dlc.conv2d %x, %p {dlc.prepared_operands = array<i64: 1>} : (tensor<8x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<8x512x7x7xf32>
  return %y, %z, %o : tensor<8x512x7x7xf32>, tensor<4x512x7x7xf32>, tensor<8x512x7x7xf32>
}
func.func @train_backward(%dy: tensor<8x512x7x7xf32> {dlc.saved_from = [@train_forward, 0]}, %w: tensor<512x512x3x3xf32>,
                          %x: tensor<8x512x7x7xf32>, %ds: tensor<4x512x7x7xf32>)
    -> (tensor<8x512x7x7xf32>, tensor<512x512x3x3xf32>, tensor<4x512x7x7xf32>) {
  %dx = dlc.conv2d_backward_data %dy, %w {padding = array<i64: 1, 1>} : (tensor<8x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<8x512x7x7xf32>
  %dw = dlc.conv2d_backward_filter %dy, %x {padding = array<i64: 1, 1>} : (tensor<8x512x7x7xf32>, tensor<8x512x7x7xf32>) -> tensor<512x512x3x3xf32>
  %ds2 = dlc.conv2d_backward_data %ds, %w {padding = array<i64: 1, 1>} : (tensor<4x512x7x7xf32>, tensor<512x512x3x3xf32>) -> tensor<4x512x7x7xf32>
  return %dx, %dw, %ds2 : tensor<8x512x7x7xf32>, tensor<512x512x3x3xf32>, tensor<4x512x7x7xf32>
}

// -----

// `auto` keeps convolutions with fewer than 16 input or output channels direct, kept
// weights or not (oneDNN's Winograd works on blocks of 16 channels; a 1- or 3-channel
// image loses 3-6x with it).
// AUTO-LABEL: func.func @narrow
// AUTO-NOT: algorithm
// AUTO: return
// CHECK-LABEL: func.func @narrow
// CHECK-COUNT-2: algorithm winograd
func.func @narrow(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %y: tensor<8x16x32x32xf32>, %v: tensor<8x16x3x3xf32>)
    -> (tensor<8x16x32x32xf32>, tensor<8x8x32x32xf32>) {
  %a = dlc.conv2d %x, %w {dlc.prepared_operands = array<i64: 1>, padding = array<i64: 1, 1>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
  %b = dlc.conv2d %y, %v {padding = array<i64: 1, 1>} : (tensor<8x16x32x32xf32>, tensor<8x16x3x3xf32>) -> tensor<8x8x32x32xf32>
  return %a, %b : tensor<8x16x32x32xf32>, tensor<8x8x32x32xf32>
}

// -----

// 2x2 windows (the seed's LeafNetwork): dlc's own kernels compute all three directions.
// `auto` takes them from 100 million multiply-accumulates: the LeafNetwork's 32 -> 64
// channels on 62x62 at batch 4 (122 million) but not at batch 2 (61 million).
// CHECK-LABEL: func.func @two_by_two
// CHECK: dlc.conv2d %arg0, %arg2 algorithm winograd
// CHECK: dlc.conv2d %arg1, %arg2 algorithm winograd
// CHECK: dlc.conv2d_backward_data %arg3, %arg2 algorithm winograd
// CHECK: dlc.conv2d_backward_filter %arg3, %arg0 algorithm winograd
// CHECK: dlc.conv2d_backward_filter %arg4, %arg1 algorithm winograd
// AUTO-LABEL: func.func @two_by_two
// AUTO: dlc.conv2d %arg0, %arg2 algorithm winograd
// AUTO: dlc.conv2d %arg1, %arg2 :
// AUTO: dlc.conv2d_backward_data %arg3, %arg2 algorithm winograd
// AUTO: dlc.conv2d_backward_filter %arg3, %arg0 algorithm winograd
// AUTO: dlc.conv2d_backward_filter %arg4, %arg1 :
func.func @two_by_two(%x: tensor<4x32x62x62xf32>, %s: tensor<2x32x62x62xf32>, %w: tensor<64x32x2x2xf32>, %dy: tensor<4x64x61x61xf32>, %ds: tensor<2x64x61x61xf32>)
    -> (tensor<4x64x61x61xf32>, tensor<2x64x61x61xf32>, tensor<4x32x62x62xf32>, tensor<64x32x2x2xf32>, tensor<64x32x2x2xf32>) {
  %y = dlc.conv2d %x, %w : (tensor<4x32x62x62xf32>, tensor<64x32x2x2xf32>) -> tensor<4x64x61x61xf32>
  %z = dlc.conv2d %s, %w : (tensor<2x32x62x62xf32>, tensor<64x32x2x2xf32>) -> tensor<2x64x61x61xf32>
  %dx = dlc.conv2d_backward_data %dy, %w : (tensor<4x64x61x61xf32>, tensor<64x32x2x2xf32>) -> tensor<4x32x62x62xf32>
  %dw = dlc.conv2d_backward_filter %dy, %x : (tensor<4x64x61x61xf32>, tensor<4x32x62x62xf32>) -> tensor<64x32x2x2xf32>
  %dv = dlc.conv2d_backward_filter %ds, %s : (tensor<2x64x61x61xf32>, tensor<2x32x62x62xf32>) -> tensor<64x32x2x2xf32>
  return %y, %z, %dx, %dw, %dv : tensor<4x64x61x61xf32>, tensor<2x64x61x61xf32>, tensor<4x32x62x62xf32>, tensor<64x32x2x2xf32>, tensor<64x32x2x2xf32>
}
