// RUN: dlc-opt %s --split-input-file --dlc-group-updates=max-elements=96 | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlc-group-updates=max-elements=0 | FileCheck %s --check-prefix=OFF

// Momentum SGD of three parameters: the 64- and 8-element ones read the same momentum
// and rate and are grouped (their gradients, states and weights joined, the formula once
// over 72 elements, the results split back); the 128-element one passes max-elements
// and keeps its step.
// CHECK-LABEL: func.func @momentum
// CHECK: %[[G2:.*]] = dlc.reshape %arg3 {dlc.device = #dlc.device<cpu:0>} : tensor<2x4xf32> to tensor<8xf32>
// CHECK: %[[G:.*]] = dlc.concat %arg0, %[[G2]] {dlc.device = #dlc.device<cpu:0>} : (tensor<64xf32>, tensor<8xf32>) -> tensor<72xf32>
// CHECK: %[[S:.*]] = dlc.concat {{.*}} -> tensor<72xf32>
// CHECK: %[[W:.*]] = dlc.concat {{.*}} -> tensor<72xf32>
// CHECK: %[[U:.*]]:2 = dlc.fused "elementwise"({{.*}}) {dlc.device = #dlc.device<cpu:0>} : ({{.*}}) -> (tensor<72xf32>, tensor<72xf32>)
// CHECK: dlc.mul {{.*}} : (tensor<72xf32>, tensor<f32>) -> tensor<72xf32>
// CHECK: dlc.yield
// CHECK: %[[SS:.*]]:2 = dlc.split %[[U]]#0 {{.*}} : tensor<72xf32> -> tensor<64xf32>, tensor<8xf32>
// CHECK: %[[S2:.*]] = dlc.reshape %[[SS]]#1 {{.*}} to tensor<2x4xf32>
// CHECK: %[[WW:.*]]:2 = dlc.split %[[U]]#1
// CHECK: %[[W2:.*]] = dlc.reshape %[[WW]]#1 {{.*}} to tensor<2x4xf32>
// CHECK: dlc.fused "elementwise"(%arg6, %arg7, %arg9, %arg8, %arg10) {{.*}} -> (tensor<128xf32>, tensor<128xf32>)
// CHECK-NOT: dlc.fused
// CHECK: return %[[SS]]#0, %[[WW]]#0, %[[S2]], %[[W2]], %{{.*}}#0, %{{.*}}#1 :
// OFF-LABEL: func.func @momentum
// OFF-NOT: dlc.concat
// OFF-COUNT-3: dlc.fused "elementwise"
// OFF-NOT: dlc.concat
#cpu = #dlc.device<cpu:0>
func.func @momentum(%g1: tensor<64xf32>, %s1: tensor<64xf32>, %w1: tensor<64xf32>,
                    %g2: tensor<2x4xf32>, %s2: tensor<2x4xf32>, %w2: tensor<2x4xf32>,
                    %g3: tensor<128xf32>, %s3: tensor<128xf32>, %w3: tensor<128xf32>,
                    %mu: tensor<f32>, %rate: tensor<f32>)
    -> (tensor<64xf32> {dlc.updates = 1 : i64}, tensor<64xf32> {dlc.updates = 2 : i64},
        tensor<2x4xf32> {dlc.updates = 4 : i64}, tensor<2x4xf32> {dlc.updates = 5 : i64},
        tensor<128xf32> {dlc.updates = 7 : i64}, tensor<128xf32> {dlc.updates = 8 : i64}) {
  %a:2 = dlc.fused "elementwise"(%g1, %s1, %mu, %w1, %rate) {dlc.device = #cpu} : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<64xf32>, tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%g: tensor<64xf32>, %s: tensor<64xf32>, %m: tensor<f32>, %w: tensor<64xf32>, %r: tensor<f32>):
    %0 = dlc.mul %s, %m : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
    %1 = dlc.add %0, %g : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %2 = dlc.mul %1, %r : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
    %3 = dlc.sub %w, %2 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    dlc.yield %1, %3 : tensor<64xf32>, tensor<64xf32>
  }
  %b:2 = dlc.fused "elementwise"(%g2, %s2, %mu, %w2, %rate) {dlc.device = #cpu} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  ^bb0(%g: tensor<2x4xf32>, %s: tensor<2x4xf32>, %m: tensor<f32>, %w: tensor<2x4xf32>, %r: tensor<f32>):
    %0 = dlc.mul %s, %m : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %1 = dlc.add %0, %g : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = dlc.mul %1, %r : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %3 = dlc.sub %w, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dlc.yield %1, %3 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  %c:2 = dlc.fused "elementwise"(%g3, %s3, %mu, %w3, %rate) {dlc.device = #cpu} : (tensor<128xf32>, tensor<128xf32>, tensor<f32>, tensor<128xf32>, tensor<f32>) -> (tensor<128xf32>, tensor<128xf32>) {
  ^bb0(%g: tensor<128xf32>, %s: tensor<128xf32>, %m: tensor<f32>, %w: tensor<128xf32>, %r: tensor<f32>):
    %0 = dlc.mul %s, %m : (tensor<128xf32>, tensor<f32>) -> tensor<128xf32>
    %1 = dlc.add %0, %g : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %2 = dlc.mul %1, %r : (tensor<128xf32>, tensor<f32>) -> tensor<128xf32>
    %3 = dlc.sub %w, %2 : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    dlc.yield %1, %3 : tensor<128xf32>, tensor<128xf32>
  }
  return %a#0, %a#1, %b#0, %b#1, %c#0, %c#1 : tensor<64xf32>, tensor<64xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<128xf32>, tensor<128xf32>
}

// -----

// Kept apart: a different rate (another formula's scalar), a different gradient scale
// (an attribute), a result also read by another op and returned as a plain result, and
// updates on a GPU.
// CHECK-LABEL: func.func @apart
// CHECK-NOT: dlc.concat
// CHECK: return
#cpu = #dlc.device<cpu:0>
#gpu = #dlc.device<gpu:0>
func.func @apart(%g: tensor<8xf32>, %w: tensor<8xf32>, %r1: tensor<f32>, %r2: tensor<f32>)
    -> (tensor<8xf32> {dlc.updates = 1 : i64}, tensor<8xf32> {dlc.updates = 1 : i64},
        tensor<8xf32> {dlc.updates = 1 : i64}, tensor<8xf32>, tensor<8xf32>,
        tensor<8xf32> {dlc.updates = 1 : i64}, tensor<8xf32> {dlc.updates = 1 : i64}) {
  %a = dlc.sgd_update %w, %g, %r1 {dlc.device = #cpu, rescale_grad = 1.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %b = dlc.sgd_update %w, %g, %r2 {dlc.device = #cpu, rescale_grad = 1.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %c = dlc.sgd_update %w, %g, %r1 {dlc.device = #cpu, rescale_grad = 0.5 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %d = dlc.sgd_update %w, %g, %r1 {dlc.device = #cpu, rescale_grad = 0.25 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = dlc.relu %d {dlc.device = #cpu} : tensor<8xf32>
  %f = dlc.sgd_update %w, %g, %r1 {dlc.device = #gpu, rescale_grad = 2.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %h = dlc.sgd_update %w, %g, %r1 {dlc.device = #gpu, rescale_grad = 2.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %a, %b, %c, %d, %e, %f, %h : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The optimizer ops themselves (a GPU step's, here on the host): one op over the join.
// CHECK-LABEL: func.func @optimizer_ops
// CHECK: %[[W:.*]] = dlc.concat {{.*}} : (tensor<8xf32>, tensor<12xf32>) -> tensor<20xf32>
// CHECK: %[[G:.*]] = dlc.concat {{.*}} : (tensor<8xf32>, tensor<12xf32>) -> tensor<20xf32>
// CHECK: %[[U:.*]] = dlc.sgd_update %[[W]], %[[G]], %arg4 {dlc.device = #dlc.device<cpu:0>, rescale_grad = 1.000000e+00 : f64} : (tensor<20xf32>, tensor<20xf32>, tensor<f32>) -> tensor<20xf32>
// CHECK: %[[P:.*]]:2 = dlc.split %[[U]]
// CHECK: %[[B:.*]] = dlc.reshape %[[P]]#1 {{.*}} to tensor<3x4xf32>
// CHECK: return %[[P]]#0, %[[B]]
#cpu = #dlc.device<cpu:0>
func.func @optimizer_ops(%w1: tensor<8xf32>, %g1: tensor<8xf32>, %w2: tensor<3x4xf32>,
                         %g2: tensor<3x4xf32>, %rate: tensor<f32>)
    -> (tensor<8xf32> {dlc.updates = 0 : i64}, tensor<3x4xf32> {dlc.updates = 2 : i64}) {
  %a = dlc.sgd_update %w1, %g1, %rate {dlc.device = #cpu, rescale_grad = 1.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %b = dlc.sgd_update %w2, %g2, %rate {dlc.device = #cpu, rescale_grad = 1.0 : f64} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  return %a, %b : tensor<8xf32>, tensor<3x4xf32>
}
