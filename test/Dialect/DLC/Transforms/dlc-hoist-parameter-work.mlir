// RUN: dlc-opt %s --dlc-hoist-parameter-work -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-hoist-parameter-work --dlc-plan-memory -split-input-file | FileCheck %s --check-prefix=PLAN

// Batch norm folded into a convolution's weights (what dlc-fuse makes in inference):
// the folding reads parameters and constants only, so it is prepared once; the
// convolution reads the input and runs every time, its weights kept prepared between
// runs (dlc.prepared_operands). A view of a prepared value is no step; the op reading
// it still is prepared.
// CHECK-LABEL: func.func @folded_batch_norm
// CHECK: %[[EPS:.*]] = dlc.constant {{.*}}dlc.prepared
// CHECK: %[[VAR:.*]] = dlc.add %arg4, %[[EPS]] {dlc.prepared}
// CHECK: %[[INV:.*]] = dlc.rsqrt %[[VAR]] {dlc.prepared}
// CHECK: %[[SCALE:.*]] = dlc.mul %arg2, %[[INV]] {dlc.prepared}
// CHECK: %[[COL:.*]] = dlc.reshape %[[SCALE]] :
// CHECK: %[[W:.*]] = dlc.mul %arg1, %[[COL]] {dlc.prepared}
// CHECK: %[[Y:.*]] = dlc.conv2d %arg0, %[[W]] {dlc.prepared_operands = array<i64: 1>} :
// CHECK: return %[[Y]]
// PLAN-LABEL: func.func @folded_batch_norm
// PLAN-SAME: dlc.prepared_arena = #dlc.arena<cpu:0, {{[0-9]+}} bytes>
// PLAN: dlc.mul %arg1, {{.*}}dlc.storage = [#dlc.storage<prepared 0 at {{[0-9]+}}>]
// PLAN: dlc.conv2d {{.*}}dlc.storage = [#dlc.storage<result 0 at 0>]
func.func @folded_batch_norm(%x: tensor<2x3x8x8xf32>,
                             %w: tensor<8x3x3x3xf32> {dlc.parameter},
                             %gamma: tensor<8xf32> {dlc.parameter},
                             %mean: tensor<8xf32> {dlc.parameter},
                             %var: tensor<8xf32> {dlc.parameter}) -> tensor<2x8x6x6xf32> {
  %eps = dlc.constant dense<1.0e-05> : tensor<f32>
  %v = dlc.add %var, %eps : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %inv = dlc.rsqrt %v : tensor<8xf32>
  %scale = dlc.mul %gamma, %inv : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %col = dlc.reshape %scale : tensor<8xf32> to tensor<8x1x1x1xf32>
  %ws = dlc.mul %w, %col : (tensor<8x3x3x3xf32>, tensor<8x1x1x1xf32>) -> tensor<8x3x3x3xf32>
  %y = dlc.conv2d %x, %ws : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  return %y : tensor<2x8x6x6xf32>
}

// -----

// Not prepared: what reads an argument without dlc.parameter (the input), an argument
// the function writes back (a running mean), a random op (a fresh seed every run), and
// an op whose result the function returns. No prepared value: no prepared block.
// CHECK-LABEL: func.func @not_prepared
// CHECK-NOT: dlc.prepared
// CHECK: return
// PLAN-LABEL: func.func @not_prepared
// PLAN-NOT: dlc.prepared_arena
// PLAN: return
func.func @not_prepared(%x: tensor<8xf32>, %mean: tensor<8xf32> {dlc.parameter},
                        %w: tensor<8xf32> {dlc.parameter})
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> {dlc.updates = 1 : i64}) {
  %a = dlc.relu %x : tensor<8xf32>
  %b = dlc.neg %mean : tensor<8xf32>
  %n = dlc.random_normal {mean = 0.0 : f64, scale = 1.0 : f64, seed = 3 : i64} : tensor<8xf32>
  %c = dlc.add %a, %n : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %d = dlc.exp %w : tensor<8xf32>
  return %c, %b, %d, %b : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A function over two devices is left alone: the runtime keeps prepared values for
// programs that run as one task.
// CHECK-LABEL: func.func @two_devices
// CHECK-NOT: dlc.prepared
// CHECK: return
func.func @two_devices(%w: tensor<8xf32> {dlc.parameter, dlc.device = #dlc.device<cpu:0>},
                       %x: tensor<8xf32> {dlc.device = #dlc.device<cpu:1>}) -> tensor<8xf32> {
  %e = dlc.exp %w {dlc.device = #dlc.device<cpu:0>} : tensor<8xf32>
  %c = dlc.copy %e : tensor<8xf32> to #dlc.device<cpu:1>
  %y = dlc.add %c, %x {dlc.device = #dlc.device<cpu:1>} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Kept weights: a convolution reading a parameter directly, and a conv2d_relu region
// whose weight operand is a parameter, keep that operand prepared; a convolution whose
// weights are no parameter (given every run) or are written back (training) keeps
// nothing.
// CHECK-LABEL: func.func @kept_weights
// CHECK: dlc.conv2d %arg0, %arg1 {dlc.prepared_operands = array<i64: 1>}
// CHECK: dlc.fused "conv2d_relu"(%arg0, %arg1, %arg2) {dlc.prepared_operands = array<i64: 1>}
// CHECK: dlc.conv2d %arg0, %arg4 :
// CHECK: dlc.conv2d %arg0, %arg3 :
func.func @kept_weights(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x3x3xf32> {dlc.parameter},
                        %b: tensor<16xf32> {dlc.parameter},
                        %v: tensor<16x16x3x3xf32> {dlc.parameter},
                        %given: tensor<16x16x3x3xf32>)
    -> (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>,
        tensor<16x16x3x3xf32> {dlc.updates = 3 : i64}) {
  %a = dlc.conv2d %x, %w : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %r = dlc.fused "conv2d_relu"(%x, %w, %b) : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32> {
  ^bb0(%p: tensor<1x16x8x8xf32>, %q: tensor<16x16x3x3xf32>, %s: tensor<16xf32>):
    %c = dlc.conv2d %p, %q, %s : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
    %d = dlc.relu %c : tensor<1x16x6x6xf32>
    dlc.yield %d : tensor<1x16x6x6xf32>
  }
  %e = dlc.conv2d %x, %given : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %f = dlc.conv2d %x, %v : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %g = dlc.neg %v : tensor<16x16x3x3xf32>
  return %a, %r, %e, %f, %g : tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>
}
