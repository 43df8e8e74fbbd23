//===- PlanMemory.cpp - report the static memory plan of each function --------===//
//
// The plan is Program::plan of the lowering hybridize() uses; layouts (and their
// conversions) are in the IR by then, so it is the plan that runs.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Compiler/LowerToRuntime.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCPLANMEMORY
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

std::string place(const ::dlc::ProgramValue &value) {
  switch (value.storage) {
  case ::dlc::StorageKind::argument:
    return "in argument #" + std::to_string(value.index) + " at offset " +
           std::to_string(value.offset);
  case ::dlc::StorageKind::result:
    return "in result #" + std::to_string(value.index);
  case ::dlc::StorageKind::arena:
    break;
  }
  return "at arena offset " + std::to_string(value.offset);
}

struct PlanMemoryPass : impl::DLCPlanMemoryBase<PlanMemoryPass> {
  /// Whether ops of `function` run on more than one device (a sharded step).
  static bool multiDevice(func::FuncOp function) {
    std::optional<Attribute> first;
    bool several = false;
    function.walk([&](Operation *op) {
      if (isa<AllReduceOp>(op))
        several = true;
      if (Attribute device = op->getAttr(DLCDialect::getDeviceAttrName())) {
        if (first && *first != device)
          several = true;
        first = device;
      }
    });
    return several;
  }

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (multiDevice(function)) {
      std::string error;
      std::shared_ptr<::dlc::ShardedProgram> program =
          ::dlc::compiler::lowerToShardedProgram(function, error);
      if (!program) {
        function.emitError() << "cannot plan memory: " << error;
        return signalPassFailure();
      }
      std::vector<::dlc::Device> devices = program->devices();
      InFlightDiagnostic remark = function.emitRemark() << "memory plan over "
                                                        << devices.size() << " devices:";
      for (size_t d = 0; d < devices.size() && d < program->arena_bytes().size(); ++d)
        remark << (d ? "," : "") << " " << devices[d].str() << " arena "
               << program->arena_bytes()[d] << " bytes";
      return;
    }
    ::dlc::Device device = ::dlc::compiler::functionDevice(function, ::dlc::cpu(0));
    std::string error;
    llvm::DenseMap<Value, int> ids;
    std::shared_ptr<::dlc::Program> program =
        ::dlc::compiler::lowerToProgram(function, device, error, &ids);
    if (!program) {
      function.emitError() << "cannot plan memory: " << error;
      return signalPassFailure();
    }
    // Top-level ops only: a fused region's body lives inside its one step.
    for (Operation &operation : function.getBody().front()) {
      Operation *op = &operation;
      if (op->getNumResults() == 0)
        continue;
      InFlightDiagnostic remark = op->emitRemark();
      for (unsigned k = 0; k < op->getNumResults(); ++k) {
        const ::dlc::ProgramValue &value = program->values[size_t(ids.lookup(op->getResult(k)))];
        remark << (k ? "; " : "") << "result #" << k << " "
               << (value.alias_of >= 0 ? "views its input, " : "") << place(value) << " ("
               << value.bytes() << " bytes)";
      }
    }
    const ::dlc::MemoryPlan &plan = program->memory();
    function.emitRemark() << "memory plan on " << device.str() << ": arena " << plan.arena_bytes
                          << " bytes for " << plan.intermediate_bytes
                          << " bytes of intermediates (" << plan.reused
                          << " placed in freed memory, " << plan.in_place
                          << " of them in place), results " << plan.result_bytes << " bytes";
  }
};

} // namespace
} // namespace mlir::dlc
