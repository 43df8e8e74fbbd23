// RUN: dlc-opt %s --dlc-pack-kernel-entries -split-input-file -verify-diagnostics | FileCheck %s

// Each C interface gets an entry taking its arguments through one array: slot k holds
// a pointer to argument k (a descriptor pointer), loaded twice. Declarations and
// functions without a C interface get none.
// CHECK-LABEL: llvm.func @_mlir_ciface_k(
// CHECK: llvm.func @k_packed(%[[ARGS:.*]]: !llvm.ptr) {
// CHECK-NEXT: %[[S0:.*]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[D0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[S1:.*]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[D1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.call @_mlir_ciface_k(%[[D0]], %[[D1]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.return
// CHECK-NOT: _packed
module {
  llvm.func @_mlir_ciface_k(%a: !llvm.ptr, %b: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_declared(!llvm.ptr)
  llvm.func @plain(%a: !llvm.ptr) {
    llvm.return
  }
}

// -----

module {
  // expected-error @+1 {{dlc-pack-kernel-entries: parameter of type 'vector<4xf32>' is not a pointer or a scalar}}
  llvm.func @_mlir_ciface_sized(%a: !llvm.ptr, %n: vector<4xf32>) {
    llvm.return
  }
}

// -----

module {
  // expected-error @+1 {{dlc-pack-kernel-entries: a kernel returns nothing, got 'f32'}}
  llvm.func @_mlir_ciface_value(%a: !llvm.ptr) -> f32 {
    %0 = llvm.mlir.constant(1.0 : f32) : f32
    llvm.return %0 : f32
  }
}

// -----

// A scalar parameter is loaded with its own type from where its slot points.
// CHECK: llvm.func @counted_packed(%[[ARGS:.*]]: !llvm.ptr) {
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[N:.*]] = llvm.load %[[P1]] : !llvm.ptr -> i64
// CHECK-NEXT: llvm.call @_mlir_ciface_counted(%{{.*}}, %[[N]]) : (!llvm.ptr, i64) -> ()
module {
  llvm.func @_mlir_ciface_counted(%a: !llvm.ptr, %n: i64) {
    llvm.return
  }
}
