//===- PlanMemory.cpp - place every value of a function: the plan that runs ----===//
//
// The runtime executes a function as steps in op order (after dlc-order-steps), with
// every intermediate at a fixed offset of its device's arena. This pass decides those
// offsets and records them (`dlc.storage` on ops, `dlc.arenas` on the function); the
// lowering into runtime programs only reads them, so what dlc-opt prints is what runs.
//
// Rules: arguments stay in the caller's buffers; a returned value that owns its memory
// is written straight into its result buffer (the lowering copies the others there at
// the end); views live in the value they view; every other value takes the first free
// block of its device's arena that fits, and its block is freed after its last reader.
// An element-wise op may write over an input of its own type that dies with it. A block
// read from another device (or by an all-reduce) stays taken until the end: the devices'
// queues run independently, and only the reading device knows when it is done. The
// results of dlc.prepared ops (dlc-hoist-parameter-work) go one after the other into the
// function's prepared block, which the runtime keeps from one run to the next.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Core/ArenaPlanner.h"
#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCPLANMEMORY
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// What the plan knows about one value.
struct PlannedValue {
  Value value;
  int root = -1;          ///< the value whose storage it lives in (itself unless a view)
  size_t view_offset = 0; ///< bytes into the root's storage
  size_t bytes = 0;
  DeviceAttr device;
  StorageKind kind = StorageKind::arena;
  int64_t index = -1; ///< argument, result or arena number
  size_t offset = 0;
  StorageReuse reuse = StorageReuse::fresh;
};

/// One runtime step: an op that runs a kernel, a transfer or an all-reduce.
struct PlannedStep {
  Operation *op;
  DeviceAttr device; ///< for an all-reduce, each output's device is its own
  SmallVector<int> inputs, outputs;
  bool all_reduce = false;
  bool in_place = false;
};

class Planner {
public:
  /// `dryRun`: plan without writing anything into the function (preview).
  explicit Planner(func::FuncOp function, bool dryRun = false)
      : function_(function), fallback_(functionDevice(function)), dryRun_(dryRun) {}

  /// The plan as previewMemoryPlan gives it, after run(): steps counted in the
  /// function's own ops (an op-by-op region's steps are its region's).
  MemoryPlanPreview preview() const {
    MemoryPlanPreview plan;
    Block &body = func::FuncOp(function_).getBody().front();
    llvm::DenseMap<Operation *, int> stepOf;
    for (Operation &op : body.without_terminator())
      if (!isViewOp(&op))
        stepOf[&op] = int(plan.steps.size()), plan.steps.push_back(&op);
    const int end = int(plan.steps.size());
    auto outer = [&](int s) {
      return s >= int(steps_.size())
                 ? end
                 : stepOf.lookup(body.findAncestorOpInBlock(*steps_[size_t(s)].op));
    };
    std::vector<int> lifetimeOfRoot(values_.size(), -1);
    for (int s = 0; s < int(steps_.size()); ++s)
      for (int out : steps_[size_t(s)].outputs) {
        const PlannedValue &v = values_[size_t(out)];
        if (v.kind != StorageKind::arena)
          continue;
        lifetimeOfRoot[size_t(out)] = int(plan.lifetimes.size());
        plan.lifetimes.push_back({v.value, v.device, int64_t(v.bytes), outer(s),
                                  outer(std::max(lastUse_[size_t(out)], s))});
      }
    for (auto [value, id] : ids_)
      if (int lifetime = lifetimeOfRoot[size_t(values_[size_t(id)].root)]; lifetime >= 0)
        plan.lifetimeOf[value] = lifetime;
    for (const ::dlc::ArenaPlanner &planner : planners_)
      plan.arenaSizes.push_back(int64_t(planner.end()));
    return plan;
  }

  /// Plans the function's one block (hasRunnableBody).
  LogicalResult run() {
    auto ret = cast<func::ReturnOp>(function_.getBody().front().getTerminator());
    Block &body = function_.getBody().front();
    for (BlockArgument argument : body.getArguments()) {
      auto device = function_.getArgAttrOfType<DeviceAttr>(argument.getArgNumber(),
                                                           DLCDialect::getDeviceAttrName());
      int id = addValue(argument, -1, 0, device ? device : fallback_);
      if (id < 0)
        return failure();
      values_[size_t(id)].kind = StorageKind::argument;
      values_[size_t(id)].index = argument.getArgNumber();
    }
    for (Operation &op : body.without_terminator())
      if (failed(collect(&op, false)))
        return failure();
    placeResults(ret);
    computeLastUses();
    if (failed(allocate()) || failed(placeViews()))
      return failure();
    if (!dryRun_)
      record();
    return success();
  }

private:
  int addValue(Value value, int root, size_t viewOffset, DeviceAttr device) {
    std::string why;
    std::optional<int64_t> bytes = runtimeBytes(value.getType(), why);
    if (!bytes) {
      Operation *at = value.getDefiningOp() ? value.getDefiningOp() : function_.getOperation();
      at->emitError() << "cannot plan memory for a value of type " << value.getType() << ": "
                      << why;
      return -1;
    }
    PlannedValue v;
    v.value = value;
    v.bytes = size_t(*bytes);
    v.device = device;
    int id = int(values_.size());
    v.root = root >= 0 ? root : id;
    v.view_offset = viewOffset;
    values_.push_back(v);
    ids_[value] = id;
    return id;
  }

  /// Adds `op`'s steps (none for a view; its body's for an op-by-op region); `prepared`:
  /// inside a prepared op-by-op region.
  LogicalResult collect(Operation *op, bool prepared) {
    prepared = prepared || op->hasAttr(DLCDialect::getPreparedAttrName());
    if (isViewOp(op)) {
      // A reshape views its input whole; split parts along the first axis follow each
      // other in it.
      const PlannedValue input = values_[size_t(ids_.lookup(op->getOperand(0)))];
      size_t offset = input.view_offset;
      for (Value result : op->getResults()) {
        int id = addValue(result, input.root, offset, input.device);
        if (id < 0)
          return failure();
        offset += values_[size_t(id)].bytes;
      }
      return success();
    }
    if (auto fused = dyn_cast<FusedOp>(op)) {
      DeviceAttr device = stepDevice(op, fallback_);
      FusedExecution execution = fusedExecution(fused, device.getKind(), [&](StringRef name) {
        return targetRuns(op, name, device.getKind());
      });
      if (execution == FusedExecution::op_by_op) {
        if (!dryRun_)
          op->setAttr(DLCDialect::getOpByOpAttrName(), UnitAttr::get(op->getContext()));
        Block &region = fused.getBody().front();
        for (auto [argument, operand] : llvm::zip(region.getArguments(), op->getOperands()))
          ids_[argument] = ids_.lookup(operand);
        for (Operation &inner : region.without_terminator())
          if (failed(collect(&inner, prepared)))
            return failure();
        for (auto [result, yielded] :
             llvm::zip(fused.getResults(), region.getTerminator()->getOperands()))
          ids_[result] = ids_.lookup(yielded);
        return success();
      }
      if (!dryRun_) {
        op->removeAttr(DLCDialect::getOpByOpAttrName());
        fused.getBody().walk(
            [](Operation *inner) { inner->removeAttr(DLCDialect::getStorageAttrName()); });
      }
    }
    PlannedStep step;
    step.op = op;
    for (Value operand : op->getOperands())
      step.inputs.push_back(ids_.lookup(operand));
    if (auto reduce = dyn_cast<AllReduceOp>(op)) {
      step.all_reduce = true;
      for (auto [device, result] : llvm::zip(reduce.getDevices(), op->getResults())) {
        int id = addValue(result, -1, 0, cast<DeviceAttr>(device));
        if (id < 0)
          return failure();
        step.outputs.push_back(id);
      }
      step.device = cast<DeviceAttr>(reduce.getDevices()[0]);
    } else {
      step.device = isa<CopyOp>(op) ? cast<CopyOp>(op).getDevice() : stepDevice(op, fallback_);
      step.in_place = isInPlaceElementwise(op);
      for (Value result : op->getResults()) {
        int id = addValue(result, -1, 0, step.device);
        if (id < 0)
          return failure();
        if (prepared)
          values_[size_t(id)].kind = StorageKind::prepared;
        step.outputs.push_back(id);
      }
    }
    steps_.push_back(std::move(step));
    return success();
  }

  /// A returned value that owns its memory, once, goes straight into its result
  /// buffer; the others (arguments, views, repeats) are copied there at the end and
  /// so live until then, as do the values written back into updated arguments.
  void placeResults(func::ReturnOp ret) {
    int result = 0;
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      int id = ids_.lookup(ret.getOperand(k));
      if (function_.getResultAttr(k, DLCDialect::getUpdatesAttrName())) {
        readAtEnd_.push_back(values_[size_t(id)].root);
        continue;
      }
      PlannedValue &v = values_[size_t(id)];
      if (v.root == id && v.kind == StorageKind::arena && v.index < 0) {
        v.kind = StorageKind::result;
        v.index = result;
      } else {
        readAtEnd_.push_back(v.root);
      }
      ++result;
    }
  }

  void computeLastUses() {
    const int end = int(steps_.size());
    lastUse_.assign(values_.size(), -1);
    for (int s = 0; s < end; ++s) {
      const PlannedStep &step = steps_[size_t(s)];
      for (int in : step.inputs) {
        int root = values_[size_t(in)].root;
        bool elsewhere = step.all_reduce || values_[size_t(root)].device != step.device;
        lastUse_[size_t(root)] = elsewhere ? end : std::max(lastUse_[size_t(root)], s);
      }
    }
    for (int root : readAtEnd_)
      lastUse_[size_t(root)] = end;
  }

  int arenaOf(DeviceAttr device) {
    auto it = std::find(arenaDevices_.begin(), arenaDevices_.end(), device);
    if (it != arenaDevices_.end())
      return int(it - arenaDevices_.begin());
    arenaDevices_.push_back(device);
    planners_.emplace_back();
    return int(arenaDevices_.size()) - 1;
  }

  /// Places every arena value; failure (with an error) when an arena would pass 2^63 bytes.
  LogicalResult allocate() {
    const int end = int(steps_.size());
    std::vector<std::vector<int>> dyingAfter(size_t(end) + 1);
    for (const PlannedStep &step : steps_) // arenas in the order the devices first run
      for (int out : step.outputs)
        arenaOf(values_[size_t(out)].device);
    for (int s = 0; s < end; ++s) {
      const PlannedStep &step = steps_[size_t(s)];
      for (int out : step.outputs) {
        PlannedValue &v = values_[size_t(out)];
        if (v.kind == StorageKind::prepared) { // kept between runs: never freed
          bool reused = false;
          v.index = 0;
          v.offset = prepared_.allocate(v.bytes, reused);
          preparedDevice_ = v.device;
          if (prepared_.overflowed())
            return step.op->emitError() << "cannot plan memory: the prepared values on "
                                        << v.device.str() << " would need more than 2^63 bytes";
          continue;
        }
        if (v.kind != StorageKind::arena)
          continue;
        v.index = arenaOf(v.device);
        // In place: over an element-wise input of the same type that this step reads
        // last (element i is read before it is written).
        int donor = -1;
        auto &dying = dyingAfter[size_t(s)];
        if (step.in_place)
          for (int in : step.inputs) {
            const PlannedValue &d = values_[size_t(in)];
            auto at = std::find(dying.begin(), dying.end(), in);
            if (d.root == in && d.kind == StorageKind::arena && d.index == v.index &&
                lastUse_[size_t(in)] == s && d.value.getType() == v.value.getType() &&
                at != dying.end()) {
              donor = in;
              dying.erase(at);
              break;
            }
          }
        if (donor >= 0) {
          v.offset = values_[size_t(donor)].offset;
          v.reuse = StorageReuse::in_place;
        } else {
          bool reused = false;
          v.offset = planners_[size_t(v.index)].allocate(v.bytes, reused);
          v.reuse = reused ? StorageReuse::freed : StorageReuse::fresh;
        }
        dyingAfter[size_t(std::max(lastUse_[size_t(out)], s))].push_back(out);
      }
      for (int dead : dyingAfter[size_t(s)])
        planners_[size_t(values_[size_t(dead)].index)].release(values_[size_t(dead)].offset,
                                                               values_[size_t(dead)].bytes);
      for (int out : step.outputs)
        if (const PlannedValue &v = values_[size_t(out)];
            v.kind == StorageKind::arena && planners_[size_t(v.index)].overflowed())
          return step.op->emitError() << "cannot plan memory: with this value (" << v.bytes
                                      << " bytes), the values live at once on " << v.device.str()
                                      << " would need more than 2^63 bytes";
    }
    return success();
  }

  LogicalResult placeViews() {
    for (PlannedValue &v : values_) {
      if (v.root == int(&v - values_.data()))
        continue;
      const PlannedValue &root = values_[size_t(v.root)];
      if (v.view_offset + v.bytes > root.bytes) {
        Operation *op = v.value.getDefiningOp();
        return op->emitError() << "cannot plan memory: a view of " << root.bytes
                               << " bytes reaches " << v.view_offset + v.bytes;
      }
      v.kind = root.kind;
      v.index = root.index;
      v.offset = root.offset + v.view_offset;
    }
    return success();
  }

  StorageAttr storageOf(Value value) {
    const PlannedValue &v = values_[size_t(ids_.lookup(value))];
    return StorageAttr::get(function_.getContext(), v.kind, v.index, int64_t(v.offset), v.reuse);
  }

  /// Writes the plan: `dlc.storage` on every op whose results the runtime holds (views
  /// and op-by-op regions included), `dlc.arenas` on the function.
  void record() {
    MLIRContext *context = function_.getContext();
    auto mark = [&](Operation *op) {
      SmallVector<Attribute> places;
      for (Value result : op->getResults())
        places.push_back(storageOf(result));
      if (!places.empty())
        op->setAttr(DLCDialect::getStorageAttrName(), ArrayAttr::get(context, places));
    };
    for (const PlannedStep &step : steps_)
      mark(step.op);
    function_.walk([&](Operation *op) {
      if (isViewOp(op) || op->hasAttr(DLCDialect::getOpByOpAttrName()))
        if (op->getNumResults() > 0 && ids_.count(op->getResult(0)))
          mark(op);
    });
    SmallVector<Attribute> arenas;
    for (size_t a = 0; a < arenaDevices_.size(); ++a)
      arenas.push_back(ArenaAttr::get(context, arenaDevices_[a], int64_t(planners_[a].end())));
    function_->setAttr(DLCDialect::getArenasAttrName(), ArrayAttr::get(context, arenas));
    if (preparedDevice_)
      function_->setAttr(DLCDialect::getPreparedArenaAttrName(),
                         ArenaAttr::get(context, preparedDevice_, int64_t(prepared_.end())));
    else
      function_->removeAttr(DLCDialect::getPreparedArenaAttrName());
  }

  func::FuncOp function_;
  DeviceAttr fallback_;
  bool dryRun_;
  std::vector<PlannedValue> values_;
  llvm::DenseMap<Value, int> ids_;
  std::vector<PlannedStep> steps_;
  std::vector<int> readAtEnd_;
  std::vector<int> lastUse_;
  std::vector<DeviceAttr> arenaDevices_;
  std::vector<::dlc::ArenaPlanner> planners_;
  ::dlc::ArenaPlanner prepared_; ///< the prepared block: values one after the other
  DeviceAttr preparedDevice_;    ///< its device, once it holds a value
};

struct PlanMemoryPass : impl::DLCPlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    FailureOr<bool> runnable = hasRunnableBody(getOperation(), getArgument());
    if (failed(runnable) || (*runnable && failed(Planner(getOperation()).run())))
      signalPassFailure();
  }
};

} // namespace

FailureOr<MemoryPlanPreview> previewMemoryPlan(func::FuncOp function) {
  Planner planner(function, /*dryRun=*/true);
  if (failed(planner.run()))
    return failure();
  return planner.preview();
}

} // namespace mlir::dlc
