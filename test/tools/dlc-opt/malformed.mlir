// dlc-opt refuses malformed input with a located diagnostic and a non-zero exit, and
// never crashes (`not` without --crash fails on a crash).
// RUN: not dlc-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: custom op 'dlc.frobnicate' is unknown
func.func @unknown_op(%x: tensor<4xf32>) {
  %0 = dlc.frobnicate %x : tensor<4xf32>
  return
}

// -----

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: Dialect `nosuch' not found for custom op 'nosuch.op'
func.func @unknown_dialect(%x: tensor<4xf32>) {
  %0 = nosuch.op %x : tensor<4xf32>
  return
}

// -----

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: use of value '%x' expects different type than prior uses: 'tensor<5xf32>' vs 'tensor<4xf32>'
func.func @wrong_operand_type(%x: tensor<4xf32>) {
  %0 = dlc.relu %x : tensor<5xf32>
  return
}

// -----

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: 'dlc.matmul' op operand #1 must be statically shaped tensor
func.func @not_a_tensor(%x: tensor<4x4xf32>, %m: memref<4x4xf32>) {
  %0 = "dlc.matmul"(%x, %m) : (tensor<4x4xf32>, memref<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: expected '>'
func.func @broken_type(%x: tensor<4xf32>) {
  %0 = dlc.relu %x : tensor<4xf32
  return
}

// -----

// CHECK: malformed.mlir:{{[0-9]+}} offset :{{[0-9]+}}:{{[0-9]+}}: error: expected ':'
func.func @missing_type(%x: tensor<4xf32>) { %0 = dlc.relu %x
  return
}
