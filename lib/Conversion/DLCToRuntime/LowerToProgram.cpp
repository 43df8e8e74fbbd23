//===- LowerToProgram.cpp - a planned dlc function as a runtime Program --------===//
//
// Every op becomes the step that calls the kernel table's kernel for its device, with
// the attributes the eager kernels read; dlc.copy a transfer to its target and
// dlc.all_reduce a collective over its devices; views become aliases. Each value takes
// the place dlc-plan-memory recorded. A returned value the plan left outside its result
// buffer (an argument, a view, a value returned twice) is copied there last. Nothing
// here depends on how many devices the function uses.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"

#include "LoweringSupport.h"

#include "dlc/Core/ArenaPlanner.h"
#include "dlc/Core/OpFacts.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

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
  case mlir::dlc::StorageKind::prepared:
    return StorageKind::prepared;
  case mlir::dlc::StorageKind::arena:
    break;
  }
  return StorageKind::arena;
}

class ProgramLowering {
public:
  ProgramLowering(func::FuncOp function, const CompileOptions &options, std::string &error)
      : function_(function), options_(options), fallback_(mlir::dlc::functionDevice(function)),
        error_(error) {}

  std::shared_ptr<Program> run() {
    if (function_.isExternal() || !llvm::hasSingleElement(function_.getBody())) {
      error_ = "@" + function_.getName().str() +
               (function_.isExternal() ? " is a declaration: it has no body to run"
                                       : " has several blocks; the runtime runs functions of "
                                         "one block");
      return nullptr;
    }
    register_builtin_kernels();
    program_ = std::make_shared<Program>();
    program_->name = function_.getName().str();
    program_->cuda_graphs = options_.cuda_graphs;
    ArrayAttr arenas;
    if (!arenasOf(function_, arenas, error_))
      return nullptr;
    MemoryPlan memory;
    for (Attribute entry : arenas) {
      auto arena = cast<mlir::dlc::ArenaAttr>(entry);
      program_->arenas.push_back({runtimeDevice(arena.getDevice()), size_t(arena.getBytes())});
      memory.arena_bytes += size_t(arena.getBytes());
    }
    if (auto prepared = function_->getAttrOfType<mlir::dlc::ArenaAttr>(
            mlir::dlc::DLCDialect::getPreparedArenaAttrName()))
      program_->prepared_bytes = size_t(prepared.getBytes());
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
    if (!loadKernels())
      return nullptr;
    for (const ProgramStep &step : program_->steps)
      for (int out : step.outputs) {
        const ProgramValue &v = program_->values[size_t(out)];
        if (v.storage == StorageKind::arena && v.alias_of < 0)
          memory.intermediate_bytes += aligned(std::max<size_t>(v.bytes(), 1));
      }
    for (int r : program_->results)
      memory.result_bytes += program_->values[size_t(r)].bytes();
    memory.reused = reused_;
    memory.in_place = inPlace_;
    error_ = program_->set_plan(memory);
    // The plan must also pass what loading a model file checks: every program is one a
    // file may hold, and the loader's rule stays dlc-plan-memory's.
    if (error_.empty())
      error_ = check_memory_plan(*program_);
    return error_.empty() ? program_ : nullptr;
  }

private:
  /// A value on `device`, placed where the plan says (`aliasOf` >= 0 for a view).
  int addValue(Value value, Device device, int aliasOf) {
    ProgramValue v;
    mlir::dlc::StorageAttr storage;
    if (!lowerableTensor(value, program_->name, v.shape, v.dtype, error_) ||
        !storageOf(value, storage, error_))
      return -1;
    v.device = device;
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

  bool addOutputs(Operation *op, ProgramStep &step) {
    for (Value result : op->getResults()) {
      int id = addValue(result, step.device, -1);
      if (id < 0)
        return false;
      step.outputs.push_back(id);
    }
    return true;
  }

  /// Adds `op`'s steps: none for a view, its body's for an op-by-op region (`prepared`:
  /// inside a prepared one).
  bool lowerOp(Operation *op, bool prepared = false) {
    prepared = prepared || op->hasAttr(mlir::dlc::DLCDialect::getPreparedAttrName());
    std::vector<int> inputs;
    for (Value operand : op->getOperands()) {
      auto it = ids_.find(operand);
      if (it == ids_.end()) {
        error_ = describe(op) + ": reads a value defined outside the function";
        return false;
      }
      inputs.push_back(it->second);
    }
    if (mlir::dlc::isViewOp(op)) {
      Device at = program_->values[size_t(inputs[0])].device;
      for (Value part : op->getResults())
        if (addValue(part, at, inputs[0]) < 0)
          return false;
      return true;
    }
    ProgramStep step;
    step.inputs = std::move(inputs);
    step.prepared = prepared;
    if (auto kept = op->getAttrOfType<mlir::DenseI64ArrayAttr>(
            mlir::dlc::DLCDialect::getPreparedOperandsAttrName()))
      step.kept_inputs.assign(kept.asArrayRef().begin(), kept.asArrayRef().end());
    if (auto copy = dyn_cast<mlir::dlc::CopyOp>(op)) {
      step.kind = ProgramStep::Kind::copy;
      step.op = ::dlc::ops::copy;
      step.device = runtimeDevice(copy.getDevice());
    } else if (auto reduce = dyn_cast<mlir::dlc::AllReduceOp>(op)) {
      step.kind = ProgramStep::Kind::all_reduce;
      step.op = ::dlc::ops::all_reduce;
      step.reduce_kind = int64_t(reduce.getKind());
      step.processes = int64_t(reduce.getProcesses());
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
    } else if (auto fused = dyn_cast<mlir::dlc::FusedOp>(op)) {
      step.device = runtimeDevice(mlir::dlc::stepDevice(op, fallback_));
      if (op->hasAttr(mlir::dlc::DLCDialect::getOpByOpAttrName())) {
        Block &region = fused.getBody().front();
        for (auto [argument, id] : llvm::zip(region.getArguments(), step.inputs))
          ids_[argument] = id;
        for (Operation &inner : region.without_terminator())
          if (!lowerOp(&inner, prepared))
            return false;
        for (auto [result, yielded] :
             llvm::zip(fused.getResults(), region.getTerminator()->getOperands()))
          ids_[result] = ids_.lookup(yielded);
        return true;
      }
      if (!fusedStep(fused, step))
        return false;
    } else {
      step.device = runtimeDevice(mlir::dlc::stepDevice(op, fallback_));
      if (!kernelStep(op, step.device, step, error_))
        return false;
    }
    if (!addOutputs(op, step))
      return false;
    program_->steps.push_back(std::move(step));
    return true;
  }

  /// The single step of a region that runs as one, on `step.device`.
  bool fusedStep(mlir::dlc::FusedOp fused, ProgramStep &step) {
    std::shared_ptr<FusedElementwise> chain;
    std::optional<ProgramStep> single = detail::fusedStep(fused, step.device, chain, error_);
    if (!single)
      return false;
    if (auto kernel = fused->getAttrOfType<SymbolRefAttr>(
            mlir::dlc::DLCDialect::getKernelAttrName())) {
      if (!chain) {
        error_ = describe(fused) + ": has a generated kernel but does not run as one "
                 "element-wise step on " + step.device.str();
        return false;
      }
      (step.device.is_host() ? generated_ : gpuGenerated_).push_back({kernel, std::move(chain)});
    }
    step.op = std::move(single->op);
    step.kernels = single->kernels;
    step.attrs = std::move(single->attrs);
    step.fused = std::move(single->fused);
    step.fresh_seed = single->fresh_seed;
    return true;
  }

  /// The GPU regions' kernels: the PTX of the gpu.binary they name, and their host
  /// builds when the GPUs are emulated.
  bool loadGpuKernels() {
    if (gpuGenerated_.empty())
      return true;
    const GeneratedKernelLauncher *launcher = generated_kernel_launcher(DeviceKind::gpu);
    std::shared_ptr<const std::string> ptx;
    std::vector<std::string> names;
    for (const auto &[kernel, chain] : gpuGenerated_) {
      auto binary = SymbolTable::lookupNearestSymbolFrom<gpu::BinaryOp>(
          function_, kernel.getRootReference());
      auto object = binary && binary.getObjects().size() == 1
                        ? dyn_cast<gpu::ObjectAttr>(binary.getObjects()[0])
                        : gpu::ObjectAttr();
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly) {
        error_ = "@" + function_.getName().str() + ": the GPU kernels @" +
                 kernel.getRootReference().str() +
                 " are not one gpu.binary holding PTX (run the cuda pipeline's code "
                 "generation, --dlc-pipeline=cuda)";
        return false;
      }
      if (!ptx)
        ptx = std::make_shared<const std::string>(object.getObject().getValue().str());
      names.push_back(kernel.getLeafReference().str());
    }
    std::vector<std::shared_ptr<const GeneratedKernel>> hostBuilds;
    if (launcher && launcher->needs_host_build) {
      auto onHost = SymbolTable::lookupNearestSymbolFrom<ModuleOp>(
          function_, StringAttr::get(function_.getContext(),
                                     mlir::dlc::DLCDialect::getGpuKernelsOnHostModuleName()));
      if (!onHost) {
        error_ = "@" + function_.getName().str() + ": the GPUs are emulated but the module has "
                 "no host build of its GPU kernels (--dlc-pipeline=cuda host-build-gpu-kernels=1)";
        return false;
      }
      hostBuilds = loadHostKernels(onHost, names, options_.cache_dir, error_);
      if (hostBuilds.size() != names.size())
        return false;
    }
    for (size_t k = 0; k < gpuGenerated_.size(); ++k) {
      auto kernel = std::make_shared<GeneratedGpuKernel>();
      kernel->ptx = ptx;
      kernel->name = names[k];
      if (!hostBuilds.empty())
        kernel->host_build = hostBuilds[k];
      gpuGenerated_[k].second->gpu = std::move(kernel);
    }
    return true;
  }

  /// The regions' generated kernels (dlc.kernel), loaded together: one kernel module.
  bool loadKernels() {
    if (!loadGpuKernels())
      return false;
    if (generated_.empty())
      return true;
    ModuleOp kernels;
    std::vector<std::string> functions;
    for (const auto &[kernel, chain] : generated_) {
      auto module = SymbolTable::lookupNearestSymbolFrom<ModuleOp>(function_,
                                                                   kernel.getRootReference());
      if (!module || (kernels && module != kernels)) {
        error_ = "@" + function_.getName().str() + ": no kernel module @" +
                 kernel.getRootReference().str() + " next to it, or more than one";
        return false;
      }
      kernels = module;
      functions.push_back(kernel.getLeafReference().str());
    }
    std::vector<std::shared_ptr<const GeneratedKernel>> loaded =
        loadHostKernels(kernels, functions, options_.cache_dir, error_);
    if (loaded.size() != generated_.size())
      return false;
    for (size_t k = 0; k < loaded.size(); ++k)
      generated_[k].second->generated = std::move(loaded[k]);
    return true;
  }

  /// Results the plan put in their buffers are done; the others are copied there.
  void lowerReturn(func::ReturnOp ret) {
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      int id = ids_.lookup(ret.getOperand(k));
      if (auto update = function_.getResultAttrOfType<IntegerAttr>(
              k, mlir::dlc::DLCDialect::getUpdatesAttrName())) {
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
        step.kind = ProgramStep::Kind::copy;
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
  const CompileOptions &options_;
  mlir::dlc::DeviceAttr fallback_;
  std::string &error_;
  std::shared_ptr<Program> program_;
  /// The regions with generated kernels (dlc.kernel) and their bodies, loaded once all
  /// are known.
  std::vector<std::pair<SymbolRefAttr, std::shared_ptr<FusedElementwise>>> generated_,
      gpuGenerated_;
  llvm::DenseMap<Value, int> ids_;
  int64_t reused_ = 0, inPlace_ = 0;
};

} // namespace

std::shared_ptr<Program> lowerToProgram(func::FuncOp function, const CompileOptions &options,
                                        std::string &error) {
  return ProgramLowering(function, options, error).run();
}

} // namespace dlc::conversion
