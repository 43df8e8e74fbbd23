//===- DLCOps.td - dlc dialect operations ------------------*- tablegen -*-===//
//
// Operation definitions of the dlc dialect. Element-wise ops broadcast as numpy does;
// layouts follow MXNet (NCHW, OIHW, dense weights as (units, in_units)).
//
//===----------------------------------------------------------------------===//

#ifndef DLC_DIALECT_DLC_IR_DLCOPS_TD
#define DLC_DIALECT_DLC_IR_DLCOPS_TD

include "dlc/Dialect/DLC/IR/DLCDialect.td"
include "dlc/Dialect/DLC/IR/DLCAttrs.td"
include "dlc/Dialect/DLC/IR/DLCInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Types and traits
//===----------------------------------------------------------------------===//

defvar DLC_AllElementTypes = [F32, F16, BF16, I1, I32, I64, UI8];
def DLC_Tensor : StaticShapeTensorOf<DLC_AllElementTypes>;
def DLC_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16]>;
// Batch norm's per-channel vectors: float32 whatever the data's type (MXNet's and
// cuDNN's convention for 16-bit data).
def DLC_F32Tensor : StaticShapeTensorOf<[F32]>;
def DLC_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, I32, I64, UI8]>;
def DLC_LabelTensor : StaticShapeTensorOf<[I32, I64]>;
def DLC_BoolTensor : StaticShapeTensorOf<[I1]>;

// Operands that are known to live on a device (through the producer's `dlc.device`,
// a `dlc.copy`, or a function argument attribute) must all live on the same one, and
// on the op's own `dlc.device` when it has one.
def DLC_SameOperandsDevice : NativeOpTrait<"SameOperandsDevice"> {
  let cppNamespace = "::mlir::dlc::OpTrait";
}

// Facts about an op that passes and the runtime act on. They are written here once: the
// passes test them as traits, and tools/dlc-op-facts derives the table that the MLIR-free
// layers (runtime, kernels, eager frontend) read (dlc/Core/OpFacts.h).

// The kernel computes element i of its one result from element i of each operand (or
// from an operand's only element): the result may be written over a same-shaped
// operand that dies with the op, and a chain of such ops may run chunk by chunk
// (dlc-fuse's "elementwise" regions).
def DLC_ElementwiseKernel : NativeOpTrait<"ElementwiseKernel"> {
  let cppNamespace = "::mlir::dlc::OpTrait";
}
// The operand shapes broadcast together as numpy's do.
def DLC_Broadcasting : NativeOpTrait<"Broadcasting"> {
  let cppNamespace = "::mlir::dlc::OpTrait";
}
// The result type is written, not inferred, and holds the samples along the batch axis
// when the operands do (dlc-shard-data-parallel gives it a part's batch).
def DLC_BatchShapedResult : NativeOpTrait<"BatchShapedResult"> {
  let cppNamespace = "::mlir::dlc::OpTrait";
}

// The rule that chooses the op's memory layouts on CPUs (plain NCHW, or oneDNN's
// blocked nChw16c for activations): which operands and results may be blocked, given
// the layouts the operands have. The rules are plain C++ (dlc/Core/LayoutRules.h),
// shared by the eager dispatcher and the compiler; an op without one is plain in, plain
// out.
class DLC_LayoutRule<string rule>
    : ParamNativeOpTrait<"LayoutRule", "::dlc::LayoutRule::" # rule> {
  let cppNamespace = "::mlir::dlc::OpTrait";
}

class DLC_Op<string mnemonic, list<Trait> traits = []>
    : Op<DLC_Dialect, mnemonic, !listconcat([DLC_SameOperandsDevice], traits)>;

//===----------------------------------------------------------------------===//
// Constants, random numbers, device transfer
//===----------------------------------------------------------------------===//

def DLC_ConstantOp : DLC_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "A constant tensor";
  let description = [{
    A constant has no device: every device that uses it gets the value (the lowering
    materializes one copy per device), so canonicalization may merge equal constants
    used on different devices.

    ```mlir
    %one = dlc.constant dense<1.0> : tensor<4x3xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let hasVerifier = 1;
}

class DLC_RandomOp<string mnemonic> : DLC_Op<mnemonic, [Pure]> {
  let results = (outs DLC_FloatTensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def DLC_RandomUniformOp : DLC_RandomOp<"random_uniform"> {
  let summary = "Seeded uniform random tensor in [low, high)";
  let description = [{
    The same seed always yields the same tensor, so the op is pure.

    ```mlir
    %r = dlc.random_uniform {high = 1.0 : f64, low = 0.0 : f64, seed = 7 : i64} : tensor<3x4xf32>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<F64Attr, "0.0">:$low,
                       DefaultValuedAttr<F64Attr, "1.0">:$high,
                       I64Attr:$seed);
}

def DLC_RandomNormalOp : DLC_RandomOp<"random_normal"> {
  let summary = "Seeded normal random tensor";
  let description = [{
    ```mlir
    %r = dlc.random_normal {mean = 0.0 : f64, stddev = 0.01 : f64, seed = 3 : i64} : tensor<16x3x2x2xf32>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<F64Attr, "0.0">:$mean,
                       DefaultValuedAttr<F64Attr, "1.0">:$stddev,
                       I64Attr:$seed);
}

// Not DLC_Op: a copy is the one op whose operand and result live on different devices.
def DLC_CopyOp : Op<DLC_Dialect, "copy", [Pure, SameOperandsAndResultType]> {
  let summary = "Explicit transfer of a tensor to a device";
  let description = [{
    The result lives on `device`; the operand stays where it is. Copying to the device
    the operand already lives on folds away.

    ```mlir
    %on_gpu = dlc.copy %x : tensor<3x4xf32> to #dlc.device<gpu:1>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DLC_DeviceAttr:$device);
  let results = (outs DLC_Tensor:$output);
  // The device comes last: a dialect attribute followed by `:` would read the type as
  // the attribute's own.
  let assemblyFormat = "$input `:` type($input) `to` qualified($device) attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

class DLC_UnaryOp<string mnemonic, Type tensorType, list<Trait> traits = []>
    : DLC_Op<mnemonic, !listconcat([Pure, Elementwise, DLC_ElementwiseKernel,
                                    DLC_LayoutRule<"elementwise">,
                                    DeclareOpInterfaceMethods<DLC_ScalarBodyOpInterface>,
                                    SameOperandsAndResultType], traits)> {
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let description = [{
    Applied to each element; the result has the operand's type.

    ```mlir
    %y = dlc.}] # mnemonic # [{ %x : tensor<4x3xf32>
    ```
  }];
}

def DLC_NegOp : DLC_UnaryOp<"neg", DLC_NumericTensor> { let summary = "Negation, -x"; }
def DLC_ExpOp : DLC_UnaryOp<"exp", DLC_FloatTensor> { let summary = "Exponential, e^x"; }
def DLC_LogOp : DLC_UnaryOp<"log", DLC_FloatTensor> { let summary = "Natural logarithm"; }
def DLC_SqrtOp : DLC_UnaryOp<"sqrt", DLC_FloatTensor> { let summary = "Square root"; }
def DLC_RsqrtOp : DLC_UnaryOp<"rsqrt", DLC_FloatTensor> { let summary = "Reciprocal square root, 1 / sqrt(x)"; }
def DLC_ReluOp : DLC_UnaryOp<"relu", DLC_NumericTensor> { let summary = "Rectifier, max(x, 0)"; }
def DLC_SigmoidOp : DLC_UnaryOp<"sigmoid", DLC_FloatTensor> {
  let summary = "Logistic sigmoid, 1 / (1 + e^-x)";
}
def DLC_TanhOp : DLC_UnaryOp<"tanh", DLC_FloatTensor> { let summary = "Hyperbolic tangent"; }
def DLC_GeluOp : DLC_UnaryOp<"gelu", DLC_FloatTensor> {
  let summary = "Gaussian error linear unit, x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2)))";
}

def DLC_ErfOp : DLC_UnaryOp<"erf", DLC_FloatTensor> {
  let summary = "Error function, erf(x) = 2 / sqrt(pi) * integral of e^(-t^2) from 0 to x";
}
def DLC_SoftreluOp : DLC_UnaryOp<"softrelu", DLC_FloatTensor> {
  let summary = "Softplus, log(1 + e^x) (x itself above 20), MXNet's softrelu";
}
def DLC_HardSwishOp : DLC_UnaryOp<"hard_swish", DLC_FloatTensor> {
  let summary = "Hard swish, x * min(max(x + 3, 0), 6) / 6";
}
def DLC_Relu6Op : DLC_UnaryOp<"relu6", DLC_FloatTensor> {
  let summary = "Rectifier capped at 6, min(max(x, 0), 6) (MobileNetV2's ReLU6)";
}
def DLC_SoftsignOp : DLC_UnaryOp<"softsign", DLC_FloatTensor> {
  let summary = "Softsign, x / (1 + |x|)";
}
def DLC_SiluOp : DLC_UnaryOp<"silu", DLC_FloatTensor> {
  let summary = "Sigmoid linear unit, x * sigmoid(x) (Swish with beta = 1)";
}
def DLC_SeluOp : DLC_UnaryOp<"selu", DLC_FloatTensor> {
  let summary = "Scaled exponential linear unit, scale * (x > 0 ? x : alpha * (e^x - 1))";
  let description = [{
    With the fixed constants of self-normalizing networks, alpha = 1.6732632423543772
    and scale = 1.0507009873554805 (as MXNet's `LeakyReLU(act_type='selu')`, PyTorch's
    `selu` and ONNX's `Selu` defaults).

    ```mlir
    %y = dlc.selu %x : tensor<4x3xf32>
    ```
  }];
}

def DLC_ReluBackwardOp : DLC_Op<"relu_backward", [Pure, Elementwise, DLC_ElementwiseKernel,
                                                   DLC_LayoutRule<"elementwise">,
                                                   DeclareOpInterfaceMethods<DLC_ScalarBodyOpInterface>,
                                                   SameOperandsAndResultType]> {
  let summary = "Gradient of relu: grad_output where input > 0, else 0";
  let description = [{
    One pass instead of the compare and select it decomposes into, since element-wise
    passes dominate eager training steps.

    ```mlir
    %dx = dlc.relu_backward %dy, %x : tensor<4x32x127x127xf32>
    ```
  }];
  let arguments = (ins DLC_NumericTensor:$grad_output, DLC_NumericTensor:$input);
  let results = (outs DLC_NumericTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

def DLC_Relu6BackwardOp : DLC_Op<"relu6_backward", [Pure, Elementwise, DLC_ElementwiseKernel,
                                                     DLC_LayoutRule<"elementwise">,
                                                     DeclareOpInterfaceMethods<DLC_ScalarBodyOpInterface>,
                                                     SameOperandsAndResultType]> {
  let summary = "Gradient of relu6: grad_output where 0 < output < 6, else 0";
  let description = [{
    Reads relu6's output rather than its input (the two are inside (0, 6) at the same
    places), so the forward's input need not be kept for the gradient.

    ```mlir
    %dx = dlc.relu6_backward %dy, %y : tensor<8x96x56x56xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$output);
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $output attr-dict `:` type($output)";
}

def DLC_GeluBackwardOp : DLC_Op<"gelu_backward", [Pure, Elementwise, DLC_ElementwiseKernel,
                                                   DLC_LayoutRule<"elementwise">,
                                                   DeclareOpInterfaceMethods<DLC_ScalarBodyOpInterface>,
                                                   SameOperandsAndResultType]> {
  let summary = "Gradient of gelu: grad_output * (Phi(x) + x * phi(x))";
  let description = [{
    The derivative of the exact (erf) GELU, with Phi the standard normal distribution
    function and phi its density, times the output gradient, in one pass: the
    composition would take seven element-wise ops and keep their intermediates.

    ```mlir
    %dx = dlc.gelu_backward %dy, %x : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$input);
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

class DLC_BinaryOp<string mnemonic, list<Trait> traits = []>
    : DLC_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultElementType,
                                    InferTypeOpAdaptor, DLC_Broadcasting,
                                    DLC_ElementwiseKernel, DLC_LayoutRule<"elementwise">,
                                    DeclareOpInterfaceMethods<DLC_ScalarBodyOpInterface>],
                                   traits)> {
  let arguments = (ins DLC_NumericTensor:$lhs, DLC_NumericTensor:$rhs);
  let results = (outs DLC_NumericTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let description = [{
    Element-wise, with numpy broadcasting of the two shapes (trailing dimensions
    aligned; a dimension of 1 stretches). Both operands have the same element type;
    use `dlc.cast` to convert.

    ```mlir
    %z = dlc.}] # mnemonic # [{ %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    ```
  }];
}

def DLC_AddOp : DLC_BinaryOp<"add", [Commutative]> {
  let summary = "Sum, x + y";
  let hasFolder = 1;
}
def DLC_SubOp : DLC_BinaryOp<"sub"> {
  let summary = "Difference, x - y";
  let hasFolder = 1;
}
def DLC_MulOp : DLC_BinaryOp<"mul", [Commutative]> {
  let summary = "Product, x * y";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}
def DLC_DivOp : DLC_BinaryOp<"div"> {
  let summary = "Quotient, x / y";
  let hasFolder = 1;
}
def DLC_PowOp : DLC_BinaryOp<"pow"> { let summary = "Power, x ^ y"; }
def DLC_MaxOp : DLC_BinaryOp<"max", [Commutative]> { let summary = "Element-wise maximum"; }
def DLC_MinOp : DLC_BinaryOp<"min", [Commutative]> { let summary = "Element-wise minimum"; }

def DLC_LeakyReluOp : DLC_BinaryOp<"leaky_relu"> {
  let summary = "Leaky rectifier, x > 0 ? x : slope * x, with a broadcast slope";
  let description = [{
    The slope is an operand, broadcast as numpy does: a scalar for LeakyReLU, a learned
    per-channel vector shaped to the channel axis for PReLU (`tensor<8x1x1xf32>` for
    NCHW images). A NaN input stays NaN.

    ```mlir
    %y = dlc.leaky_relu %x, %slope : (tensor<2x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$lhs, DLC_FloatTensor:$rhs);
  let results = (outs DLC_FloatTensor:$output);
}
def DLC_EluOp : DLC_BinaryOp<"elu"> {
  let summary = "Exponential linear unit, x > 0 ? x : alpha * (e^x - 1), alpha broadcast";
  let description = [{
    Alpha is an operand (a scalar in Gluon's `ELU`), broadcast as numpy does.

    ```mlir
    %y = dlc.elu %x, %alpha : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$lhs, DLC_FloatTensor:$rhs);
  let results = (outs DLC_FloatTensor:$output);
}

def DLC_CompareOp : DLC_Op<"compare", [Pure, SameOperandsElementType, InferTypeOpAdaptor,
                                       DLC_Broadcasting]> {
  let summary = "Element-wise comparison with broadcasting, giving i1";
  let description = [{
    ```mlir
    %positive = dlc.compare gt, %x, %zero : (tensor<4x3xf32>, tensor<1xf32>) -> tensor<4x3xi1>
    ```
  }];
  let arguments = (ins DLC_ComparePredicate:$predicate, DLC_NumericTensor:$lhs,
                       DLC_NumericTensor:$rhs);
  let results = (outs DLC_BoolTensor:$output);
  let assemblyFormat =
      "$predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def DLC_SelectOp : DLC_Op<"select", [Pure, InferTypeOpAdaptor, DLC_Broadcasting]> {
  let summary = "Element-wise choice: condition ? on_true : on_false (numpy `where`)";
  let description = [{
    The three shapes broadcast together.

    ```mlir
    %y = dlc.select %mask, %x, %zero : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<1xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins DLC_BoolTensor:$condition, DLC_Tensor:$on_true, DLC_Tensor:$on_false);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def DLC_CastOp : DLC_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "Element type conversion (`astype`)";
  let description = [{
    ```mlir
    %h = dlc.cast %x : tensor<4x3xf32> to tensor<4x3xf16>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and neural-network layers
//===----------------------------------------------------------------------===//

def DLC_MatmulOp : DLC_Op<"matmul", [Pure, SameOperandsAndResultElementType,
                                     InferTypeOpAdaptor]> {
  let summary = "Batched matrix product with optional transposed operands";
  let description = [{
    Operands have rank 2 or more; leading (batch) dimensions broadcast. With
    `transpose_a` / `transpose_b` the last two dimensions of that operand are swapped
    first, which is how gradients of dense layers are written without a transpose op.

    ```mlir
    %c = dlc.matmul %a, %b : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
    %g = dlc.matmul %dy, %x {transpose_a} : (tensor<4x6xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
    ```
  }];
  let arguments = (ins DLC_NumericTensor:$lhs, DLC_NumericTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs DLC_NumericTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def DLC_DenseOp : DLC_Op<"dense", [Pure, SameOperandsAndResultElementType,
                                   InferTypeOpAdaptor]> {
  let summary = "Fully connected layer: x·Wᵀ + b, weights as (units, in_units)";
  let description = [{
    `input` is (..., in_units), `weight` is (units, in_units) as in MXNet's Dense,
    the optional `bias` is (units); the result is (..., units).

    ```mlir
    %y = dlc.dense %x, %w, %b : (tensor<4x21632xf32>, tensor<100x21632xf32>, tensor<100xf32>) -> tensor<4x100xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$input, DLC_FloatTensor:$weight,
                       Optional<DLC_FloatTensor>:$bias);
  let results = (outs DLC_FloatTensor:$output);
  let assemblyFormat =
      "$input `,` $weight (`,` $bias^)? attr-dict `:` "
      "functional-type(operands, results)";
}

// Window attributes shared by convolution and its gradients.
defvar DLC_ConvAttrs = (ins
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
    DefaultValuedAttr<I64Attr, "1">:$groups,
    DefaultValuedAttr<DLC_ConvAlgorithm, "::mlir::dlc::ConvAlgorithm::direct">:$algorithm);

def DLC_Conv2DOp : DLC_Op<"conv2d", [Pure, SameOperandsAndResultElementType,
                                     InferTypeOpAdaptor, DLC_LayoutRule<"conv">]> {
  let summary = "2-D convolution, NCHW input, OIHW weight";
  let description = [{
    `input` is (N, C, H, W), `weight` is (O, C / groups, KH, KW), the optional `bias`
    is (O). `stride`, `padding` (symmetric, per spatial dimension) and `dilation` have
    two entries (H, W). The result is (N, O, OH, OW) with
    `OH = (H + 2·pad - dilation·(KH - 1) - 1) / stride + 1`, rounded down. `algorithm`
    (here and on the two gradients) says how a CPU kernel computes it: `direct` unless
    dlc-choose-conv-algorithms measured `winograd` faster for this shape.

    ```mlir
    %y = dlc.conv2d %x, %w, %b {padding = array<i64: 1, 1>} : (tensor<4x3x128x128xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>) -> tensor<4x32x128x128xf32>
    %z = dlc.conv2d %y, %v algorithm winograd {padding = array<i64: 1, 1>} : (tensor<4x32x128x128xf32>, tensor<32x32x3x3xf32>) -> tensor<4x32x128x128xf32>
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$input, DLC_FloatTensor:$weight,
                            Optional<DLC_FloatTensor>:$bias), DLC_ConvAttrs);
  let results = (outs DLC_FloatTensor:$output);
  let assemblyFormat =
      "$input `,` $weight (`,` $bias^)? (`algorithm` $algorithm^)? attr-dict `:` "
      "functional-type(operands, results)";
}

def DLC_Conv2DBackwardDataOp : DLC_Op<"conv2d_backward_data",
    [Pure, SameOperandsAndResultElementType, DLC_BatchShapedResult,
     DLC_LayoutRule<"conv">]> {
  let summary = "Gradient of conv2d with respect to its input";
  let description = [{
    Given the gradient of a `dlc.conv2d` result and its weight, computes the gradient of
    its input. The input shape is the result type (strides make it ambiguous otherwise);
    the verifier checks that a convolution of that shape gives `grad_output`'s shape.

    ```mlir
    %dx = dlc.conv2d_backward_data %dy, %w {stride = array<i64: 2, 2>} : (tensor<4x8x3x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x3x8x8xf32>
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$weight),
                       DLC_ConvAttrs);
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat =
      "$grad_output `,` $weight (`algorithm` $algorithm^)? attr-dict `:` "
      "functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_Conv2DBackwardFilterOp : DLC_Op<"conv2d_backward_filter",
    [Pure, SameOperandsAndResultElementType, DLC_LayoutRule<"conv_backward_filter">]> {
  let summary = "Gradient of conv2d with respect to its weight";
  let description = [{
    Given the gradient of a `dlc.conv2d` result and its input, computes the gradient of
    its weight; the weight shape is the result type and is checked by the verifier.
    With a second result it also computes the bias gradient, the sum of `grad_output`
    over axes 0, 2 and 3 (shape (O)), in the same pass over `grad_output` where the
    kernels can (oneDNN's does).

    ```mlir
    %dw = dlc.conv2d_backward_filter %dy, %x : (tensor<4x32x127x127xf32>, tensor<4x3x128x128xf32>) -> tensor<32x3x2x2xf32>
    %dw2, %db = dlc.conv2d_backward_filter %dy, %x : (tensor<4x32x127x127xf32>, tensor<4x3x128x128xf32>) -> (tensor<32x3x2x2xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$input),
                       DLC_ConvAttrs);
  let results = (outs DLC_FloatTensor:$grad_weight, Optional<DLC_FloatTensor>:$grad_bias);
  let assemblyFormat =
      "$grad_output `,` $input (`algorithm` $algorithm^)? attr-dict `:` "
      "functional-type(operands, results)";
  let hasVerifier = 1;
}

// Window attributes shared by the pooling ops and their gradients. `ceil_mode` is
// MXNet's pooling_convention='full'.
defvar DLC_PoolAttrs = (ins
    DenseI64ArrayAttr:$kernel,
    DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
    DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    UnitAttr:$ceil_mode);

class DLC_PoolOp<string mnemonic, dag extraAttrs, string example, list<Trait> traits = []>
    : DLC_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultElementType,
                                    InferTypeOpAdaptor], traits)> {
  let arguments = !con((ins DLC_FloatTensor:$input), DLC_PoolAttrs, extraAttrs);
  let results = (outs DLC_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let description = [{
    `input` is (N, C, H, W); `kernel`, `stride` and `padding` have two entries (H, W).
    `OH = (H + 2·pad - kernel) / stride + 1`, rounded down, or up with `ceil_mode`.

    ```mlir
    }] # example # [{
    ```
  }];
}

def DLC_MaxPool2DOp : DLC_PoolOp<"max_pool2d", (ins),
    "%y = dlc.max_pool2d %x {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x32x127x127xf32>) -> tensor<4x32x62x62xf32>",
    [DLC_LayoutRule<"max_pool">]> {
  let summary = "2-D max pooling, NCHW";
}

def DLC_AvgPool2DOp : DLC_PoolOp<"avg_pool2d",
    (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad),
    "%y = dlc.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x3x3xf32>"> {
  let summary = "2-D average pooling, NCHW";
}

def DLC_MaxPool2DBackwardOp : DLC_Op<"max_pool2d_backward",
    [Pure, SameOperandsElementType, AllTypesMatch<["input", "grad_input"]>,
     DLC_BatchShapedResult, DLC_LayoutRule<"max_pool_backward">]> {
  let summary = "Gradient of max_pool2d: routes each gradient to its window's maximum";
  let description = [{
    ```mlir
    %dx = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x32x62x62xf32>, tensor<4x32x127x127xf32>) -> tensor<4x32x127x127xf32>
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$input),
                       DLC_PoolAttrs);
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat =
      "$grad_output `,` $input attr-dict `:` "
      "functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_MaxPool2DIndexedOp : DLC_Op<"max_pool2d_indexed",
    [Pure, InferTypeOpAdaptor, DLC_LayoutRule<"max_pool">]> {
  let summary = "max_pool2d that also says where each window's maximum was";
  let description = [{
    `output` is `max_pool2d`'s. `indices` (one byte per output, in the output's layout)
    names the tap of each window's first maximum, row-major within the window
    (padding counted), with bit 7 set where that maximum is not > 0; 255 marks a window
    that covers no input. Windows have at most 127 taps. dlc-keep-pool-indices makes a
    training forward's pooling this op, so that its gradient
    (`max_pool2d_backward_indexed`) reads these bytes instead of the pooling's input.

    ```mlir
    %y, %where = dlc.max_pool2d_indexed %x {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x32x127x127xf32>) -> (tensor<4x32x62x62xf32>, tensor<4x32x62x62xui8>)
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$input), DLC_PoolAttrs);
  let results = (outs DLC_FloatTensor:$output, StaticShapeTensorOf<[UI8]>:$indices);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_MaxPool2DBackwardIndexedOp : DLC_Op<"max_pool2d_backward_indexed",
    [Pure, AllElementTypesMatch<["grad_output", "grad_input"]>, DLC_BatchShapedResult,
     DLC_LayoutRule<"max_pool_backward">]> {
  let summary = "Gradient of max_pool2d from max_pool2d_indexed's indices";
  let description = [{
    Adds each window's gradient at the input its index names, as
    `max_pool2d_backward` does from the pooling's input; the input's shape is the
    result type. With `relu`, only windows whose maximum was > 0 pass their gradient:
    the gradient of a ReLU before the pooling, folded in (what
    `relu_backward(max_pool2d_backward(dy, x), x)` computes).

    ```mlir
    %dx = dlc.max_pool2d_backward_indexed %dy, %where {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>, relu} : (tensor<4x32x62x62xf32>, tensor<4x32x62x62xui8>) -> tensor<4x32x127x127xf32>
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$grad_output, StaticShapeTensorOf<[UI8]>:$indices),
                       DLC_PoolAttrs, (ins UnitAttr:$relu));
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat =
      "$grad_output `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_AvgPool2DBackwardOp : DLC_Op<"avg_pool2d_backward",
    [Pure, SameOperandsAndResultElementType, DLC_BatchShapedResult]> {
  let summary = "Gradient of avg_pool2d; the input shape is the result type";
  let description = [{
    ```mlir
    %dx = dlc.avg_pool2d_backward %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x3x3xf32>) -> tensor<1x8x6x6xf32>
    ```
  }];
  let arguments = !con((ins DLC_FloatTensor:$grad_output), DLC_PoolAttrs,
                       (ins DefaultValuedAttr<BoolAttr, "true">:$count_include_pad));
  let results = (outs DLC_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_BatchNormOp : DLC_Op<"batch_norm", [Pure, InferTypeOpAdaptor,
                                             DLC_LayoutRule<"batch_norm">]> {
  let summary = "Batch normalization over `axis` (channels), training or inference";
  let description = [{
    `gamma`, `beta` and the running statistics (`running_mean`, `running_var`) are
    vectors of the size of the `axis` dimension of `input`. In inference mode the running
    statistics normalize and the op has one result. With `training` the batch statistics
    normalize, the running statistics may be left out (the op does not read them), and
    the op also returns the batch mean and (biased) variance, which the caller folds into
    the running statistics with `momentum` and which `dlc.batch_norm_backward` takes.
    The input may be float32, float16 or bfloat16; the per-channel vectors and the batch
    statistics are float32.

    ```mlir
    %y, %mean, %var = dlc.batch_norm %x, %g, %b {training} : (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>)
    %y2, %mean2, %var2 = dlc.batch_norm %x, %g, %b, %rm, %rv {training} : (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>)
    %z = dlc.batch_norm %x, %g, %b, %rm, %rv : (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32x62x62xf32>
    %h, %hmean, %hvar = dlc.batch_norm %xh, %g, %b {training} : (tensor<4x32x62x62xf16>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x62x62xf16>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$input, DLC_F32Tensor:$gamma,
                       DLC_F32Tensor:$beta, Variadic<DLC_F32Tensor>:$running_stats,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum,
                       DefaultValuedAttr<I64Attr, "1">:$axis,
                       UnitAttr:$training);
  let results = (outs DLC_FloatTensor:$output, Variadic<DLC_F32Tensor>:$batch_stats);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_BatchNormBackwardOp : DLC_Op<"batch_norm_backward",
    [Pure, InferTypeOpAdaptor, DLC_LayoutRule<"batch_norm_backward">]> {
  let summary = "Gradients of training-mode batch_norm: input, gamma and beta";
  let description = [{
    `batch_mean` and `batch_var` are the statistics the forward op returned.
    `grad_output` has the input's element type (float32, float16 or bfloat16); gamma,
    the statistics and their gradients are float32.

    ```mlir
    %dx, %dg, %db = dlc.batch_norm_backward %dy, %x, %g, %mean, %var : (tensor<4x32x62x62xf32>, tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$input,
                       DLC_F32Tensor:$gamma, DLC_F32Tensor:$batch_mean,
                       DLC_F32Tensor:$batch_var,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs DLC_FloatTensor:$grad_input, DLC_F32Tensor:$grad_gamma,
                      DLC_F32Tensor:$grad_beta);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_AttentionOp : DLC_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "Scaled dot-product attention, fused: the score matrix never exists whole";
  let description = [{
    `output = dropout(softmax(query · keyᵀ · scale + mask)) · value` for each leading
    (batch, head) index, with `query` (..., Lq, D), `key` (..., Lk, D) and `value`
    (..., Lk, Dv) of one element type. The optional `mask` broadcasts to the scores
    (..., Lq, Lk): boolean, true where a query may attend (a padding or causal mask), or
    of the queries' type, added to the scores. With `causal` query i attends keys
    j <= i. A query that may attend no key gets zeros. `dropout` drops attention weights
    with that probability, scaling the kept ones by 1 / (1 - dropout); element (b, i, j)
    is dropped by a hash of (`seed`, its index). A compiled program draws a fresh `seed`
    for every run, as for `dlc.dropout`.

    The second result is each query's log-sum-exp of its (scaled, masked) scores, float32,
    the query's shape less its features; the third the seed the dropout used (0-d int64).
    With the operands and the output they are all `dlc.attention_backward` needs: it
    recomputes the weights, and drops the same ones. The kernels walk keys in blocks with a running maximum and
    sum (an online softmax), so memory grows with the sequence, not with its square.

    ```mlir
    %o, %lse, %seed = dlc.attention %q, %k, %v {causal, scale = 0.125 : f64} : (tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>) -> (tensor<2x12x128x64xf32>, tensor<2x12x128xf32>, tensor<i64>)
    %p, %plse, %pseed = dlc.attention %q, %k, %v, %pad {dropout = 0.1 : f64, scale = 0.125 : f64, seed = 7 : i64} : (tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x1x1x128xi1>) -> (tensor<2x12x128x64xf32>, tensor<2x12x128xf32>, tensor<i64>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$query, DLC_FloatTensor:$key, DLC_FloatTensor:$value,
                       Optional<DLC_Tensor>:$mask, F64Attr:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs DLC_FloatTensor:$output, DLC_F32Tensor:$logsumexp,
                      StaticShapeTensorOf<[I64]>:$used_seed);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_AttentionBackwardOp : DLC_Op<"attention_backward", [Pure, InferTypeOpAdaptor]> {
  let summary = "Gradients of attention: query, key and value";
  let description = [{
    From the output gradient, the forward's operands, its output, log-sum-exp and seed,
    with the forward's `scale`, `causal` and `dropout`: the weights are recomputed block
    by block from the log-sum-exp, never stored. A mask gets no gradient.

    ```mlir
    %dq, %dk, %dv = dlc.attention_backward %do, %q, %k, %v, %o, %lse, %seed {causal, scale = 0.125 : f64} : (tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128xf32>, tensor<i64>) -> (tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$query,
                       DLC_FloatTensor:$key, DLC_FloatTensor:$value, DLC_FloatTensor:$output,
                       DLC_F32Tensor:$logsumexp, StaticShapeTensorOf<[I64]>:$used_seed,
                       Optional<DLC_Tensor>:$mask, F64Attr:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout);
  let results = (outs DLC_FloatTensor:$grad_query, DLC_FloatTensor:$grad_key,
                      DLC_FloatTensor:$grad_value);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_LayerNormOp : DLC_Op<"layer_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "Layer normalization over one axis, with the statistics it used";
  let description = [{
    Each row along `axis` (the features of one token, say) is normalized with its own
    mean and biased variance, `(x - mean) / sqrt(var + epsilon)`, then scaled by
    `gamma` and shifted by `beta`, vectors of the axis's size. The statistics are
    computed in float32 whatever the input's type (float32, float16 or bfloat16) and
    returned, with the input's shape less the axis, for `dlc.layer_norm_backward`.

    ```mlir
    %y, %mean, %var = dlc.layer_norm %x, %g, %b {axis = -1 : i64} : (tensor<4x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> (tensor<4x128x768xf32>, tensor<4x128xf32>, tensor<4x128xf32>)
    %h, %hmean, %hvar = dlc.layer_norm %xh, %g, %b {axis = 1 : i64, epsilon = 1.0e-12 : f64} : (tensor<4x768x2xbf16>, tensor<768xf32>, tensor<768xf32>) -> (tensor<4x768x2xbf16>, tensor<4x2xf32>, tensor<4x2xf32>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$input, DLC_F32Tensor:$gamma, DLC_F32Tensor:$beta,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs DLC_FloatTensor:$output, DLC_F32Tensor:$mean, DLC_F32Tensor:$var);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_LayerNormBackwardOp : DLC_Op<"layer_norm_backward", [Pure, InferTypeOpAdaptor]> {
  let summary = "Gradients of layer_norm: input, gamma and beta";
  let description = [{
    `mean` and `var` are the statistics `dlc.layer_norm` returned for `input`.
    `grad_output` has the input's shape and element type; gamma, the statistics and the
    gradients of gamma and beta are float32, and every sum is taken in float32.

    ```mlir
    %dx, %dg, %db = dlc.layer_norm_backward %dy, %x, %g, %mean, %var {axis = -1 : i64} : (tensor<4x128x768xf32>, tensor<4x128x768xf32>, tensor<768xf32>, tensor<4x128xf32>, tensor<4x128xf32>) -> (tensor<4x128x768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_output, DLC_FloatTensor:$input,
                       DLC_F32Tensor:$gamma, DLC_F32Tensor:$mean, DLC_F32Tensor:$var,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs DLC_FloatTensor:$grad_input, DLC_F32Tensor:$grad_gamma,
                      DLC_F32Tensor:$grad_beta);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_DropoutOp : DLC_Op<"dropout", [Pure, InferTypeOpAdaptor]> {
  let summary = "Seeded dropout returning the kept-element mask";
  let description = [{
    Zeroes each element with probability `ratio` and scales the kept ones by
    `1 / (1 - ratio)`. The mask (true = kept) is what the gradient needs. Only emitted
    in training mode; in inference, dropout is the identity and is not traced.

    ```mlir
    %y, %mask = dlc.dropout %x {ratio = 2.000000e-01 : f64, seed = 11 : i64} : (tensor<4x100xf32>) -> (tensor<4x100xf32>, tensor<4x100xi1>)
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$input, F64Attr:$ratio, I64Attr:$seed);
  let results = (outs DLC_FloatTensor:$output, DLC_BoolTensor:$mask);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def DLC_ToLayoutOp : DLC_Op<"to_layout", [Pure, SameOperandsAndResultType]> {
  let summary = "The same tensor with its elements rearranged into another memory layout";
  let description = [{
    Values are unchanged: only where each element sits in memory. `dlc-assign-layouts`
    inserts these where an op's kernels want an operand in the other layout; the
    result's layout is `layout`, the operand's is what its producer wrote. Only 4-D
    float32 tensors whose channel count is a multiple of 16 can be blocked.

    ```mlir
    %b = dlc.to_layout %x : tensor<4x32x8x8xf32> to #dlc.layout<nChw16c>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DLC_LayoutAttr:$layout);
  let results = (outs DLC_Tensor:$output);
  // The layout comes last, as dlc.copy's device does: a dialect attribute followed by
  // `:` would read the type as the attribute's own.
  let assemblyFormat = "$input `:` type($input) `to` qualified($layout) attr-dict";
  let hasVerifier = 1;
}

def DLC_ReshapeOp : DLC_Op<"reshape", [Pure, SameOperandsAndResultElementType,
                                       DLC_BatchShapedResult]> {
  let summary = "Same elements, new static shape";
  let description = [{
    The result type gives the shape; the element count must not change.

    ```mlir
    %y = dlc.reshape %x : tensor<4x6xf32> to tensor<2x12xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def DLC_FlattenOp : DLC_Op<"flatten", [Pure, SameOperandsAndResultElementType,
                                       InferTypeOpAdaptor]> {
  let summary = "(N, d1, d2, ...) to (N, d1·d2·...), as Gluon's Flatten";
  let description = [{
    ```mlir
    %y = dlc.flatten %x : (tensor<4x128x13x13xf32>) -> tensor<4x21632xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def DLC_TransposeOp : DLC_Op<"transpose", [Pure, SameOperandsAndResultElementType,
                                           InferTypeOpAdaptor]> {
  let summary = "Permutes dimensions: result dim i is input dim permutation[i]";
  let description = [{
    ```mlir
    %y = dlc.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def DLC_BroadcastToOp : DLC_Op<"broadcast_to", [Pure, SameOperandsAndResultElementType,
                                                 DLC_BatchShapedResult]> {
  let summary = "Numpy broadcast to the result type's shape";
  let description = [{
    ```mlir
    %y = dlc.broadcast_to %b : tensor<3xf32> to tensor<4x3xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def DLC_ReduceOp : DLC_Op<"reduce", [Pure, SameOperandsAndResultElementType,
                                     InferTypeOpAdaptor, DLC_LayoutRule<"channel_reduce">]> {
  let summary = "Reduction (sum, mean, max, min) over axes, optionally kept as 1";
  let description = [{
    `axes` are distinct, non-empty, and may count from the end (-1 is the last).

    ```mlir
    %s = dlc.reduce sum %x {axes = array<i64: 0, 2, 3>} : (tensor<4x32x8x8xf32>) -> tensor<32xf32>
    %m = dlc.reduce mean %x {axes = array<i64: -1>, keepdims} : (tensor<4x10xf32>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins DLC_ReduceKind:$kind, DLC_NumericTensor:$input,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs DLC_NumericTensor:$output);
  let assemblyFormat = "$kind $input attr-dict `:` functional-type(operands, results)";
}

def DLC_ArgmaxOp : DLC_Op<"argmax", [Pure, InferTypeOpAdaptor]> {
  let summary = "Index of the maximum along an axis (the first one on ties), as i64";
  let description = [{
    ```mlir
    %labels = dlc.argmax %logits {axis = 1 : i64} : (tensor<4x10xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins DLC_NumericTensor:$input, I64Attr:$axis, UnitAttr:$keepdims);
  let results = (outs StaticShapeTensorOf<[I64]>:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def DLC_TakeOp : DLC_Op<"take", [Pure, InferTypeOpAdaptor]> {
  let summary = "The slices of a tensor along an axis that integer indices name (embedding lookup)";
  let description = [{
    `output[i..., j..., k...] = input[i..., indices[j...], k...]` with `i` the dimensions
    before `axis` and `k` those after it: the result has the indices' shape in place of
    the axis. An index in `[-size, 0)` counts from the end, as NumPy's; one outside
    `[-size, size)` is an error naming it when the kernel runs. With `axis = 0` and a
    `(vocabulary, features)` table this is an embedding lookup; the kernels copy
    elements of any type.

    ```mlir
    %vectors = dlc.take %table, %ids {axis = 0 : i64} : (tensor<100x16xf32>, tensor<4x7xi64>) -> tensor<4x7x16xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DLC_LabelTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
}

def DLC_TakeBackwardOp : DLC_Op<"take_backward", [Pure, InferTypeOpAdaptor]> {
  let summary = "Gradient of take with respect to its input: a scatter-add";
  let description = [{
    Zeros of the input's shape (`size` along `axis`), to which each slice of
    `grad_output` is added at the index that took it; an index taken twice gets the sum,
    added in the indices' order. Float32 only: the gradient of a 16-bit input is added in
    float32 and rounded once (casts around this op), so that every device adds alike.

    ```mlir
    %dtable = dlc.take_backward %dvectors, %ids {axis = 0 : i64, size = 100 : i64} : (tensor<4x7x16xf32>, tensor<4x7xi64>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins DLC_F32Tensor:$grad_output, DLC_LabelTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis, I64Attr:$size);
  let results = (outs DLC_F32Tensor:$grad_input);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def DLC_SliceOp : DLC_Op<"slice", [Pure, SameOperandsAndResultElementType,
                                   InferTypeOpAdaptor]> {
  let summary = "A strided slice of every axis (NumPy's basic indexing)";
  let description = [{
    Along axis `d` the result keeps the elements `begin[d]`, `begin[d] + step[d]`, ...
    that come before `end[d]` (after it when the step is negative), as
    `input[b0:e0:s0, b1:e1:s1, ...]` does. `begin` and `end` are positions, resolved as
    Python's `slice.indices` resolves them (the frontend turns NumPy's negative indices
    into positions and clamps them): for a positive step both lie in `[0, size]`, for a
    negative one in `[-1, size - 1]`, where `end = -1` runs through element 0. A step is
    never 0. The kernels copy elements of any type.

    ```mlir
    %y = dlc.slice %x {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
    %r = dlc.slice %x {begin = array<i64: 3, 0>, end = array<i64: -1, 8>, step = array<i64: -1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DenseI64ArrayAttr:$begin, DenseI64ArrayAttr:$end,
                       DenseI64ArrayAttr:$step);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def DLC_SliceBackwardOp : DLC_Op<"slice_backward", [Pure, SameOperandsAndResultElementType,
                                                    InferTypeOpAdaptor]> {
  let summary = "Gradient of slice: the gradient placed where the slice was taken, zeros elsewhere";
  let description = [{
    The result has the sliced tensor's shape, `shape`; the elements that
    `dlc.slice` with the same `begin`, `end` and `step` keeps hold `grad_output`, the
    others are zero. A slice never takes an element twice, so nothing is added.

    ```mlir
    %dx = dlc.slice_backward %dy {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>, shape = array<i64: 4, 8>} : (tensor<4x2xf32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$grad_output, DenseI64ArrayAttr:$begin,
                       DenseI64ArrayAttr:$end, DenseI64ArrayAttr:$step,
                       DenseI64ArrayAttr:$shape);
  let results = (outs DLC_Tensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` functional-type(operands, results)";
}

def DLC_SplitOp : DLC_Op<"split", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Cuts a tensor along an axis into consecutive parts";
  let description = [{
    The result types give the part sizes, which may differ (as `split_and_load` does for
    a batch that does not divide evenly); they add up to the axis size.

    ```mlir
    %a, %b = dlc.split %x {axis = 0 : i64} : tensor<5x3xf32> -> tensor<3x3xf32>, tensor<2x3xf32>
    ```
  }];
  let arguments = (ins DLC_Tensor:$input, DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Variadic<DLC_Tensor>:$outputs);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($outputs)";
  let hasVerifier = 1;
}

def DLC_ConcatOp : DLC_Op<"concat", [Pure, SameOperandsAndResultElementType,
                                     InferTypeOpAdaptor]> {
  let summary = "Joins tensors along an axis";
  let description = [{
    ```mlir
    %x = dlc.concat %a, %b {axis = 0 : i64} : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    ```
  }];
  let arguments = (ins Variadic<DLC_Tensor>:$inputs, DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs DLC_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Softmax and loss
//===----------------------------------------------------------------------===//

class DLC_SoftmaxLikeOp<string mnemonic>
    : DLC_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let arguments = (ins DLC_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs DLC_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
  let description = [{
    Normalizes along `axis` (default: the last).

    ```mlir
    %p = dlc.}] # mnemonic # [{ %logits {axis = 1 : i64} : tensor<4x10xf32>
    ```
  }];
}

def DLC_SoftmaxOp : DLC_SoftmaxLikeOp<"softmax"> { let summary = "Softmax"; }
def DLC_LogSoftmaxOp : DLC_SoftmaxLikeOp<"log_softmax"> { let summary = "Logarithm of softmax"; }

def DLC_SoftmaxCrossEntropyOp : DLC_Op<"softmax_cross_entropy",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "Per-sample softmax cross entropy with sparse (class index) labels";
  let description = [{
    `logits` is (N, C), `labels` is (N) of class indices; the result is the loss of
    each sample, (N), as Gluon's SoftmaxCrossEntropyLoss returns.

    ```mlir
    %loss = dlc.softmax_cross_entropy %logits, %labels : (tensor<4x2xf32>, tensor<4xi32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$logits, DLC_LabelTensor:$labels);
  let results = (outs DLC_FloatTensor:$loss);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
}

def DLC_SoftmaxCrossEntropyBackwardOp : DLC_Op<"softmax_cross_entropy_backward",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "Gradient of softmax_cross_entropy with respect to the logits";
  let description = [{
    `(softmax(logits) - one_hot(labels)) · grad_loss[:, None]`.

    ```mlir
    %dlogits = dlc.softmax_cross_entropy_backward %dloss, %logits, %labels : (tensor<4xf32>, tensor<4x2xf32>, tensor<4xi32>) -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins DLC_FloatTensor:$grad_loss, DLC_FloatTensor:$logits,
                       DLC_LabelTensor:$labels);
  let results = (outs DLC_FloatTensor:$grad_logits);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// One parameter's whole update in one op, as MXNet's optimizers call it: the eager
// Trainer's fused kernels, also traced into a compiled step for GPUs (on CPUs the step
// keeps the element-wise formulas, which dlc-fuse fuses). The per-element arithmetic is
// the separate ops', in their order and rounding, so both give the same bits. `rate` is
// the step's (bias-corrected) learning rate as a 0-d tensor; `rescale_grad` multiplies
// the gradient first.
class DLC_UpdateOp<string mnemonic> : DLC_Op<mnemonic, [Pure, AllShapesMatch<["weight", "grad"]>]> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DLC_AdamUpdateOp : DLC_UpdateOp<"adam_update"> {
  let summary = "One Adam step of a float32 parameter";
  let description = [{
    `mean' = beta1*mean + (1-beta1)*g`, `var' = beta2*var + (1-beta2)*g²`,
    `weight' = weight - rate*mean' / (sqrt(var') + epsilon)`, with `g = grad*rescale_grad`.

    ```mlir
    %w2, %m2, %v2 = dlc.adam_update %w, %g, %m, %v, %rate {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, epsilon = 1.000000e-08 : f64, rescale_grad = 3.125000e-02 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>)
    ```
  }];
  let arguments = (ins DLC_F32Tensor:$weight, DLC_F32Tensor:$grad, DLC_F32Tensor:$mean,
                       DLC_F32Tensor:$var, DLC_F32Tensor:$rate, F64Attr:$beta1, F64Attr:$beta2,
                       F64Attr:$epsilon, F64Attr:$rescale_grad);
  let results = (outs DLC_F32Tensor:$new_weight, DLC_F32Tensor:$new_mean,
                      DLC_F32Tensor:$new_var);
}

def DLC_SgdMomentumUpdateOp : DLC_UpdateOp<"sgd_momentum_update"> {
  let summary = "One SGD step with momentum (Nesterov's with `nesterov`)";
  let description = [{
    `momentum' = mu*momentum + g`, `weight' = weight - rate*d`, with `d = g + mu*momentum'`
    (Nesterov) or `momentum'`, and `g = grad*rescale_grad`.

    ```mlir
    %w2, %s2 = dlc.sgd_momentum_update %w, %g, %s, %rate {momentum = 9.000000e-01 : f64, rescale_grad = 1.000000e+00 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> (tensor<10x4xf32>, tensor<10x4xf32>)
    ```
  }];
  let arguments = (ins DLC_F32Tensor:$weight, DLC_F32Tensor:$grad, DLC_F32Tensor:$state,
                       DLC_F32Tensor:$rate, F64Attr:$momentum, UnitAttr:$nesterov,
                       F64Attr:$rescale_grad);
  let results = (outs DLC_F32Tensor:$new_weight, DLC_F32Tensor:$new_state);
}

def DLC_SgdUpdateOp : DLC_UpdateOp<"sgd_update"> {
  let summary = "One plain SGD step: weight - rate*grad*rescale_grad";
  let description = [{
    ```mlir
    %w2 = dlc.sgd_update %w, %g, %rate {rescale_grad = 1.000000e+00 : f64} : (tensor<10x4xf32>, tensor<10x4xf32>, tensor<f32>) -> tensor<10x4xf32>
    ```
  }];
  let arguments = (ins DLC_F32Tensor:$weight, DLC_F32Tensor:$grad, DLC_F32Tensor:$rate,
                       F64Attr:$rescale_grad);
  let results = (outs DLC_F32Tensor:$new_weight);
}

//===----------------------------------------------------------------------===//
// Collectives and fusion
//===----------------------------------------------------------------------===//

// Not DLC_Op: its operands live on different devices by design.
def DLC_AllReduceOp : Op<DLC_Dialect, "all_reduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "Reduces one tensor per device and gives every device the result";
  let description = [{
    Operand and result `i` live on `devices[i]`. This is how data-parallel training
    sums gradients (KVStore 'device' in MXNet; NCCL all-reduce on GPUs).

    With `processes = N` (N > 1) the reduction spans the N processes of a job launched
    by mpirun, each running this program on its own `devices`: every result is the
    reduction over all N times `devices` operands (a mean divides by that count). One
    device per process is then allowed; the runtime refuses to run the op in a job of
    another size.

    ```mlir
    %g0, %g1 = dlc.all_reduce sum %a, %b {devices = [#dlc.device<gpu:0>, #dlc.device<gpu:1>]} : tensor<100xf32>, tensor<100xf32>
    %g = dlc.all_reduce sum %c {devices = [#dlc.device<cpu:1>], processes = 2 : i64} : tensor<100xf32>
    ```
  }];
  let arguments = (ins DLC_ReduceKind:$kind, Variadic<DLC_NumericTensor>:$inputs,
                       DLC_DeviceArrayAttr:$devices,
                       DefaultValuedAttr<I64Attr, "1">:$processes);
  let results = (outs Variadic<DLC_NumericTensor>:$outputs);
  let assemblyFormat = "$kind $inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def DLC_FusedOp : DLC_Op<"fused", [IsolatedFromAbove, SingleBlock,
                                   RecursiveMemoryEffects]> {
  let summary = "A fused subgraph, run as one step where the runtime has a fused path";
  let description = [{
    The body's block arguments are the operands, in order and of the same types; the
    body ends with `dlc.yield` of values whose types are the results'. `kind` names
    the fusion, and picks the runtime's fused path: `conv2d_relu` and `dense_relu` run
    as one library kernel call with a ReLU epilogue, `conv2d_relu6` (on CPUs) with a
    clip(0, 6) one, `conv2d_silu` (on CPUs) with a SiLU one, `max_pool2d_backward_relu` as the
    pooling's backward with the gradient of the ReLU before it, `conv2d_max_pool2d` (on CPUs)
    as the convolution's kernel with an indexed max pooling of its output as an epilogue,
    a few images at a time, `max_pool2d_backward_conv2d` (on CPUs) as the filter
    gradient's kernel with that pooling's gradient before it and the data gradient
    beside it, likewise, `batch_norm_activation` (on CPUs) as a training batch norm's
    kernel with the ReLU or ReLU6 after it (and a residual added before that, a fourth
    operand) folded into its normalizing pass,
    `batch_norm_activation_backward` (on CPUs) as its gradient's kernel with the
    activation's gradient, read from the activation's output, folded into both of its
    passes, and `elementwise` as one chunked
    pass through the element-wise kernels on CPUs. Any other kind, an `elementwise`
    region on a GPU, or a body the fused path does not take, runs op by op. dlc-fuse
    creates these regions; the verifier accepts any kind.

    ```mlir
    %y = dlc.fused "elementwise" (%x, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<4x8xf32>):
      %s = dlc.add %a, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      %r = dlc.relu %s : tensor<4x8xf32>
      dlc.yield %r : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins OptionalAttr<StrAttr>:$kind, Variadic<DLC_Tensor>:$inputs);
  let results = (outs Variadic<DLC_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    ($kind^)? `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body
  }];
  let hasVerifier = 1;
}

def DLC_YieldOp : DLC_Op<"yield", [Pure, Terminator, HasParent<"::mlir::dlc::FusedOp">]> {
  let summary = "Returns the results of a dlc.fused body";
  let description = [{
    ```mlir
    dlc.yield %r : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<DLC_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // DLC_DIALECT_DLC_IR_DLCOPS_TD
