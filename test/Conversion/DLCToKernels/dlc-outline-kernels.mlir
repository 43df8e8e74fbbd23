// RUN: dlc-opt %s --dlc-outline-kernels -split-input-file -verify-diagnostics | FileCheck %s
// The kernel module is upstream MLIR: mlir-opt (MLIR 19's own) lowers it to the LLVM
// dialect with the passes the pipeline runs, the dlc function left as it is.
// RUN: dlc-opt %s --dlc-outline-kernels -split-input-file -verify-diagnostics --mlir-print-op-generic | sed -n '1,/^\/\/ -----/p' | mlir-opt --allow-unregistered-dialect --pass-pipeline='builtin.module(builtin.module(convert-linalg-to-loops,convert-scf-to-cf,convert-math-to-libm,convert-math-to-llvm,convert-arith-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts))' | FileCheck %s --check-prefix=LLVM

// A host region becomes @dlc_host_kernels::@<function>_region_<n>: its inputs then its
// results as 1-d memrefs, the broadcast scalar read at index 0, the body its ops'
// scalar bodies. The region keeps its ops (the kernel's reference).
// CHECK-DAG: #[[POINT:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0) -> (0)>
// CHECK-LABEL: func.func @step
// CHECK: dlc.fused "elementwise"(%{{.*}}, %{{.*}}) {dlc.device = #dlc.device<cpu:0>, dlc.kernel = @dlc_host_kernels::@step_region_0}
// CHECK: dlc.tanh
// CHECK: dlc.fused "elementwise"(%{{.*}}) {dlc.kernel = @dlc_host_kernels::@step_region_1}
// CHECK: module @dlc_host_kernels
// CHECK: func.func @step_region_0(%[[X:.*]]: memref<?xf32>, %[[S:.*]]: memref<?xf32>, %[[Y:.*]]: memref<?xf32>, %[[Z:.*]]: memref<?xf32>) attributes {llvm.emit_c_interface}
// CHECK: linalg.generic {indexing_maps = [#[[POINT]], #[[FIRST]], #[[POINT]], #[[POINT]]], iterator_types = ["parallel"]} ins(%[[X]], %[[S]] : memref<?xf32>, memref<?xf32>) outs(%[[Y]], %[[Z]] : memref<?xf32>, memref<?xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[M]] : f32
// CHECK-NEXT: linalg.yield %[[M]], %[[T]] : f32, f32
// CHECK: func.func @step_region_1(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>)
// CHECK: math.exp
// LLVM: "dlc.fused"
// LLVM: llvm.func @tanhf(f32) -> f32
// LLVM: llvm.func @_mlir_ciface_step_region_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// LLVM: llvm.func @_mlir_ciface_step_region_1(
func.func @step(%x: tensor<4x3xf32>, %s: tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %y:2 = dlc.fused "elementwise" (%x, %s) {dlc.device = #dlc.device<cpu:0>} : (tensor<4x3xf32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: tensor<4x3xf32>, %b: tensor<f32>):
    %m = dlc.mul %a, %b : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %t = dlc.tanh %m : tensor<4x3xf32>
    dlc.yield %m, %t : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %e = dlc.fused "elementwise" (%y#1) : (tensor<4x3xf32>) -> tensor<4x3xf32> {
  ^bb0(%a: tensor<4x3xf32>):
    %n = dlc.neg %a : tensor<4x3xf32>
    %x2 = dlc.exp %n : tensor<4x3xf32>
    dlc.yield %x2 : tensor<4x3xf32>
  }
  return %y#0, %y#1, %e : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Left alone: a region the plan runs op by op, a region on a GPU, a library kernel
// with an epilogue, a region of another dtype. No kernel module is made.
// CHECK-LABEL: func.func @others
// CHECK-NOT: dlc.kernel
// CHECK-NOT: module @dlc_host_kernels
func.func @others(%x: tensor<8xf32>, %h: tensor<8xbf16>, %i: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<8xbf16>) {
  %a = dlc.fused "elementwise" (%x) {dlc.op_by_op} : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%v: tensor<8xf32>):
    %n = dlc.neg %v : tensor<8xf32>
    %r = dlc.relu %n : tensor<8xf32>
    dlc.yield %r : tensor<8xf32>
  }
  %b = dlc.fused "elementwise" (%x) {dlc.device = #dlc.device<gpu:0>} : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%v: tensor<8xf32>):
    %n = dlc.neg %v : tensor<8xf32>
    %r = dlc.relu %n : tensor<8xf32>
    dlc.yield %r : tensor<8xf32>
  }
  %c = dlc.fused "dense_relu" (%i, %w) : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32> {
  ^bb0(%u: tensor<2x3xf32>, %v: tensor<4x3xf32>):
    %d = dlc.dense %u, %v : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
    %r = dlc.relu %d : tensor<2x4xf32>
    dlc.yield %r : tensor<2x4xf32>
  }
  %d = dlc.fused "elementwise" (%h) : (tensor<8xbf16>) -> tensor<8xbf16> {
  ^bb0(%v: tensor<8xbf16>):
    %n = dlc.neg %v : tensor<8xbf16>
    %r = dlc.relu %n : tensor<8xbf16>
    dlc.yield %r : tensor<8xbf16>
  }
  return %a, %b, %c, %d : tensor<8xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<8xbf16>
}

// -----

// On a GPU whose target runs element-wise regions whole, the region becomes a kernel of
// gpu.module @dlc_gpu_kernels: pointers to the inputs and outputs, then the element
// count; one thread per element, those past the count doing nothing; a broadcast
// scalar is read at its pointer, the others at the thread's element.
// CHECK-LABEL: module attributes
// CHECK-SAME: gpu.container_module
// CHECK: dlc.fused "elementwise"(%{{.*}}, %{{.*}}) {dlc.device = #dlc.device<gpu:0>, dlc.kernel = @dlc_gpu_kernels::@gpu_step_region_0}
// CHECK: gpu.module @dlc_gpu_kernels
// CHECK: gpu.func @gpu_step_region_0(%[[X:.*]]: !llvm.ptr, %[[S:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr, %[[N:.*]]: i64) kernel
// CHECK: %[[B:.*]] = gpu.block_id  x
// CHECK: %[[D:.*]] = gpu.block_dim  x
// CHECK: %[[T:.*]] = gpu.thread_id  x
// CHECK: %[[BD:.*]] = arith.muli %[[B]], %[[D]] : index
// CHECK: %[[I:.*]] = arith.addi %[[BD]], %[[T]] : index
// CHECK: %[[E:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[E]], %[[N]] : i64
// CHECK: scf.if %[[IN]] {
// CHECK: %[[PX:.*]] = llvm.getelementptr %[[X]][%[[E]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[VX:.*]] = llvm.load %[[PX]] : !llvm.ptr -> f32
// CHECK: %[[VS:.*]] = llvm.load %[[S]] : !llvm.ptr -> f32
// CHECK: %[[M:.*]] = arith.mulf %[[VX]], %[[VS]] : f32
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[M]], %[[ZERO:.*]] : f32
// CHECK: arith.select %[[POS]], %[[M]], %[[ZERO]] : f32
// CHECK: %[[PY:.*]] = llvm.getelementptr %[[Y]][%[[E]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.store %{{.*}}, %[[PY]] : f32, !llvm.ptr
// CHECK: gpu.return
module attributes {dlc.targets = [
    #dlc.target<gpu, ops = ["dlc.mul", "dlc.relu", "dlc.fused.elementwise"]>]} {
func.func @gpu_step(%x: tensor<64xf32>, %s: tensor<f32>) -> tensor<64xf32> {
  %y = dlc.fused "elementwise" (%x, %s) {dlc.device = #dlc.device<gpu:0>} : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32> {
  ^bb0(%a: tensor<64xf32>, %b: tensor<f32>):
    %m = dlc.mul %a, %b : (tensor<64xf32>, tensor<f32>) -> tensor<64xf32>
    %r = dlc.relu %m : tensor<64xf32>
    dlc.yield %r : tensor<64xf32>
  }
  return %y : tensor<64xf32>
}
}

// -----

// Regions that compute the same thing share one kernel (a training step has one
// optimizer update per parameter); a different broadcast pattern is another kernel.
// CHECK-LABEL: func.func @updates
// CHECK: dlc.fused "elementwise"({{.*}}) {dlc.kernel = @dlc_host_kernels::@updates_region_0}
// CHECK: dlc.fused "elementwise"({{.*}}) {dlc.kernel = @dlc_host_kernels::@updates_region_0}
// CHECK: dlc.fused "elementwise"({{.*}}) {dlc.kernel = @dlc_host_kernels::@updates_region_2}
// CHECK: module @dlc_host_kernels
// CHECK-COUNT-2: func.func @updates_region_
// CHECK-NOT: func.func
func.func @updates(%w1: tensor<8xf32>, %g1: tensor<8xf32>, %w2: tensor<3x5xf32>, %g2: tensor<3x5xf32>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<3x5xf32>, tensor<8xf32>) {
  %a = dlc.fused "elementwise" (%w1, %g1, %lr) : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32> {
  ^bb0(%w: tensor<8xf32>, %g: tensor<8xf32>, %r: tensor<f32>):
    %s = dlc.mul %g, %r : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %n = dlc.sub %w, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    dlc.yield %n : tensor<8xf32>
  }
  %b = dlc.fused "elementwise" (%w2, %g2, %lr) : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32> {
  ^bb0(%w: tensor<3x5xf32>, %g: tensor<3x5xf32>, %r: tensor<f32>):
    %s = dlc.mul %g, %r : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
    %n = dlc.sub %w, %s : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    dlc.yield %n : tensor<3x5xf32>
  }
  %c = dlc.fused "elementwise" (%w1, %g1, %g1) : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%w: tensor<8xf32>, %g: tensor<8xf32>, %r: tensor<8xf32>):
    %s = dlc.mul %g, %r : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %n = dlc.sub %w, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    dlc.yield %n : tensor<8xf32>
  }
  return %a, %b, %c : tensor<8xf32>, tensor<3x5xf32>, tensor<8xf32>
}
