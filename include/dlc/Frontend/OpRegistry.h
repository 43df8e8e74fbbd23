//===- OpRegistry.h - one entry per op, and the eager dispatcher -------------===//
//
// An op is defined once: its user-facing name, the `dlc` dialect op it maps to (also the
// key of its kernels in the kernel table, see dlc/Runtime/Kernel.h) and its shape/dtype
// rule; autograd adds its VJP rule to the same entry. Adding an op touches its entry,
// its kernels, and the dialect's ODS.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_OPREGISTRY_H
#define DLC_FRONTEND_OPREGISTRY_H

#include "dlc/Frontend/Tensor.h"
#include "dlc/Runtime/Attrs.h"

#include <optional>
#include <string>
#include <vector>

namespace dlc {

struct TensorMeta {
  Shape shape;
  DType dtype = DType::f32;
};

/// Output shapes and dtypes from the inputs'. Throws ShapeError or DTypeError saying
/// what is wrong; the dispatcher adds the op's name, inputs and devices to the message.
using InferFn = std::vector<TensorMeta> (*)(const std::vector<TensorMeta> &inputs,
                                            const Attrs &attrs);

struct OpDef {
  std::string name;       ///< as users call it: "add"
  std::string dialect_op; ///< "dlc.add": the dialect op, and the kernels' key
  InferFn infer = nullptr;
};

/// Adds `op` to the registry (names are unique).
void register_op(OpDef op);
/// The entry named `name`; throws dlc::Error for an unknown name.
const OpDef &find_op(const std::string &name);
/// Every registered op, by name.
std::vector<const OpDef *> all_ops();

/// Runs `op` eagerly: checks that the inputs share a device (DeviceMismatchError
/// otherwise), infers and allocates the outputs on that device (or on `device`, for ops
/// without inputs; default: the current DeviceScope), and queues the kernel there.
std::vector<Tensor> invoke(const OpDef &op, const std::vector<Tensor> &inputs,
                           const Attrs &attrs = {}, std::optional<Device> device = {});

/// invoke() for an op with one output.
Tensor invoke1(const OpDef &op, const std::vector<Tensor> &inputs, const Attrs &attrs = {},
               std::optional<Device> device = {});

} // namespace dlc

#endif // DLC_FRONTEND_OPREGISTRY_H
