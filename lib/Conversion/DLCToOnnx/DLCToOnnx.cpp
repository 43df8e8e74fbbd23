//===- DLCToOnnx.cpp - dlc ops -> ONNX nodes (opset 17) -------------------------===//
//
// One case per dlc op, reading its attributes through the ODS accessors; an op computed
// by several ONNX nodes (a dense layer on a rank-3 input, attention, GELU) is written as
// the formula its ODS description gives. The importer (lib/Onnx) reads every node written
// here, which the round-trip tests rely on.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToOnnx/DLCToOnnx.h"

#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Onnx/DTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace mlir::dlc {
namespace {

std::string where(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName().getStringRef() << "' at ";
  op->getLoc().print(os);
  return text;
}

/// Writes the nodes of one function, naming values as it goes.
class Writer {
public:
  explicit Writer(OnnxGraph &graph) : graph_(graph) {}

  /// The first problem met (the compiler is built without exceptions).
  std::string error;
  void fail(std::string why) {
    if (error.empty())
      error = std::move(why);
  }

  std::string name(Value v) {
    auto found = names_.find(v);
    if (found != names_.end())
      return found->second;
    std::string fresh = "v" + std::to_string(next_++);
    names_[v] = fresh;
    return fresh;
  }
  void bind(Value v, std::string n) { names_[v] = std::move(n); }
  std::string fresh(const std::string &hint) { return hint + "_" + std::to_string(next_++); }

  /// A node of `op` type; returns its first output's name.
  std::string node(const std::string &type, std::vector<std::string> inputs,
                   std::vector<std::string> outputs,
                   std::map<std::string, OnnxAttribute> attributes = {}) {
    OnnxNode n;
    n.op_type = type;
    n.name = type + "_" + std::to_string(graph_.nodes.size());
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attributes = std::move(attributes);
    graph_.nodes.push_back(std::move(n));
    return graph_.nodes.back().outputs[0];
  }
  /// A node whose one output is a fresh value.
  std::string temp(const std::string &type, std::vector<std::string> inputs,
                   std::map<std::string, OnnxAttribute> attributes = {}) {
    return node(type, std::move(inputs), {fresh(type)}, std::move(attributes));
  }
  /// An initializer holding `bytes` (elements of `dtype`, `shape`).
  std::string constant(::dlc::DType dtype, ::dlc::shape_rules::Shape shape, std::string bytes,
                       const std::string &hint = "const") {
    std::string n = fresh(hint);
    graph_.initializers.push_back({n, dtype, std::move(shape), std::move(bytes), false});
    return n;
  }
  std::string ints(const std::vector<int64_t> &values) {
    return constant(::dlc::DType::i64, {int64_t(values.size())},
                    std::string(reinterpret_cast<const char *>(values.data()), values.size() * 8),
                    "shape");
  }
  std::string scalar(double value, ::dlc::DType dtype) {
    std::string bytes(::dlc::dtype_size(dtype), '\0');
    writeElement(bytes.data(), dtype, 0, value);
    return constant(dtype, {}, std::move(bytes), "scalar");
  }

  /// Element `i` of `dtype` at `data` set to `value`.
  static void writeElement(void *data, ::dlc::DType dtype, int64_t i, double value) {
    switch (dtype) {
    case ::dlc::DType::f32: static_cast<float *>(data)[i] = float(value); break;
    case ::dlc::DType::f16: static_cast<uint16_t *>(data)[i] = ::dlc::to_float16(float(value)).bits; break;
    case ::dlc::DType::bf16: static_cast<uint16_t *>(data)[i] = ::dlc::to_bfloat16(float(value)).bits; break;
    case ::dlc::DType::i32: static_cast<int32_t *>(data)[i] = int32_t(value); break;
    case ::dlc::DType::i64: static_cast<int64_t *>(data)[i] = int64_t(value); break;
    case ::dlc::DType::u8: static_cast<uint8_t *>(data)[i] = uint8_t(value); break;
    case ::dlc::DType::boolean: static_cast<bool *>(data)[i] = value != 0; break;
    }
  }

private:
  OnnxGraph &graph_;
  llvm::DenseMap<Value, std::string> names_;
  int64_t next_ = 0;
};

OnnxAttribute intAttr(int64_t v) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Kind::int_;
  a.i = v;
  return a;
}
OnnxAttribute floatAttr(double v) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Kind::float_;
  a.f = v;
  return a;
}
OnnxAttribute intsAttr(llvm::ArrayRef<int64_t> v) {
  OnnxAttribute a;
  a.kind = OnnxAttribute::Kind::ints;
  a.ints.assign(v.begin(), v.end());
  return a;
}

::dlc::shape_rules::Shape shapeOf(Value v) {
  return ::dlc::shape_rules::Shape(cast<RankedTensorType>(v.getType()).getShape());
}
::dlc::DType dtypeOf(Value v, Operation *op, Writer &w) {
  ::dlc::shape_rules::Shape shape;
  ::dlc::DType dtype = ::dlc::DType::f32;
  std::string why;
  if (!runtimeTensor(v.getType(), shape, dtype, why))
    w.fail(where(op) + ": " + why);
  return dtype;
}

/// A dense constant's elements, as the bytes of its dtype.
std::string constantBytes(ConstantOp op, ::dlc::DType dtype, int64_t n) {
  auto attr = cast<DenseElementsAttr>(op.getValue());
  std::string bytes(size_t(n) * ::dlc::dtype_size(dtype), '\0');
  void *out = bytes.data();
  bool floating = ::dlc::is_floating(dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = attr.isSplat() ? 0 : i;
    if (dtype == ::dlc::DType::f16 || dtype == ::dlc::DType::bf16) {
      static_cast<uint16_t *>(out)[i] =
          uint16_t(attr.getValues<APFloat>()[at].bitcastToAPInt().getZExtValue());
      continue;
    }
    double value = floating ? attr.getValues<APFloat>()[at].convertToDouble()
                   : dtype == ::dlc::DType::u8 || dtype == ::dlc::DType::boolean
                       ? double(attr.getValues<APInt>()[at].getZExtValue())
                       : double(attr.getValues<APInt>()[at].getSExtValue());
    if (dtype == ::dlc::DType::i64)
      static_cast<int64_t *>(out)[i] = attr.getValues<APInt>()[at].getSExtValue();
    else
      Writer::writeElement(out, dtype, i, value);
  }
  return bytes;
}

void translateOp(Operation *op, Writer &w) {
  auto in = [&](unsigned i) { return w.name(op->getOperand(i)); };
  auto out = [&](unsigned i = 0) { return w.name(op->getResult(i)); };
  auto unary = [&](const char *type) { w.node(type, {in(0)}, {out()}); };
  auto binary = [&](const char *type) { w.node(type, {in(0), in(1)}, {out()}); };
  auto onlyFirstResultUsed = [&](const char *what) {
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return w.fail(where(op) + ": its " + what + " has no ONNX form");
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case<ConstantOp>([&](ConstantOp c) {
        ::dlc::shape_rules::Shape shape = shapeOf(c.getResult());
        ::dlc::DType dtype = dtypeOf(c.getResult(), op, w);
        w.bind(c.getResult(),
               w.constant(dtype, shape,
                          constantBytes(c, dtype, ::dlc::shape_rules::numElements(shape))));
      })
      .Case<CopyOp>([&](auto) { unary("Identity"); })
      .Case<NegOp>([&](auto) { unary("Neg"); })
      .Case<ExpOp>([&](auto) { unary("Exp"); })
      .Case<LogOp>([&](auto) { unary("Log"); })
      .Case<SqrtOp>([&](auto) { unary("Sqrt"); })
      .Case<RsqrtOp>([&](auto) { w.node("Reciprocal", {w.temp("Sqrt", {in(0)})}, {out()}); })
      .Case<ReluOp>([&](auto) { unary("Relu"); })
      .Case<SigmoidOp>([&](auto) { unary("Sigmoid"); })
      .Case<TanhOp>([&](auto) { unary("Tanh"); })
      .Case<ErfOp>([&](auto) { unary("Erf"); })
      .Case<SoftreluOp>([&](auto) { unary("Softplus"); })
      .Case<SoftsignOp>([&](auto) { unary("Softsign"); })
      .Case<HardSwishOp>([&](auto) { unary("HardSwish"); })
      .Case<SeluOp>([&](auto) { unary("Selu"); })
      .Case<SiluOp>([&](auto) { w.node("Mul", {in(0), w.temp("Sigmoid", {in(0)})}, {out()}); })
      .Case<Relu6Op>([&](auto) {
        ::dlc::DType t = dtypeOf(op->getOperand(0), op, w);
        w.node("Clip", {in(0), w.scalar(0, t), w.scalar(6, t)}, {out()});
      })
      .Case<GeluOp>([&](auto) {
        // x · (1 + erf(x / √2)) / 2
        ::dlc::DType t = dtypeOf(op->getOperand(0), op, w);
        std::string scaled = w.temp("Div", {in(0), w.scalar(std::sqrt(2.0), t)});
        std::string shifted = w.temp("Add", {w.temp("Erf", {scaled}), w.scalar(1, t)});
        w.node("Mul", {w.temp("Mul", {in(0), shifted}), w.scalar(0.5, t)}, {out()});
      })
      .Case<AddOp>([&](auto) { binary("Add"); })
      .Case<SubOp>([&](auto) { binary("Sub"); })
      .Case<MulOp>([&](auto) { binary("Mul"); })
      .Case<DivOp>([&](auto) { binary("Div"); })
      .Case<PowOp>([&](auto) { binary("Pow"); })
      .Case<MaxOp>([&](auto) { binary("Max"); })
      .Case<MinOp>([&](auto) { binary("Min"); })
      .Case<LeakyReluOp>([&](auto) { binary("PRelu"); })
      .Case<EluOp>([&](EluOp e) {
        auto alpha = e.getRhs().getDefiningOp<ConstantOp>();
        auto values = alpha ? dyn_cast<DenseElementsAttr>(alpha.getValue()) : nullptr;
        if (!values || !values.isSplat())
          return w.fail(where(op) + ": ONNX's Elu takes alpha as a number, not a tensor");
        w.node("Elu", {in(0)}, {out()},
               {{"alpha", floatAttr(values.getSplatValue<APFloat>().convertToDouble())}});
      })
      .Case<CompareOp>([&](CompareOp c) {
        switch (c.getPredicate()) {
        case ComparePredicate::eq: binary("Equal"); break;
        case ComparePredicate::ne: w.node("Not", {w.temp("Equal", {in(0), in(1)})}, {out()}); break;
        case ComparePredicate::lt: binary("Less"); break;
        case ComparePredicate::le: binary("LessOrEqual"); break;
        case ComparePredicate::gt: binary("Greater"); break;
        case ComparePredicate::ge: binary("GreaterOrEqual"); break;
        }
      })
      .Case<SelectOp>([&](auto) { w.node("Where", {in(0), in(1), in(2)}, {out()}); })
      .Case<CastOp>([&](auto) {
        w.node("Cast", {in(0)}, {out()},
               {{"to", intAttr(::dlc::onnx::onnx_dtype_of(dtypeOf(op->getResult(0), op, w)))}});
      })
      .Case<MatmulOp>([&](MatmulOp m) {
        auto swapLast = [&](const std::string &v, Value value) {
          int64_t rank = int64_t(shapeOf(value).size());
          std::vector<int64_t> perm;
          for (int64_t a = 0; a < rank; ++a)
            perm.push_back(a);
          std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
          return w.temp("Transpose", {v}, {{"perm", intsAttr(perm)}});
        };
        std::string a = m.getTransposeA() ? swapLast(in(0), m.getLhs()) : in(0);
        std::string b = m.getTransposeB() ? swapLast(in(1), m.getRhs()) : in(1);
        w.node("MatMul", {a, b}, {out()});
      })
      .Case<DenseOp>([&](DenseOp d) {
        bool bias = bool(d.getBias());
        if (shapeOf(d.getInput()).size() == 2) {
          std::vector<std::string> inputs{in(0), in(1)};
          if (bias)
            inputs.push_back(in(2));
          w.node("Gemm", inputs, {out()}, {{"transB", intAttr(1)}});
          return;
        }
        std::string product = w.temp(
            "MatMul", {in(0), w.temp("Transpose", {in(1)}, {{"perm", intsAttr({1, 0})}})});
        if (bias)
          w.node("Add", {product, in(2)}, {out()});
        else
          w.node("Identity", {product}, {out()});
      })
      .Case<Conv2DOp>([&](Conv2DOp c) {
        std::vector<std::string> inputs{in(0), in(1)};
        if (c.getBias())
          inputs.push_back(in(2));
        llvm::ArrayRef<int64_t> p = c.getPadding();
        w.node("Conv", inputs, {out()},
               {{"strides", intsAttr(c.getStride())},
                {"pads", intsAttr({p[0], p[1], p[0], p[1]})},
                {"dilations", intsAttr(c.getDilation())},
                {"group", intAttr(int64_t(c.getGroups()))},
                {"kernel_shape", intsAttr(llvm::ArrayRef<int64_t>(shapeOf(c.getWeight())).drop_front(2))}});
      })
      .Case<Conv2DBackwardDataOp>([&](Conv2DBackwardDataOp c) {
        // A transposed convolution: the padding below the stride that the output's size
        // asks for is ONNX's output_padding.
        ::dlc::shape_rules::Shape x = shapeOf(c.getGradOutput()), y = shapeOf(c.getGradInput());
        ::dlc::shape_rules::Shape k = shapeOf(c.getWeight());
        llvm::ArrayRef<int64_t> s = c.getStride(), p = c.getPadding(), d = c.getDilation();
        std::vector<int64_t> extra;
        for (size_t a = 0; a < 2; ++a)
          extra.push_back(y[2 + a] - ((x[2 + a] - 1) * s[a] - 2 * p[a] + d[a] * (k[2 + a] - 1) + 1));
        w.node("ConvTranspose", {in(0), in(1)}, {out()},
               {{"strides", intsAttr(s)},
                {"pads", intsAttr({p[0], p[1], p[0], p[1]})},
                {"dilations", intsAttr(d)},
                {"group", intAttr(int64_t(c.getGroups()))},
                {"output_padding", intsAttr(extra)}});
      })
      .Case<MaxPool2DOp, AvgPool2DOp>([&](auto pool) {
        llvm::ArrayRef<int64_t> p = pool.getPadding();
        std::map<std::string, OnnxAttribute> attrs{
            {"kernel_shape", intsAttr(pool.getKernel())},
            {"strides", intsAttr(pool.getStride())},
            {"pads", intsAttr({p[0], p[1], p[0], p[1]})},
            {"ceil_mode", intAttr(pool.getCeilMode() ? 1 : 0)}};
        if constexpr (std::is_same_v<decltype(pool), AvgPool2DOp>) {
          attrs["count_include_pad"] = intAttr(pool.getCountIncludePad() ? 1 : 0);
          w.node("AveragePool", {in(0)}, {out()}, attrs);
        } else {
          w.node("MaxPool", {in(0)}, {out()}, attrs);
        }
      })
      .Case<BatchNormOp>([&](BatchNormOp b) {
        if (b.getTraining() || b.getRunningStats().size() != 2 || b.getAxis() != 1)
          return w.fail(where(op) + ": ONNX's BatchNormalization is exported for inference "
                                    "over axis 1 (trace the block outside autograd.record())");
        onlyFirstResultUsed("batch statistics");
        w.node("BatchNormalization", {in(0), in(1), in(2), in(3), in(4)}, {out()},
               {{"epsilon", floatAttr(b.getEpsilon().convertToDouble())}});
      })
      .Case<LayerNormOp>([&](LayerNormOp l) {
        onlyFirstResultUsed("statistics");
        w.node("LayerNormalization", {in(0), in(1), in(2)}, {out(0)},
               {{"axis", intAttr(l.getAxis())},
                {"epsilon", floatAttr(l.getEpsilon().convertToDouble())}});
      })
      .Case<AttentionOp>([&](AttentionOp a) {
        onlyFirstResultUsed("log-sum-exp");
        if (a.getDropout().convertToDouble() != 0)
          return w.fail(where(op) + ": attention dropout (trace it for predicting)");
        ::dlc::DType t = dtypeOf(a.getQuery(), op, w);
        ::dlc::shape_rules::Shape q = shapeOf(a.getQuery()), k = shapeOf(a.getKey());
        int64_t rank = int64_t(q.size());
        std::vector<int64_t> perm;
        for (int64_t i = 0; i < rank; ++i)
          perm.push_back(i);
        std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
        std::string scores = w.temp(
            "Mul", {w.temp("MatMul", {in(0), w.temp("Transpose", {in(1)}, {{"perm", intsAttr(perm)}})}),
                    w.scalar(a.getScale().convertToDouble(), t)});
        double low = -std::numeric_limits<float>::infinity();
        if (a.getMask()) {
          if (dtypeOf(a.getMask(), op, w) == ::dlc::DType::boolean)
            scores = w.temp("Where", {in(3), scores, w.scalar(low, t)});
          else
            scores = w.temp("Add", {scores, in(3)});
        }
        if (a.getCausal()) {
          int64_t lq = q[size_t(rank - 2)], lk = k[size_t(rank - 2)];
          std::string allowed(size_t(lq * lk), '\0');
          for (int64_t i = 0; i < lq; ++i)
            for (int64_t j = 0; j < lk; ++j)
              allowed[size_t(i * lk + j)] = j <= i ? 1 : 0;
          scores = w.temp("Where", {w.constant(::dlc::DType::boolean, {lq, lk}, allowed, "causal"),
                                    scores, w.scalar(low, t)});
        }
        std::string weights = w.temp("Softmax", {scores}, {{"axis", intAttr(-1)}});
        w.node("MatMul", {weights, in(2)}, {out(0)});
      })
      .Case<ReshapeOp, FlattenOp>([&](auto) {
        w.node("Reshape", {in(0), w.ints(shapeOf(op->getResult(0)))}, {out()});
      })
      .Case<TransposeOp>([&](TransposeOp t) {
        w.node("Transpose", {in(0)}, {out()}, {{"perm", intsAttr(t.getPermutation())}});
      })
      .Case<BroadcastToOp>([&](auto) {
        w.node("Expand", {in(0), w.ints(shapeOf(op->getResult(0)))}, {out()});
      })
      .Case<ReduceOp>([&](ReduceOp r) {
        std::map<std::string, OnnxAttribute> attrs{{"keepdims", intAttr(r.getKeepdims() ? 1 : 0)}};
        std::vector<int64_t> axes(r.getAxes().begin(), r.getAxes().end());
        switch (r.getKind()) {
        case ReduceKind::sum: w.node("ReduceSum", {in(0), w.ints(axes)}, {out()}, attrs); return;
        case ReduceKind::mean: attrs["axes"] = intsAttr(axes); w.node("ReduceMean", {in(0)}, {out()}, attrs); return;
        case ReduceKind::max: attrs["axes"] = intsAttr(axes); w.node("ReduceMax", {in(0)}, {out()}, attrs); return;
        case ReduceKind::min: attrs["axes"] = intsAttr(axes); w.node("ReduceMin", {in(0)}, {out()}, attrs); return;
        }
      })
      .Case<ArgmaxOp>([&](ArgmaxOp a) {
        w.node("ArgMax", {in(0)}, {out()},
               {{"axis", intAttr(a.getAxis())}, {"keepdims", intAttr(a.getKeepdims() ? 1 : 0)}});
      })
      .Case<TakeOp>([&](TakeOp t) {
        w.node("Gather", {in(0), in(1)}, {out()}, {{"axis", intAttr(t.getAxis())}});
      })
      .Case<SliceOp>([&](SliceOp s) {
        std::vector<int64_t> axes;
        for (size_t a = 0; a < s.getBegin().size(); ++a)
          axes.push_back(int64_t(a));
        std::vector<int64_t> begin(s.getBegin().begin(), s.getBegin().end());
        std::vector<int64_t> end(s.getEnd().begin(), s.getEnd().end());
        std::vector<int64_t> step(s.getStep().begin(), s.getStep().end());
        // A reversed slice that ends before element 0 (Python's None): ONNX spells it as
        // an end below -size.
        for (size_t a = 0; a < end.size(); ++a)
          if (step[a] < 0 && end[a] < 0)
            end[a] = std::numeric_limits<int64_t>::min();
        w.node("Slice", {in(0), w.ints(begin), w.ints(end), w.ints(axes), w.ints(step)}, {out()});
      })
      .Case<SplitOp>([&](SplitOp s) {
        std::vector<int64_t> sizes;
        std::vector<std::string> outputs;
        int64_t axis = s.getAxis();
        for (Value r : s.getOutputs()) {
          ::dlc::shape_rules::Shape shape = shapeOf(r);
          sizes.push_back(shape[size_t(axis < 0 ? axis + int64_t(shape.size()) : axis)]);
          outputs.push_back(w.name(r));
        }
        w.node("Split", {in(0), w.ints(sizes)}, outputs, {{"axis", intAttr(axis)}});
      })
      .Case<ConcatOp>([&](ConcatOp c) {
        std::vector<std::string> inputs;
        for (unsigned i = 0; i < op->getNumOperands(); ++i)
          inputs.push_back(in(i));
        w.node("Concat", inputs, {out()}, {{"axis", intAttr(c.getAxis())}});
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) {
        w.node(isa<SoftmaxOp>(op) ? "Softmax" : "LogSoftmax", {in(0)}, {out()},
               {{"axis", intAttr(int64_t(s.getAxis()))}});
      })
      .Case<DropoutOp>([&](DropoutOp) {
        return w.fail(where(op) + ": dropout draws random numbers; trace the block for "
                                  "predicting (outside autograd.record())");
      })
      .Default([&](Operation *) {
        return w.fail(where(op) + " has no ONNX form here (gradients, optimizer updates, "
                                  "random numbers and fused regions are not exported)");
      });
}

OnnxValue valueInfo(const std::string &name, Value v, Operation *owner, Writer &w) {
  return {name, dtypeOf(v, owner, w), shapeOf(v)};
}

} // namespace

std::string translateToOnnx(func::FuncOp function, OnnxGraph &out) {
  Writer w(out);
  out.name = function.getName().str();
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    Value arg = function.getArgument(i);
    auto name = function.getArgAttrOfType<StringAttr>(i, DLCDialect::getNameAttrName());
    std::string n = name ? name.str() : "arg" + std::to_string(i);
    w.bind(arg, n);
    if (function.getArgAttr(i, DLCDialect::getParameterAttrName()))
      out.initializers.push_back({n, dtypeOf(arg, function, w), shapeOf(arg), "", true});
    else
      out.inputs.push_back(valueInfo(n, arg, function, w));
  }
  for (Operation &op : function.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        std::string name = i == 0 ? "output" : "output" + std::to_string(i);
        // Each output its own value (an input returned as is, or twice, included).
        w.node("Identity", {w.name(ret.getOperand(i))}, {name});
        out.outputs.push_back(valueInfo(name, ret.getOperand(i), &op, w));
      }
      continue;
    }
    translateOp(&op, w);
    if (!w.error.empty())
      return w.error;
  }
  return w.error;
}

} // namespace mlir::dlc
