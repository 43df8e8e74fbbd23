// RUN: dlc-opt %s --dlc-assign-layouts -split-input-file -verify-diagnostics | FileCheck %s
// RUN: dlc-opt %S/Inputs/leafnet-step.mlir --dlc-pipeline=cpu | FileCheck %s --check-prefix=LEAFNET
// RUN: dlc-opt %S/Inputs/leafnet-step.mlir --dlc-pipeline="cpu blocked-layouts=false" | FileCheck %s --check-prefix=PLAIN
// RUN: dlc-opt %s --dlc-assign-layouts=layout=nChw8c -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=EIGHT
// RUN: dlc-opt %S/Inputs/leafnet-step.mlir --dlc-pipeline="cpu blocked-layout=nChw8c" | FileCheck %s --check-prefix=LEAF8
// RUN: not dlc-opt %s --dlc-assign-layouts=layout=plain -split-input-file 2>&1 | FileCheck %s --check-prefix=NOTBLOCKED

// A convolution writes its activation blocked and ReLU keeps it; the function returns
// plain tensors, so one conversion goes before the return.
// CHECK-LABEL: func.func @plain_results
// CHECK-NEXT: %[[C:.*]] = dlc.conv2d %arg0, %arg1 {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[R:.*]] = dlc.relu %[[C]] {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[P:.*]] = dlc.to_layout %[[R]] : tensor<2x16x6x6xf32> to #dlc.layout<plain>
// CHECK-NEXT: return %[[P]]
func.func @plain_results(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %r = dlc.relu %c : tensor<2x16x6x6xf32>
  return %r : tensor<2x16x6x6xf32>
}

// -----

// With dlc.blocked_results the caller takes the result as it is.
// CHECK-LABEL: func.func @blocked_results
// CHECK-NEXT: %[[C:.*]] = dlc.conv2d {{.*}} {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: return %[[C]]
func.func @blocked_results(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32> attributes {dlc.blocked_results} {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  return %c : tensor<2x16x6x6xf32>
}

// -----

// Element-wise ops join the blocked operand's layout: the plain argument is converted
// once for both of its readers. A view reads plain bytes, so the value it views is
// written blocked and converted before it.
// CHECK-LABEL: func.func @view
// CHECK-NEXT: %[[C:.*]] = dlc.conv2d {{.*}} {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[B:.*]] = dlc.to_layout %arg2 : tensor<2x16x6x6xf32> to #dlc.layout<nChw16c>
// CHECK-NEXT: %[[S:.*]] = dlc.add %[[C]], %[[B]] {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[M:.*]] = dlc.mul %[[C]], %[[B]] {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[T:.*]] = dlc.sub %[[S]], %[[M]] {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[P:.*]] = dlc.to_layout %[[T]] : tensor<2x16x6x6xf32> to #dlc.layout<plain>
// CHECK-NEXT: dlc.reshape %[[P]]
func.func @view(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %b: tensor<2x16x6x6xf32>) -> tensor<2x576xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %s = dlc.add %c, %b : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %m = dlc.mul %c, %b : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %t = dlc.sub %s, %m : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %f = dlc.reshape %t : tensor<2x16x6x6xf32> to tensor<2x576xf32>
  return %f : tensor<2x576xf32>
}

// -----

// Grouped convolutions: a depthwise one (one channel per group, MobileNet's) and one of
// whole 16-channel groups take blocked activations; groups of 4 channels have only
// reference kernels there and stay plain, with conversions around them.
// CHECK-LABEL: func.func @grouped
// CHECK-NEXT: %[[A:.*]] = dlc.conv2d %arg0, %arg1 {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[D:.*]] = dlc.conv2d %[[A]], %arg2 {dlc.layouts = [#dlc.layout<nChw16c>], groups = 32 : i64}
// CHECK-NEXT: %[[W:.*]] = dlc.conv2d %[[D]], %arg3 {dlc.layouts = [#dlc.layout<nChw16c>], groups = 2 : i64}
// CHECK-NEXT: %[[P:.*]] = dlc.to_layout %[[W]] : tensor<2x32x8x8xf32> to #dlc.layout<plain>
// CHECK-NEXT: %[[S:.*]] = dlc.conv2d %[[P]], %arg4 {groups = 8 : i64}
// CHECK-NEXT: return %[[S]]
func.func @grouped(%x: tensor<2x16x8x8xf32>, %w: tensor<32x16x1x1xf32>, %dw: tensor<32x1x1x1xf32>, %gw: tensor<32x16x1x1xf32>, %sw: tensor<32x4x1x1xf32>) -> tensor<2x32x8x8xf32> {
  %a = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<2x32x8x8xf32>
  %d = dlc.conv2d %a, %dw {groups = 32 : i64} : (tensor<2x32x8x8xf32>, tensor<32x1x1x1xf32>) -> tensor<2x32x8x8xf32>
  %g = dlc.conv2d %d, %gw {groups = 2 : i64} : (tensor<2x32x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<2x32x8x8xf32>
  %s = dlc.conv2d %g, %sw {groups = 8 : i64} : (tensor<2x32x8x8xf32>, tensor<32x4x1x1xf32>) -> tensor<2x32x8x8xf32>
  return %s : tensor<2x32x8x8xf32>
}

// -----

// Only channel counts that fill whole blocks of 16 can be blocked; GPUs keep everything
// plain.
// CHECK-LABEL: func.func @few_channels
// CHECK-NOT: dlc.layouts
// CHECK-NOT: dlc.to_layout
// CHECK: return
func.func @few_channels(%x: tensor<2x8x8x8xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  %r = dlc.relu %c : tensor<2x8x6x6xf32>
  return %r : tensor<2x8x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @on_a_gpu
// CHECK-NOT: dlc.layouts
// CHECK: return
func.func @on_a_gpu(%x: tensor<2x16x8x8xf32> {dlc.device = #dlc.device<gpu:0>}, %w: tensor<16x16x3x3xf32> {dlc.device = #dlc.device<gpu:0>}) -> tensor<2x16x6x6xf32> attributes {dlc.blocked_results} {
  %c = dlc.conv2d %x, %w {dlc.device = #dlc.device<gpu:0>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  return %c : tensor<2x16x6x6xf32>
}

// -----

// A backward takes an activation the forward returns blocked as it is (dlc.layout on
// the argument); per-channel sums read blocked tensors, other reductions plain ones.
// CHECK-LABEL: func.func @forward
// CHECK: %[[C:.*]] = dlc.conv2d {{.*}} {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[P:.*]] = dlc.to_layout %[[C]] : tensor<2x16x6x6xf32> to #dlc.layout<plain>
// CHECK-NEXT: %[[S:.*]] = dlc.reduce sum %[[P]]
// CHECK-NEXT: return %[[S]], %[[C]]
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %arg1: tensor<2x16x6x6xf32> {dlc.layout = #dlc.layout<nChw16c>, dlc.saved_from = [@forward, 1]}
// CHECK-NEXT: %[[DY:.*]] = dlc.to_layout %arg0 : tensor<2x16x6x6xf32> to #dlc.layout<nChw16c>
// CHECK-NEXT: %[[G:.*]] = dlc.relu_backward %[[DY]], %arg1 {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: dlc.reduce sum %[[G]] {axes = array<i64: 0, 2, 3>}
func.func @forward(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> (tensor<2xf32>, tensor<2x16x6x6xf32>) attributes {dlc.blocked_results} {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %s = dlc.reduce sum %c {axes = array<i64: 1, 2, 3>} : (tensor<2x16x6x6xf32>) -> tensor<2xf32>
  return %s, %c : tensor<2xf32>, tensor<2x16x6x6xf32>
}
func.func @backward(%dy: tensor<2x16x6x6xf32>, %saved: tensor<2x16x6x6xf32> {dlc.saved_from = [@forward, 1]}) -> tensor<16xf32> {
  %g = dlc.relu_backward %dy, %saved : tensor<2x16x6x6xf32>
  %b = dlc.reduce sum %g {axes = array<i64: 0, 2, 3>} : (tensor<2x16x6x6xf32>) -> tensor<16xf32>
  return %b : tensor<16xf32>
}

// -----

// An element-wise region run as one kernel: its one-element input is broadcast and
// stays plain, the others follow the blocked one.
// CHECK-LABEL: func.func @fused_chain
// CHECK: %[[C:.*]] = dlc.conv2d {{.*}} {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK-NEXT: %[[F:.*]] = dlc.fused "elementwise"(%[[C]], %arg2) {dlc.layouts = [#dlc.layout<nChw16c>]}
// CHECK: dlc.to_layout %[[F]] : tensor<2x16x6x6xf32> to #dlc.layout<plain>
func.func @fused_chain(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %s: tensor<f32>) -> tensor<2x16x6x6xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %f = dlc.fused "elementwise"(%c, %s) : (tensor<2x16x6x6xf32>, tensor<f32>) -> tensor<2x16x6x6xf32> {
  ^bb0(%a: tensor<2x16x6x6xf32>, %b: tensor<f32>):
    %m = dlc.mul %a, %b : (tensor<2x16x6x6xf32>, tensor<f32>) -> tensor<2x16x6x6xf32>
    %t = dlc.tanh %m : tensor<2x16x6x6xf32>
    dlc.yield %t : tensor<2x16x6x6xf32>
  }
  return %f : tensor<2x16x6x6xf32>
}

// -----

// A batch_norm_activation region runs as the batch norm's kernel: the norm's rule over
// the region's operands. Its gradient's region runs as the norm gradient's kernel: that
// rule over dz and the norm's operands, and the activation's output (the mask) in dz's
// layout.
// CHECK-LABEL: func.func @norm_activation
// CHECK: %[[N:.*]]:3 = dlc.fused "batch_norm_activation"({{.*}}) {dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]}
// CHECK: %[[DZ:.*]] = dlc.to_layout %arg4 : tensor<2x16x6x6xf32> to #dlc.layout<nChw16c>
// CHECK: dlc.fused "batch_norm_activation_backward"(%[[DZ]], %[[N]]#0, {{.*}}) {dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]}
func.func @norm_activation(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dz: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %n:3 = dlc.fused "batch_norm_activation"(%c, %g, %b) : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<2x16x6x6xf32>, %ga: tensor<16xf32>, %ba: tensor<16xf32>):
    %y:3 = dlc.batch_norm %a, %ga, %ba {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %r = dlc.relu6 %y#0 : tensor<2x16x6x6xf32>
    dlc.yield %r, %y#1, %y#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
  %d:3 = dlc.fused "batch_norm_activation_backward"(%dz, %n#0, %c, %g, %n#1, %n#2) : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%e0: tensor<2x16x6x6xf32>, %e1: tensor<2x16x6x6xf32>, %e2: tensor<2x16x6x6xf32>, %e3: tensor<16xf32>, %e4: tensor<16xf32>, %e5: tensor<16xf32>):
    %m = dlc.relu6_backward %e0, %e1 : tensor<2x16x6x6xf32>
    %q:3 = dlc.batch_norm_backward %m, %e2, %e3, %e4, %e5 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    dlc.yield %q#0, %q#1, %q#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
  return %d#0, %d#1, %d#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A gradient region that also yields the activation's gradient: in dz's layout.
// CHECK-LABEL: func.func @norm_activation_gradient_out
// CHECK: dlc.fused "batch_norm_activation_backward"({{.*}}) {dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>, #dlc.layout<nChw16c>]}
func.func @norm_activation_gradient_out(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %z: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x6x6xf32>) {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %d:4 = dlc.fused "batch_norm_activation_backward"(%c, %z, %c, %g, %m, %v) : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x6x6xf32>) {
  ^bb0(%e0: tensor<2x16x6x6xf32>, %e1: tensor<2x16x6x6xf32>, %e2: tensor<2x16x6x6xf32>, %e3: tensor<16xf32>, %e4: tensor<16xf32>, %e5: tensor<16xf32>):
    %q = dlc.relu_backward %e0, %e1 : tensor<2x16x6x6xf32>
    %n:3 = dlc.batch_norm_backward %q, %e2, %e3, %e4, %e5 : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    dlc.yield %n#0, %n#1, %n#2, %q : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x6x6xf32>
  }
  return %d#0, %d#1, %d#2, %d#3 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x6x6xf32>
}

// -----

// With a residual added before the activation, the residual goes in the output's
// layout (a plain argument is converted).
// CHECK-LABEL: func.func @norm_residual_activation
// CHECK: %[[R:.*]] = dlc.to_layout %arg4 : tensor<2x16x6x6xf32> to #dlc.layout<nChw16c>
// CHECK: dlc.fused "batch_norm_activation"(%{{.*}}, %arg2, %arg3, %[[R]]) {dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]}
func.func @norm_residual_activation(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %s: tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
  %n:3 = dlc.fused "batch_norm_activation"(%c, %g, %b, %s) : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x6x6xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<2x16x6x6xf32>, %ga: tensor<16xf32>, %ba: tensor<16xf32>, %ra: tensor<2x16x6x6xf32>):
    %y:3 = dlc.batch_norm %a, %ga, %ba {training} : (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %t = dlc.add %y#0, %ra : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
    %r = dlc.relu %t : tensor<2x16x6x6xf32>
    dlc.yield %r, %y#1, %y#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
  return %n#0, %n#1, %n#2 : tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// 24 channels fill blocks of 8, not of 16: blocked in nChw8c only (AVX2's layout).
// CHECK-LABEL: func.func @eight_channel_blocks
// CHECK-NEXT: dlc.conv2d %arg0, %arg1 :
// CHECK-NEXT: return
// EIGHT-LABEL: func.func @eight_channel_blocks
// EIGHT-NEXT: %[[C:.*]] = dlc.conv2d %arg0, %arg1 {dlc.layouts = [#dlc.layout<nChw8c>]}
// EIGHT-NEXT: %[[P:.*]] = dlc.to_layout %[[C]] : tensor<2x24x6x6xf32> to #dlc.layout<plain>
// EIGHT-NEXT: return %[[P]]
// NOTBLOCKED: dlc-assign-layouts: layout 'plain' is not a blocked layout; expected nChw16c or nChw8c
func.func @eight_channel_blocks(%x: tensor<2x16x8x8xf32>, %w: tensor<24x16x3x3xf32>) -> tensor<2x24x6x6xf32> {
  %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<24x16x3x3xf32>) -> tensor<2x24x6x6xf32>
  return %c : tensor<2x24x6x6xf32>
}

// -----

// A saved activation names a function the module holds before this one.
// expected-error @+1 {{argument #0 is result 0 of @nowhere, which has no such result before this function (the module lists the producer first)}}
func.func @orphan(%x: tensor<2x16x6x6xf32> {dlc.saved_from = [@nowhere, 0]}) {
  return
}

// The LeafNetwork's training step as hybridize() traces it: activations stay blocked
// from the first convolution through pooling and batch norm, and become plain where
// the classifier flattens them; the backward takes the saved activations blocked.
// LEAFNET-LABEL: func.func @forward
// LEAFNET: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>, dlc.layouts = [#dlc.layout<nChw16c>]
// LEAFNET: dlc.max_pool2d {{.*}} dlc.layouts = [#dlc.layout<nChw16c>]
// LEAFNET: dlc.batch_norm {{.*}} dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]
// LEAFNET: %[[FLAT:.*]] = dlc.to_layout {{.*}} : tensor<16x128x3x3xf32> to #dlc.layout<plain>
// LEAFNET: dlc.reshape %[[FLAT]]
// LEAFNET-LABEL: func.func @backward
// LEAFNET-SAME: tensor<16x128x7x7xf32> {{{.*}}dlc.layout = #dlc.layout<nChw16c>{{.*}}dlc.saved_from = [@forward, 11]}
// LEAFNET: dlc.to_layout {{.*}} : tensor<16x128x3x3xf32> to #dlc.layout<nChw16c>
// LEAFNET-NEXT: dlc.batch_norm_backward {{.*}} dlc.layouts = [#dlc.layout<nChw16c>, #dlc.layout<plain>, #dlc.layout<plain>]
// LEAFNET: dlc.conv2d_backward_data {{.*}} dlc.layouts = [#dlc.layout<nChw16c>]
// The same step for AVX2: the activations in blocks of 8 channels.
// LEAF8-LABEL: func.func @forward
// LEAF8: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>, dlc.layouts = [#dlc.layout<nChw8c>]
// LEAF8: dlc.max_pool2d {{.*}} dlc.layouts = [#dlc.layout<nChw8c>]
// LEAF8: dlc.batch_norm {{.*}} dlc.layouts = [#dlc.layout<nChw8c>, #dlc.layout<plain>, #dlc.layout<plain>]
// LEAF8-LABEL: func.func @backward
// LEAF8: dlc.conv2d_backward_data {{.*}} dlc.layouts = [#dlc.layout<nChw8c>]
// LEAF8-NOT: nChw16c
// PLAIN-NOT: dlc.layouts
// PLAIN-NOT: = dlc.to_layout
