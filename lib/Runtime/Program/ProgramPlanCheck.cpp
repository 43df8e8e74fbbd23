//===- ProgramPlanCheck.cpp - a loaded memory plan re-verified ----------------===//
//
// set_plan checks that every value fits its buffer; that alone lets a model file whose
// checksums are valid place two values that are live at once in the same bytes, and
// run to wrong outputs. So a decoded program's plan is checked as dlc-plan-memory makes
// it: a view lies inside the value it views; an argument's or a result's buffer holds
// that argument or result only; and within an arena, two values share bytes only when
// their lifetimes (from the step that writes one to the last step that reads it, in
// step order) do not overlap, or when an element-wise kernel writes its result over an
// input of the same type that it reads last. A value read on another device's queue,
// by an all-reduce, by the caller (a result) or written back (an update) stays live to
// the end, as dlc-plan-memory keeps it.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Files/ProgramFile.h"

#include "dlc/Core/OpFacts.h"

#include <algorithm>
#include <climits>

namespace dlc {

namespace {

const char *storageName(StorageKind kind) {
  switch (kind) {
  case StorageKind::argument: return "argument";
  case StorageKind::result: return "result";
  case StorageKind::prepared: return "prepared";
  case StorageKind::arena: break;
  }
  return "arena";
}

class PlanCheck {
public:
  explicit PlanCheck(const Program &p) : p_(p) {}

  std::string run() {
    const int end = int(p_.steps.size());
    root_.resize(p_.values.size());
    for (size_t id = 0; id < p_.values.size(); ++id) {
      int alias = p_.values[id].alias_of;
      root_[id] = alias < 0 ? int(id) : root_[size_t(alias)]; // decoding made alias < id
      if (std::string problem = checkView(int(id)); !problem.empty())
        return problem;
    }
    for (size_t k = 0; k < p_.arguments.size(); ++k)
      if (std::string problem = checkOwner(StorageKind::argument, int(k), p_.arguments[k]);
          !problem.empty())
        return problem;
    for (size_t k = 0; k < p_.results.size(); ++k)
      if (std::string problem = checkOwner(StorageKind::result, int(k), p_.results[k]);
          !problem.empty())
        return problem;
    for (size_t id = 0; id < p_.values.size(); ++id) {
      const ProgramValue &v = p_.values[id];
      if (root_[id] != int(id) || v.storage == StorageKind::arena ||
          v.storage == StorageKind::prepared)
        continue;
      const std::vector<int> &owners =
          v.storage == StorageKind::argument ? p_.arguments : p_.results;
      if (v.index < 0 || size_t(v.index) >= owners.size() || owners[size_t(v.index)] != int(id))
        return "value %" + std::to_string(id) + " is placed in " + storageName(v.storage) +
               " " + std::to_string(v.index) + ", whose buffer holds " +
               storageName(v.storage) + " " + std::to_string(v.index) + "'s value only";
    }

    if (std::string problem = checkPrepared(); !problem.empty())
      return problem;

    // Lifetimes of the values that own their bytes, in steps: [written, last read].
    born_.assign(p_.values.size(), -1);
    dies_.assign(p_.values.size(), -1);
    for (int s = 0; s < end; ++s) {
      const ProgramStep &step = p_.steps[size_t(s)];
      for (int out : step.outputs)
        if (born_[size_t(root_[size_t(out)])] < 0)
          born_[size_t(root_[size_t(out)])] = s;
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        int root = root_[size_t(step.inputs[k])];
        Device runs = step.kind == ProgramStep::Kind::all_reduce ? step.devices[k] : step.device;
        bool elsewhere = step.kind == ProgramStep::Kind::all_reduce ||
                         p_.values[size_t(root)].device != runs;
        dies_[size_t(root)] = elsewhere ? end : std::max(dies_[size_t(root)], s);
      }
    }
    for (int id : p_.results)
      dies_[size_t(root_[size_t(id)])] = end;
    for (const auto &[value, argument] : p_.updates)
      dies_[size_t(root_[size_t(value)])] = end;
    for (size_t id = 0; id < p_.values.size(); ++id)
      dies_[id] = std::max(dies_[id], born_[id]); // written, never read: live where written

    // Values sharing bytes of one arena, found by offset.
    std::vector<int> placed;
    for (size_t id = 0; id < p_.values.size(); ++id)
      if (root_[id] == int(id) && p_.values[id].storage == StorageKind::arena &&
          p_.values[id].bytes() > 0)
        placed.push_back(int(id));
    std::sort(placed.begin(), placed.end(), [&](int a, int b) {
      const ProgramValue &x = p_.values[size_t(a)], &y = p_.values[size_t(b)];
      return std::make_pair(x.index, x.offset) < std::make_pair(y.index, y.offset);
    });
    for (size_t i = 0; i < placed.size(); ++i) {
      const ProgramValue &a = p_.values[size_t(placed[i])];
      for (size_t j = i + 1; j < placed.size(); ++j) {
        const ProgramValue &b = p_.values[size_t(placed[j])];
        if (b.index != a.index || b.offset >= a.offset + a.bytes())
          break;
        if (std::string problem = checkShared(placed[i], placed[j]); !problem.empty())
          return problem;
      }
    }
    return "";
  }

private:
  std::string describe(int id) const {
    const ProgramValue &v = p_.values[size_t(id)];
    return "value %" + std::to_string(id) + " (" + dtype_name(v.dtype) + " " +
           shape_rules::str(v.shape) + ", " + std::to_string(v.bytes()) + " bytes at " +
           storageName(v.storage) + " " + std::to_string(v.index) + " + " +
           std::to_string(v.offset) + ")";
  }

  std::string lifetime(int id) const {
    auto at = [&](int s) {
      return s < 0 ? std::string("the start") : s >= int(p_.steps.size()) ? "the end"
                                                                          : "step " + std::to_string(s);
    };
    return at(born_[size_t(id)]) + " to " + at(dies_[size_t(id)]);
  }

  /// A view lies inside the bytes of the value it views.
  std::string checkView(int id) const {
    const ProgramValue &v = p_.values[size_t(id)];
    if (root_[size_t(id)] == id)
      return "";
    const ProgramValue &root = p_.values[size_t(root_[size_t(id)])];
    if (v.storage != root.storage || v.index != root.index || v.offset < root.offset ||
        v.bytes() > root.bytes() || v.offset - root.offset > root.bytes() - v.bytes())
      return describe(id) + " views " + describe(root_[size_t(id)]) +
             " but lies outside its bytes";
    return "";
  }

  /// Prepared steps (skipped by a run whose parameters did not change) read only
  /// arguments and prepared values and write prepared values only; nothing else writes
  /// those, and no two of them share bytes (they all live from run to run).
  std::string checkPrepared() const {
    std::vector<int> owners;
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      const ProgramStep &step = p_.steps[s];
      for (int in : step.inputs) {
        StorageKind kind = p_.values[size_t(root_[size_t(in)])].storage;
        if (step.prepared && kind != StorageKind::argument && kind != StorageKind::prepared)
          return "step " + std::to_string(s) + " (" + step.op + ") is prepared but reads " +
                 describe(in) + ", which a run computes";
      }
      // Kept weights are fixed between runs: arguments (their writes are counted) or
      // prepared values.
      for (size_t k = 0; k < step.kept_inputs.size(); ++k) {
        int position = step.kept_inputs[k];
        if (position < 0 || size_t(position) >= step.inputs.size() ||
            (k > 0 && position <= step.kept_inputs[k - 1]))
          return "step " + std::to_string(s) + " (" + step.op + ") keeps input " +
                 std::to_string(position) + " of its " + std::to_string(step.inputs.size()) +
                 " prepared (expected increasing input positions)";
        int in = step.inputs[size_t(position)];
        StorageKind kind = p_.values[size_t(root_[size_t(in)])].storage;
        if (kind != StorageKind::argument && kind != StorageKind::prepared)
          return "step " + std::to_string(s) + " (" + step.op + ") keeps input " +
                 std::to_string(position) + " prepared, but it reads " + describe(in) +
                 ", which a run computes";
      }
      for (int out : step.outputs) {
        bool prepared = p_.values[size_t(out)].storage == StorageKind::prepared;
        if (prepared != step.prepared)
          return "step " + std::to_string(s) + " (" + step.op + ") " +
                 (step.prepared ? "is prepared but writes " : "is not prepared but writes ") +
                 describe(out);
        if (prepared && root_[size_t(out)] == out)
          owners.push_back(out);
      }
    }
    std::sort(owners.begin(), owners.end(), [&](int a, int b) {
      return p_.values[size_t(a)].offset < p_.values[size_t(b)].offset;
    });
    for (size_t i = 1; i < owners.size(); ++i) {
      const ProgramValue &a = p_.values[size_t(owners[i - 1])], &b = p_.values[size_t(owners[i])];
      if (b.offset < a.offset + a.bytes())
        return "the plan puts " + describe(owners[i - 1]) + " and " + describe(owners[i]) +
               " in the same bytes of the prepared block";
    }
    return "";
  }

  /// The value bound to argument or result `k` owns that buffer from its start.
  std::string checkOwner(StorageKind kind, int k, int id) const {
    const ProgramValue &v = p_.values[size_t(id)];
    if (root_[size_t(id)] == id && v.storage == kind && v.index == k && v.offset == 0)
      return "";
    return std::string(storageName(kind)) + " " + std::to_string(k) + " is " + describe(id) +
           ", which does not own that buffer";
  }

  /// Owners `a` and `b` share bytes of one arena: fine when they are never live at once,
  /// or when an element-wise step writes one over the other as it reads it last.
  std::string checkShared(int a, int b) const {
    if (dies_[size_t(a)] < born_[size_t(b)] || dies_[size_t(b)] < born_[size_t(a)])
      return "";
    for (auto [in, out] : {std::make_pair(a, b), std::make_pair(b, a)})
      if (inPlace(in, out))
        return "";
    return "the plan puts " + describe(a) + " and " + describe(b) +
           " in the same bytes while both are live (" + lifetime(a) + ", and " + lifetime(b) +
           ")";
  }

  /// Whether `out` is the one result of an element-wise kernel step that reads `in`
  /// last, in the same bytes and of the same type (dlc-plan-memory's in_place).
  bool inPlace(int in, int out) const {
    int s = born_[size_t(out)];
    if (s < 0 || dies_[size_t(in)] != s)
      return false;
    const ProgramStep &step = p_.steps[size_t(s)];
    const ProgramValue &x = p_.values[size_t(in)], &y = p_.values[size_t(out)];
    const op_facts::OpInfo *info = op_facts::find(step.op);
    return step.kind == ProgramStep::Kind::kernel && !step.fused && info &&
           info->has(op_facts::OpTrait::elementwise_kernel) && step.outputs.size() == 1 &&
           step.outputs[0] == out &&
           std::find(step.inputs.begin(), step.inputs.end(), in) != step.inputs.end() &&
           x.offset == y.offset && x.dtype == y.dtype && x.shape == y.shape;
  }

  const Program &p_;
  std::vector<int> root_, born_, dies_;
};

} // namespace

std::string check_memory_plan(const Program &program) {
  std::string problem = PlanCheck(program).run();
  return problem.empty() ? "" : "program '" + program.name + "': " + problem;
}

} // namespace dlc
