// The PTX is made once and then read from the kernel cache: both runs print it.
// RUN: rm -rf %t.cache
// RUN: dlc-opt %s --dlc-serialize-gpu-kernels=cache-dir=%t.cache | FileCheck %s
// RUN: ls %t.cache/kernels | count 1
// RUN: dlc-opt %s --dlc-serialize-gpu-kernels=cache-dir=%t.cache | FileCheck %s
// A damaged entry is not trusted: the PTX is made again and the entry rewritten.
// RUN: for f in %t.cache/kernels/*; do echo garbage > $f; done
// RUN: dlc-opt %s --dlc-serialize-gpu-kernels=cache-dir=%t.cache | FileCheck %s
// RUN: test $(cat %t.cache/kernels/* | wc -c) -gt 100
// RUN: dlc-opt %s --dlc-serialize-gpu-kernels | FileCheck %s

// CHECK: gpu.binary @dlc_gpu_kernels  [#gpu.object<#nvvm.target<chip = "sm_90">
// CHECK-SAME: .visible .entry k(
// CHECK-SAME: st.global.f32
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @dlc_gpu_kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k(%x: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %v = llvm.load %x : !llvm.ptr -> f32
      %w = llvm.fadd %v, %v : f32
      llvm.store %w, %x : f32, !llvm.ptr
      llvm.return
    }
  }
}
