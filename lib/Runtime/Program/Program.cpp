//===- Program.cpp - checking a planned program, running it on one device -----===//
#include "dlc/Runtime/Program/Program.h"

#include "DeviceBytes.h"
#include "ProgramGraphs.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Engine/Profile.h"

#include <algorithm>
#include <map>
#include <cstring>
#include <mutex>
#include <tuple>
#include <sstream>

namespace dlc {

namespace {

/// A 1-d strided memref descriptor, as MLIR's LLVM lowering lays it out.
struct MemRef1D {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t size;
  int64_t stride;
};

/// Elements [begin, begin + length) of the region through its generated code.
void runGeneratedChunk(const FusedElementwise &body, const std::vector<char *> &inputs,
                       const std::vector<char *> &outputs, int64_t begin, int64_t length) {
  // Per thread and reused: a chunk is a few microseconds of work, no place for mallocs.
  size_t count = inputs.size() + outputs.size();
  thread_local std::vector<MemRef1D> views;
  thread_local std::vector<MemRef1D *> pointers;
  thread_local std::vector<void *> arguments;
  views.resize(count);
  pointers.resize(count);
  arguments.resize(count);
  for (size_t k = 0; k < count; ++k) {
    bool isInput = k < inputs.size();
    float *base = reinterpret_cast<float *>(isInput ? inputs[k] : outputs[k - inputs.size()]);
    bool scalar = isInput && body.scalar[k];
    // The kernel's memrefs have no offset of their own: the chunk starts at `aligned`.
    views[k] = {base, scalar ? base : base + begin, 0, scalar ? 1 : length, 1};
    pointers[k] = &views[k];
    arguments[k] = &pointers[k];
  }
  body.generated->entry(arguments.data());
}

} // namespace

namespace {
std::mutex launcherMutex;
std::map<DeviceKind, GeneratedKernelLauncher> &launchers() {
  static std::map<DeviceKind, GeneratedKernelLauncher> byKind;
  return byKind;
}
} // namespace

void register_generated_kernel_launcher(DeviceKind kind, GeneratedKernelLauncher launcher) {
  std::lock_guard<std::mutex> lock(launcherMutex);
  launchers()[kind] = launcher;
}

const GeneratedKernelLauncher *generated_kernel_launcher(DeviceKind kind) {
  std::lock_guard<std::mutex> lock(launcherMutex);
  auto found = launchers().find(kind);
  return found == launchers().end() || !found->second.launch ? nullptr : &found->second;
}

std::string fused_elementwise_name(const std::string &op, const FusedElementwise &body) {
  std::string name = op + "{";
  for (size_t k = 0; k < body.steps.size(); ++k)
    name += (k ? ", " : "") + body.steps[k].op;
  return name + "}";
}

void run_fused_elementwise(const FusedElementwise &body, const std::vector<char *> &inputs,
                           const std::vector<char *> &outputs, bool reference, Device device) {
  if (!device.is_host()) {
    const GeneratedKernelLauncher *launcher = generated_kernel_launcher(device.kind);
    if (!body.gpu || !launcher)
      throw UnsupportedError("dlc.fused.elementwise on " + device.str() +
                             ": the region has no generated kernel this device can launch");
    std::vector<char *> pointers(inputs);
    pointers.insert(pointers.end(), outputs.begin(), outputs.end());
    launcher->launch(*body.gpu, device.id, pointers, body.elements);
    return;
  }
  const int64_t elements = body.elements;
  constexpr int64_t chunk = 4096;
  const int64_t chunks = std::max<int64_t>(1, (elements + chunk - 1) / chunk);
  const size_t locals = size_t(body.inputs) + body.steps.size();
  const bool generated = body.generated && !reference;
  std::vector<int> outputOf(locals, -1); // local value -> step output written in place
  for (size_t k = 0; k < body.outputs.size(); ++k)
    outputOf[size_t(body.outputs[k])] = int(k);
  std::exception_ptr error;
  std::mutex errorMutex;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    try {
      const int64_t begin = c * chunk, length = std::min(chunk, elements - begin);
      if (generated) {
        runGeneratedChunk(body, inputs, outputs, begin, length);
        continue;
      }
      thread_local std::vector<float> scratch;
      scratch.resize(locals * size_t(chunk));
      std::vector<char *> at(locals);
      for (size_t v = 0; v < locals; ++v) {
        size_t offset = body.scalar[v] ? 0 : size_t(begin) * sizeof(float);
        if (v < size_t(body.inputs))
          at[v] = inputs[v] + offset;
        else if (outputOf[v] >= 0)
          at[v] = outputs[size_t(outputOf[v])] + offset;
        else
          at[v] = reinterpret_cast<char *>(scratch.data() + v * size_t(chunk));
      }
      KernelArgs call;
      for (size_t k = 0; k < body.steps.size(); ++k) {
        const FusedElementwise::SubStep &step = body.steps[k];
        size_t out = size_t(body.inputs) + k;
        call.attrs = &step.attrs;
        call.inputs.clear();
        call.outputs.clear();
        for (int in : step.inputs)
          call.inputs.push_back(
              {at[size_t(in)], body.scalar[size_t(in)] ? Shape{} : Shape{length}, DType::f32});
        call.outputs.push_back({at[out], body.scalar[out] ? Shape{} : Shape{length}, DType::f32});
        (reference ? step.kernels.reference : step.kernels.fast)(call);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (!error)
        error = std::current_exception();
    }
  }
  if (error)
    std::rethrow_exception(error);
}

namespace {

const char *storageName(StorageKind kind) {
  switch (kind) {
  case StorageKind::argument:
    return "arg";
  case StorageKind::result:
    return "result";
  case StorageKind::prepared:
    return "prepared";
  case StorageKind::arena:
    break;
  }
  return "arena";
}

} // namespace

std::string Program::set_plan(const MemoryPlan &memory) {
  for (size_t id = 0; id < values.size(); ++id) {
    const ProgramValue &v = values[id];
    size_t room = 0;
    bool known = v.index >= 0;
    switch (v.storage) {
    case StorageKind::argument:
      known = known && size_t(v.index) < arguments.size();
      room = known ? values[size_t(arguments[size_t(v.index)])].bytes() : 0;
      break;
    case StorageKind::result:
      known = known && size_t(v.index) < results.size();
      room = known ? values[size_t(results[size_t(v.index)])].bytes() : 0;
      break;
    case StorageKind::arena:
      known = known && size_t(v.index) < arenas.size() && arenas[size_t(v.index)].device == v.device;
      room = known ? arenas[size_t(v.index)].bytes : 0;
      break;
    case StorageKind::prepared:
      known = known && v.index == 0;
      room = known ? prepared_bytes : 0;
      break;
    }
    if (!known || v.offset > room || v.bytes() > room - v.offset)
      return "program '" + name + "': value %" + std::to_string(id) + " (" +
             std::to_string(v.bytes()) + " bytes on " + v.device.str() + " at " +
             storageName(v.storage) + " " + std::to_string(v.index) + " + " +
             std::to_string(v.offset) + ") does not fit there (" + std::to_string(room) +
             " bytes)";
  }
  std::vector<Device> used = devices();
  taskDevice_ = used.empty() ? (values.empty() ? cpu(0) : values.front().device) : used.front();
  oneTask_ = used.size() <= 1 &&
             std::none_of(steps.begin(), steps.end(),
                          [](const ProgramStep &s) { return s.kind == ProgramStep::Kind::all_reduce; }) &&
             std::all_of(values.begin(), values.end(), [&](const ProgramValue &v) {
               return used.empty() || v.device == used.front();
             });
  preparedArguments_.clear();
  hasPrepared_ = false;
  memos_.assign(steps.size(), KernelMemo{});
  for (const ProgramStep &step : steps) {
    if (!step.prepared && step.kept_inputs.empty())
      continue;
    hasPrepared_ = true;
    if (!oneTask_)
      return "program '" + name + "': step " + step.op + " is prepared or keeps its weights "
             "(kept from run to run), but the program runs on several devices; that needs one";
    // What a prepared step reads, or the weights a step keeps: the run checks whether
    // those arguments changed.
    std::vector<int> watched;
    if (step.prepared)
      watched = step.inputs;
    else
      for (int position : step.kept_inputs)
        if (position >= 0 && size_t(position) < step.inputs.size())
          watched.push_back(step.inputs[size_t(position)]);
    for (int in : watched) {
      int root = in;
      while (values[size_t(root)].alias_of >= 0)
        root = values[size_t(root)].alias_of;
      if (values[size_t(root)].storage == StorageKind::argument &&
          std::find(preparedArguments_.begin(), preparedArguments_.end(),
                    values[size_t(root)].index) == preparedArguments_.end())
        preparedArguments_.push_back(values[size_t(root)].index);
    }
  }
  memory_ = memory;
  planned_ = true;
  return "";
}

std::tuple<std::shared_ptr<Buffer>, bool, uint64_t>
Program::preparedFor(const std::vector<BoundBuffer> &args, bool always) const {
  std::vector<std::array<uint64_t, 3>> stamps;
  for (int a : preparedArguments_) {
    const BoundBuffer &bound = args[size_t(a)];
    stamps.push_back({bound.buffer->id(), bound.buffer->version(), uint64_t(bound.offset)});
  }
  std::lock_guard<std::mutex> lock(preparedMutex_);
  if (!preparedBlock_)
    preparedBlock_ = std::make_shared<Buffer>(allocate(taskDevice_, std::max<size_t>(prepared_bytes, 1)));
  bool prepare = always || preparedStamps_.empty() || stamps != preparedStamps_;
  preparedStamps_ = std::move(stamps);
  ++(prepare ? preparedStats_.prepared : preparedStats_.kept);
  if (prepare)
    ++weightsGeneration_;
  return {preparedBlock_, prepare, weightsGeneration_};
}

void Program::forgetPrepared() const {
  std::lock_guard<std::mutex> lock(preparedMutex_);
  preparedStamps_.clear();
}

Program::PreparedStats Program::prepared_stats() const {
  std::lock_guard<std::mutex> lock(preparedMutex_);
  return preparedStats_;
}

int64_t Program::seeds_needed() const {
  return std::count_if(steps.begin(), steps.end(),
                       [](const ProgramStep &s) { return s.fresh_seed; });
}

std::vector<Device> Program::seed_devices() const {
  std::vector<Device> out;
  for (const ProgramStep &step : steps)
    if (step.fresh_seed)
      out.push_back(step.device);
  return out;
}

std::vector<Device> Program::devices() const {
  std::vector<Device> seen;
  auto note = [&](Device d) {
    if (std::find(seen.begin(), seen.end(), d) == seen.end())
      seen.push_back(d);
  };
  for (const ProgramStep &step : steps) {
    if (step.kind == ProgramStep::Kind::all_reduce)
      std::for_each(step.devices.begin(), step.devices.end(), note);
    else
      note(step.device);
  }
  return seen;
}

std::vector<BoundBuffer> Program::run(const std::vector<BoundBuffer> &args,
                                      const std::vector<BoundBuffer> &outs,
                                      std::vector<int64_t> seeds, bool reference_kernels) const {
  if (!planned_)
    throw Error("program '" + name + "' runs before set_plan()");
  if (args.size() != arguments.size() || (!outs.empty() && outs.size() != results.size()) ||
      int64_t(seeds.size()) != seeds_needed())
    throw Error("program '" + name + "': run with " + std::to_string(args.size()) +
                " arguments, " + std::to_string(outs.size()) + " results and " +
                std::to_string(seeds.size()) + " seeds; it takes " +
                std::to_string(arguments.size()) + ", " + std::to_string(results.size()) +
                " (or none) and " + std::to_string(seeds_needed()));
  for (size_t i = 0; i < args.size(); ++i) {
    const ProgramValue &v = values[size_t(arguments[i])];
    if (!args[i].buffer || args[i].offset + v.bytes() > args[i].buffer->bytes() ||
        args[i].buffer->device() != v.device)
      throw Error("program '" + name + "': argument #" + std::to_string(i) + " (" +
                  std::string(dtype_name(v.dtype)) + " " + shape_rules::str(v.shape) +
                  ") is missing, too small or not on " + v.device.str());
  }
  std::vector<BoundBuffer> bound = outs;
  for (size_t k = 0; k < results.size(); ++k) {
    const ProgramValue &v = values[size_t(results[k])];
    if (outs.empty())
      bound.push_back({std::make_shared<Buffer>(allocate(v.device, std::max<size_t>(v.bytes(), 1))), 0});
    else if (!outs[k].buffer || outs[k].offset + v.bytes() > outs[k].buffer->bytes() ||
             outs[k].buffer->device() != v.device)
      throw Error("program '" + name + "': result buffer #" + std::to_string(k) +
                  " is missing, too small or not on " + v.device.str());
  }
  if (oneTask_)
    runAsOneTask(args, bound, std::move(seeds), reference_kernels);
  else
    runByDevice(args, bound, std::move(seeds), reference_kernels);
  return bound;
}

void Program::runAsOneTask(const std::vector<BoundBuffer> &args,
                           const std::vector<BoundBuffer> &outs, std::vector<int64_t> seeds,
                           bool reference_kernels) const {
  Device device = taskDevice_;
  std::vector<std::shared_ptr<Buffer>> reads, writes;
  std::vector<bool> updated(args.size(), false);
  for (const auto &[value, argument] : updates)
    updated[size_t(argument)] = true;
  for (size_t i = 0; i < args.size(); ++i)
    (updated[i] ? writes : reads).push_back(args[i].buffer);
  for (const BoundBuffer &out : outs)
    writes.push_back(out.buffer);
  std::shared_ptr<Graphed> graphed = graphedFor(device, reference_kernels);
  auto arena = graphed ? graphed->arena
                       : std::make_shared<Buffer>(allocate(
                             device, std::max<size_t>(arenas.empty() ? 0 : arenas.front().bytes, 1)));
  writes.push_back(arena);
  // The prepared block: written by a run that prepares, read by one that keeps it (the
  // engine orders the two).
  std::shared_ptr<Buffer> preparedBlock;
  bool prepare = true;
  uint64_t weightsGeneration = 0;
  if (hasPrepared_) {
    std::tie(preparedBlock, prepare, weightsGeneration) = preparedFor(args, graphed != nullptr);
    (prepare ? writes : reads).push_back(preparedBlock);
  }
  // Remove duplicates: one buffer may back several arguments.
  auto unique = [](std::vector<std::shared_ptr<Buffer>> &list) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  };
  unique(reads);
  unique(writes);
  reads.erase(std::remove_if(reads.begin(), reads.end(),
                             [&](const std::shared_ptr<Buffer> &b) {
                               return std::binary_search(writes.begin(), writes.end(), b);
                             }),
              reads.end());
  // A graphed run reads its seeds from the GPU: they go there from pinned memory, which
  // the task keeps until it has finished.
  std::shared_ptr<Storage> pinnedSeeds;
  if (graphed && !seeds.empty()) {
    pinnedSeeds = allocate(cpu_pinned(0), seeds.size() * sizeof(int64_t));
    std::memcpy(pinnedSeeds->data(), seeds.data(), seeds.size() * sizeof(int64_t));
  }

  auto self = shared_from_this();
  enqueue(device, reads, writes,
          [self, device, args, outs, arena, seeds = std::move(seeds), reference_kernels,
           graphed, pinnedSeeds, preparedBlock, prepare, weightsGeneration] {
    const Program &p = *self;
    Bases bases;
    for (const BoundBuffer &a : args)
      bases.arguments.push_back(static_cast<char *>(a.buffer->data()) + a.offset);
    for (const BoundBuffer &r : outs)
      bases.results.push_back(static_cast<char *>(r.buffer->data()) + r.offset);
    bases.arena = static_cast<char *>(arena->data());
    if (preparedBlock)
      bases.prepared = static_cast<char *>(preparedBlock->data());
    if (graphed) {
      for (const BoundBuffer &a : args)
        bases.owners.push_back(a.buffer);
      for (const BoundBuffer &r : outs)
        bases.owners.push_back(r.buffer);
      p.runGraphed(*graphed, device, bases, pinnedSeeds);
    } else {
      try {
        p.launchSteps(device, bases, seeds, nullptr, reference_kernels, prepare,
                      weightsGeneration);
      } catch (...) {
        if (prepare)
          p.forgetPrepared(); // what the block holds is incomplete
        throw;
      }
    }
  });
}

char *Program::address(const Bases &bases, int id) const {
  const ProgramValue &v = values[size_t(id)];
  switch (v.storage) {
  case StorageKind::argument:
    return bases.arguments[size_t(v.index)] + v.offset;
  case StorageKind::result:
    return bases.results[size_t(v.index)] + v.offset;
  case StorageKind::prepared:
    return bases.prepared + v.offset;
  case StorageKind::arena:
    break;
  }
  return bases.arena + v.offset;
}

void Program::launchSteps(Device device, const Bases &bases, const std::vector<int64_t> &seeds,
                          const int64_t *deviceSeeds, bool reference_kernels,
                          bool prepare, uint64_t weightsGeneration) const {
  size_t nextSeed = 0;
  KernelArgs call;
  call.device = device;
  for (size_t index = 0; index < steps.size(); ++index) {
    const ProgramStep &step = steps[index];
    if (step.prepared && !prepare)
      continue; // its values from an earlier run still hold
    if (step.kind == ProgramStep::Kind::copy) {
      const ProgramValue &out = values[size_t(step.outputs[0])];
      move_bytes(device, address(bases, step.outputs[0]), address(bases, step.inputs[0]),
                 out.bytes());
      continue;
    }
    if (step.fused) {
      std::vector<char *> ins, outs;
      for (int id : step.inputs)
        ins.push_back(address(bases, id));
      for (int id : step.outputs)
        outs.push_back(address(bases, id));
      KernelProfile::timed(step.fused->name, [&] {
        run_fused_elementwise(*step.fused, ins, outs, reference_kernels, device);
      });
      if (check_numerics_enabled()) {
        std::vector<TensorRef> inRefs, outRefs;
        for (size_t i = 0; i < ins.size(); ++i) {
          const ProgramValue &v = values[size_t(step.inputs[i])];
          inRefs.push_back({ins[i], v.shape, v.dtype, v.layout});
        }
        for (size_t i = 0; i < outs.size(); ++i) {
          const ProgramValue &v = values[size_t(step.outputs[i])];
          outRefs.push_back({outs[i], v.shape, v.dtype, v.layout});
        }
        check_finite_outputs(step.fused->name.c_str(), device, inRefs, outRefs);
      }
      continue;
    }
    Attrs seeded;
    call.device_seed = nullptr;
    if (step.fresh_seed && deviceSeeds) {
      call.device_seed = deviceSeeds + nextSeed++;
    } else if (step.fresh_seed) {
      seeded = step.attrs;
      seeded.set("seed", seeds[nextSeed++]);
    }
    call.attrs = step.fresh_seed && !deviceSeeds ? &seeded : &step.attrs;
    call.op = step.op.c_str();
    call.memo = step.kept_inputs.empty() ? nullptr : &memos_[index];
    call.memo_generation = weightsGeneration;
    // Assigned into the references of earlier steps: their shapes keep their storage, so
    // a step of a small program costs no allocation.
    auto refer = [&](std::vector<TensorRef> &refs, const std::vector<int> &ids) {
      refs.resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {
        const ProgramValue &v = values[size_t(ids[i])];
        TensorRef &ref = refs[i];
        ref.data = address(bases, ids[i]);
        ref.shape.assign(v.shape.begin(), v.shape.end());
        ref.dtype = v.dtype;
        ref.layout = v.layout;
      }
    };
    refer(call.inputs, step.inputs);
    refer(call.outputs, step.outputs);
    KernelFn kernel = reference_kernels ? step.kernels.reference : step.kernels.fast;
    KernelProfile::timed(step.op, [&] { kernel(call); });
    if (check_numerics_enabled())
      check_finite_outputs(call.op, device, call.inputs, call.outputs);
  }
  for (const auto &[value, argument] : updates) {
    const ProgramValue &target = values[size_t(arguments[size_t(argument)])];
    move_bytes(device, address(bases, arguments[size_t(argument)]), address(bases, value),
               target.bytes());
  }
}

std::string Program::str() const {
  std::ostringstream os;
  std::vector<Device> used = devices();
  bool several = used.size() > 1;
  auto place = [&](int id) {
    const ProgramValue &v = values[size_t(id)];
    std::ostringstream text;
    text << "%" << id << ":" << dtype_name(v.dtype) << "[" << shape_rules::str(v.shape)
         << (v.layout == Layout::plain ? "" : std::string(" ") + layout_name(v.layout)) << "]@"
         << storageName(v.storage);
    if (v.storage != StorageKind::arena || arenas.size() > 1)
      text << v.index;
    text << "+" << v.offset;
    return text.str();
  };
  os << "program @" << name << " on ";
  for (size_t d = 0; d < used.size(); ++d)
    os << (d ? ", " : "") << used[d].str();
  if (used.empty())
    os << (values.empty() ? cpu(0) : values.front().device).str();
  os << "\n";
  for (size_t i = 0; i < arguments.size(); ++i)
    os << "  arg " << i << " = " << place(arguments[i]) << "\n";
  for (const ProgramStep &step : steps) {
    os << "  ";
    if (several)
      os << "[" << (step.kind == ProgramStep::Kind::all_reduce ? std::string("all devices")
                                                               : step.device.str())
         << "] ";
    for (size_t k = 0; k < step.outputs.size(); ++k)
      os << (k ? ", " : "") << place(step.outputs[k]);
    os << " = " << (step.prepared ? "prepared " : "")
       << (step.kind == ProgramStep::Kind::copy ? std::string("copy")
           : step.fused                          ? step.fused->name
                                                 : step.op);
    if (step.fused)
      os << (step.fused->gpu ? "[generated gpu]" : step.fused->generated ? "[generated]" : "");
    os << "(";
    for (size_t k = 0; k < step.inputs.size(); ++k)
      os << (k ? ", " : "") << place(step.inputs[k])
         << (std::find(step.kept_inputs.begin(), step.kept_inputs.end(), int(k)) !=
                     step.kept_inputs.end()
                 ? " kept"
                 : "");
    os << ")\n";
  }
  for (size_t k = 0; k < results.size(); ++k)
    os << "  result " << k << " = " << place(results[k]) << "\n";
  for (const auto &[value, argument] : updates)
    os << "  update arg " << argument << " <- " << place(value) << "\n";
  os << "  arena " << memory_.arena_bytes << " bytes (intermediates " << memory_.intermediate_bytes
     << " bytes without reuse, " << memory_.reused << " placed in freed memory, "
     << memory_.in_place << " of them in place)\n";
  if (prepared_bytes > 0)
    os << "  prepared " << prepared_bytes << " bytes (kept from run to run)\n";
  return os.str();
}

} // namespace dlc
