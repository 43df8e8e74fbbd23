//===- DLCExecution.h - how the runtime will execute dlc ops -----------------===//
//
// Facts about an op's execution that both the passes deciding a program's shape (layout
// assignment) and the lowering into runtime steps must agree on: the attributes its
// kernels read, and whether a dlc.fused region runs as one kernel step. Written once
// here so that a pass and the lowering cannot decide differently.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DIALECT_DLC_IR_DLCEXECUTION_H
#define DLC_DIALECT_DLC_IR_DLCEXECUTION_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/ShapeRules.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace mlir::dlc {

/// The attributes `op`'s kernels read, by the eager names; discardable `dlc.*` ones and
/// devices left out. False, with `error` naming the op and the attribute, for an
/// attribute the runtime cannot read.
bool readKernelAttrs(Operation *op, ::dlc::Attrs &attrs, std::string &error);

/// How a dlc.fused region runs.
enum class FusedExecution {
  library_epilogue, ///< conv2d_relu / dense_relu / max_pool2d_backward_relu: the library
                    ///< kernel with a ReLU (or ReLU gradient) epilogue
  elementwise,      ///< float32 element-wise chain as one step (chunked on host devices)
  /// conv2d_max_pool2d / max_pool2d_backward_conv2d: the convolution's (filter
  /// gradient's) kernel with the pooling (its gradient) as an epilogue (a prologue), a
  /// few images at a time (host devices); see ConvPoolRegion, PoolConvBackwardRegion.
  library_pooling,
  /// batch_norm_activation(_backward): the batch norm's kernel (its gradient's) with the
  /// activation (its gradient) folded in (host devices); see NormActivationRegion.
  library_norm,
  op_by_op, ///< no fused kernel: the body's ops one by one
};

/// dlc-fuse-norm-activation's training batch norm with the activation after it:
/// `dlc.batch_norm` (training) of the region's first three operands, optionally
/// `dlc.add` of its output and the fourth operand (a residual), then `dlc.relu` or
/// `dlc.relu6` of that; it yields the activation, then the batch mean and variance.
constexpr llvm::StringLiteral kNormActivationRegion = "batch_norm_activation";

/// ... and its gradient: `dlc.relu_backward` or `dlc.relu6_backward` of the first two
/// operands (the activation's output gradient and its output), then
/// `dlc.batch_norm_backward` of that and the other four (x, gamma, mean, variance); it
/// yields the batch norm's three gradients, then the activation's gradient where
/// something outside reads it too (a residual's shortcut).
constexpr llvm::StringLiteral kNormActivationBackwardRegion = "batch_norm_activation_backward";

/// The ops of either region that fusedExecution runs as one step.
struct NormActivationRegion {
  Operation *norm;       ///< dlc.batch_norm, or dlc.batch_norm_backward
  Operation *activation; ///< dlc.relu / dlc.relu6, or their gradients
  bool backward;
  Operation *add = nullptr; ///< forward: the dlc.add of a residual, or null
  /// The kernels' `activation` attribute: "relu" or "relu6".
  llvm::StringRef activationName() const;
};

/// `fused`'s ops when it is either region, of that shape.
std::optional<NormActivationRegion> normActivationRegion(FusedOp fused);

/// dlc-fuse-conv-pool's region: `dlc.conv2d` on the region's operands, optionally
/// `dlc.relu` of it, then `dlc.max_pool2d_indexed` of that activation; it yields the
/// pooling's two results, after the activation where something outside reads it.
constexpr llvm::StringLiteral kConvPoolRegion = "conv2d_max_pool2d";

/// The ops of a conv2d_max_pool2d region that fusedExecution runs as one step.
struct ConvPoolRegion {
  Conv2DOp conv;
  ReluOp relu; ///< null without one
  MaxPool2DIndexedOp pool;
  bool yieldsActivation; ///< the region's first result is the pooling's input
};

/// `fused`'s ops when it is a conv2d_max_pool2d region of that shape.
std::optional<ConvPoolRegion> convPoolRegion(FusedOp fused);

/// dlc-fuse-conv-pool's region of the gradients: `dlc.max_pool2d_backward_indexed` of
/// its first two operands (the pooling's output gradient and indices), then, of that
/// activation gradient, optionally `dlc.conv2d_backward_data` with the third operand
/// (the weights) and `dlc.conv2d_backward_filter` with the last (the convolution's
/// input); it yields the data gradient where there is one, then the filter's results.
constexpr llvm::StringLiteral kPoolConvBackwardRegion = "max_pool2d_backward_conv2d";

/// The ops of a max_pool2d_backward_conv2d region that fusedExecution runs as one step.
struct PoolConvBackwardRegion {
  MaxPool2DBackwardIndexedOp pool;
  Conv2DBackwardDataOp data; ///< null without one
  Conv2DBackwardFilterOp filter;
};

/// `fused`'s ops when it is a max_pool2d_backward_conv2d region of that shape.
std::optional<PoolConvBackwardRegion> poolConvBackwardRegion(FusedOp fused);

/// The name under which a device kind's kernel table (and its `#dlc.target`) says that
/// it runs an element-wise region as one step. Host devices always do (the interpreted
/// chain is their fallback); other kinds only when their target lists it.
constexpr llvm::StringLiteral kElementwiseRegionKernel = "dlc.fused.elementwise";

/// How `fused` runs on a device of `kind`, given which ops that kind has kernels for
/// (kElementwiseRegionKernel among them for a non-host kind that runs regions whole).
FusedExecution fusedExecution(FusedOp fused, DeviceKind kind,
                              llvm::function_ref<bool(StringRef op)> hasKernel);

/// For an elementwise region: elements per non-scalar value (its results' size).
int64_t fusedElements(FusedOp fused);

/// For an elementwise region: per block argument and per body result, in order (the
/// runtime's local values), whether it is a broadcast single element.
SmallVector<bool> fusedScalarValues(FusedOp fused);

/// The layout of `value` as dlc-assign-layouts recorded it: a dlc.to_layout's target,
/// its producer's `dlc.layouts` entry, or a function argument's `dlc.layout`; plain when
/// none says.
Layout valueLayout(Value value);

/// Whether the runtime runs `op` as views of its operand's storage, with no step:
/// reshapes, and splits along the first axis (whose parts are consecutive).
bool isViewOp(Operation *op);

/// Whether the module's `dlc.targets` says devices of `kind` run `op` (everything, when
/// it has none, except element-wise regions as one step on non-host kinds). Host memory kinds compute with the cpu's kernels.
bool targetRuns(Operation *scope, StringRef op, DeviceKind kind);

/// The kind of device `op` runs on, for choosing kernels: its own `dlc.device`'s, else
/// the nearest enclosing op's (a dlc.fused region's), else cpu (the host).
DeviceKind deviceKind(Operation *op);

/// Whether devices of `kind` keep their tensors in host memory (cpu, pinned, shared).
bool isHostKind(DeviceKind kind);

/// The runtime's shape and dtype of `type`: a ranked tensor of a dtype the runtime has,
/// of fewer than 2^63 bytes. False, with `why`, for any other type.
bool runtimeTensor(Type type, ::dlc::shape_rules::Shape &shape, ::dlc::DType &dtype, std::string &why);

/// The bytes the runtime holds for a value of `type` (runtimeTensor's elements times
/// their size), or nullopt, with `why`, for a type it does not hold.
std::optional<int64_t> runtimeBytes(Type type, std::string &why);

/// Whether a pass that places, orders or plans a function's ops has a body to work on:
/// false for a declaration (nothing to do: the pass skips it), true for one block that
/// ends with func.return (what the runtime runs); any other body is an error from `pass`
/// naming the function and what the runtime runs (failure).
FailureOr<bool> hasRunnableBody(func::FuncOp function, StringRef pass);

/// The device a function runs on when its ops name none: its first argument's
/// `dlc.device`, else cpu:0.
DeviceAttr functionDevice(func::FuncOp function);

/// The device `op` runs on: its `dlc.device`, else its enclosing dlc.fused region's;
/// a constant with neither is made where its first placed user runs; anything else
/// runs on `fallback`. (A dlc.copy runs on its target, a dlc.all_reduce on each of
/// its devices: callers ask those ops directly.)
DeviceAttr stepDevice(Operation *op, DeviceAttr fallback);

/// Whether the runtime draws `op` a fresh seed on every run (a random op, dropout: an op
/// with a `seed` attribute), so that its results change from run to run.
bool drawsFreshSeeds(Operation *op);

/// Whether `op` may write its one output over a same-shaped input that dies with it
/// (DLC_ElementwiseKernel: element i is read before it is written).
bool isInPlaceElementwise(Operation *op);

} // namespace mlir::dlc

#endif // DLC_DIALECT_DLC_IR_DLCEXECUTION_H
