// RUN: dlc-opt %s --convert-dlc-to-linalg -split-input-file -verify-diagnostics | FileCheck %s
// The regions of the first split, converted, are plain upstream MLIR: mlir-opt (MLIR
// 19's own) bufferizes them and lowers them to loops.
// RUN: dlc-opt %s --convert-dlc-to-linalg -split-input-file -verify-diagnostics | sed -n '1,/^\/\/ -----/p' | mlir-opt --one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-loops | FileCheck %s --check-prefix=LOOPS

// Broadcasting is explicit in the maps: a same-shaped operand is read at the point, a
// row vector along the last dimension, a 1x3 operand at row 0, a scalar everywhere.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @chain
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[FIRST]], #[[SCALAR]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>, tensor<1x3xf32>, tensor<f32>) outs(%[[E]] : tensor<4x3xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[C]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[M]], %[[S]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[T]] : f32
// CHECK-NOT: dlc.
// LOOPS-LABEL: func.func @chain
// LOOPS-COUNT-2: scf.for
// LOOPS: math.tanh
func.func @chain(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %c: tensor<1x3xf32>, %s: tensor<f32>) -> tensor<4x3xf32> {
  %0 = dlc.fused "elementwise" (%x, %b, %c, %s) : (tensor<4x3xf32>, tensor<3xf32>, tensor<1x3xf32>, tensor<f32>) -> tensor<4x3xf32> {
  ^bb0(%a0: tensor<4x3xf32>, %a1: tensor<3xf32>, %a2: tensor<1x3xf32>, %a3: tensor<f32>):
    %1 = dlc.add %a0, %a1 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %2 = dlc.mul %1, %a2 : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
    %3 = dlc.sub %2, %a3 : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %4 = dlc.tanh %3 : tensor<4x3xf32>
    dlc.yield %4 : tensor<4x3xf32>
  }
  return %0 : tensor<4x3xf32>
}

// ReLU is a select, as the kernels' x > 0 ? x : 0 (a NaN gives 0, not NaN); GELU is the
// exact erf form; a region with two results writes two outputs.
// CHECK-LABEL: func.func @activations
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xf32>)
// CHECK: arith.cmpf ogt
// CHECK-NEXT: %[[R:.*]] = arith.select
// CHECK: math.erf
// CHECK: linalg.yield %[[R]], %{{.*}} : f32, f32
// LOOPS-LABEL: func.func @activations
// LOOPS: math.erf
func.func @activations(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0:2 = dlc.fused "elementwise" (%x) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<16xf32>):
    %r = dlc.relu %a : tensor<16xf32>
    %g = dlc.gelu %r : tensor<16xf32>
    dlc.yield %r, %g : tensor<16xf32>, tensor<16xf32>
  }
  return %0#0, %0#1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// Library epilogues stay: their kernels are oneDNN's and cuDNN's.
// CHECK-LABEL: func.func @epilogue
// CHECK: dlc.fused "dense_relu"
func.func @epilogue(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %0 = dlc.fused "dense_relu" (%x, %w) : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>):
    %d = dlc.dense %a, %b : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %r = dlc.relu %d : tensor<2x3xf32>
    dlc.yield %r : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

// The 16-bit floats compute in f32 and round once, as the kernels do.
// CHECK-LABEL: func.func @half
// CHECK: ^bb0(%[[H:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[H]] : bf16 to f32
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @half(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = dlc.fused "elementwise" (%x) : (tensor<8xbf16>) -> tensor<8xbf16> {
  ^bb0(%a: tensor<8xbf16>):
    %s = dlc.sigmoid %a : tensor<8xbf16>
    dlc.yield %s : tensor<8xbf16>
  }
  return %0 : tensor<8xbf16>
}

// -----

// An op without a scalar body for its element type is named.
func.func @integers(%x: tensor<8xi32>) -> tensor<8xi32> {
  %0 = dlc.fused "elementwise" (%x) : (tensor<8xi32>) -> tensor<8xi32> {
  ^bb0(%a: tensor<8xi32>):
    // expected-error @+1 {{convert-dlc-to-linalg: dlc.neg on 'tensor<8xi32>' has no scalar body}}
    %n = dlc.neg %a : tensor<8xi32>
    dlc.yield %n : tensor<8xi32>
  }
  return %0 : tensor<8xi32>
}
