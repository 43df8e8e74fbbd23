//===- Remat.cpp - compute activations again instead of keeping them ----------===//
//
// A training step holds most around where its forward ends: every activation the
// backward reads is still kept. Under a budget, this pass measures the function's values
// as dlc-plan-memory would hold them (previewMemoryPlan: each arena value's block, from
// its step to its last reader), finds the step where a device holds the most, and
// copies the op of a value live there but unread there to just before its first reader
// after it. It copies memory-bound ops (element-wise ops, batch norms, regions of those)
// and convolutions, only where what they read is held at the new place anyway or is
// made again there too (one op deep), so a copy never keeps another value longer. The
// most bytes freed per byte of work first; measured again after each. The budget is
// checked against the plan's arenas too, whose first-fit gaps can make
// the arena larger than the values' peak: the pass then aims lower.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "dlc/Dialect/DLC/IR/DLCExecution.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <optional>

namespace mlir::dlc {

#define GEN_PASS_DEF_DLCREMAT
#include "dlc/Dialect/DLC/Transforms/Passes.h.inc"

namespace {

/// Whether computing `op` again costs one pass over the bytes it moves: element-wise
/// ops, batch norms, and regions of only those.
bool memoryBound(Operation *op) {
  if (auto fused = dyn_cast<FusedOp>(op))
    return llvm::all_of(fused.getBody().front().without_terminator(),
                        [](Operation &inner) { return memoryBound(&inner); });
  return isa<ScalarBodyOpInterface, BatchNormOp>(op);
}

/// Whether `op` may run a second time with the same bits and no other effect: a
/// memory-bound op or a convolution; nothing with effects, fresh seeds (dropout would
/// draw another mask) or prepared results, and no view (it takes no step).
bool recomputable(Operation *op) {
  if (!isMemoryEffectFree(op) || drawsFreshSeeds(op) || isViewOp(op) ||
      op->hasAttr(DLCDialect::getPreparedAttrName()) || op->getNumResults() == 0)
    return false;
  return memoryBound(op) || isa<Conv2DOp>(op);
}

/// The bytes of `value` as the runtime holds it, or 0 for a type it does not hold.
int64_t bytesOf(Value value) {
  std::string why;
  return runtimeBytes(value.getType(), why).value_or(0);
}

/// Floating-point operations that cost as much time as moving one byte: a CPU core
/// does several fused multiply-adds of 8 floats per cycle and moves a few bytes per cycle
/// from memory (on the 2-core EPYCs here a convolution ran at about 100-200 GFLOP/s,
/// a memory-bound pass at about 10-20 GB/s).
constexpr double kFlopsPerByte = 8;

/// What running `op` again costs, in bytes moved (a convolution's arithmetic counted as
/// the bytes that take as long).
double recomputeCost(Operation *op) {
  double cost = 0;
  for (Value v : op->getOperands())
    cost += double(bytesOf(v));
  for (Value v : op->getResults())
    cost += double(bytesOf(v));
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    auto weight = cast<RankedTensorType>(conv.getWeight().getType());
    auto output = cast<RankedTensorType>(conv.getOutput().getType());
    double multiplyAccumulates = double(weight.getNumElements()) * double(output.getDimSize(0)) *
                                 double(output.getDimSize(2)) * double(output.getDimSize(3));
    cost += 2 * multiplyAccumulates / kFlopsPerByte;
  }
  return cost;
}

/// The function's arena values as dlc-plan-memory holds them (previewMemoryPlan),
/// measured step by step.
class Occupancy {
public:
  explicit Occupancy(MemoryPlanPreview plan) : plan_(std::move(plan)) {
    for (auto [step, op] : llvm::enumerate(plan_.steps))
      step_[op] = int(step);
  }

  /// The plan's largest arena.
  int64_t largestArena() const {
    int64_t largest = 0;
    for (int64_t size : plan_.arenaSizes)
      largest = std::max(largest, size);
    return largest;
  }

  /// The step of `op` (a step of the function's own).
  int stepOf(Operation *op) const { return step_.lookup(op); }

  /// A device's peak: the step where its values hold the most, and how much.
  struct Peak {
    DeviceAttr device;
    int step = -1;
    int64_t bytes = 0;
  };
  /// The devices' peaks that pass `budget`, the largest first.
  std::vector<Peak> peaksOver(int64_t budget) const {
    std::vector<Peak> over;
    for (const Peak &peak : peaks())
      if (peak.bytes > budget)
        over.push_back(peak);
    std::stable_sort(over.begin(), over.end(),
                     [](const Peak &a, const Peak &b) { return a.bytes > b.bytes; });
    return over;
  }

  /// When `value` holds its own arena block (no view of another), the steps it holds it.
  const ArenaLifetime *lifetime(Value value) const {
    const ArenaLifetime *held = blockOf(value);
    return held && held->value == value ? held : nullptr;
  }

  /// Whether an op placed just before step `step` may read `value` and find it held: a
  /// value in an arena block (through its views, which must come before) from the
  /// block's step to its last reader; anything else (an argument, a result in the
  /// caller's buffer, a prepared value) once made.
  bool liveAt(Value value, int step) const {
    Operation *def = value.getDefiningOp();
    if (def && !def->isBeforeInBlock(plan_.steps[size_t(step)]))
      return false;
    const ArenaLifetime *held = blockOf(value);
    return !held || (held->first <= step && step <= held->last);
  }

private:
  const ArenaLifetime *blockOf(Value value) const {
    auto it = plan_.lifetimeOf.find(value);
    return it == plan_.lifetimeOf.end() ? nullptr : &plan_.lifetimes[size_t(it->second)];
  }

  /// Each device's peak: the bytes its values hold at the step holding the most.
  std::vector<Peak> peaks() const {
    std::vector<DeviceAttr> devices;
    for (const ArenaLifetime &held : plan_.lifetimes)
      if (held.bytes > 0 && !llvm::is_contained(devices, held.device))
        devices.push_back(held.device);
    std::vector<Peak> result;
    for (DeviceAttr device : devices) {
      std::vector<int64_t> change(plan_.steps.size() + 2, 0);
      for (const ArenaLifetime &held : plan_.lifetimes)
        if (held.device == device) {
          change[size_t(held.first)] += held.bytes;
          change[size_t(held.last) + 1] -= held.bytes;
        }
      Peak peak{device, 0, 0};
      int64_t live = 0;
      for (size_t s = 0; s < plan_.steps.size(); ++s) {
        live += change[s];
        if (live > peak.bytes)
          peak = {device, int(s), live};
      }
      result.push_back(peak);
    }
    return result;
  }

  MemoryPlanPreview plan_;
  llvm::DenseMap<Operation *, int> step_;
};

/// The copies the pass made so far, by the value they compute again.
class Copies {
public:
  /// The value `value` is a copy of (itself when it is no copy).
  Value originOf(Value value) const {
    Value origin = origin_.lookup(value);
    return origin ? origin : value;
  }
  void add(Value copy, Value of) {
    origin_[copy] = originOf(of);
    copies_[originOf(of)].push_back(copy);
  }
  /// `value` itself or a copy of it that the plan holds at `step`, if any.
  Value heldAt(Value value, int step, const Occupancy &occupancy) const {
    if (occupancy.liveAt(value, step))
      return value;
    Value origin = originOf(value);
    if (origin != value && occupancy.liveAt(origin, step))
      return origin;
    for (Value copy : copies_.lookup(origin))
      if (copy != value && occupancy.liveAt(copy, step))
        return copy;
    return nullptr;
  }

private:
  llvm::DenseMap<Value, Value> origin_;
  llvm::DenseMap<Value, SmallVector<Value>> copies_;
};

/// How to compute a value again at a step: the ops to copy there, in order (the
/// value's own last), and what else they read (held there).
struct Recomputation {
  SmallVector<Operation *> ops;
  IRMapping held; ///< operands that are not held at the step, to a copy that is
  double cost = 0;
};

/// Adds to `plan` what makes `value` available at `step`: nothing when it (or a copy)
/// is held there, else its op after what that op reads, up to `depth` ops deep. False
/// when it cannot be had there.
bool provide(Value value, int step, int depth, const Occupancy &occupancy, const Copies &copies,
             Recomputation &plan) {
  if (Value held = copies.heldAt(value, step, occupancy)) {
    if (held != value)
      plan.held.map(value, held);
    return true;
  }
  Operation *op = value.getDefiningOp();
  if (!op || depth == 0 || !recomputable(op))
    return false;
  if (llvm::is_contained(plan.ops, op))
    return true;
  for (Value operand : op->getOperands())
    if (!provide(operand, step, depth - 1, occupancy, copies, plan))
      return false;
  plan.ops.push_back(op);
  plan.cost += recomputeCost(op);
  return true;
}

/// How many ops deep a recomputation may go: a value and what made the values it
/// reads (a residual's shortcut computed again for the sum that reads it, a
/// convolution's input for the convolution).
constexpr int kChainDepth = 2;

/// A value to compute again: the ops that do it, before the first of its readers after
/// the peak.
struct Candidate {
  Value value;
  Operation *firstReaderAfter;
  Recomputation plan;
  double bytesFreedPerByteMoved;
};

/// The value live across `peak` (and not read there) whose recomputation frees the most
/// bytes per byte it moves, if any.
std::optional<Candidate> chooseCandidate(func::FuncOp function, const Occupancy &occupancy,
                                         const Copies &copies, const Occupancy::Peak &peak) {
  std::optional<Candidate> best;
  for (Operation &op : function.getBody().front().without_terminator()) {
    if (!recomputable(&op) || occupancy.stepOf(&op) >= peak.step)
      continue;
    for (Value result : op.getResults()) {
      const ArenaLifetime *life = occupancy.lifetime(result);
      if (!life || life->bytes == 0 || life->device != peak.device || life->last <= peak.step)
        continue;
      int64_t bytes = life->bytes;
      // Its readers, which must all be steps (a view would carry it on): one before the
      // peak, none at it, and the first after it.
      bool readBefore = false, plain = true;
      Operation *firstAfter = nullptr;
      int firstAfterStep = 0;
      for (Operation *reader : result.getUsers()) {
        if (isViewOp(reader) || isa<func::ReturnOp>(reader) ||
            reader->getBlock() != op.getBlock()) {
          plain = false;
          break;
        }
        int at = occupancy.stepOf(reader);
        plain = plain && at != peak.step;
        readBefore = readBefore || at < peak.step;
        if (at > peak.step && (!firstAfter || at < firstAfterStep))
          firstAfter = reader, firstAfterStep = at;
      }
      if (!plain || !readBefore || !firstAfter)
        continue;
      // Whatever the copy reads must be held there anyway, or be computed again too.
      Recomputation plan;
      if (!llvm::all_of(op.getOperands(), [&](Value operand) {
            return provide(operand, firstAfterStep, kChainDepth - 1, occupancy, copies, plan);
          }))
        continue;
      plan.ops.push_back(&op);
      plan.cost += recomputeCost(&op);
      double score = double(bytes) / std::max(plan.cost, 1.0);
      if (!best || score > best->bytesFreedPerByteMoved)
        best = Candidate{result, firstAfter, std::move(plan), score};
    }
  }
  return best;
}

/// Copies the candidate's ops to just before its first reader after the peak, and points
/// that reader and every later one at the copy.
void recompute(Candidate &candidate, const Occupancy &occupancy, Copies &copies) {
  OpBuilder builder(candidate.firstReaderAfter);
  IRMapping &mapping = candidate.plan.held;
  llvm::SmallPtrSet<Operation *, 4> made;
  for (Operation *op : candidate.plan.ops) {
    Operation *copy = builder.clone(*op, mapping);
    made.insert(copy);
    copy->setAttr(DLCDialect::getRecomputedAttrName(), builder.getUnitAttr());
    for (auto [result, again] : llvm::zip(op->getResults(), copy->getResults()))
      copies.add(again, result);
  }
  Value again = mapping.lookup(candidate.value);
  int from = occupancy.stepOf(candidate.firstReaderAfter);
  Value kept = candidate.value;
  kept.replaceUsesWithIf(again, [&](OpOperand &use) {
    return !made.contains(use.getOwner()) && occupancy.stepOf(use.getOwner()) >= from;
  });
}

/// How many times the pass aims lower when the plan's arena passes the values' peak.
constexpr int kRounds = 6;

/// The largest of the arenas dlc-plan-memory would give `function`.
FailureOr<int64_t> largestArena(func::FuncOp function) {
  FailureOr<MemoryPlanPreview> plan = previewMemoryPlan(function);
  if (failed(plan))
    return failure();
  return Occupancy(std::move(*plan)).largestArena();
}

/// Computes values again until no device's values hold more than `target` bytes at
/// once, the device passing it most first; the largest peak where no candidate is left
/// on any device over it, if it comes to that. A copy frees bytes at the peak but holds
/// its own where it runs, so the peaks need not fall at every copy: the copies are
/// capped at twice the function's ops.
/// Failure, with an error, where the plan fails.
FailureOr<std::optional<Occupancy::Peak>> lowerPeak(func::FuncOp function, int64_t target,
                                                    Copies &copies, int &recomputed) {
  const int64_t cap = 2 * int64_t(function.getBody().front().getOperations().size());
  for (int64_t made = 0;; ++made) {
    FailureOr<MemoryPlanPreview> plan = previewMemoryPlan(function);
    if (failed(plan))
      return failure();
    Occupancy occupancy(std::move(*plan));
    std::vector<Occupancy::Peak> over = occupancy.peaksOver(target);
    if (over.empty())
      return std::optional<Occupancy::Peak>();
    std::optional<Candidate> candidate;
    for (const Occupancy::Peak &peak : over)
      if ((candidate = chooseCandidate(function, occupancy, copies, peak)))
        break;
    if (!candidate || made >= cap)
      return std::optional<Occupancy::Peak>(over.front());
    recompute(*candidate, occupancy, copies);
    recomputed += int(candidate->plan.ops.size());
  }
}

struct RematPass : impl::DLCRematBase<RematPass> {
  using DLCRematBase::DLCRematBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (budget <= 0)
      return;
    FailureOr<bool> runnable = hasRunnableBody(function, getArgument());
    if (failed(runnable)) {
      signalPassFailure();
      return;
    }
    if (!*runnable)
      return;
    FailureOr<int64_t> before = largestArena(function);
    if (failed(before)) {
      signalPassFailure();
      return;
    }
    // The plan fits values into gaps first-fit, so its arena can pass the values' peak:
    // aim the peak lower by what the plan added, a few times.
    int64_t target = budget, after = *before;
    int recomputed = 0;
    Copies copies;
    std::optional<Occupancy::Peak> stuck;
    for (int round = 0; round < kRounds && after > budget && !stuck; ++round) {
      FailureOr<std::optional<Occupancy::Peak>> lowered =
          lowerPeak(function, target, copies, recomputed);
      FailureOr<int64_t> planned =
          failed(lowered) ? FailureOr<int64_t>(failure()) : largestArena(function);
      if (failed(planned)) {
        signalPassFailure();
        return;
      }
      stuck = *lowered;
      after = *planned;
      target -= std::max<int64_t>(after - budget, 0);
    }
    if (after > budget) {
      InFlightDiagnostic remark = mlir::emitRemark(function.getLoc());
      remark << "dlc-remat: the budget of " << int64_t(budget)
             << " bytes is not reached: the plan holds " << after << " bytes (" << *before
             << " before; " << recomputed << " ops computed again)";
      if (stuck)
        remark << "; at step " << stuck->step << ", " << stuck->device.str() << " holds "
               << stuck->bytes << " bytes of values that no copy can free";
    }
    Builder builder(function.getContext());
    function->setAttr(DLCDialect::getRematAttrName(),
                      builder.getDictionaryAttr(
                          {builder.getNamedAttr("budget", builder.getI64IntegerAttr(budget)),
                           builder.getNamedAttr("peak_before", builder.getI64IntegerAttr(*before)),
                           builder.getNamedAttr("peak_after", builder.getI64IntegerAttr(after))}));
  }
};

} // namespace
} // namespace mlir::dlc
