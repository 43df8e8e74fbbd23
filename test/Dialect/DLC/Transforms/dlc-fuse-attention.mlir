// RUN: dlc-opt --dlc-fuse-attention --split-input-file %s | FileCheck %s

// Scores scaled by a product, no mask: one dlc.attention with the scale.
// CHECK-LABEL: func.func @scaled
// CHECK: %[[O:.*]], %{{.*}}, %{{.*}} = dlc.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<i64>)
// CHECK-NOT: dlc.softmax
// CHECK-NOT: dlc.matmul
// CHECK: return %[[O]]
func.func @scaled(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %s = dlc.matmul %q, %k {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %c = dlc.constant dense<2.500000e-01> : tensor<f32>
  %t = dlc.mul %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p = dlc.softmax %t {axis = -1 : i64} : tensor<2x8x8xf32>
  %o = dlc.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// Divided by sqrt(d), then BERT's additive mask, (1 - mask) * -10000, itself a product.
// CHECK-LABEL: func.func @additive_mask
// CHECK: %[[M:.*]] = dlc.mul
// CHECK-NEXT: dlc.attention %arg0, %arg1, %arg2, %[[M]] {scale = 1.250000e-01 : f64}
// CHECK-NOT: dlc.softmax
func.func @additive_mask(%q: tensor<2x4x6x64xf32>, %k: tensor<2x4x6x64xf32>, %v: tensor<2x4x6x64xf32>, %keep: tensor<2x1x1x6xf32>) -> tensor<2x4x6x64xf32> {
  %s = dlc.matmul %q, %k {transpose_b} : (tensor<2x4x6x64xf32>, tensor<2x4x6x64xf32>) -> tensor<2x4x6x6xf32>
  %d = dlc.constant dense<8.0> : tensor<f32>
  %t = dlc.div %s, %d : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %one = dlc.constant dense<1.0> : tensor<f32>
  %big = dlc.constant dense<-1.0e4> : tensor<f32>
  %off = dlc.sub %one, %keep : (tensor<f32>, tensor<2x1x1x6xf32>) -> tensor<2x1x1x6xf32>
  %m = dlc.mul %off, %big : (tensor<2x1x1x6xf32>, tensor<f32>) -> tensor<2x1x1x6xf32>
  %u = dlc.add %t, %m : (tensor<2x4x6x6xf32>, tensor<2x1x1x6xf32>) -> tensor<2x4x6x6xf32>
  %p = dlc.softmax %u {axis = 3 : i64} : tensor<2x4x6x6xf32>
  %o = dlc.matmul %p, %v : (tensor<2x4x6x6xf32>, tensor<2x4x6x64xf32>) -> tensor<2x4x6x64xf32>
  return %o : tensor<2x4x6x64xf32>
}

// -----

// A boolean mask through select with a very negative fill; no scale (1).
// CHECK-LABEL: func.func @boolean_mask
// CHECK: dlc.attention %arg0, %arg1, %arg2, %arg3 {scale = 1.000000e+00 : f64}
func.func @boolean_mask(%q: tensor<3x5x8xbf16>, %k: tensor<3x7x8xbf16>, %v: tensor<3x7x8xbf16>, %keep: tensor<5x7xi1>) -> tensor<3x5x8xbf16> {
  %s = dlc.matmul %q, %k {transpose_b} : (tensor<3x5x8xbf16>, tensor<3x7x8xbf16>) -> tensor<3x5x7xbf16>
  %fill = dlc.constant dense<-3.0e38> : tensor<bf16>
  %t = dlc.select %keep, %s, %fill : (tensor<5x7xi1>, tensor<3x5x7xbf16>, tensor<bf16>) -> tensor<3x5x7xbf16>
  %p = dlc.softmax %t : tensor<3x5x7xbf16>
  %o = dlc.matmul %p, %v : (tensor<3x5x7xbf16>, tensor<3x7x8xbf16>) -> tensor<3x5x8xbf16>
  return %o : tensor<3x5x8xbf16>
}

// -----

// The weights are read elsewhere too (a training step's backward): nothing changes.
// CHECK-LABEL: func.func @weights_kept
// CHECK-NOT: dlc.attention
// CHECK: dlc.softmax
func.func @weights_kept(%q: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %s = dlc.matmul %q, %q {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %p = dlc.softmax %s : tensor<2x8x8xf32>
  %o = dlc.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %p : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}

// -----

// Not attention: softmax over the queries' axis, a scale that is not a constant, a fill
// that would leave weight on masked keys, keys broadcast over the batch.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: dlc.attention
func.func @not_attention(%q: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>, %f: tensor<f32>, %keep: tensor<8x8xi1>, %k1: tensor<8x16xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %s = dlc.matmul %q, %q {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %p = dlc.softmax %s {axis = 1 : i64} : tensor<2x8x8xf32>
  %o = dlc.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s2 = dlc.matmul %q, %q {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %t2 = dlc.mul %s2, %f : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p2 = dlc.softmax %t2 : tensor<2x8x8xf32>
  %o2 = dlc.matmul %p2, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s3 = dlc.matmul %q, %q {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %zero = dlc.constant dense<-5.0> : tensor<f32>
  %t3 = dlc.select %keep, %s3, %zero : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p3 = dlc.softmax %t3 : tensor<2x8x8xf32>
  %o3 = dlc.matmul %p3, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s4 = dlc.matmul %q, %k1 {transpose_b} : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x8xf32>
  %p4 = dlc.softmax %s4 : tensor<2x8x8xf32>
  %o4 = dlc.matmul %p4, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %o2, %o3, %o4 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>
}

// -----

// PyTorch's ONNX export: an explicit transpose of the keys, q and kᵀ each scaled by
// √(1/√d) (a one-element constant of shape (1)), the product unscaled.
// CHECK-LABEL: func.func @exported
// CHECK: %[[O:.*]], %{{.*}}, %{{.*}} = dlc.attention %arg0, %arg1, %arg2 {scale = 0.1249999{{[0-9]+}} : f64}
// CHECK-NOT: dlc.transpose
// CHECK-NOT: dlc.softmax
// CHECK: return %[[O]]
func.func @exported(%q: tensor<1x12x197x64xf32>, %k: tensor<1x12x197x64xf32>, %v: tensor<1x12x197x64xf32>) -> tensor<1x12x197x64xf32> {
  %kt = dlc.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x12x197x64xf32>) -> tensor<1x12x64x197xf32>
  %c = dlc.constant dense<0.353553385> : tensor<1xf32>
  %qs = dlc.mul %q, %c : (tensor<1x12x197x64xf32>, tensor<1xf32>) -> tensor<1x12x197x64xf32>
  %ks = dlc.mul %kt, %c : (tensor<1x12x64x197xf32>, tensor<1xf32>) -> tensor<1x12x64x197xf32>
  %s = dlc.matmul %qs, %ks : (tensor<1x12x197x64xf32>, tensor<1x12x64x197xf32>) -> tensor<1x12x197x197xf32>
  %p = dlc.softmax %s {axis = -1 : i64} : tensor<1x12x197x197xf32>
  %o = dlc.matmul %p, %v : (tensor<1x12x197x197xf32>, tensor<1x12x197x64xf32>) -> tensor<1x12x197x64xf32>
  return %o : tensor<1x12x197x64xf32>
}

// -----

// A transpose that is not of the last two axes is no kᵀ: nothing fuses.
// CHECK-LABEL: func.func @other_transpose
// CHECK-NOT: dlc.attention
// CHECK: dlc.softmax
func.func @other_transpose(%q: tensor<2x8x8xf32>, %k: tensor<8x2x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %kt = dlc.transpose %k {permutation = array<i64: 1, 2, 0>} : (tensor<8x2x8xf32>) -> tensor<2x8x8xf32>
  %s = dlc.matmul %q, %kt : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %p = dlc.softmax %s {axis = -1 : i64} : tensor<2x8x8xf32>
  %o = dlc.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// PyTorch's dynamo export: kᵀ on a 3-d view of the heads (reshape, transpose, reshape
// back), q and kᵀ scaled, an additive mask, and the weights guarded against NaN
// (select(p != p, 0, p)); dlc.attention gives a fully masked row 0, the guard's value.
// CHECK-LABEL: func.func @dynamo_export
// CHECK: %[[O:.*]], %{{.*}}, %{{.*}} = dlc.attention %arg0, %arg1, %arg2, %arg3 {scale = 0.1249999{{[0-9]+}} : f64}
// CHECK-NOT: dlc.transpose
// CHECK-NOT: dlc.compare
// CHECK-NOT: dlc.softmax
// CHECK: return %[[O]]
func.func @dynamo_export(%q: tensor<1x12x128x64xf32>, %k: tensor<1x12x128x64xf32>, %v: tensor<1x12x128x64xf32>, %mask: tensor<1x1x128x128xf32>) -> tensor<1x12x128x64xf32> {
  %k3 = dlc.reshape %k : tensor<1x12x128x64xf32> to tensor<12x128x64xf32>
  %kt3 = dlc.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<12x128x64xf32>) -> tensor<12x64x128xf32>
  %kt = dlc.reshape %kt3 : tensor<12x64x128xf32> to tensor<1x12x64x128xf32>
  %c = dlc.constant dense<0.353553385> : tensor<f32>
  %qs = dlc.mul %q, %c : (tensor<1x12x128x64xf32>, tensor<f32>) -> tensor<1x12x128x64xf32>
  %ks = dlc.mul %kt, %c : (tensor<1x12x64x128xf32>, tensor<f32>) -> tensor<1x12x64x128xf32>
  %s = dlc.matmul %qs, %ks : (tensor<1x12x128x64xf32>, tensor<1x12x64x128xf32>) -> tensor<1x12x128x128xf32>
  %sm = dlc.add %s, %mask : (tensor<1x12x128x128xf32>, tensor<1x1x128x128xf32>) -> tensor<1x12x128x128xf32>
  %p = dlc.softmax %sm {axis = 3 : i64} : tensor<1x12x128x128xf32>
  %nan = dlc.compare ne, %p, %p : (tensor<1x12x128x128xf32>, tensor<1x12x128x128xf32>) -> tensor<1x12x128x128xi1>
  %zero = dlc.constant dense<0.000000e+00> : tensor<f32>
  %pg = dlc.select %nan, %zero, %p : (tensor<1x12x128x128xi1>, tensor<f32>, tensor<1x12x128x128xf32>) -> tensor<1x12x128x128xf32>
  %o = dlc.matmul %pg, %v : (tensor<1x12x128x128xf32>, tensor<1x12x128x64xf32>) -> tensor<1x12x128x64xf32>
  return %o : tensor<1x12x128x64xf32>
}

// -----

// A guard that keeps p elsewhere, or a view that does not keep k's last two axes, is not
// attention's: nothing fuses.
// CHECK-LABEL: func.func @not_a_guard_or_view
// CHECK-NOT: dlc.attention
// CHECK: dlc.softmax
// CHECK: dlc.softmax
func.func @not_a_guard_or_view(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>, tensor<2x8x4xf32>) {
  %s = dlc.matmul %q, %k {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %p = dlc.softmax %s {axis = -1 : i64} : tensor<2x8x8xf32>
  %nan = dlc.compare ne, %p, %p : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xi1>
  %zero = dlc.constant dense<0.000000e+00> : tensor<f32>
  %pg = dlc.select %nan, %zero, %p : (tensor<2x8x8xi1>, tensor<f32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o = dlc.matmul %pg, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %k2 = dlc.reshape %k : tensor<2x8x16xf32> to tensor<16x16xf32>
  %kt2 = dlc.transpose %k2 {permutation = array<i64: 1, 0>} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %kt = dlc.reshape %kt2 : tensor<16x16xf32> to tensor<2x16x8xf32>
  %s2 = dlc.matmul %q, %kt : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %p2 = dlc.softmax %s2 {axis = -1 : i64} : tensor<2x8x8xf32>
  %o2 = dlc.matmul %p2, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %o, %p, %o2 : tensor<2x8x4xf32>, tensor<2x8x8xf32>, tensor<2x8x4xf32>
}
