//===- Passes.td - conversions out of the dlc dialect ------*- tablegen -*-===//
#ifndef DLC_CONVERSION_PASSES_TD
#define DLC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDLCToLinalg : Pass<"convert-dlc-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Turn element-wise dlc.fused regions into linalg.generic ops on tensors";
  let description = [{
    The first step of code generation: each `dlc.fused "elementwise"` region becomes one
    `linalg.generic` over its result's shape, all loops parallel. Broadcasting is made
    explicit in the indexing maps (numpy's rules: trailing dimensions aligned, a
    dimension of 1 read at index 0, a rank-0 operand read everywhere); each result is
    written into a `tensor.empty`. The body is built from each op's
    `ScalarBodyOpInterface` (`arith` and `math` ops on one element, computed in f32 as the
    kernels do). From there on the upstream passes apply: bufferization, tiling,
    vectorization, lowering to loops. Other regions (`conv2d_relu`, `dense_relu`,
    `max_pool2d_backward_relu`) and
    the ops outside regions are left as they are; a region holding an op without a scalar
    body is an error naming it.

    ```mlir
    // dlc-opt --convert-dlc-to-linalg
    %y = dlc.fused "elementwise" (%x, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> {
    ^bb0(%a: tensor<4x3xf32>, %c: tensor<3xf32>):
      %s = dlc.add %a, %c : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
      %t = dlc.tanh %s : tensor<4x3xf32>
      dlc.yield %t : tensor<4x3xf32>
    }
    // becomes
    //   %e = tensor.empty() : tensor<4x3xf32>
    //   %y = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1),
    //                                         (d0, d1) -> (d0, d1)], ...}
    //       ins(%x, %b : ...) outs(%e : ...) {
    //   ^bb0(%a: f32, %c: f32, %out: f32):
    //     %s = arith.addf %a, %c : f32
    //     %t = math.tanh %s : f32
    //     linalg.yield %t : f32
    //   } -> tensor<4x3xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::dlc::DLCDialect",
                           "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
                           "mlir::tensor::TensorDialect"];
}

def DLCOutlineKernels : Pass<"dlc-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Move each host element-wise region into a kernel function of its own";
  let description = [{
    Code generation for the CPU starts here, after dlc-plan-memory has decided which
    regions run as one step. Each `dlc.fused "elementwise"` region on a host device that
    is not `dlc.op_by_op` becomes a `func.func` in the nested module
    `@dlc_host_kernels`: one 1-d `memref<?xf32>` per region input, then per result, and
    a `linalg.generic` over them whose body is the ops' scalar bodies. A broadcast
    single-element input is read at index 0; every other operand has the region's
    element count. The region keeps its ops (they are the kernel's reference) and is
    marked `dlc.kernel = @dlc_host_kernels::@<function>_region_<n>`; the runtime calls
    that kernel on chunks of the elements. Regions whose kernels come out the same
    (ops, operand structure, broadcast pattern; not sizes) share one kernel. A region holding an op without a scalar body
    is an error naming it.

    ```mlir
    // dlc-opt --dlc-pipeline=cpu=1,generate-kernels=0 --dlc-outline-kernels
    %y = dlc.fused "elementwise" (%x, %s) {dlc.kernel = @dlc_host_kernels::@main_region_0, ...}
    ...
    module @dlc_host_kernels {
      func.func @main_region_0(%x: memref<?xf32>, %s: memref<?xf32>, %y: memref<?xf32>)
          attributes {llvm.emit_c_interface} {
        linalg.generic {indexing_maps = [(d0) -> (d0), (d0) -> (0), (d0) -> (d0)], ...}
          ins(%x, %s : memref<?xf32>, memref<?xf32>) outs(%y : memref<?xf32>) { ... }
        return
      }
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::dlc::DLCDialect",
                           "mlir::func::FuncDialect",
                           "mlir::gpu::GPUDialect", "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::LLVM::LLVMDialect"];
}

def DLCHostBuildGpuKernels : Pass<"dlc-host-build-gpu-kernels", "mlir::ModuleOp"> {
  let summary = "Clone each GPU kernel as a host function, blocks and threads as loops";
  let description = [{
    For GPUs that are emulated on the CPU (the tests' CUDA emulator runs no PTX): each
    kernel of `gpu.module @dlc_gpu_kernels` is cloned into the builtin module
    `@dlc_gpu_kernels_on_host` as a function of the same name and parameters plus the
    grid and block sizes, its body inside a loop over blocks and, within it, a loop over
    threads; `gpu.block_id x` and `gpu.thread_id x` become the loops' indices,
    `gpu.block_dim x` and `gpu.grid_dim x` the sizes. The rest of the pipeline lowers
    that module like the host kernels. Other dimensions and other GPU ops are errors.

    ```mlir
    // dlc-opt --dlc-host-build-gpu-kernels
    gpu.func @k(%x: !llvm.ptr, %n: i64) kernel { ... gpu.thread_id x ... }
    // gains
    module @dlc_gpu_kernels_on_host {
      func.func @k(%x: !llvm.ptr, %n: i64, %grid: index, %block: index) {
        scf.for %b = %c0 to %grid step %c1 {
          scf.for %t = %c0 to %block step %c1 { ... }
        }
        return
      }
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::dlc::DLCDialect",
                           "mlir::func::FuncDialect", "mlir::scf::SCFDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def DLCApproximateMath : Pass<"dlc-approximate-math"> {
  let summary = "Replace transcendental math ops by polynomial approximations";
  let description = [{
    Runs on the host kernels before their math ops become libm calls: `math.tanh`,
    `math.erf`, `math.exp`, `math.log` and the others MLIR approximates become
    arithmetic (MLIR's polynomial approximations, accurate to a few float32 ulp), which
    LLVM's loop vectorizer turns into SIMD code; a libm call would keep the loop scalar.
    Ops without an approximation are left for the libm lowering.

    ```mlir
    // dlc-opt --dlc-approximate-math
    %t = math.tanh %x : f32
    // becomes a clamp, a rational polynomial in %x and selects (arith ops only)
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect", "mlir::x86vector::X86VectorDialect"];
}

def DLCSerializeGpuKernels : Pass<"dlc-serialize-gpu-kernels", "mlir::ModuleOp"> {
  let summary = "Turn @dlc_gpu_kernels into a gpu.binary of PTX, through the kernel cache";
  let description = [{
    Runs once `gpu.module @dlc_gpu_kernels` is in the NVVM dialect with its
    `#nvvm.target`. Its PTX is looked up in the kernel cache (`cache-dir`, keyed by
    the module's text, the toolkit and the versions of dlc and LLVM; the entry's magic,
    key, size and checksum are checked); on a hit the module becomes a `gpu.binary`
    holding that PTX, on a miss upstream's serialization (`gpu-module-to-binary` with
    `format=isa`, libdevice from `toolkit`) makes it and the PTX is stored. Without
    `cache-dir` the PTX is made every time.

    ```mlir
    // dlc-opt --dlc-serialize-gpu-kernels
    gpu.module @dlc_gpu_kernels [#nvvm.target<chip = "sm_90">] { llvm.func @k(...) ... }
    // becomes
    gpu.binary @dlc_gpu_kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "...">]
    ```
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "the CUDA toolkit whose libdevice the PTX links (empty: MLIR's own search)">,
    Option<"cacheDir", "cache-dir", "std::string", /*default=*/"\"\"",
           "the kernel cache directory (empty: no cache)">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect", "mlir::gpu::GPUDialect"];
}

def DLCPackKernelEntries : Pass<"dlc-pack-kernel-entries", "mlir::ModuleOp"> {
  let summary = "Give each lowered kernel an entry taking its arguments as one array";
  let description = [{
    Runs on a kernel module once it is in the LLVM dialect. For each function with a C
    interface (`_mlir_ciface_<name>`: memref descriptors by pointer, other values as
    they are) it adds `@<name>_packed(%arguments: !llvm.ptr)`: argument k is loaded,
    with its type, from where `arguments[k]` points (MLIR's packed convention). One signature for every
    kernel, whatever its arity, is what lets the runtime call them without knowing MLIR.

    ```mlir
    // dlc-opt --dlc-pack-kernel-entries
    llvm.func @_mlir_ciface_k(%a: !llvm.ptr, %b: !llvm.ptr)
    // gains
    llvm.func @k_packed(%arguments: !llvm.ptr) {
      %0 = llvm.getelementptr %arguments[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
      %1 = llvm.load %0 : !llvm.ptr -> !llvm.ptr
      %2 = llvm.load %1 : !llvm.ptr -> !llvm.ptr
      ...
      llvm.call @_mlir_ciface_k(%2, %5) : (!llvm.ptr, !llvm.ptr) -> ()
      llvm.return
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // DLC_CONVERSION_PASSES_TD
