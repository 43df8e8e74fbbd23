//===- LowerToShardedProgram.cpp - a planned multi-device function -------------===//
//
// Every op becomes a step on its device (dlc.copy a transfer to its target,
// dlc.all_reduce a collective over its devices), in the order dlc-order-steps left;
// each value takes the place dlc-plan-memory recorded: a block of its device's arena,
// the caller's argument, a result buffer of its own, or the value it views.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"

#include "LoweringSupport.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Runtime/Kernel.h"

#include "llvm/ADT/DenseMap.h"

namespace dlc::conversion {

using namespace mlir;
using namespace detail;

namespace {

class ShardedLowering {
public:
  ShardedLowering(func::FuncOp function, std::string &error)
      : function_(function), fallback_(mlir::dlc::functionDevice(function)), error_(error) {}

  std::shared_ptr<ShardedProgram> run() {
    register_builtin_kernels();
    program_ = std::make_shared<ShardedProgram>();
    program_->name = function_.getName().str();
    ArrayAttr arenas;
    if (!arenasOf(function_, arenas, error_))
      return nullptr;
    for (Attribute entry : arenas) {
      auto arena = cast<mlir::dlc::ArenaAttr>(entry);
      program_->arenas.push_back({runtimeDevice(arena.getDevice()), size_t(arena.getBytes())});
    }
    Block &body = function_.getBody().front();
    for (BlockArgument argument : body.getArguments()) {
      auto device = function_.getArgAttrOfType<mlir::dlc::DeviceAttr>(
          argument.getArgNumber(), mlir::dlc::DLCDialect::getDeviceAttrName());
      int id = addValue(argument, runtimeDevice(device ? device : fallback_), -1);
      if (id < 0)
        return nullptr;
      program_->arguments.push_back(id);
    }
    for (Operation &op : body.without_terminator())
      if (!lowerOp(&op))
        return nullptr;
    lowerReturn(cast<func::ReturnOp>(body.getTerminator()));
    return program_;
  }

private:
  /// A value on `device`, placed where the plan says (`aliasOf` >= 0 for a view).
  int addValue(Value value, Device device, int aliasOf) {
    ShardedValue v;
    mlir::dlc::StorageAttr storage;
    if (!lowerableTensor(value, program_->name, v.shape, v.dtype, error_) ||
        !storageOf(value, storage, error_))
      return -1;
    v.device = device;
    v.layout = Layout(int(mlir::dlc::valueLayout(value)));
    v.alias_of = aliasOf;
    if (aliasOf >= 0) {
      v.offset = size_t(storage.getOffset()) - offsets_[size_t(aliasOf)];
    } else if (storage.getKind() == mlir::dlc::StorageKind::arena) {
      if (storage.getIndex() >= int64_t(program_->arenas.size()) ||
          program_->arenas[size_t(storage.getIndex())].device != device) {
        error_ = "@" + program_->name + ": a value on " + device.str() +
                 " is placed in arena " + std::to_string(storage.getIndex()) +
                 ", which is not that device's";
        return -1;
      }
      v.arena = int(storage.getIndex());
      v.arena_offset = size_t(storage.getOffset());
    }
    offsets_.push_back(size_t(storage.getOffset()));
    resultNumber_.push_back(storage.getKind() == mlir::dlc::StorageKind::result && aliasOf < 0
                                ? int(storage.getIndex())
                                : -1);
    program_->values.push_back(v);
    ids_[value] = int(program_->values.size()) - 1;
    return ids_[value];
  }

  bool addOutputs(Operation *op, ShardedStep &step) {
    for (Value result : op->getResults()) {
      int id = addValue(result, step.device, -1);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    return true;
  }

  bool lowerOp(Operation *op) {
    std::vector<int> inputs;
    for (Value operand : op->getOperands())
      inputs.push_back(ids_.lookup(operand));
    if (mlir::dlc::isViewOp(op)) {
      Device at = program_->values[size_t(inputs[0])].device;
      for (Value part : op->getResults())
        if (addValue(part, at, inputs[0]) < 0)
          return false;
      return true;
    }
    ShardedStep step;
    step.inputs = inputs;
    if (auto copy = dyn_cast<mlir::dlc::CopyOp>(op)) {
      step.kind = ShardedStep::Kind::copy;
      step.op = ::dlc::ops::copy;
      step.device = runtimeDevice(copy.getDevice());
      if (!addOutputs(op, step))
        return false;
      program_->steps.push_back(std::move(step));
      return true;
    }
    if (auto reduce = dyn_cast<mlir::dlc::AllReduceOp>(op)) {
      step.kind = ShardedStep::Kind::all_reduce;
      step.op = ::dlc::ops::all_reduce;
      step.reduce_kind = int64_t(reduce.getKind());
      if (step.reduce_kind > 1) {
        error_ = describe(op) + ": the runtime all-reduces with sum or mean";
        return false;
      }
      for (auto [attr, result] : llvm::zip(reduce.getDevices(), reduce.getResults())) {
        Device device = runtimeDevice(cast<mlir::dlc::DeviceAttr>(attr));
        step.devices.push_back(device);
        int id = addValue(result, device, -1);
        if (id < 0)
          return false;
        step.outputs.push_back(id);
      }
      step.device = step.devices.front();
      program_->steps.push_back(std::move(step));
      return true;
    }
    step.device = runtimeDevice(mlir::dlc::stepDevice(op, fallback_));
    ProgramStep single;
    if (auto fused = dyn_cast<mlir::dlc::FusedOp>(op)) {
      if (op->hasAttr(mlir::dlc::DLCDialect::getOpByOpAttrName())) {
        Block &region = fused.getBody().front();
        for (auto [argument, id] : llvm::zip(region.getArguments(), inputs))
          ids_[argument] = id;
        for (Operation &inner : region.without_terminator())
          if (!lowerOp(&inner))
            return false;
        for (auto [result, yielded] :
             llvm::zip(fused.getResults(), region.getTerminator()->getOperands()))
          ids_[result] = ids_.lookup(yielded);
        return true;
      }
      std::optional<ProgramStep> fusedSingle = fusedStep(fused, step.device, error_);
      if (!fusedSingle)
        return false;
      single = std::move(*fusedSingle);
    } else if (!kernelStep(op, step.device, single, error_)) {
      return false;
    }
    step.op = single.op;
    step.kernels = single.kernels;
    step.attrs = std::move(single.attrs);
    step.fused = single.fused;
    step.fresh_seed = single.fresh_seed;
    if (!addOutputs(op, step))
      return false;
    program_->steps.push_back(std::move(step));
    return true;
  }

  /// Results the plan put in their own buffers are done; the others are copied into one.
  void lowerReturn(func::ReturnOp ret) {
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      int id = ids_.lookup(ret.getOperand(k));
      if (auto update = function_.getResultAttrOfType<IntegerAttr>(k, "dlc.updates")) {
        program_->updates.push_back({id, int(update.getInt())});
        continue;
      }
      int number = int(program_->results.size());
      if (resultNumber_[size_t(id)] != number) {
        ShardedValue copy = program_->values[size_t(id)];
        copy.alias_of = -1;
        copy.offset = 0;
        copy.arena = -1;
        program_->values.push_back(copy);
        resultNumber_.push_back(number);
        offsets_.push_back(0);
        ShardedStep step;
        step.kind = ShardedStep::Kind::copy;
        step.op = ::dlc::ops::copy;
        step.device = copy.device;
        step.inputs = {id};
        id = int(program_->values.size()) - 1;
        step.outputs = {id};
        program_->steps.push_back(std::move(step));
      }
      program_->results.push_back(id);
    }
  }

  func::FuncOp function_;
  mlir::dlc::DeviceAttr fallback_;
  std::string &error_;
  std::shared_ptr<ShardedProgram> program_;
  llvm::DenseMap<Value, int> ids_;
  std::vector<size_t> offsets_;   ///< per value: its dlc.storage offset
  std::vector<int> resultNumber_; ///< per value: the result buffer it owns, or -1
};

} // namespace

std::shared_ptr<ShardedProgram> lowerToShardedProgram(func::FuncOp function,
                                                      std::string &error) {
  return ShardedLowering(function, error).run();
}

} // namespace dlc::conversion
