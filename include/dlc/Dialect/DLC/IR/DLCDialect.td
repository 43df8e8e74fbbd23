//===- DLCDialect.td - the dlc dialect definition ----------*- tablegen -*-===//
//
// The dlc dialect: tensor-level ops of dlc's Gluon-style frontend, the gradient ops of
// its training step, device placement and data-parallel collectives.
//
//===----------------------------------------------------------------------===//

#ifndef DLC_DIALECT_DLC_IR_DLCDIALECT_TD
#define DLC_DIALECT_DLC_IR_DLCDIALECT_TD

include "mlir/IR/OpBase.td"

def DLC_Dialect : Dialect {
  let name = "dlc";
  let cppNamespace = "::mlir::dlc";
  let summary = "Tensor ops, gradients, devices and collectives of dlc models";
  let description = [{
    The `dlc` dialect is what a hybridized dlc block is traced into. Its ops work on
    builtin, statically shaped, ranked tensors of `f32`, `f16`, `bf16`, `i32`, `i64`,
    `i1` and `ui8`, follow MXNet's layouts (NCHW activations, OIHW convolution weights,
    `x·Wᵀ + b` dense layers) and numpy broadcasting.

    Every op can carry a `dlc.device` attribute (`#dlc.device<gpu:1>`) saying where it
    runs, and function arguments can carry one saying where they live. An op without it
    runs where its operands are. Ops never move data between devices by themselves: an
    op whose operands are on different devices is rejected by the verifier, and an
    explicit `dlc.copy` is needed, exactly as in MXNet's eager API.

    Result types are inferred from operands and attributes; when written out in the
    textual form they are checked against the inferred ones.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that places an op or a function argument
    /// on a device.
    static constexpr ::llvm::StringLiteral getDeviceAttrName() {
      return ::llvm::StringLiteral("dlc.device");
    }
    /// Name of the module attribute listing what each device kind can run
    /// (`#dlc.target`s).
    static constexpr ::llvm::StringLiteral getTargetsAttrName() {
      return ::llvm::StringLiteral("dlc.targets");
    }
    /// On an op: the layout of each of its results (`#dlc.layout`s; absent: plain).
    static constexpr ::llvm::StringLiteral getLayoutsAttrName() {
      return ::llvm::StringLiteral("dlc.layouts");
    }
    /// On a function argument: the layout the caller binds it in (absent: plain).
    static constexpr ::llvm::StringLiteral getLayoutAttrName() {
      return ::llvm::StringLiteral("dlc.layout");
    }
    /// On a function: its results may be returned blocked (the caller reads each
    /// result's layout); without it they are plain.
    static constexpr ::llvm::StringLiteral getBlockedResultsAttrName() {
      return ::llvm::StringLiteral("dlc.blocked_results");
    }
    /// On a function argument, `[@forward, 2]`: the argument is result 2 of @forward
    /// (an activation a backward reads), bound in the layout @forward returns it in.
    static constexpr ::llvm::StringLiteral getSavedFromAttrName() {
      return ::llvm::StringLiteral("dlc.saved_from");
    }
    /// On a function result: it is returned only for another function to read
    /// (arguments with `dlc.saved_from`), not to the function's caller, so that
    /// dlc-drop-unread-saved may remove it once no such argument is read.
    static constexpr ::llvm::StringLiteral getSavedAttrName() {
      return ::llvm::StringLiteral("dlc.saved");
    }
    /// On an op: where each of its results lives (`#dlc.storage`s), as
    /// dlc-plan-memory placed it.
    static constexpr ::llvm::StringLiteral getStorageAttrName() {
      return ::llvm::StringLiteral("dlc.storage");
    }
    /// On a function: its arenas (`#dlc.arena`s), one per device its steps run on.
    static constexpr ::llvm::StringLiteral getArenasAttrName() {
      return ::llvm::StringLiteral("dlc.arenas");
    }
    /// On an op: it reads only parameters (arguments that hold no samples and no
    /// saved activations), constants and other such ops' results, so its results hold
    /// until one of those arguments changes (dlc-hoist-parameter-work marks it).
    static constexpr ::llvm::StringLiteral getPreparedAttrName() {
      return ::llvm::StringLiteral("dlc.prepared");
    }
    /// On an op that runs every time but reads its weights from values that are
    /// fixed between runs (parameters, prepared values: dlc-hoist-parameter-work marks
    /// it): the operands whose library-ready form its kernel may keep from one run to
    /// the next (a convolution's weights reordered into oneDNN's layout or
    /// Winograd-transformed), prepared again only when a parameter changed.
    static constexpr ::llvm::StringLiteral getPreparedOperandsAttrName() {
      return ::llvm::StringLiteral("dlc.prepared_operands");
    }
    /// On a function: the block (`#dlc.arena`) that keeps its prepared values from one
    /// run to the next, as dlc-plan-memory sized it.
    static constexpr ::llvm::StringLiteral getPreparedArenaAttrName() {
      return ::llvm::StringLiteral("dlc.prepared_arena");
    }
    /// On a dlc.fused region: it runs op by op (its device has no fused kernel for it),
    /// so its body's values are planned one by one.
    static constexpr ::llvm::StringLiteral getOpByOpAttrName() {
      return ::llvm::StringLiteral("dlc.op_by_op");
    }
    /// On a dlc.fused region: the generated kernel that runs it
    /// (`@dlc_host_kernels::@<function>_region_<n>`), as dlc-outline-kernels made it.
    static constexpr ::llvm::StringLiteral getKernelAttrName() {
      return ::llvm::StringLiteral("dlc.kernel");
    }
    /// On an op: a request to run it on a device (`#dlc.device`), which
    /// dlc-place-devices carries out; unlike dlc.device it is not checked against the
    /// operands' devices.
    static constexpr ::llvm::StringLiteral getPlaceAttrName() {
      return ::llvm::StringLiteral("dlc.place");
    }
    /// On a function argument: its name as the caller binds it ("data", a parameter's
    /// name).
    static constexpr ::llvm::StringLiteral getNameAttrName() {
      return ::llvm::StringLiteral("dlc.name");
    }
    /// On a function argument: a parameter (or another tensor the function captured),
    /// which changes rarely: work that reads only such arguments may be prepared once.
    static constexpr ::llvm::StringLiteral getParameterAttrName() {
      return ::llvm::StringLiteral("dlc.parameter");
    }
    /// On a function argument: it holds samples, which data parallelism splits over
    /// the devices.
    static constexpr ::llvm::StringLiteral getBatchAttrName() {
      return ::llvm::StringLiteral("dlc.batch");
    }
    /// On an op of a training step: it gives a parameter's gradient, which
    /// dlc-shard-data-parallel sums over the replicas.
    static constexpr ::llvm::StringLiteral getGradientAttrName() {
      return ::llvm::StringLiteral("dlc.gradient");
    }
    /// On a function result, `N`: the result is written back into argument N when the
    /// function ends (a running statistic, a parameter an optimizer updates).
    static constexpr ::llvm::StringLiteral getUpdatesAttrName() {
      return ::llvm::StringLiteral("dlc.updates");
    }
    /// On an op: a copy that dlc-remat placed just before the first reader of the
    /// original's result after the stretch where the program holds the most: the result
    /// is computed again there instead of being kept through that stretch.
    static constexpr ::llvm::StringLiteral getRecomputedAttrName() {
      return ::llvm::StringLiteral("dlc.recomputed");
    }
    /// On a function: what dlc-remat did, `{budget, peak_before, peak_after}` in bytes,
    /// the peaks being the most bytes its arena values hold at once on one device.
    static constexpr ::llvm::StringLiteral getRematAttrName() {
      return ::llvm::StringLiteral("dlc.remat");
    }
    /// The nested module holding the kernels generated for host devices.
    static constexpr ::llvm::StringLiteral getHostKernelsModuleName() {
      return ::llvm::StringLiteral("dlc_host_kernels");
    }
    /// The gpu.module holding the kernels generated for GPUs.
    static constexpr ::llvm::StringLiteral getGpuKernelsModuleName() {
      return ::llvm::StringLiteral("dlc_gpu_kernels");
    }
    /// The builtin module holding a host build of each GPU kernel (emulated GPUs).
    static constexpr ::llvm::StringLiteral getGpuKernelsOnHostModuleName() {
      return ::llvm::StringLiteral("dlc_gpu_kernels_on_host");
    }
  }];
}

#endif // DLC_DIALECT_DLC_IR_DLCDIALECT_TD
