// RUN: dlc-opt %s --dlc-fuse-norm-activation -split-input-file | FileCheck %s
// RUN: dlc-opt %s --dlc-fuse-norm-activation --dlc-drop-unread-saved --dlc-fuse-norm-activation -split-input-file | FileCheck %s --check-prefix=TWICE
// RUN: dlc-opt %s --dlc-fuse-norm-activation --dlc-fuse-norm-activation -split-input-file | FileCheck %s --check-prefix=AGAIN

// One function: the ReLU's gradient reads the ReLU's output, so the norm's output has
// the ReLU alone to read it, and both directions fold.
// CHECK-LABEL: func.func @step
// CHECK: %[[F:.*]]:3 = dlc.fused "batch_norm_activation"(%arg0, %arg1, %arg2)
// CHECK: dlc.batch_norm {{.*}} {training}
// CHECK-NEXT: dlc.relu
// CHECK: dlc.fused "batch_norm_activation_backward"(%arg3, %[[F]]#0, %arg0, %arg1, %[[F]]#1, %[[F]]#2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dlc.relu_backward
// CHECK-NEXT: dlc.batch_norm_backward
// CHECK-NOT: dlc.relu_backward
// A second run leaves the regions as they are: it does not wrap them again.
// AGAIN-LABEL: func.func @step
// AGAIN: dlc.fused "batch_norm_activation"(%arg0, %arg1, %arg2)
// AGAIN-NEXT: ^bb0
// AGAIN-NEXT: dlc.batch_norm
// AGAIN: dlc.fused "batch_norm_activation_backward"
// AGAIN-NEXT: ^bb0
// AGAIN-NEXT: dlc.relu_backward
// AGAIN-NOT: dlc.fused
// AGAIN: return
func.func @step(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %r = dlc.relu %n#0 : tensor<2x16x6x6xf32>
  %m = dlc.relu_backward %dz, %n#0 : tensor<2x16x6x6xf32>
  %d:3 = dlc.batch_norm_backward %m, %x, %g, %n#1, %n#2 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r, %d#0, %d#1, %d#2 : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Two functions: the backward's ReLU gradient read the norm's output, saved. It now
// reads the ReLU's output, which the forward returns as a new saved result (before the
// one that writes an argument back) and the backward takes as a new last argument.
// The norm's output stays returned and taken until dlc-drop-unread-saved drops it; the
// second run then folds the forward.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32> {dlc.saved}, tensor<16xf32> {dlc.saved}, tensor<16xf32> {dlc.saved}, tensor<2x16x6x6xf32> {dlc.saved}, tensor<16xf32> {dlc.updates = 1 : i64})
// CHECK: dlc.batch_norm
// CHECK-NOT: dlc.fused "batch_norm_activation"
// CHECK: %[[R:.*]] = dlc.relu
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}#0, %{{.*}}#1, %[[R]], %{{.*}} :
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %[[Z:arg6]]: tensor<2x16x6x6xf32> {dlc.name = "saved.4", dlc.saved_from = [@forward, 4]}
// CHECK: dlc.fused "batch_norm_activation_backward"(%arg0, %[[Z]], %arg2, %arg3, %arg4, %arg5)
// TWICE-LABEL: func.func @forward
// TWICE-SAME: -> (tensor<2x16x6x6xf32>, tensor<16xf32> {dlc.saved}, tensor<16xf32> {dlc.saved}, tensor<2x16x6x6xf32> {dlc.saved}, tensor<16xf32> {dlc.updates = 1 : i64})
// TWICE: %[[F:.*]]:3 = dlc.fused "batch_norm_activation"
// TWICE: return %{{.*}}, %[[F]]#1, %[[F]]#2, %[[F]]#0,
// TWICE-LABEL: func.func @backward
// TWICE: dlc.fused "batch_norm_activation_backward"
func.func @forward(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %mean: tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32> {dlc.saved}, tensor<16xf32> {dlc.saved}, tensor<16xf32> {dlc.saved}, tensor<16xf32> {dlc.updates = 1 : i64}) {
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %u = dlc.add %mean, %n#1 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %r = dlc.relu %n#0 : tensor<2x16x6x6xf32>
  %o = dlc.mul %r, %r : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  return %o, %n#0, %n#1, %n#2, %u : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
func.func @backward(%dz: tensor<2x16x6x6xf32>, %y: tensor<2x16x6x6xf32> {dlc.name = "saved.1", dlc.saved_from = [@forward, 1]}, %x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %mean: tensor<16xf32> {dlc.name = "saved.2", dlc.saved_from = [@forward, 2]}, %var: tensor<16xf32> {dlc.name = "saved.3", dlc.saved_from = [@forward, 3]}) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  %m = dlc.relu_backward %dz, %y : tensor<2x16x6x6xf32>
  %d:3 = dlc.batch_norm_backward %m, %x, %g, %mean, %var : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %d#0, %d#1, %d#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// ReLU6's gradient reads its output already: both fold in one run.
// CHECK-LABEL: func.func @relu6
// CHECK: dlc.fused "batch_norm_activation"
// CHECK: dlc.relu6
// CHECK: dlc.fused "batch_norm_activation_backward"
// CHECK: dlc.relu6_backward
func.func @relu6(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) {
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %r = dlc.relu6 %n#0 : tensor<2x16x6x6xf32>
  %m = dlc.relu6_backward %dz, %r : tensor<2x16x6x6xf32>
  %d:3 = dlc.batch_norm_backward %m, %x, %g, %n#1, %n#2 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r, %d#0 : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>
}

// -----

// Not folded: an inference norm; a norm output something besides the ReLU reads; a
// gradient that something else reads too, with a norm gradient whose operand comes after
// it (%late: the region could not take the gradient's place).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: dlc.fused
func.func @left_alone(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) {
  %i = dlc.batch_norm %x, %g, %b, %g, %b : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16x6x6xf32>
  %ri = dlc.relu %i : tensor<2x16x6x6xf32>
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %r = dlc.relu %n#0 : tensor<2x16x6x6xf32>
  %m = dlc.relu_backward %dz, %r : tensor<2x16x6x6xf32>
  %late = dlc.neg %x : tensor<2x16x6x6xf32>
  %d:3 = dlc.batch_norm_backward %m, %late, %g, %n#1, %n#2 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %ri, %n#0, %r, %d#0, %m : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>
}

// -----

// A ReLU gradient that the shortcut reads too (here: returned) and two norm gradients
// read: it folds with the first, which takes its place and yields it as a fourth result
// for the others.
// CHECK-LABEL: func.func @shortcut_gradient
// CHECK: %[[G:.*]]:4 = dlc.fused "batch_norm_activation_backward"(%arg3, %{{.*}}, %arg0, %arg1, %{{.*}}, %{{.*}})
// CHECK: dlc.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: dlc.batch_norm_backward %[[G]]#3,
// CHECK: return %[[G]]#0, %{{.*}}, %[[G]]#3
func.func @shortcut_gradient(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) {
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %s = dlc.neg %n#0 : tensor<2x16x6x6xf32>
  %r = dlc.relu %s : tensor<2x16x6x6xf32>
  %m = dlc.relu_backward %dz, %r : tensor<2x16x6x6xf32>
  %d:3 = dlc.batch_norm_backward %m, %x, %g, %n#1, %n#2 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %e:3 = dlc.batch_norm_backward %m, %x, %g, %n#1, %n#2 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %d#0, %e#0, %m : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>
}

// -----

// ResNet's shortcut: the norm's output plus a residual, then the ReLU, is one region
// taking the residual as a fourth operand; the ReLU's gradient read the sum and now
// reads the ReLU's output, so the sum has the ReLU alone to read it. A residual computed
// after the norm (%late) stays outside: the region takes the norm's place.
// CHECK-LABEL: func.func @residual
// CHECK: %[[F:.*]]:3 = dlc.fused "batch_norm_activation"(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dlc.batch_norm
// CHECK-NEXT: dlc.add
// CHECK-NEXT: dlc.relu
// CHECK: dlc.relu_backward %arg4, %[[F]]#0
// CHECK: %[[L:[a-z_0-9]+]], %{{.*}} = dlc.batch_norm %arg0
// CHECK: %[[LATE:.*]] = dlc.neg
// CHECK: dlc.add %[[L]], %[[LATE]]
func.func @residual(%x: tensor<2x16x6x6xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %s: tensor<2x16x6x6xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) {
  %n:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %sum = dlc.add %n#0, %s : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %r = dlc.relu %sum : tensor<2x16x6x6xf32>
  %m = dlc.relu_backward %dz, %sum : tensor<2x16x6x6xf32>
  %l:3 = dlc.batch_norm %x, %g, %b {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %late = dlc.neg %s : tensor<2x16x6x6xf32>
  %sum2 = dlc.add %l#0, %late : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %r2 = dlc.relu %sum2 : tensor<2x16x6x6xf32>
  return %r, %m, %r2 : tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>
}
