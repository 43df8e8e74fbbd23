//===- DLCAttrs.td - dlc attributes and enums -------------*- tablegen -*-===//

#ifndef DLC_DIALECT_DLC_IR_DLCATTRS_TD
#define DLC_DIALECT_DLC_IR_DLCATTRS_TD

include "dlc/Dialect/DLC/IR/DLCDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

// The numeric values are MXNet's device type ids, so that a checkpoint or a log that
// stores them reads the same in both systems.
def DLC_DeviceKind : I32EnumAttr<"DeviceKind", "kind of device", [
    I32EnumAttrCase<"cpu", 1>,
    I32EnumAttrCase<"gpu", 2>,
    I32EnumAttrCase<"cpu_pinned", 3>,
    I32EnumAttrCase<"cpu_shared", 5>
  ]> {
  let cppNamespace = "::mlir::dlc";
  let genSpecializedAttr = 0;
}

def DLC_DeviceAttr : AttrDef<DLC_Dialect, "Device"> {
  let mnemonic = "device";
  let summary = "A device: kind and ordinal";
  let description = [{
    Names one device, as `cpu(0)` or `gpu(1)` do in the eager API.

    ```mlir
    #dlc.device<gpu:1>
    #dlc.device<cpu:0>
    #dlc.device<cpu_pinned:0>
    ```
  }];
  let parameters = (ins EnumParameter<DLC_DeviceKind>:$kind, "int64_t":$ordinal);
  // Written by hand: the declarative format would print `gpu : 1`.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Prints as the eager API does: `gpu(1)`.
    std::string str() const;
  }];
}

def DLC_DeviceArrayAttr : TypedArrayAttrBase<DLC_DeviceAttr, "array of devices">;

def DLC_TargetAttr : AttrDef<DLC_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "What one kind of device can run: the dlc ops it has kernels for";
  let description = [{
    A module's `dlc.targets` lists one per device kind that the program may use, and
    `dlc-place-devices` reads it to decide where an op can run, so that placement is a
    property of the module, not of the kernels linked into the tool that runs the pass.
    hybridize() fills it in from the runtime's kernel table. Memory-only kinds
    (`cpu_pinned`, `cpu_shared`) compute with the `cpu` kernels and need no entry of
    their own. A module without `dlc.targets` is taken to run every op everywhere.

    ```mlir
    module attributes {dlc.targets = [
        #dlc.target<cpu, ops = ["dlc.add", "dlc.conv2d", "dlc.exp"]>,
        #dlc.target<gpu, ops = ["dlc.add", "dlc.conv2d"]>]} {
    }
    ```
  }];
  let parameters = (ins EnumParameter<DLC_DeviceKind>:$kind, "::mlir::ArrayAttr":$ops);
  let assemblyFormat = "`<` $kind `,` `ops` `=` $ops `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether `op` ("dlc.exp") is among the ops this kind can run.
    bool runs(::llvm::StringRef op) const;
  }];
}

// How a tensor's elements lie in memory (dlc/Core/Layout.h): plain row-major, or
// oneDNN's blocks of 16 (nChw16c, AVX-512) or 8 (nChw8c, AVX2) channels, which the
// CPU's convolutions, pooling and batch norm run faster on.
def DLC_LayoutKind : I32EnumAttr<"Layout", "memory layout", [
    I32EnumAttrCase<"plain", 0>,
    I32EnumAttrCase<"nChw16c", 1>,
    I32EnumAttrCase<"nChw8c", 2>
  ]> {
  let cppNamespace = "::mlir::dlc";
  let genSpecializedAttr = 0;
}

def DLC_LayoutAttr : EnumAttr<DLC_Dialect, DLC_LayoutKind, "layout"> {
  let summary = "A memory layout: plain, nChw16c or nChw8c";
  let description = [{
    What `dlc-assign-layouts` decides for a value, and what `dlc.to_layout` converts
    to. On ops, `dlc.layouts` lists one per result (all plain when absent); on function
    arguments, `dlc.layout` says how the caller binds the argument.

    ```mlir
    #dlc.layout<nChw16c>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def DLC_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>,
    I32EnumAttrCase<"min", 3>
  ]> {
  let cppNamespace = "::mlir::dlc";
}

// How a CPU convolution computes (dlc-choose-conv-algorithms decides, per shape, by
// timing oneDNN's kernels on this machine): `direct` sums the window, `winograd`
// transforms tiles so that a 3x3 window takes fewer multiplications (oneDNN's F(4x4,3x3)
// or F(2x2,3x3); faster on large 3x3 layers, a few ulps less exact). Other devices and
// the reference kernels compute directly whatever it says.
def DLC_ConvAlgorithm : I32EnumAttr<"ConvAlgorithm", "convolution algorithm", [
    I32EnumAttrCase<"direct", 0>,
    I32EnumAttrCase<"winograd", 1>
  ]> {
  let cppNamespace = "::mlir::dlc";
}

def DLC_ComparePredicate : I32EnumAttr<"ComparePredicate", "comparison", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>
  ]> {
  let cppNamespace = "::mlir::dlc";
}

// Where a value lives while a compiled function runs (dlc-plan-memory decides; the
// runtime's Program mirrors these numbers).
def DLC_StorageKind : I32EnumAttr<"StorageKind", "where a value's elements live", [
    I32EnumAttrCase<"argument", 0>,
    I32EnumAttrCase<"result", 1>,
    I32EnumAttrCase<"arena", 2>,
    I32EnumAttrCase<"prepared", 3>
  ]> {
  let cppNamespace = "::mlir::dlc";
  let genSpecializedAttr = 0;
}

def DLC_StorageReuse : I32EnumAttr<"StorageReuse", "how an arena block was found", [
    I32EnumAttrCase<"fresh", 0>,
    I32EnumAttrCase<"freed", 1>,
    I32EnumAttrCase<"in_place", 2>
  ]> {
  let cppNamespace = "::mlir::dlc";
  let genSpecializedAttr = 0;
}

def DLC_StorageAttr : AttrDef<DLC_Dialect, "Storage"> {
  let mnemonic = "storage";
  let summary = "Where a value lives during a run: an argument, a result, an arena or the prepared block";
  let description = [{
    `dlc-plan-memory` writes one per result of every op that the runtime executes, as
    the op's `dlc.storage` array: the caller's argument or result buffer `index`, or
    arena `index` of the function's `dlc.arenas`, or (`prepared 0`) the function's
    `dlc.prepared_arena`, which keeps the values of `dlc.prepared` ops from one run to the
    next, and the byte `offset` into it. An arena
    block is `fresh` (the arena grew), `freed` (memory a dead value left) or `in_place`
    (the op's element-wise input, which dies there). A view (a reshape, a split part)
    lives in the storage of the value it views, at its own offset. The lowering copies
    a returned value that is not in its result's storage into it.

    ```mlir
    %0 = dlc.relu %x {dlc.storage = [#dlc.storage<arena 0 at 0>]} : tensor<64xf32>
    %1 = dlc.tanh %0 {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]} : tensor<64xf32>
    %2 = dlc.exp %1 {dlc.storage = [#dlc.storage<result 0 at 0>]} : tensor<64xf32>
    ```
  }];
  let parameters = (ins EnumParameter<DLC_StorageKind>:$kind, "int64_t":$index,
                        "int64_t":$offset, EnumParameter<DLC_StorageReuse>:$reuse);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def DLC_ArenaAttr : AttrDef<DLC_Dialect, "Arena"> {
  let mnemonic = "arena";
  let summary = "One device's arena: the memory of a run's intermediates there";
  let description = [{
    A function's `dlc.arenas` lists one per device its steps run on, in first-use
    order; `#dlc.storage<arena N ...>` indexes this list. The runtime allocates each once
    per run.

    ```mlir
    func.func @f(...) attributes {dlc.arenas = [#dlc.arena<cpu:0, 4096 bytes>]}
    ```
  }];
  let parameters = (ins "DeviceAttr":$device, "int64_t":$bytes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // DLC_DIALECT_DLC_IR_DLCATTRS_TD
