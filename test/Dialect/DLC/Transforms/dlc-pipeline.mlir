// RUN: dlc-opt %s --dlc-pipeline=cpu -split-input-file | FileCheck %s --check-prefix=CPU
// RUN: dlc-opt %s --dlc-pipeline=cuda -split-input-file 2>/dev/null | FileCheck %s --check-prefix=CUDA
// RUN: dlc-opt %s --dlc-pipeline=cuda -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// hybridize()'s pipelines: canonicalize (x * 1 folds), place every op (unplaced ops go
// to the target's default device), fuse. The cuda pipeline runs on gpu(0) every op the
// module's GPU target runs, and the others on cpu(0), saying so op by op.
// CPU-LABEL: func.func @step
// CPU: dlc.random_uniform {dlc.device = #dlc.device<cpu:0>
// CPU-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>
// CPU-NOT: = dlc.mul
// CUDA-LABEL: func.func @step
// CUDA: dlc.random_uniform {dlc.device = #dlc.device<gpu:0>
// CUDA-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<gpu:0>
// CUDA-NOT: dlc.copy
module attributes {dlc.targets = [
    #dlc.target<cpu, ops = ["dlc.conv2d", "dlc.mul", "dlc.random_uniform", "dlc.relu"]>,
    #dlc.target<gpu, ops = ["dlc.conv2d", "dlc.mul", "dlc.random_uniform", "dlc.relu"]>]} {
func.func @step(%w: tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %x = dlc.random_uniform {seed = 3 : i64} : tensor<2x3x8x8xf32>
  %one = dlc.constant dense<1.0> : tensor<f32>
  %c = dlc.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  %r = dlc.relu %c : tensor<2x8x6x6xf32>
  %s = dlc.mul %r, %one : (tensor<2x8x6x6xf32>, tensor<f32>) -> tensor<2x8x6x6xf32>
  return %s : tensor<2x8x6x6xf32>
}
}

// -----

// CPU-LABEL: func.func @cpu_only
// Only @cpu_only's ops fall back, each with a remark.
// REMARK: remark: dlc.random_uniform has no kernel for gpu(0) in this build; placed on cpu(0)
// REMARK: remark: dlc.conv2d has no kernel for gpu(0) in this build; placed on cpu(0)
// REMARK: remark: dlc.relu has no kernel for gpu(0) in this build; placed on cpu(0)
// REMARK-NOT: remark
// CUDA-LABEL: func.func @cpu_only
// CUDA: dlc.random_uniform {dlc.device = #dlc.device<cpu:0>
// CUDA-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>
// CUDA-NOT: dlc.copy
module attributes {dlc.targets = [
    #dlc.target<cpu, ops = ["dlc.conv2d", "dlc.mul", "dlc.random_uniform", "dlc.relu"]>]} {
func.func @cpu_only(%w: tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %x = dlc.random_uniform {seed = 3 : i64} : tensor<2x3x8x8xf32>
  %one = dlc.constant dense<1.0> : tensor<f32>
  %c = dlc.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  %r = dlc.relu %c : tensor<2x8x6x6xf32>
  %s = dlc.mul %r, %one : (tensor<2x8x6x6xf32>, tensor<f32>) -> tensor<2x8x6x6xf32>
  return %s : tensor<2x8x6x6xf32>
}
}

// -----

// Code generation ends the pipeline. On the CPU an element-wise region gets a kernel in
// @dlc_host_kernels, lowered to the LLVM dialect with its packed entry; the function
// stays in the dlc dialect. On the GPU the region is left to the GPU's kernels.
// CPU-LABEL: func.func @generated
// CPU: dlc.fused "elementwise"({{.*}}) {dlc.device = #dlc.device<cpu:0>, dlc.kernel = @dlc_host_kernels::@generated_region_0
// CPU: module @dlc_host_kernels
// CPU-NOT: func.func
// CPU-NOT: linalg.
// tanh is a polynomial (dlc-approximate-math), not a libm call that would keep the
// loop scalar.
// CPU-NOT: @tanhf
// CPU: llvm.func @generated_region_0(
// CPU: llvm.func @_mlir_ciface_generated_region_0(
// CPU: llvm.func @generated_region_0_packed(%{{.*}}: !llvm.ptr)
// CUDA-LABEL: func.func @generated
// CUDA: dlc.fused "elementwise"({{.*}}) {dlc.device = #dlc.device<gpu:0>
// CUDA-NOT: dlc.kernel
// CUDA-NOT: module @dlc_host_kernels
module attributes {dlc.targets = [
    #dlc.target<cpu, ops = ["dlc.add", "dlc.tanh"]>,
    #dlc.target<gpu, ops = ["dlc.add", "dlc.tanh"]>]} {
func.func @generated(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %s = dlc.add %x, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %t = dlc.tanh %s : tensor<64xf32>
  return %t : tensor<64xf32>
}
}
