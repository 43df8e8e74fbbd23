//===- OpsReduce.cpp - ONNX's Reduce* ops with dlc's reductions ----------------===//
//
// The axes are an attribute before opset 18 (ReduceSum: 13) and an optional input
// since; no axes reduce all of them, or nothing with noop_with_empty_axes.
//
//===----------------------------------------------------------------------===//
#include "Ops.h"

#include "dlc/Frontend/NumPy.h"

namespace dlc::onnx::detail {
namespace {

using Tensors = std::vector<Tensor>;
using Reduce = Tensor (*)(const Tensor &, const std::vector<int64_t> &, bool);

Tensor reduce(const OpContext &c, Reduce op, Tensor (*before)(const Tensor &),
              Tensor (*after)(const Tensor &)) {
  Tensor x = c.in(0);
  std::vector<int64_t> axes = c.has(1) ? c.ints(1) : c.attr_ints("axes");
  bool keep = c.attr_int("keepdims", 1) != 0;
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0)
    return before ? before(x) : x;
  for (int64_t &a : axes)
    a = c.axis(a, x.ndim());
  if (axes.empty())
    for (int64_t a = 0; a < x.ndim(); ++a)
      axes.push_back(a);
  Tensor y = op(before ? before(x) : x, axes, keep);
  return after ? after(y) : y;
}

Tensor square(const Tensor &x) { return x * x; }
Tensor absolute(const Tensor &x) { return np::maximum(x, np::negative(x)); }

OpSpec reduction(const char *type, Reduce op, Tensor (*before)(const Tensor &) = nullptr,
                 Tensor (*after)(const Tensor &) = nullptr) {
  return {type,
          11,
          [op, before, after](OpContext &c) { return Tensors{reduce(c, op, before, after)}; },
          {1},
          {"axes", "keepdims", "noop_with_empty_axes"}};
}

} // namespace

void add_reduce_ops(std::vector<OpSpec> &specs) {
  specs.push_back(reduction("ReduceSum", np::sum));
  specs.push_back(reduction("ReduceMean", np::mean));
  specs.push_back(reduction("ReduceMax", np::max));
  specs.push_back(reduction("ReduceMin", np::min));
  specs.push_back(reduction("ReduceSumSquare", np::sum, square));
  specs.push_back(reduction("ReduceL1", np::sum, absolute));
  specs.push_back(reduction("ReduceL2", np::sum, square, np::sqrt));
  specs.push_back(reduction("ReduceLogSumExp", np::sum, np::exp, np::log));
}

} // namespace dlc::onnx::detail
