//===- LowerToProgram.cpp - a planned single-device function as a Program ------===//
//
// Every op becomes the step that calls the kernel table's kernel for the program's
// device, with the attributes the eager kernels read; views become aliases; each value
// takes the place dlc-plan-memory recorded. A returned value the plan left outside its
// result buffer (an argument, a view, a value returned twice) is copied there last.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"

#include "LoweringSupport.h"

#include "dlc/Core/ArenaPlanner.h"
#include "dlc/Runtime/Kernel.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace dlc::conversion {

using namespace mlir;
using namespace detail;

namespace {

StorageKind runtimeStorage(mlir::dlc::StorageKind kind) {
  switch (kind) {
  case mlir::dlc::StorageKind::argument:
    return StorageKind::argument;
  case mlir::dlc::StorageKind::result:
    return StorageKind::result;
  case mlir::dlc::StorageKind::arena:
    break;
  }
  return StorageKind::arena;
}

class ProgramLowering {
public:
  ProgramLowering(func::FuncOp function, Device device, std::string &error)
      : function_(function), device_(device), error_(error) {}

  std::shared_ptr<Program> run() {
    register_builtin_kernels();
    program_ = std::make_shared<Program>();
    program_->name = function_.getName().str();
    program_->device = device_;
    ArrayAttr arenas;
    if (!arenasOf(function_, arenas, error_))
      return nullptr;
    MemoryPlan memory;
    if (arenas.size() > 1) {
      error_ = "@" + program_->name + ": its ops run on " + std::to_string(arenas.size()) +
               " devices; a single-device program runs on one (lower it as a sharded program)";
      return nullptr;
    }
    if (!arenas.empty()) {
      auto arena = cast<mlir::dlc::ArenaAttr>(arenas[0]);
      if (runtimeDevice(arena.getDevice()) != device_) {
        error_ = "@" + program_->name + ": planned for " + arena.getDevice().str() +
                 ", lowered for " + device_.str();
        return nullptr;
      }
      memory.arena_bytes = size_t(arena.getBytes());
    }
    Block &body = function_.getBody().front();
    for (BlockArgument argument : body.getArguments()) {
      int id = addValue(argument, -1);
      if (id < 0)
        return nullptr;
      program_->arguments.push_back(id);
    }
    for (Operation &op : body.without_terminator())
      if (!lowerOp(&op))
        return nullptr;
    if (!lowerReturn(cast<func::ReturnOp>(body.getTerminator())))
      return nullptr;
    for (const ProgramStep &step : program_->steps)
      for (int out : step.outputs) {
        const ProgramValue &v = program_->values[size_t(out)];
        if (v.storage != StorageKind::arena || v.alias_of >= 0)
          continue;
        memory.intermediate_bytes += aligned(std::max<size_t>(v.bytes(), 1));
      }
    for (int r : program_->results)
      memory.result_bytes += program_->values[size_t(r)].bytes();
    memory.reused = reused_;
    memory.in_place = inPlace_;
    error_ = program_->set_plan(memory);
    return error_.empty() ? program_ : nullptr;
  }

private:
  /// A value placed where the plan says (`aliasOf` >= 0 for a view).
  int addValue(Value value, int aliasOf) {
    ProgramValue v;
    mlir::dlc::StorageAttr storage;
    if (!lowerableTensor(value, program_->name, v.shape, v.dtype, error_) ||
        !storageOf(value, storage, error_))
      return -1;
    v.alias_of = aliasOf;
    v.layout = Layout(int(mlir::dlc::valueLayout(value)));
    v.storage = runtimeStorage(storage.getKind());
    v.index = int(storage.getIndex());
    v.offset = size_t(storage.getOffset());
    if (aliasOf < 0 && isa<OpResult>(value)) {
      reused_ += storage.getReuse() != mlir::dlc::StorageReuse::fresh ? 1 : 0;
      inPlace_ += storage.getReuse() == mlir::dlc::StorageReuse::in_place ? 1 : 0;
    }
    program_->values.push_back(std::move(v));
    ids_[value] = int(program_->values.size()) - 1;
    return ids_[value];
  }

  /// Adds `op`'s steps: none for a view, its body's for an op-by-op region.
  bool lowerOp(Operation *op) {
    if (mlir::dlc::isViewOp(op)) {
      for (Value result : op->getResults())
        if (addValue(result, ids_.lookup(op->getOperand(0))) < 0)
          return false;
      return true;
    }
    std::vector<int> inputs;
    for (Value operand : op->getOperands()) {
      auto it = ids_.find(operand);
      if (it == ids_.end()) {
        error_ = describe(op) + ": reads a value defined outside the function";
        return false;
      }
      inputs.push_back(it->second);
    }
    ProgramStep step;
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
      std::optional<ProgramStep> single = fusedStep(fused, device_, error_);
      if (!single)
        return false;
      step = std::move(*single);
    } else if (auto copy = dyn_cast<mlir::dlc::CopyOp>(op)) {
      if (runtimeDevice(copy.getDevice()) != device_) {
        error_ = describe(op) + ": a single-device program on " + device_.str() +
                 " cannot transfer to " + copy.getDevice().str();
        return false;
      }
      step.op = "copy";
      step.copy = true;
    } else if (isa<mlir::dlc::AllReduceOp>(op)) {
      error_ = describe(op) + ": a single-device program has no collectives";
      return false;
    } else if (!kernelStep(op, device_, step, error_)) {
      return false;
    }
    step.inputs = std::move(inputs);
    for (Value result : op->getResults()) {
      int id = addValue(result, -1);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    program_->steps.push_back(std::move(step));
    return true;
  }

  /// Results the plan put in their buffers are done; the others are copied there.
  bool lowerReturn(func::ReturnOp ret) {
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      int id = ids_.lookup(ret.getOperand(k));
      if (auto update = function_.getResultAttrOfType<IntegerAttr>(k, "dlc.updates")) {
        program_->updates.push_back({id, int(update.getInt())});
        continue;
      }
      int number = int(program_->results.size());
      const ProgramValue &v = program_->values[size_t(id)];
      if (v.storage != StorageKind::result || v.index != number || v.alias_of >= 0) {
        ProgramValue copy = v;
        copy.alias_of = -1;
        copy.storage = StorageKind::result;
        copy.index = number;
        copy.offset = 0;
        program_->values.push_back(copy);
        ProgramStep step;
        step.op = "copy";
        step.copy = true;
        step.inputs = {id};
        id = int(program_->values.size()) - 1;
        step.outputs = {id};
        program_->steps.push_back(std::move(step));
      }
      program_->results.push_back(id);
    }
    return true;
  }

  func::FuncOp function_;
  Device device_;
  std::string &error_;
  std::shared_ptr<Program> program_;
  llvm::DenseMap<Value, int> ids_;
  int64_t reused_ = 0, inPlace_ = 0;
};

} // namespace

std::shared_ptr<Program> lowerToProgram(func::FuncOp function, Device device,
                                        std::string &error) {
  return ProgramLowering(function, device, error).run();
}

} // namespace dlc::conversion
