//===- AutogradInternal.h - the recording's nodes (internal) ------------------===//
#ifndef DLC_LIB_FRONTEND_AUTOGRADINTERNAL_H
#define DLC_LIB_FRONTEND_AUTOGRADINTERNAL_H

#include "dlc/Frontend/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlc::autograd {

/// From the gradients of a recorded call's outputs to those of its inputs.
using NodeVjp = std::function<std::vector<Tensor>(const std::vector<Tensor> &output_grads)>;
/// The same, offered `into[i]`, the gradient buffer of input i where backward() knows
/// that this call's gradient is all that input gets (a leaf with grad_req write, read by
/// no other call); elsewhere `into[i]` is undefined. A VJP that computes input i's
/// gradient in place returns `into[i]` itself for it, which spares backward() the copy;
/// it may ignore `into` (MXNet writes such gradients in place, req kWriteTo).
using NodeVjpInto = std::function<std::vector<Tensor>(const std::vector<Tensor> &output_grads,
                                                      const std::vector<Tensor> &into)>;

/// One recorded call. It holds its inputs (to continue the walk back) but not its
/// outputs, so the recording has no cycles.
struct Node {
  std::string name;
  NodeVjpInto vjp; // null once backward() has freed the recording
  std::vector<Tensor> inputs;
};

/// A tensor's place in autograd: a leaf with a gradient buffer, or output `output` of
/// a recorded node.
struct TensorGradState {
  GradReq req = GradReq::null;
  Tensor grad;
  bool fresh = false; // written by a backward since Trainer.step last applied it
  std::shared_ptr<Node> node;
  size_t output = 0;
};

/// Whether a gradient can flow into `tensor`.
bool needs_grad(const Tensor &tensor);

/// Records a call when recording is on and one of `inputs` needs a gradient: `outputs`
/// become outputs of a node whose VJP is `vjp`.
void record(const std::string &name, const std::vector<Tensor> &inputs,
            const std::vector<Tensor> &outputs, NodeVjp vjp);
/// The same for a VJP that can write gradients in place.
void record_into(const std::string &name, const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &outputs, NodeVjpInto vjp);

} // namespace dlc::autograd

#endif // DLC_LIB_FRONTEND_AUTOGRADINTERNAL_H
