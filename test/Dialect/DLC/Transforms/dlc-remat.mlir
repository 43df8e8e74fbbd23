// RUN: dlc-opt %s --split-input-file --dlc-remat=budget=2304 -verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlc-remat | FileCheck %s --check-prefix=OFF

// Every tensor<256xf32> is 1 KiB; the peaks are the arena dlc-plan-memory makes (the
// softmaxes write no input over). %y is read at the first step and at the last: the
// three values live at the third step (3 KiB) include it, unread there. Recomputed
// before its last reader, it dies after the first and the arena is 2 KiB.
// CHECK-LABEL: func.func @kept_across_the_peak
// CHECK-SAME: dlc.remat = {budget = 2304 : i64, peak_after = 2048 : i64, peak_before = 3072 : i64}
// CHECK: %[[Y:.*]] = dlc.relu %arg0 : tensor<256xf32>
// CHECK: dlc.softmax %[[Y]]
// CHECK-COUNT-2: dlc.softmax
// CHECK-NEXT: %[[D:.*]] = dlc.softmax
// CHECK-NEXT: %[[AGAIN:.*]] = dlc.relu %arg0 {dlc.recomputed} : tensor<256xf32>
// CHECK-NEXT: dlc.mul %[[D]], %[[AGAIN]]
// OFF-LABEL: func.func @kept_across_the_peak
// OFF-NOT: dlc.remat
// OFF-NOT: dlc.recomputed
func.func @kept_across_the_peak(%x: tensor<256xf32>) -> tensor<256xf32> {
  %y = dlc.relu %x : tensor<256xf32>
  %a = dlc.softmax %y : tensor<256xf32>
  %b = dlc.softmax %a : tensor<256xf32>
  %c = dlc.softmax %b : tensor<256xf32>
  %d = dlc.softmax %c : tensor<256xf32>
  %e = dlc.mul %d, %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %e : tensor<256xf32>
}

// -----

// A training batch norm's output, read by the forward and by the backward: the copy
// reads %x, which the norm's gradient keeps until later anyway. The copy's statistics
// are left unread; the gradient keeps reading the first ones. The statistics are 64
// bytes each: 3 KiB and 128 bytes before, 2 KiB and four statistics after (where the
// copy runs).
// CHECK-LABEL: func.func @norm_output_again_for_the_backward
// CHECK-SAME: peak_after = 2304 : i64, peak_before = 3200 : i64
// CHECK: %[[Y:.*]], %[[STATS:.*]]:2 = dlc.batch_norm %arg0, %arg1, %arg2 {training}
// CHECK-COUNT-3: dlc.softmax
// CHECK-NEXT: %[[S:.*]] = dlc.softmax
// CHECK-NEXT: %[[Y2:.*]], %{{.*}}:2 = dlc.batch_norm %arg0, %arg1, %arg2 {dlc.recomputed, training}
// CHECK-NEXT: dlc.mul %[[S]], %[[Y2]]
// CHECK-NEXT: dlc.batch_norm_backward %[[S]], %arg0, %arg1, %[[STATS]]#0, %[[STATS]]#1
func.func @norm_output_again_for_the_backward(%x: tensor<1x16x4x4xf32>, %g: tensor<16xf32>,
                                              %b: tensor<16xf32>)
    -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>) {
  %y, %mean, %var = dlc.batch_norm %x, %g, %b {training} : (tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  %a = dlc.softmax %y : tensor<1x16x4x4xf32>
  %t = dlc.softmax %a : tensor<1x16x4x4xf32>
  %u = dlc.softmax %t : tensor<1x16x4x4xf32>
  %s = dlc.softmax %u : tensor<1x16x4x4xf32>
  %p = dlc.mul %s, %y : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %dx, %dg, %db = dlc.batch_norm_backward %s, %x, %g, %mean, %var : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  return %p, %dx, %dg, %db : tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Dropout would draw another mask: kept, and the budget is not reached.
// CHECK-LABEL: func.func @dropout_is_kept
// CHECK-SAME: peak_after = 3072 : i64, peak_before = 3072 : i64
// CHECK-NOT: dlc.recomputed
// expected-remark @+1 {{dlc-remat: the budget of 2304 bytes is not reached: the plan holds 3072 bytes (3072 before; 0 ops computed again); at step 2, cpu(0) holds 3072 bytes of values that no copy can free}}
func.func @dropout_is_kept(%x: tensor<256xf32>) -> tensor<256xf32> {
  %y, %mask = dlc.dropout %x {ratio = 5.000000e-01 : f64, seed = 0 : i64} : (tensor<256xf32>) -> (tensor<256xf32>, tensor<256xi1>)
  %a = dlc.softmax %y : tensor<256xf32>
  %b = dlc.softmax %a : tensor<256xf32>
  %c = dlc.softmax %b : tensor<256xf32>
  %d = dlc.softmax %c : tensor<256xf32>
  %e = dlc.mul %d, %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %e : tensor<256xf32>
}

// -----

// %y's operand %t dies where %y is made (%y is written over it): computing %y again
// late takes %t again first, a chain of two copies.
// CHECK-LABEL: func.func @operand_made_again_first
// CHECK-SAME: peak_after = 2048 : i64, peak_before = 3072 : i64
// CHECK-COUNT-3: dlc.softmax
// CHECK-NEXT: %[[D:.*]] = dlc.softmax
// CHECK-NEXT: %[[T:.*]] = dlc.exp %arg0 {dlc.recomputed}
// CHECK-NEXT: %[[Y:.*]] = dlc.relu %[[T]] {dlc.recomputed}
// CHECK-NEXT: dlc.mul %[[D]], %[[Y]]
func.func @operand_made_again_first(%x: tensor<256xf32>) -> tensor<256xf32> {
  %t = dlc.exp %x : tensor<256xf32>
  %y = dlc.relu %t : tensor<256xf32>
  %a = dlc.softmax %y : tensor<256xf32>
  %b = dlc.softmax %a : tensor<256xf32>
  %c = dlc.softmax %b : tensor<256xf32>
  %d = dlc.softmax %c : tensor<256xf32>
  %e = dlc.mul %d, %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %e : tensor<256xf32>
}

// -----

// Three ops deep is too deep: the values are kept.
// CHECK-LABEL: func.func @chain_too_deep
// CHECK-NOT: dlc.recomputed
// expected-remark @+1 {{at step 4, cpu(0) holds 3072 bytes of values that no copy can free}}
func.func @chain_too_deep(%x: tensor<256xf32>) -> tensor<256xf32> {
  %s = dlc.tanh %x : tensor<256xf32>
  %t = dlc.exp %s : tensor<256xf32>
  %y = dlc.relu %t : tensor<256xf32>
  %a = dlc.softmax %y : tensor<256xf32>
  %b = dlc.softmax %a : tensor<256xf32>
  %c = dlc.softmax %b : tensor<256xf32>
  %d = dlc.softmax %c : tensor<256xf32>
  %e = dlc.mul %d, %y : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %e : tensor<256xf32>
}
