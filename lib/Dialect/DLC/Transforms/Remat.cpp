//===- Remat.cpp - compute activations again instead of keeping them ----------===//
//
// A training step holds most around where its forward ends: every activation the
// backward reads is still kept. Under a budget, this pass measures the function's values
// as dlc-plan-memory places them (an arena value lives from its step to its last reader;
// arguments, prepared values and results in caller buffers do not count; a value read
// on another device lives to the end), finds the step where a device holds the most, and
// copies the op of a value live there but unread there to just before its first reader
// after it. It copies memory-bound ops (element-wise ops, batch norms, regions of those)
// and convolutions, only where what they read is held at the new place anyway or is
// made again there too (one op deep), so a copy never keeps another value longer. The
// most bytes freed per byte of work first; measured again after each. The budget is
// checked against the plan itself (plannedArenaSizes), whose first-fit gaps can make
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

/// The bytes of `value` as the runtime holds it, or 0 for a type it does not plan.
int64_t bytesOf(Value value) {
  ::dlc::shape_rules::Shape shape;
  ::dlc::DType dtype;
  std::string why;
  if (!runtimeTensor(value.getType(), shape, dtype, why))
    return 0;
  return ::dlc::shape_rules::numElements(shape) * int64_t(::dlc::dtype_size(dtype));
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

/// The function's values as the memory plan will hold them, measured step by step.
class Occupancy {
public:
  explicit Occupancy(func::FuncOp function) {
    fallback_ = functionDevice(function);
    Block &body = function.getBody().front();
    for (Operation &op : body.without_terminator())
      if (!isViewOp(&op))
        step_[&op] = int(steps_.size()), steps_.push_back(&op);
    const int end = int(steps_.size());
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Operation *op : steps_) {
      if (op->hasAttr(DLCDialect::getPreparedAttrName()))
        continue; // the prepared block, kept from run to run
      if (auto reduce = dyn_cast<AllReduceOp>(op)) {
        for (auto [device, result] : llvm::zip(reduce.getDevices(), op->getResults()))
          values_.push_back(
              {result, cast<DeviceAttr>(device), bytesOf(result), step_[op], step_[op]});
        continue;
      }
      for (Value result : op->getResults())
        values_.push_back({result, deviceOfStep(op), bytesOf(result), step_[op], step_[op]});
    }
    for (auto [id, held] : llvm::enumerate(values_))
      index_[held.value] = int(id);
    // A reader extends the value it reads, through views, to its step; to the end when
    // it all-reduces or runs on another device (only that device knows when it is done).
    for (Operation *op : steps_)
      for (Value operand : op->getOperands())
        if (int id = root(operand); id >= 0) {
          Held &held = values_[size_t(id)];
          bool elsewhere = isa<AllReduceOp>(op) || held.device != deviceOfStep(op);
          held.last = std::max(held.last, elsewhere ? end : step_[op]);
        }
    // A returned value that owns its storage goes to the caller's buffer; the rest
    // returned (and what is written back into arguments) is copied there at the end.
    for (auto [k, operand] : llvm::enumerate(ret.getOperands())) {
      int id = root(operand);
      if (id < 0)
        continue;
      Held &held = values_[size_t(id)];
      bool owns = held.value == operand && !returned_.count(operand) &&
                  !function.getResultAttr(unsigned(k), DLCDialect::getUpdatesAttrName());
      if (owns)
        held.bytes = 0;
      else
        held.last = end;
      returned_.insert(operand);
    }
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

  /// The step that makes `value` (an arena value) and its last reader's, or nullopt
  /// when it is not such a value.
  struct Lifetime {
    int first, last;
  };
  std::optional<Lifetime> lifetime(Value value) const {
    auto it = index_.find(value);
    if (it == index_.end())
      return std::nullopt;
    const Held &held = values_[size_t(it->second)];
    return Lifetime{held.first, held.last};
  }

  /// Whether an op placed just before step `step` may read `value` and find it held: an
  /// argument always; an arena value (through its views, which must come before) from
  /// its step to its last reader; a prepared value once made.
  bool liveAt(Value value, int step) const {
    Operation *def = value.getDefiningOp();
    if (!def)
      return true;
    if (!def->isBeforeInBlock(steps_[size_t(step)]))
      return false;
    if (int id = root(value); id >= 0)
      return values_[size_t(id)].first <= step && step <= values_[size_t(id)].last;
    return true; // the prepared block, kept for the whole run
  }

  /// The device a value lives on, when it is an arena value.
  DeviceAttr deviceOf(Value value) const {
    auto it = index_.find(value);
    return it == index_.end() ? DeviceAttr() : values_[size_t(it->second)].device;
  }

private:
  /// The device a step runs on, as the plan counts it (a copy: its target).
  DeviceAttr deviceOfStep(Operation *op) const {
    return isa<CopyOp>(op) ? cast<CopyOp>(op).getDevice() : stepDevice(op, fallback_);
  }

  struct Held {
    Value value;
    DeviceAttr device;
    int64_t bytes;
    int first, last; ///< its step, and its last reader's
  };

  /// The index of the arena value `value` lives in (through views), or -1.
  int root(Value value) const {
    while (Operation *op = value.getDefiningOp()) {
      if (!isViewOp(op))
        break;
      value = op->getOperand(0);
    }
    auto it = index_.find(value);
    return it == index_.end() ? -1 : it->second;
  }

  /// Each device's peak: the bytes its values hold at the step holding the most.
  std::vector<Peak> peaks() const {
    std::vector<DeviceAttr> devices;
    for (const Held &held : values_)
      if (held.bytes > 0 && !llvm::is_contained(devices, held.device))
        devices.push_back(held.device);
    std::vector<Peak> result;
    for (DeviceAttr device : devices) {
      std::vector<int64_t> change(steps_.size() + 2, 0);
      for (const Held &held : values_)
        if (held.device == device && held.bytes > 0) {
          change[size_t(held.first)] += held.bytes;
          change[size_t(std::max(held.last, held.first)) + 1] -= held.bytes;
        }
      Peak peak{device, 0, 0};
      int64_t live = 0;
      for (size_t s = 0; s < steps_.size(); ++s) {
        live += change[s];
        if (live > peak.bytes)
          peak = {device, int(s), live};
      }
      result.push_back(peak);
    }
    return result;
  }

  DeviceAttr fallback_;
  std::vector<Operation *> steps_;
  llvm::DenseMap<Operation *, int> step_;
  std::vector<Held> values_;
  llvm::DenseMap<Value, int> index_;
  llvm::DenseSet<Value> returned_;
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
      std::optional<Occupancy::Lifetime> life = occupancy.lifetime(result);
      int64_t bytes = bytesOf(result);
      if (!life || bytes == 0 || occupancy.deviceOf(result) != peak.device ||
          life->last <= peak.step)
        continue;
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
  FailureOr<SmallVector<int64_t>> sizes = plannedArenaSizes(function);
  if (failed(sizes))
    return failure();
  int64_t largest = 0;
  for (int64_t size : *sizes)
    largest = std::max(largest, size);
  return largest;
}

/// Computes values again until no device's values hold more than `target` bytes at
/// once, the device passing it most first; the largest peak where no candidate is left
/// on any device over it, if it comes to that. A copy frees bytes at the peak but holds
/// its own where it runs, so the peaks need not fall at every copy: the copies are
/// capped at twice the function's ops.
std::optional<Occupancy::Peak> lowerPeak(func::FuncOp function, int64_t target, Copies &copies,
                                         int &recomputed) {
  const int64_t cap = 2 * int64_t(function.getBody().front().getOperations().size());
  for (int64_t made = 0;; ++made) {
    Occupancy occupancy(function);
    std::vector<Occupancy::Peak> over = occupancy.peaksOver(target);
    if (over.empty())
      return std::nullopt;
    std::optional<Candidate> candidate;
    for (const Occupancy::Peak &peak : over)
      if ((candidate = chooseCandidate(function, occupancy, copies, peak)))
        break;
    if (!candidate || made >= cap)
      return over.front();
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
      stuck = lowerPeak(function, target, copies, recomputed);
      FailureOr<int64_t> planned = largestArena(function);
      if (failed(planned)) {
        signalPassFailure();
        return;
      }
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
