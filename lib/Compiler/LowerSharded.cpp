//===- LowerSharded.cpp - a multi-device func.func as a ShardedProgram --------===//
#include "dlc/Compiler/LowerToRuntime.h"

#include "LoweringSupport.h"

#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Runtime/Kernel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "dlc/Core/OpFacts.h"

namespace dlc::compiler {

using namespace mlir;
using namespace detail;

namespace {
Device runtimeDevice(mlir::dlc::DeviceAttr device) {
  return Device{DeviceKind(int32_t(device.getKind())), int(device.getOrdinal())};
}
} // namespace

std::shared_ptr<ShardedProgram> lowerToShardedProgram(func::FuncOp function, std::string &error) {
  register_builtin_kernels();
  auto program = std::make_shared<ShardedProgram>();
  program->name = function.getName().str();
  llvm::DenseMap<Value, int> ids;
  StringRef deviceName = mlir::dlc::DLCDialect::getDeviceAttrName();

  auto addValue = [&](Value value, Device device, int aliasOf, size_t offset) -> int {
    ShardedValue v;
    if (!lowerableTensor(value, program->name, v.shape, v.dtype, error))
      return -1;
    v.device = device;
    v.alias_of = aliasOf;
    v.offset = offset;
    v.layout = Layout(int(mlir::dlc::valueLayout(value)));
    program->values.push_back(v);
    ids[value] = int(program->values.size()) - 1;
    return ids[value];
  };
  auto deviceOfOp = [&](Operation *op, Device &device) {
    if (auto attr = op->getAttrOfType<mlir::dlc::DeviceAttr>(deviceName)) {
      device = runtimeDevice(attr);
      return true;
    }
    // Constants (device-free) are made where their first user runs.
    for (Operation *user : op->getUsers())
      if (auto attr = user->getAttrOfType<mlir::dlc::DeviceAttr>(deviceName)) {
        device = runtimeDevice(attr);
        return true;
      }
    device = cpu(0);
    return op->hasTrait<mlir::OpTrait::ConstantLike>();
  };

  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto attr = function.getArgAttrOfType<mlir::dlc::DeviceAttr>(arg.getArgNumber(), deviceName);
    int id = addValue(arg, attr ? runtimeDevice(attr) : cpu(0), -1, 0);
    if (id < 0)
      return nullptr;
    program->arguments.push_back(id);
  }

  std::function<bool(Operation *)> lowerOp = [&](Operation *op) -> bool {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
        int id = ids.lookup(ret.getOperand(k));
        if (auto update = function.getResultAttrOfType<IntegerAttr>(k, "dlc.updates"))
          program->updates.push_back({id, int(update.getInt())});
        else
          program->results.push_back(id);
      }
      return true;
    }
    std::vector<int> inputs;
    for (Value operand : op->getOperands())
      inputs.push_back(ids.lookup(operand));
    if (auto copy = dyn_cast<mlir::dlc::CopyOp>(op)) {
      ShardedStep step;
      step.kind = ShardedStep::Kind::copy;
      step.op = ::dlc::ops::copy;
      step.device = runtimeDevice(copy.getDevice());
      step.inputs = inputs;
      int id = addValue(copy.getResult(), step.device, -1, 0);
      step.outputs = {id};
      program->steps.push_back(std::move(step));
      return id >= 0;
    }
    if (auto reduce = dyn_cast<mlir::dlc::AllReduceOp>(op)) {
      ShardedStep step;
      step.kind = ShardedStep::Kind::all_reduce;
      step.op = ::dlc::ops::all_reduce;
      step.inputs = inputs;
      step.reduce_kind = int64_t(reduce.getKind());
      if (step.reduce_kind > 1) {
        error = describe(op) + ": the runtime all-reduces with sum or mean";
        return false;
      }
      for (auto [attr, result] : llvm::zip(reduce.getDevices(), reduce.getResults())) {
        Device device = runtimeDevice(cast<mlir::dlc::DeviceAttr>(attr));
        step.devices.push_back(device);
        step.outputs.push_back(addValue(result, device, -1, 0));
      }
      step.device = step.devices.front();
      program->steps.push_back(std::move(step));
      return true;
    }
    Device device;
    if (!deviceOfOp(op, device)) {
      error = describe(op) + ": has no device; run dlc-place-devices first";
      return false;
    }
    if (mlir::dlc::isViewOp(op)) {
      // A reshape views its input whole; split parts along the first axis follow each
      // other in it.
      Device at = program->values[size_t(inputs[0])].device;
      size_t offset = 0;
      for (Value part : op->getResults()) {
        if (addValue(part, at, inputs[0], offset) < 0)
          return false;
        offset += program->values.back().bytes();
      }
      return true;
    }
    std::optional<ProgramStep> single;
    if (auto fused = dyn_cast<mlir::dlc::FusedOp>(op)) {
      single = fusedStep(fused, device, error);
      if (!error.empty())
        return false;
      if (!single) {
        // No fused kernel: the region's ops one by one, on the region's device.
        Block &region = fused.getBody().front();
        for (auto [argument, id] : llvm::zip(region.getArguments(), inputs))
          ids[argument] = id;
        for (Operation &inner : region.without_terminator()) {
          if (Attribute regionDevice = op->getAttr(deviceName))
            inner.setAttr(deviceName, regionDevice);
          if (!lowerOp(&inner))
            return false;
        }
        for (auto [result, yielded] :
             llvm::zip(fused.getResults(), region.getTerminator()->getOperands()))
          ids[result] = ids.lookup(yielded);
        return true;
      }
    } else {
      single.emplace();
      if (!kernelStep(op, device, *single, error))
        return false;
    }
    ShardedStep step;
    step.op = single->op;
    step.kernels = single->kernels;
    step.attrs = single->attrs;
    step.fused = single->fused;
    step.fresh_seed = single->fresh_seed;
    step.device = device;
    step.inputs = inputs;
    for (Value result : op->getResults()) {
      int id = addValue(result, device, -1, 0);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    program->steps.push_back(std::move(step));
    return true;
  };
  for (Operation &op : body)
    if (!lowerOp(&op))
      return nullptr;

  // Each device's queue runs in order, and an all-reduce waits for every replica: queued
  // in the middle of the backward it would stall each device until the others catch up.
  // So the steps that need no all-reduce result go first and the all-reduces, with what
  // depends on them (the optimizer), after: the devices overlap their whole backward, as
  // the seed's loop does. (An asynchronous communication queue would let the sums
  // overlap the backward too; the IR already places them for that.)
  std::vector<bool> afterReduce(program->values.size(), false);
  std::vector<ShardedStep> early, late;
  for (ShardedStep &step : program->steps) {
    bool late_ = step.kind == ShardedStep::Kind::all_reduce;
    for (int in : step.inputs) {
      int root = in;
      while (program->values[size_t(root)].alias_of >= 0)
        root = program->values[size_t(root)].alias_of;
      late_ = late_ || afterReduce[size_t(in)] || afterReduce[size_t(root)];
    }
    for (int out : step.outputs)
      afterReduce[size_t(out)] = late_;
    (late_ ? late : early).push_back(std::move(step));
  }
  // Within each part, run as long a stretch of one device's steps as dependencies allow
  // before switching devices: the runtime makes each stretch one task.
  auto rootOf = [&](int id) {
    while (program->values[size_t(id)].alias_of >= 0)
      id = program->values[size_t(id)].alias_of;
    return id;
  };
  auto byDevice = [&](std::vector<ShardedStep> part) {
    std::vector<bool> ready(program->values.size(), true);
    for (const ShardedStep &step : part)
      for (int out : step.outputs)
        ready[size_t(out)] = false;
    std::vector<ShardedStep> ordered;
    std::vector<bool> done(part.size(), false);
    size_t left = part.size();
    while (left > 0) {
      size_t before = left;
      for (Device device : program->devices().empty() ? std::vector<Device>{cpu(0)}
                                                      : program->devices()) {
        bool progress = true;
        while (progress) {
          progress = false;
          for (size_t i = 0; i < part.size(); ++i) {
            if (done[i])
              continue;
            if (part[i].device != device || part[i].kind == ShardedStep::Kind::all_reduce)
              continue;
            bool inputsReady = std::all_of(part[i].inputs.begin(), part[i].inputs.end(),
                                           [&](int in) { return ready[size_t(rootOf(in))]; });
            if (!inputsReady)
              break; // this device's steps keep their order (and their seeds')
            for (int out : part[i].outputs)
              ready[size_t(out)] = true;
            done[i] = true;
            --left;
            ordered.push_back(std::move(part[i]));
            progress = true;
          }
        }
      }
      if (left == before) { // an all-reduce (or a step it feeds) is next: take it as is
        for (size_t i = 0; i < part.size(); ++i)
          if (!done[i]) {
            for (int out : part[i].outputs)
              ready[size_t(out)] = true;
            done[i] = true;
            --left;
            ordered.push_back(std::move(part[i]));
            break;
          }
      }
    }
    return ordered;
  };
  program->steps = byDevice(std::move(early));
  for (ShardedStep &step : byDevice(std::move(late)))
    program->steps.push_back(std::move(step));
  program->plan();
  return program;
}

} // namespace dlc::compiler
