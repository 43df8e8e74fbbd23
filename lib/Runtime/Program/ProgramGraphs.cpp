//===- ProgramGraphs.cpp - a one-task GPU program as one graph launch per run -===//
//
// The first run launches the steps one by one, so that every kernel has filled its
// caches (cuDNN's algorithm choice, the workspace's size) before anything is recorded;
// the second records them (TaskGraphs::capture) and replays the recording; later runs
// replay it. A binding whose address differs from the warm-up's, or later from the
// recording's, is staged from then on and the steps are recorded again: at most once
// per binding, so a training step settles after a few runs with its batch and result
// staged and its parameters and optimizer state used in place.
//
//===----------------------------------------------------------------------===//
#include "ProgramGraphs.h"

#include "DeviceBytes.h"
#include "dlc/Runtime/Engine/DeviceBackend.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Engine/Profile.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dlc {

namespace {

std::mutex backendsMutex;
std::map<DeviceKind, TaskGraphs> &backends() {
  static std::map<DeviceKind, TaskGraphs> byKind;
  return byKind;
}

/// The process switch (set_program_graphs); each program also has its own.
std::atomic<bool> graphsEnabled{true};

} // namespace

void register_task_graphs(DeviceKind kind, TaskGraphs graphs) {
  std::lock_guard<std::mutex> lock(backendsMutex);
  backends()[kind] = graphs;
}

const TaskGraphs *task_graphs(DeviceKind kind) {
  device_backend(kind); // a backend registers its graphs when it is loaded
  std::lock_guard<std::mutex> lock(backendsMutex);
  auto found = backends().find(kind);
  return found == backends().end() || !found->second.capture ? nullptr : &found->second;
}

void set_program_graphs(bool enabled) { graphsEnabled = enabled; }

bool program_graphs_enabled() { return graphsEnabled.load(); }

ProgramGraphStats Program::graph_stats() const {
  std::lock_guard<std::mutex> lock(graphedMutex_);
  return graphed_ ? graphed_->stats : ProgramGraphStats{};
}

std::shared_ptr<Program::Graphed> Program::graphedFor(Device device, bool reference_kernels) const {
  // Profiling and numerics checks wait for each kernel; the reference kernels are not
  // what the recording would hold.
  if (device.is_host() || reference_kernels || !cuda_graphs || !program_graphs_enabled() ||
      KernelProfile::get() || check_numerics_enabled())
    return nullptr;
  const TaskGraphs *backend = task_graphs(device.kind);
  if (!backend)
    return nullptr;
  std::lock_guard<std::mutex> lock(graphedMutex_);
  if (!graphed_) {
    auto g = std::make_shared<Graphed>();
    g->backend = backend;
    for (const ProgramStep &step : steps)
      if (step.fresh_seed && !step.kernels.seed_on_device) {
        g->stats.not_graphed = step.op + " on " + device.str() +
                               " draws from a seed on the host, which a replay cannot change";
        break;
      }
    if (!g->stats.not_graphed.empty()) {
      graphed_ = g;
      return nullptr;
    }
    g->arena = std::make_shared<Buffer>(
        allocate(device, std::max<size_t>(arenas.empty() ? 0 : arenas.front().bytes, 1)));
    if (int64_t n = seeds_needed())
      g->seeds = allocate(device, size_t(n) * sizeof(int64_t));
    std::vector<bool> updated(arguments.size(), false);
    for (const auto &[value, argument] : updates)
      updated[size_t(argument)] = true;
    for (size_t i = 0; i < arguments.size(); ++i) {
      g->bytes.push_back(values[size_t(arguments[i])].bytes());
      g->copiedOut.push_back(updated[i]);
    }
    for (int id : results) {
      g->bytes.push_back(values[size_t(id)].bytes());
      g->copiedOut.push_back(true);
    }
    g->staging.resize(g->bytes.size());
    g->recorded.resize(g->bytes.size());
    graphed_ = std::move(g); // complete: an allocation above may have thrown
  }
  return graphed_->stats.not_graphed.empty() ? graphed_ : nullptr;
}

void Program::runGraphed(Graphed &g, Device device, const Bases &caller,
                         const std::shared_ptr<Storage> &pinnedSeeds) const {
  const size_t arguments = caller.arguments.size();
  std::vector<char *> at(caller.arguments);
  at.insert(at.end(), caller.results.begin(), caller.results.end());
  auto note = [&](auto &&change) {
    std::lock_guard<std::mutex> lock(graphedMutex_);
    change(g.stats);
  };
  // Lets go of the memory a program that no longer records holds for recordings, so that
  // its runs take and return memory as launched runs do (this run's task keeps the arena
  // until it has finished; the seeds' few bytes stay, this run's kernels read them).
  auto giveUp = [](Graphed &graphed) {
    graphed.graph = nullptr;
    graphed.arena = nullptr;
    graphed.staging.assign(graphed.staging.size(), nullptr);
  };
  const int64_t *deviceSeeds = g.seeds ? static_cast<const int64_t *>(g.seeds->data()) : nullptr;
  if (pinnedSeeds)
    upload_bytes(device, g.seeds->data(), pinnedSeeds->data(),
                 size_t(seeds_needed()) * sizeof(int64_t));

  if (g.previous.empty()) { // the warm-up run
    g.previous = at;
    g.owners.assign(caller.owners.begin(), caller.owners.end());
    launchSteps(device, caller, {}, deviceSeeds, false);
    note([](ProgramGraphStats &s) { ++s.launched; });
    return;
  }
  // Bindings not where the recording (or the warm-up) had them, or in another buffer than
  // the warm-up's, are staged from now on. Parameters and optimizer state keep their
  // buffers; the batch and fresh results do not, and are all staged by the second run,
  // whatever addresses the allocator gave them: what is recorded does not depend on
  // timing, and a warm run allocates nothing.
  std::vector<size_t> moved;
  for (size_t b = 0; b < at.size(); ++b)
    if (!g.staging[b] && ((g.graph ? g.recorded[b] : g.previous[b]) != at[b] ||
                          g.owners[b].lock() != caller.owners[b]))
      moved.push_back(b);
  if (!g.graph || !moved.empty()) {
    // Each staged binding costs a copy around every replay, as much host time as a
    // launch: record only when that halves the run's host calls (a compiled training
    // step stages its batch and results; a hybridized forward block would stage every
    // activation it saves for the backward one, and gains nothing).
    size_t copies = 0;
    for (size_t b = 0; b < at.size(); ++b)
      if (g.staging[b] || std::find(moved.begin(), moved.end(), b) != moved.end())
        copies += size_t(b < arguments) + size_t(g.copiedOut[b]);
    size_t launches = steps.size() + updates.size();
    if (2 * (copies + 1) > launches) {
      note([&](ProgramGraphStats &s) {
        s.not_graphed = "a replay would copy " + std::to_string(copies) +
                        " times to save at most " + std::to_string(launches) + " launches";
        ++s.launched;
      });
      giveUp(g);
      launchSteps(device, caller, {}, deviceSeeds, false);
      return;
    }
    for (size_t b : moved)
      g.staging[b] = allocate(device, std::max<size_t>(g.bytes[b], 1));
    note([&](ProgramGraphStats &s) { s.staged += int64_t(moved.size()); });
    for (size_t b = 0; b < at.size(); ++b)
      g.recorded[b] = g.staging[b] ? static_cast<char *>(g.staging[b]->data()) : at[b];
    Bases recorded;
    recorded.arguments.assign(g.recorded.begin(), g.recorded.begin() + std::ptrdiff_t(arguments));
    recorded.results.assign(g.recorded.begin() + std::ptrdiff_t(arguments), g.recorded.end());
    recorded.arena = caller.arena;
    recorded.prepared = caller.prepared; // the program's own block: it does not move
    g.graph = nullptr;
    try {
      g.graph = g.backend->capture(
          device.id, [&] { launchSteps(device, recorded, {}, deviceSeeds, false); });
    } catch (const std::exception &e) {
      // Some step cannot be recorded: this run and the later ones launch step by step.
      note([&](ProgramGraphStats &s) {
        s.not_graphed = std::string("recording the steps failed: ") + e.what();
        ++s.launched;
      });
      giveUp(g);
      launchSteps(device, caller, {}, deviceSeeds, false);
      return;
    }
    note([](ProgramGraphStats &s) { ++s.captures; });
  }
  for (size_t b = 0; b < arguments; ++b)
    if (g.staging[b])
      move_bytes(device, g.staging[b]->data(), at[b], g.bytes[b]);
  g.backend->replay(g.graph, device.id);
  for (size_t b = 0; b < at.size(); ++b)
    if (g.staging[b] && g.copiedOut[b])
      move_bytes(device, at[b], g.staging[b]->data(), g.bytes[b]);
  note([](ProgramGraphStats &s) { ++s.replays; });
}

} // namespace dlc
