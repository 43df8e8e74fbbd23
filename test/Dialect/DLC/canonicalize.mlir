// Folders of the dlc dialect, through -canonicalize.
// RUN: dlc-opt %s -canonicalize -split-input-file | FileCheck %s

// x * 1 -> x, 1 * x -> x, x + 0 -> x, x - 0 -> x, x / 1 -> x
// CHECK-LABEL: func.func @arithmetic_identities
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NOT: dlc.mul
// CHECK-NOT: dlc.add
// CHECK-NOT: dlc.sub
// CHECK-NOT: dlc.div
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]], %[[I]]
func.func @arithmetic_identities(%x: tensor<4x3xf32>, %i: tensor<4xi32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xi32>, tensor<4xi32>) {
  %one = dlc.constant dense<1.0> : tensor<3xf32>
  %zero = dlc.constant dense<0.0> : tensor<4x3xf32>
  %ione = dlc.constant dense<1> : tensor<1xi32>
  %izero = dlc.constant dense<0> : tensor<4xi32>
  %0 = dlc.mul %x, %one : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = dlc.mul %one, %x : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = dlc.add %x, %zero : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %3 = dlc.sub %x, %zero : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %4 = dlc.div %x, %one : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %5 = dlc.mul %i, %ione : (tensor<4xi32>, tensor<1xi32>) -> tensor<4xi32>
  %6 = dlc.add %izero, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// An identity that would drop a broadcast does not fold: x(3) * 1(4x3) is 4x3.
// CHECK-LABEL: func.func @identity_that_broadcasts
// CHECK: %[[R:.*]] = dlc.mul
// CHECK: return %[[R]]
func.func @identity_that_broadcasts(%x: tensor<3xf32>) -> tensor<4x3xf32> {
  %one = dlc.constant dense<1.0> : tensor<4x3xf32>
  %0 = dlc.mul %x, %one : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// x * 2 and x + 1 are not identities.
// CHECK-LABEL: func.func @not_identities
// CHECK: dlc.mul
// CHECK: dlc.add
func.func @not_identities(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %two = dlc.constant dense<2.0> : tensor<3xf32>
  %one = dlc.constant dense<1.0> : tensor<3xf32>
  %0 = dlc.mul %x, %two : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = dlc.add %x, %one : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// reshape(reshape(x)) -> reshape(x); a reshape back to the input type disappears.
// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[R:.*]] = dlc.reshape %[[X]] : tensor<4x6xf32> to tensor<24xf32>
// CHECK-NOT: dlc.reshape
// CHECK: return %[[R]], %[[X]]
func.func @reshape_of_reshape(%x: tensor<4x6xf32>) -> (tensor<24xf32>, tensor<4x6xf32>) {
  %0 = dlc.reshape %x : tensor<4x6xf32> to tensor<2x12xf32>
  %1 = dlc.reshape %0 : tensor<2x12xf32> to tensor<24xf32>
  %2 = dlc.reshape %1 : tensor<24xf32> to tensor<4x6xf32>
  return %1, %2 : tensor<24xf32>, tensor<4x6xf32>
}

// -----

// transpose(transpose(x, p), q) -> transpose(x, p∘q); inverse permutations cancel.
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = dlc.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NOT: dlc.transpose
// CHECK: return %[[X]], %[[T]], %[[X]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %0 = dlc.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %1 = dlc.transpose %0 {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %2 = dlc.transpose %0 {permutation = array<i64: 1, 0, 2>} : (tensor<2x4x3xf32>) -> tensor<4x2x3xf32>
  %3 = dlc.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %1, %2, %3 : tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// copy(x to d) -> x when x already lives on d; copy(copy(x to a) to b) -> copy(x to b).
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32> {dlc.device = #dlc.device<gpu:0>})
// CHECK: %[[C:.*]] = dlc.copy %[[X]] : tensor<3xf32> to #dlc.device<gpu:2>
// CHECK-NOT: dlc.copy
// CHECK: return %[[X]], %[[C]], %[[X]]
func.func @copies(%x: tensor<3xf32> {dlc.device = #dlc.device<gpu:0>}) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %same = dlc.copy %x : tensor<3xf32> to #dlc.device<gpu:0>
  %a = dlc.copy %x : tensor<3xf32> to #dlc.device<gpu:1>
  %b = dlc.copy %a : tensor<3xf32> to #dlc.device<gpu:2>
  %back = dlc.copy %a : tensor<3xf32> to #dlc.device<gpu:0>
  return %same, %b, %back : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// A copy from an unknown device is kept: it may be a real transfer.
// CHECK-LABEL: func.func @copy_from_unknown
// CHECK: dlc.copy
func.func @copy_from_unknown(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = dlc.copy %x : tensor<3xf32> to #dlc.device<cpu:0>
  return %0 : tensor<3xf32>
}

// -----

// cast and broadcast_to to the same type disappear.
// CHECK-LABEL: func.func @no_op_conversions
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT: dlc.cast
// CHECK-NOT: dlc.broadcast_to
// CHECK: return %[[X]], %[[X]]
func.func @no_op_conversions(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = dlc.cast %x : tensor<3xf32> to tensor<3xf32>
  %1 = dlc.broadcast_to %x : tensor<3xf32> to tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// x * sigmoid(x) -> silu(x), either operand order, the placement kept; not where the
// sigmoid has another use, nor a product by the sigmoid of another value.
// CHECK-LABEL: func.func @silu_written_out
// CHECK-NEXT: %[[A:.*]] = dlc.silu %arg0 {dlc.device = #dlc.device<cpu:0>} : tensor<2x3xf32>
// CHECK-NEXT: %[[B:.*]] = dlc.silu %arg0 : tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = dlc.sigmoid %arg0
// CHECK-NEXT: %[[C:.*]] = dlc.mul %arg0, %[[S]]
// CHECK-NEXT: %[[T:.*]] = dlc.sigmoid %arg1
// CHECK-NEXT: %[[D:.*]] = dlc.mul %arg0, %[[T]]
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[S]], %[[D]]
func.func @silu_written_out(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %s1 = dlc.sigmoid %x : tensor<2x3xf32>
  %a = dlc.mul %x, %s1 {dlc.device = #dlc.device<cpu:0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s2 = dlc.sigmoid %x : tensor<2x3xf32>
  %b = dlc.mul %s2, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s3 = dlc.sigmoid %x : tensor<2x3xf32>
  %c = dlc.mul %x, %s3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s4 = dlc.sigmoid %y : tensor<3xf32>
  %d = dlc.mul %x, %s4 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %a, %b, %c, %s3, %d : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
