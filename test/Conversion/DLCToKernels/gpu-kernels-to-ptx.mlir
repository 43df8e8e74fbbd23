// REQUIRES: ptxas
// The cuda pipeline turns a GPU's element-wise region into PTX that ptxas assembles for
// sm_90 (and, by option, for another architecture).
// RUN: dlc-opt %s --dlc-pipeline=cuda | FileCheck %s
// RUN: dlc-opt %s --dlc-pipeline=cuda | %python %S/Inputs/extract-ptx.py > %t.ptx
// RUN: ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: dlc-opt %s '--dlc-pipeline=cuda gpu-chip=sm_80' | %python %S/Inputs/extract-ptx.py > %t.sm80.ptx
// RUN: ptxas -arch=sm_80 %t.sm80.ptx -o %t.sm80.cubin
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx

// CHECK: module attributes {{{.*}}gpu.container_module}
// CHECK: dlc.fused "elementwise"({{.*}}) {dlc.device = #dlc.device<gpu:0>, dlc.kernel = @dlc_gpu_kernels::@step_region_0
// CHECK: gpu.binary @dlc_gpu_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">
// PTX: .target sm_90
// PTX: .visible .entry step_region_0(
// PTX-COUNT-4: .param .u64 step_region_0_param_
// PTX: mov.u32 {{.*}}%ctaid.x
// PTX: ld.global.f32
// PTX: st.global.f32
// SM80: .target sm_80
module attributes {dlc.targets = [
    #dlc.target<cpu, ops = ["dlc.add", "dlc.mul", "dlc.tanh"]>,
    #dlc.target<gpu, ops = ["dlc.add", "dlc.mul", "dlc.tanh", "dlc.fused.elementwise"]>]} {
func.func @step(%x: tensor<256x3xf32>, %s: tensor<f32>) -> tensor<256x3xf32> {
  %m = dlc.mul %x, %s : (tensor<256x3xf32>, tensor<f32>) -> tensor<256x3xf32>
  %t = dlc.tanh %m : tensor<256x3xf32>
  %y = dlc.add %t, %x : (tensor<256x3xf32>, tensor<256x3xf32>) -> tensor<256x3xf32>
  return %y : tensor<256x3xf32>
}
}
