//===- Linalg.cpp - matmul and dot --------------------------------------------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

namespace dlc {

namespace {
std::vector<TensorMeta> inferMatmul(const std::vector<TensorMeta> &in, const Attrs &attrs) {
  detail::require_same_dtype(in);
  if (in[0].dtype == DType::boolean)
    throw DTypeError("matmul of bool tensors is not supported");
  return detail::sameDType(
      in, detail::checked(shape_rules::matmul(in[0].shape, in[1].shape,
                                              attrs.get_bool("transpose_a", false),
                                              attrs.get_bool("transpose_b", false))));
}
// C = op(A)·op(B), op = optional transpose of the last two dims:
//   dA = g·op(B)ᵀ, or op(B)·gᵀ when A is transposed
//   dB = op(A)ᵀ·g, or gᵀ·op(A) when B is transposed
// then summed over the batch dimensions each operand was broadcast along.
std::vector<Tensor> vjpMatmul(const VjpContext &c) {
  const Tensor &g = c.output_grads[0], &a = c.inputs[0], &b = c.inputs[1];
  bool ta = c.attrs.get_bool("transpose_a", false), tb = c.attrs.get_bool("transpose_b", false);
  std::vector<Tensor> grads(2);
  if (c.wants_grad(0)) {
    Tensor da = ta ? np::matmul(b, g, tb, true) : np::matmul(g, b, false, !tb);
    grads[0] = detail::sum_to(da, a.shape());
  }
  if (c.wants_grad(1)) {
    Tensor db = tb ? np::matmul(g, a, true, ta) : np::matmul(a, g, !ta, false);
    grads[1] = detail::sum_to(db, b.shape());
  }
  return grads;
}

} // namespace

void detail::register_linalg_ops() {
  register_op({"matmul", ops::matmul, inferMatmul, vjpMatmul});
}

Tensor np::matmul(const Tensor &a, const Tensor &b, bool transpose_a, bool transpose_b) {
  static const OpDef &op = find_op("matmul");
  return invoke1(op, {a, b}, Attrs{{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

Tensor np::dot(const Tensor &a, const Tensor &b) {
  if (a.ndim() == 0 || b.ndim() == 0)
    return a * b;
  if (a.ndim() > 2 || b.ndim() > 2)
    throw ShapeError("dot: operands of rank " + std::to_string(a.ndim()) + " and " +
                     std::to_string(b.ndim()) + " are not supported; use matmul for batches");
  // Vectors become a row (left) or a column (right); the added axis is dropped again.
  Tensor left = a.ndim() == 1 ? a.reshape({1, a.shape()[0]}) : a;
  Tensor right = b.ndim() == 1 ? b.reshape({b.shape()[0], 1}) : b;
  Tensor product = matmul(left, right);
  Shape shape;
  if (a.ndim() == 2)
    shape.push_back(a.shape()[0]);
  if (b.ndim() == 2)
    shape.push_back(b.shape()[1]);
  return product.reshape(shape);
}

} // namespace dlc
