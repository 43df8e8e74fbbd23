// RUN: dlc-opt %s --dlc-pipeline=cpu | FileCheck %s --check-prefix=CPU
// RUN: dlc-opt %s --dlc-pipeline=cuda 2>&1 | FileCheck %s --check-prefix=%if cuda %{GPU%} %else %{CUDA%}

// hybridize()'s pipelines: canonicalize (x * 1 folds), place every op (unplaced ops go
// to the target's default device), fuse. A build with the CUDA backend runs every op of
// the cuda pipeline on gpu(0); one without it runs them on cpu(0) and says so, op by op.
// CPU-LABEL: func.func @step
// CPU: dlc.random_uniform {dlc.device = #dlc.device<cpu:0>
// CPU-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>}
// CPU-NOT: dlc.mul
// CUDA: remark: dlc.random_uniform has no kernel for gpu(0) in this build; placed on cpu(0)
// CUDA: remark: dlc.conv2d has no kernel for gpu(0) in this build; placed on cpu(0)
// CUDA: remark: dlc.relu has no kernel for gpu(0) in this build; placed on cpu(0)
// CUDA-LABEL: func.func @step
// CUDA: dlc.random_uniform {dlc.device = #dlc.device<cpu:0>
// CUDA-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<cpu:0>}
// CUDA-NOT: dlc.copy
// GPU-NOT: remark
// GPU-LABEL: func.func @step
// GPU: dlc.random_uniform {dlc.device = #dlc.device<gpu:0>
// GPU-NEXT: dlc.fused "conv2d_relu"({{.*}}) {dlc.device = #dlc.device<gpu:0>}
// GPU-NOT: dlc.copy
func.func @step(%w: tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32> {
  %x = dlc.random_uniform {seed = 3 : i64} : tensor<2x3x8x8xf32>
  %one = dlc.constant dense<1.0> : tensor<f32>
  %c = dlc.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x6x6xf32>
  %r = dlc.relu %c : tensor<2x8x6x6xf32>
  %s = dlc.mul %r, %one : (tensor<2x8x6x6xf32>, tensor<f32>) -> tensor<2x8x6x6xf32>
  return %s : tensor<2x8x6x6xf32>
}
