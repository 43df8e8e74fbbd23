// RUN: dlc-opt %s --dlc-host-build-gpu-kernels -split-input-file -verify-diagnostics | FileCheck %s

// The kernel's body runs inside a loop over blocks and a loop over threads; the
// thread's coordinates are the loops' indices and the sizes the new parameters.
// CHECK: module @dlc_gpu_kernels_on_host {
// CHECK: func.func @k(%[[X:.*]]: !llvm.ptr, %[[N:.*]]: i64, %[[GRID:.*]]: index, %[[BLOCK:.*]]: index) attributes {llvm.emit_c_interface}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %[[B:.*]] = %[[C0]] to %[[GRID]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[T:.*]] = %[[C0]] to %[[BLOCK]] step %[[C1]] {
// CHECK-NEXT: %[[BD:.*]] = arith.muli %[[B]], %[[BLOCK]] : index
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[BD]], %[[T]] : index
// CHECK-NEXT: %[[E:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[E]], %[[N]] : i64
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: llvm.store
// CHECK: return
module attributes {gpu.container_module} {
  gpu.module @dlc_gpu_kernels {
    gpu.func @k(%x: !llvm.ptr, %n: i64) kernel {
      %b = gpu.block_id x
      %d = gpu.block_dim x
      %t = gpu.thread_id x
      %bd = arith.muli %b, %d : index
      %i = arith.addi %bd, %t : index
      %e = arith.index_cast %i : index to i64
      %in = arith.cmpi ult, %e, %n : i64
      scf.if %in {
        %p = llvm.getelementptr %x[%e] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %p : !llvm.ptr -> f32
        %w = arith.addf %v, %v : f32
        llvm.store %w, %p : f32, !llvm.ptr
      }
      gpu.return
    }
  }
}

// -----

// Only the x dimension is emulated.
module attributes {gpu.container_module} {
  gpu.module @dlc_gpu_kernels {
    gpu.func @k(%x: !llvm.ptr) kernel {
      // expected-error @+1 {{dlc-host-build-gpu-kernels: only the x dimension is emulated}}
      %t = gpu.thread_id y
      gpu.return
    }
  }
}

// -----

// Without GPU kernels nothing is made.
// CHECK-NOT: dlc_gpu_kernels_on_host
module {
}
