// Every dlc op prints, parses back and prints again unchanged, in the custom form, in
// the generic form and through bytecode.
// RUN: dlc-opt %s | dlc-opt | FileCheck %s
// RUN: dlc-opt %s --mlir-print-op-generic | dlc-opt | FileCheck %s
// RUN: dlc-opt %s --emit-bytecode | dlc-opt | FileCheck %s
// RUN: dlc-opt %s > %t.1.mlir && dlc-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir

// CHECK-LABEL: func.func @devices
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32> {dlc.device = #dlc.device<gpu:1>})
func.func @devices(%x: tensor<3x4xf32> {dlc.device = #dlc.device<gpu:1>}) -> tensor<3x4xf32> {
  // CHECK: %[[C:.*]] = dlc.copy %[[X]] : tensor<3x4xf32> to #dlc.device<cpu:0>
  %c = dlc.copy %x : tensor<3x4xf32> to #dlc.device<cpu:0>
  // CHECK: %[[P:.*]] = dlc.copy %[[C]] : tensor<3x4xf32> to #dlc.device<cpu_pinned:0>
  %p = dlc.copy %c : tensor<3x4xf32> to #dlc.device<cpu_pinned:0>
  // CHECK: dlc.copy %[[P]] : tensor<3x4xf32> to #dlc.device<cpu_shared:2>
  %s = dlc.copy %p : tensor<3x4xf32> to #dlc.device<cpu_shared:2>
  // CHECK: dlc.relu %[[C]] {dlc.device = #dlc.device<cpu:0>} : tensor<3x4xf32>
  %r = dlc.relu %c {dlc.device = #dlc.device<cpu:0>} : tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @constants_and_random
func.func @constants_and_random() -> (tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xbf16>, tensor<2xui8>, tensor<2xi1>, tensor<2xf16>, tensor<2xi64>) {
  // CHECK: dlc.constant dense<[1, 2]> : tensor<2xi32>
  %c = dlc.constant dense<[1, 2]> : tensor<2xi32>
  // CHECK: dlc.random_uniform {high = 2.000000e+00 : f64, low = -1.000000e+00 : f64, seed = 7 : i64} : tensor<3x4xf32>
  %u = dlc.random_uniform {low = -1.0 : f64, high = 2.0 : f64, seed = 7 : i64} : tensor<3x4xf32>
  // CHECK: dlc.random_normal {seed = 3 : i64, stddev = 1.000000e-02 : f64} : tensor<3x4xbf16>
  %n = dlc.random_normal {mean = 0.0 : f64, stddev = 0.01 : f64, seed = 3 : i64} : tensor<3x4xbf16>
  // CHECK: dlc.constant dense<[0, 255]> : tensor<2xui8>
  %b = dlc.constant dense<[0, 255]> : tensor<2xui8>
  // CHECK: dlc.constant dense<[true, false]> : tensor<2xi1>
  %t = dlc.constant dense<[true, false]> : tensor<2xi1>
  // CHECK: dlc.constant dense<[1.500000e+00, 2.000000e+00]> : tensor<2xf16>
  %h = dlc.constant dense<[1.5, 2.0]> : tensor<2xf16>
  // CHECK: dlc.constant dense<[5, 6]> : tensor<2xi64>
  %l = dlc.constant dense<[5, 6]> : tensor<2xi64>
  return %c, %u, %n, %b, %t, %h, %l : tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xbf16>, tensor<2xui8>, tensor<2xi1>, tensor<2xf16>, tensor<2xi64>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %i: tensor<4x1xi32>, %j: tensor<5xi32>) {
  // CHECK: dlc.add %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %0 = dlc.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.sub %{{.*}} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = dlc.sub %b, %x : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.mul %{{.*}} : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi32>
  %2 = dlc.mul %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi32>
  // CHECK: dlc.div
  %3 = dlc.div %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.pow
  %4 = dlc.pow %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.max
  %5 = dlc.max %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.min
  %6 = dlc.min %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.neg %{{.*}} : tensor<4x3xf32>
  %7 = dlc.neg %x : tensor<4x3xf32>
  // CHECK: dlc.exp
  %8 = dlc.exp %x : tensor<4x3xf32>
  // CHECK: dlc.log
  %9 = dlc.log %x : tensor<4x3xf32>
  // CHECK: dlc.sqrt
  %10 = dlc.sqrt %x : tensor<4x3xf32>
  // CHECK: dlc.rsqrt
  %11 = dlc.rsqrt %x : tensor<4x3xf32>
  // CHECK: dlc.relu %{{.*}} : tensor<4x1xi32>
  %12 = dlc.relu %i : tensor<4x1xi32>
  // CHECK: dlc.relu_backward %{{.*}}, %{{.*}} : tensor<4x3xf32>
  %rb = dlc.relu_backward %x, %x : tensor<4x3xf32>
  // CHECK: dlc.sigmoid
  %13 = dlc.sigmoid %x : tensor<4x3xf32>
  // CHECK: dlc.tanh
  %14 = dlc.tanh %x : tensor<4x3xf32>
  // CHECK: %[[M:.*]] = dlc.compare gt, %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  %15 = dlc.compare gt, %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  // CHECK: dlc.compare eq
  %16 = dlc.compare eq, %i, %j : (tensor<4x1xi32>, tensor<5xi32>) -> tensor<4x5xi1>
  // CHECK: dlc.select %[[M]], %{{.*}}, %{{.*}} : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %17 = dlc.select %15, %x, %b : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: dlc.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xf16>
  %18 = dlc.cast %x : tensor<4x3xf32> to tensor<4x3xf16>
  // CHECK: dlc.cast %{{.*}} : tensor<4x3xi1> to tensor<4x3xf32>
  %19 = dlc.cast %15 : tensor<4x3xi1> to tensor<4x3xf32>
  return
}

// CHECK-LABEL: func.func @layers
func.func @layers(%x: tensor<4x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>,
                  %wg: tensor<6x1x3x3xf32>, %v: tensor<8xf32>, %fc: tensor<1x128xf32>,
                  %fcb: tensor<5xf32>, %labels: tensor<4xi64>) {
  // CHECK: dlc.conv2d %{{.*}}, %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<4x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<4x8x8x8xf32>
  %c = dlc.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<4x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<4x8x8x8xf32>
  // CHECK: dlc.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>, groups = 3 : i64} : (tensor<4x3x16x16xf32>, tensor<6x1x3x3xf32>) -> tensor<4x6x12x12xf32>
  %g = dlc.conv2d %x, %wg {dilation = array<i64: 2, 2>, groups = 3 : i64} : (tensor<4x3x16x16xf32>, tensor<6x1x3x3xf32>) -> tensor<4x6x12x12xf32>
  // CHECK: dlc.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x8x8xf32>) -> tensor<4x8x4x4xf32>
  %p = dlc.max_pool2d %c {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x8x8xf32>) -> tensor<4x8x4x4xf32>
  // CHECK: dlc.avg_pool2d %{{.*}} {ceil_mode, count_include_pad = false, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<4x8x8x8xf32>) -> tensor<4x8x5x5xf32>
  %a = dlc.avg_pool2d %c {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode, count_include_pad = false} : (tensor<4x8x8x8xf32>) -> tensor<4x8x5x5xf32>
  // CHECK: dlc.batch_norm {{.*}} {momentum = 8.000000e-01 : f64, training} : {{.*}} -> (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  %y, %mean, %var = dlc.batch_norm %p, %v, %v, %v, %v {training, momentum = 0.8 : f64} : (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: dlc.batch_norm %{{.*}}, %{{.*}}, %{{.*}} {training} : (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  %y3:3 = dlc.batch_norm %p, %v, %v {training} : (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: dlc.batch_norm {{.*}} {epsilon = 1.000000e-03 : f64} : {{.*}} -> tensor<4x8x4x4xf32>
  %z = dlc.batch_norm %p, %v, %v, %v, %v {epsilon = 1.0e-3 : f64} : (tensor<4x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x4x4xf32>
  // 16-bit data, float32 per-channel vectors and statistics.
  %ph = dlc.cast %p : tensor<4x8x4x4xf32> to tensor<4x8x4x4xbf16>
  // CHECK: dlc.batch_norm {{.*}} {training} : (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>)
  %yh:3 = dlc.batch_norm %ph, %v, %v {training} : (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: dlc.batch_norm_backward {{.*}} -> (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>)
  %dh:3 = dlc.batch_norm_backward %yh#0, %ph, %v, %yh#1, %yh#2 : (tensor<4x8x4x4xbf16>, tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x4x4xbf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: dlc.flatten %{{.*}} : (tensor<4x8x4x4xf32>) -> tensor<4x128xf32>
  %f = dlc.flatten %y : (tensor<4x8x4x4xf32>) -> tensor<4x128xf32>
  // CHECK: dlc.reshape %{{.*}} : tensor<4x128xf32> to tensor<4x2x64xf32>
  %r = dlc.reshape %f : tensor<4x128xf32> to tensor<4x2x64xf32>
  // CHECK: dlc.transpose %{{.*}} {permutation = array<i64: 0, 2, 1>} : (tensor<4x2x64xf32>) -> tensor<4x64x2xf32>
  %t = dlc.transpose %r {permutation = array<i64: 0, 2, 1>} : (tensor<4x2x64xf32>) -> tensor<4x64x2xf32>
  // CHECK: dlc.reshape %{{.*}} : tensor<4x64x2xf32> to tensor<4x128xf32>
  %t2 = dlc.reshape %t : tensor<4x64x2xf32> to tensor<4x128xf32>
  // CHECK: %[[OUT:.*]], %[[MASK:.*]] = dlc.dropout %{{.*}} {ratio = 2.000000e-01 : f64, seed = 11 : i64} : (tensor<4x128xf32>) -> (tensor<4x128xf32>, tensor<4x128xi1>)
  %d, %mask = dlc.dropout %t2 {ratio = 0.2 : f64, seed = 11 : i64} : (tensor<4x128xf32>) -> (tensor<4x128xf32>, tensor<4x128xi1>)
  %fcw = dlc.broadcast_to %fc : tensor<1x128xf32> to tensor<5x128xf32>
  // CHECK: dlc.broadcast_to %{{.*}} : tensor<1x128xf32> to tensor<5x128xf32>
  // CHECK: dlc.dense %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x128xf32>, tensor<5x128xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %logits = dlc.dense %d, %fcw, %fcb : (tensor<4x128xf32>, tensor<5x128xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: dlc.dense %{{.*}}, %{{.*}} : (tensor<4x128xf32>, tensor<5x128xf32>) -> tensor<4x5xf32>
  %nobias = dlc.dense %d, %fcw : (tensor<4x128xf32>, tensor<5x128xf32>) -> tensor<4x5xf32>
  // CHECK: dlc.matmul %{{.*}}, %{{.*}} {transpose_b} : (tensor<4x128xf32>, tensor<5x128xf32>) -> tensor<4x5xf32>
  %mm = dlc.matmul %d, %fcw {transpose_b} : (tensor<4x128xf32>, tensor<5x128xf32>) -> tensor<4x5xf32>
  // CHECK: dlc.softmax %{{.*}} : tensor<4x5xf32>
  %sm = dlc.softmax %logits : tensor<4x5xf32>
  // CHECK: dlc.log_softmax %{{.*}} {axis = 1 : i64} : tensor<4x5xf32>
  %lsm = dlc.log_softmax %logits {axis = 1 : i64} : tensor<4x5xf32>
  // CHECK: dlc.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  %loss = dlc.softmax_cross_entropy %logits, %labels : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  // CHECK: dlc.reduce mean %{{.*}} {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  %mean_loss = dlc.reduce mean %loss {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  // CHECK: dlc.reduce max %{{.*}} {axes = array<i64: -1>, keepdims} : (tensor<4x5xf32>) -> tensor<4x1xf32>
  %rmax = dlc.reduce max %logits {axes = array<i64: -1>, keepdims} : (tensor<4x5xf32>) -> tensor<4x1xf32>
  // CHECK: dlc.reduce min
  %rmin = dlc.reduce min %logits {axes = array<i64: 0, 1>} : (tensor<4x5xf32>) -> tensor<f32>
  // CHECK: dlc.argmax %{{.*}} {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<4xi64>
  %am = dlc.argmax %logits {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<4xi64>
  // CHECK: dlc.argmax %{{.*}} {axis = -1 : i64, keepdims} : (tensor<4x5xf32>) -> tensor<4x1xi64>
  %amk = dlc.argmax %logits {axis = -1 : i64, keepdims} : (tensor<4x5xf32>) -> tensor<4x1xi64>
  // CHECK: dlc.reduce sum
  %rsum = dlc.reduce sum %c {axes = array<i64: 0, 2, 3>} : (tensor<4x8x8x8xf32>) -> tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @gradients
func.func @gradients(%x: tensor<4x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %dy: tensor<4x8x7x7xf32>,
                     %px: tensor<4x8x8x8xf32>, %pdy: tensor<4x8x4x4xf32>, %g: tensor<8xf32>,
                     %dloss: tensor<4xf32>, %logits: tensor<4x5xf32>, %labels: tensor<4xi32>) {
  // CHECK: dlc.conv2d_backward_data %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<8x3x3x3xf32>) -> tensor<4x3x16x16xf32>
  %dx = dlc.conv2d_backward_data %dy, %w {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<8x3x3x3xf32>) -> tensor<4x3x16x16xf32>
  // CHECK: dlc.conv2d_backward_filter %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<4x3x16x16xf32>) -> tensor<8x3x3x3xf32>
  %dw = dlc.conv2d_backward_filter %dy, %x {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<4x3x16x16xf32>) -> tensor<8x3x3x3xf32>
  // CHECK: dlc.conv2d_backward_filter %{{.*}}, %{{.*}} {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<4x3x16x16xf32>) -> (tensor<8x3x3x3xf32>, tensor<8xf32>)
  %dw2:2 = dlc.conv2d_backward_filter %dy, %x {stride = array<i64: 2, 2>} : (tensor<4x8x7x7xf32>, tensor<4x3x16x16xf32>) -> (tensor<8x3x3x3xf32>, tensor<8xf32>)
  // CHECK: dlc.max_pool2d_backward %{{.*}}, %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>, tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  %dp = dlc.max_pool2d_backward %pdy, %px {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>, tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
  // CHECK: %{{.*}}, %[[WHERE:.*]] = dlc.max_pool2d_indexed %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x8x8xf32>) -> (tensor<4x8x4x4xf32>, tensor<4x8x4x4xui8>)
  %py, %pwhere = dlc.max_pool2d_indexed %px {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x8x8xf32>) -> (tensor<4x8x4x4xf32>, tensor<4x8x4x4xui8>)
  // CHECK: dlc.max_pool2d_backward_indexed %{{.*}}, %[[WHERE]] {kernel = array<i64: 2, 2>, relu, stride = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>, tensor<4x8x4x4xui8>) -> tensor<4x8x8x8xf32>
  %dpi = dlc.max_pool2d_backward_indexed %pdy, %pwhere {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, relu} : (tensor<4x8x4x4xf32>, tensor<4x8x4x4xui8>) -> tensor<4x8x8x8xf32>
  // CHECK: dlc.avg_pool2d_backward %{{.*}} {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>) -> tensor<4x8x8x8xf32>
  %da = dlc.avg_pool2d_backward %pdy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<4x8x4x4xf32>) -> tensor<4x8x8x8xf32>
  // CHECK: dlc.batch_norm_backward {{.*}} -> (tensor<4x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %bx, %bg, %bb = dlc.batch_norm_backward %px, %px, %g, %g, %g : (tensor<4x8x8x8xf32>, tensor<4x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: dlc.softmax_cross_entropy_backward {{.*}} : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi32>) -> tensor<4x5xf32>
  %dl = dlc.softmax_cross_entropy_backward %dloss, %logits, %labels : (tensor<4xf32>, tensor<4x5xf32>, tensor<4xi32>) -> tensor<4x5xf32>
  return
}

// CHECK-LABEL: func.func @take
func.func @take(%table: tensor<100x16xf32>, %ids: tensor<4x7xi64>, %x: tensor<3x5x2xbf16>, %j: tensor<6xi32>) {
  // CHECK: dlc.take %{{.*}}, %{{.*}} : (tensor<100x16xf32>, tensor<4x7xi64>) -> tensor<4x7x16xf32>
  %v = dlc.take %table, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<4x7xi64>) -> tensor<4x7x16xf32>
  // CHECK: dlc.take %{{.*}}, %{{.*}} {axis = -2 : i64} : (tensor<3x5x2xbf16>, tensor<6xi32>) -> tensor<3x6x2xbf16>
  %t = dlc.take %x, %j {axis = -2 : i64} : (tensor<3x5x2xbf16>, tensor<6xi32>) -> tensor<3x6x2xbf16>
  // CHECK: dlc.take_backward %{{.*}}, %{{.*}} {size = 100 : i64} : (tensor<4x7x16xf32>, tensor<4x7xi64>) -> tensor<100x16xf32>
  %d = dlc.take_backward %v, %ids {axis = 0 : i64, size = 100 : i64} : (tensor<4x7x16xf32>, tensor<4x7xi64>) -> tensor<100x16xf32>
  return
}

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<4x8xf32>, %i: tensor<5xi64>) {
  // CHECK: dlc.slice %{{.*}} {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %y = dlc.slice %x {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  // CHECK: dlc.slice %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = dlc.slice %x {begin = array<i64: 3, 0>, end = array<i64: -1, 8>, step = array<i64: -1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: dlc.slice %{{.*}} : (tensor<5xi64>) -> tensor<0xi64>
  %e = dlc.slice %i {begin = array<i64: 3>, end = array<i64: 1>, step = array<i64: 1>} : (tensor<5xi64>) -> tensor<0xi64>
  // CHECK: dlc.slice_backward %{{.*}} : (tensor<4x2xf32>) -> tensor<4x8xf32>
  %d = dlc.slice_backward %y {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>, shape = array<i64: 4, 8>} : (tensor<4x2xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<4x16x32xf32>, %h: tensor<4x32x2xbf16>, %g: tensor<32xf32>, %b: tensor<32xf32>) {
  // CHECK: dlc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
  %y, %m, %v = dlc.layer_norm %x, %g, %b : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x16x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
  // CHECK: dlc.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = 9.9999999999999998E-13 : f64} : (tensor<4x32x2xbf16>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x2xbf16>, tensor<4x2xf32>, tensor<4x2xf32>)
  %hy, %hm, %hv = dlc.layer_norm %h, %g, %b {axis = 1 : i64, epsilon = 1.0e-12 : f64} : (tensor<4x32x2xbf16>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x2xbf16>, tensor<4x2xf32>, tensor<4x2xf32>)
  // CHECK: dlc.layer_norm_backward
  %dx, %dg, %db = dlc.layer_norm_backward %y, %x, %g, %m, %v : (tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x12x16x64xf32>, %kv: tensor<2x12x32x64xf32>, %pad: tensor<2x1x1x32xi1>, %h: tensor<4x16x8xbf16>) {
  // CHECK: dlc.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {dropout = 1.000000e-01 : f64, scale = 1.250000e-01 : f64, seed = 7 : i64} : (tensor<2x12x16x64xf32>, tensor<2x12x32x64xf32>, tensor<2x12x32x64xf32>, tensor<2x1x1x32xi1>) -> (tensor<2x12x16x64xf32>, tensor<2x12x16xf32>, tensor<i64>)
  %o, %l, %s = dlc.attention %q, %kv, %kv, %pad {dropout = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64} : (tensor<2x12x16x64xf32>, tensor<2x12x32x64xf32>, tensor<2x12x32x64xf32>, tensor<2x1x1x32xi1>) -> (tensor<2x12x16x64xf32>, tensor<2x12x16xf32>, tensor<i64>)
  // CHECK: dlc.attention_backward
  %dq, %dk, %dv = dlc.attention_backward %o, %q, %kv, %kv, %o, %l, %s, %pad {dropout = 0.1 : f64, scale = 0.125 : f64} : (tensor<2x12x16x64xf32>, tensor<2x12x16x64xf32>, tensor<2x12x32x64xf32>, tensor<2x12x32x64xf32>, tensor<2x12x16x64xf32>, tensor<2x12x16xf32>, tensor<i64>, tensor<2x1x1x32xi1>) -> (tensor<2x12x16x64xf32>, tensor<2x12x32x64xf32>, tensor<2x12x32x64xf32>)
  // CHECK: dlc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 0.35355339059327373 : f64} : (tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>) -> (tensor<4x16x8xbf16>, tensor<4x16xf32>, tensor<i64>)
  %c, %cl, %cs = dlc.attention %h, %h, %h {causal, scale = 0.35355339059327373 : f64} : (tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>) -> (tensor<4x16x8xbf16>, tensor<4x16xf32>, tensor<i64>)
  return
}

// CHECK-LABEL: func.func @data_parallel
func.func @data_parallel(%batch: tensor<5x3xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<5x3xf32> {
  // CHECK: %[[A:.*]]:2 = dlc.split %{{.*}} : tensor<5x3xf32> -> tensor<3x3xf32>, tensor<2x3xf32>
  %a, %b = dlc.split %batch : tensor<5x3xf32> -> tensor<3x3xf32>, tensor<2x3xf32>
  %b1 = dlc.copy %b : tensor<2x3xf32> to #dlc.device<cpu:1>
  %sa = dlc.reduce sum %a {axes = array<i64: 0>, dlc.device = #dlc.device<cpu:0>} : (tensor<3x3xf32>) -> tensor<3xf32>
  %sb = dlc.reduce sum %b1 {axes = array<i64: 0>, dlc.device = #dlc.device<cpu:1>} : (tensor<2x3xf32>) -> tensor<3xf32>
  // CHECK: dlc.all_reduce sum %{{.*}}, %{{.*}} {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<3xf32>, tensor<3xf32>
  %r0, %r1 = dlc.all_reduce sum %sa, %sb {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<3xf32>, tensor<3xf32>
  // CHECK: dlc.all_reduce mean
  %m0, %m1 = dlc.all_reduce mean %sa, %sb {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<3xf32>, tensor<3xf32>
  %back = dlc.copy %b1 : tensor<2x3xf32> to #dlc.device<cpu:0>
  // CHECK: dlc.concat %[[A]]#0, %{{.*}} : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %joined = dlc.concat %a, %back {axis = 0 : i64} : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  return %joined : tensor<5x3xf32>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: dlc.fused "bias_relu"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<8xf32>):
  // CHECK-NEXT: %[[S:.*]] = dlc.add %[[A]], %[[C]]
  // CHECK-NEXT: %[[R:.*]] = dlc.relu %[[S]]
  // CHECK-NEXT: dlc.yield %[[R]] : tensor<4x8xf32>
  %y = dlc.fused "bias_relu" (%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
    %s = dlc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = dlc.relu %s : tensor<4x8xf32>
    dlc.yield %r : tensor<4x8xf32>
  }
  // CHECK: dlc.fused(%{{.*}}) : (tensor<4x8xf32>) -> ()
  dlc.fused (%x) : (tensor<4x8xf32>) -> () {
  ^bb0(%a: tensor<4x8xf32>):
    dlc.yield
  }
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @optimizer_updates
func.func @optimizer_updates(%w: tensor<10x4xf32>, %g: tensor<10x4xf32>, %m: tensor<10x4xf32>,
                             %v: tensor<10x4xf32>, %rate: tensor<f32>) -> tensor<10x4xf32> {
  // CHECK: dlc.adam_update %{{.*}} {beta1 = 9.000000e-01 : f64, beta2 = {{[0-9.e+-]+}} : f64, epsilon = 1.000000e-08 : f64, rescale_grad = 3.125000e-02 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>)
  %a:3 = dlc.adam_update %w, %g, %m, %v, %rate {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-8 : f64, rescale_grad = 0.03125 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>)
  // CHECK: dlc.sgd_momentum_update %{{.*}} {momentum = 9.000000e-01 : f64, nesterov, rescale_grad = 1.000000e+00 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>)
  %s:2 = dlc.sgd_momentum_update %a#0, %g, %m, %rate {momentum = 0.9 : f64, nesterov, rescale_grad = 1.0 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>)
  // CHECK: dlc.sgd_update %{{.*}} {rescale_grad = 1.000000e+00 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> tensor<10x4xf32>
  %w3 = dlc.sgd_update %s#0, %g, %rate {rescale_grad = 1.0 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> tensor<10x4xf32>
  return %w3 : tensor<10x4xf32>
}

// The memory plan's attributes (dlc-plan-memory writes them).
// CHECK-LABEL: func.func @planned
// CHECK-SAME: attributes {dlc.arenas = [#dlc.arena<cpu:0, 256 bytes>, #dlc.arena<gpu:1, 0 bytes>]}
func.func @planned(%x: tensor<64xf32>) -> tensor<64xf32>
    attributes {dlc.arenas = [#dlc.arena<cpu:0, 256 bytes>, #dlc.arena<gpu:1, 0 bytes>]} {
  // CHECK: dlc.relu %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0>]}
  %0 = dlc.relu %x {dlc.storage = [#dlc.storage<arena 0 at 0>]} : tensor<64xf32>
  // CHECK: dlc.exp %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]}
  %1 = dlc.exp %0 {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]} : tensor<64xf32>
  // CHECK: dlc.tanh %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 256, freed>]}
  %2 = dlc.tanh %1 {dlc.storage = [#dlc.storage<arena 0 at 256, freed>]} : tensor<64xf32>
  // CHECK: dlc.reshape %{{.*}} {dlc.storage = [#dlc.storage<argument 0 at 0>]}
  %3 = dlc.reshape %x {dlc.storage = [#dlc.storage<argument 0 at 0>]} : tensor<64xf32> to tensor<8x8xf32>
  // CHECK: dlc.neg %{{.*}} {dlc.storage = [#dlc.storage<result 0 at 0>]}
  %4 = dlc.neg %2 {dlc.storage = [#dlc.storage<result 0 at 0>]} : tensor<64xf32>
  return %4 : tensor<64xf32>
}

// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: dlc.gelu %{{.*}} : tensor<4x8xf32>
  %y = dlc.gelu %x : tensor<4x8xf32>
  // CHECK: dlc.gelu_backward %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %dx = dlc.gelu_backward %dy, %x : tensor<4x8xf32>
  return %y, %dx : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @erf_softrelu_hard_swish
func.func @erf_softrelu_hard_swish(%x: tensor<4x8xf32>, %h: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  // CHECK: dlc.erf %{{.*}} : tensor<4x8xf32>
  %e = dlc.erf %x : tensor<4x8xf32>
  // CHECK: dlc.softrelu %{{.*}} : tensor<4x8xf32>
  %s = dlc.softrelu %x : tensor<4x8xf32>
  // CHECK: dlc.hard_swish %{{.*}} : tensor<4x8xbf16>
  %w = dlc.hard_swish %h : tensor<4x8xbf16>
  return %e, %s, %w : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @relu6_and_its_gradient
func.func @relu6_and_its_gradient(%x: tensor<2x8x4x4xf32>, %dy: tensor<2x8x4x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) {
  // CHECK: dlc.relu6 %{{.*}} : tensor<2x8x4x4xf32>
  %y = dlc.relu6 %x : tensor<2x8x4x4xf32>
  // CHECK: dlc.relu6_backward %{{.*}}, %{{.*}} : tensor<2x8x4x4xf32>
  %dx = dlc.relu6_backward %dy, %y : tensor<2x8x4x4xf32>
  return %y, %dx : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>
}

// CHECK-LABEL: func.func @activations_with_and_without_a_slope
func.func @activations_with_and_without_a_slope(%x: tensor<2x8x4x4xf32>, %slope: tensor<8x1x1xf32>, %alpha: tensor<f32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) {
  // CHECK: dlc.softsign %{{.*}} : tensor<2x8x4x4xf32>
  %a = dlc.softsign %x : tensor<2x8x4x4xf32>
  // CHECK: dlc.silu %{{.*}} : tensor<2x8x4x4xf32>
  %b = dlc.silu %x : tensor<2x8x4x4xf32>
  // CHECK: dlc.selu %{{.*}} : tensor<2x8x4x4xf32>
  %c = dlc.selu %x : tensor<2x8x4x4xf32>
  // CHECK: dlc.leaky_relu %{{.*}}, %{{.*}} : (tensor<2x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32>
  %d = dlc.leaky_relu %x, %slope : (tensor<2x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32>
  // CHECK: dlc.elu %{{.*}}, %{{.*}} : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  %e = dlc.elu %x, %alpha : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  return %a, %b, %c, %d, %e : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>
}
