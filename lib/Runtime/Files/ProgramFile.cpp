//===- ProgramFile.cpp - encoding and checked decoding of a Program -----------===//
//
// The fields in ByteCoding.h's encoding, in the order encode_program writes them.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Files/ProgramFile.h"

#include "ByteCoding.h"
#include "dlc/Config.h"
#include "dlc/Core/Error.h"
#include "dlc/Core/Layout.h"
#include "dlc/Runtime/Program/HostCode.h"
#include "dlc/Runtime/Engine/Kernel.h"

#include <algorithm>
#include <cstdio>

#include <map>

namespace dlc {

namespace {

using bytes::Reader;
using bytes::Writer;

void encodeFused(Writer &w, const FusedElementwise &f, uint32_t version, bool hostEntries) {
  w.put(int32_t(f.inputs));
  w.put(int64_t(f.elements));
  w.count(f.steps.size());
  for (const FusedElementwise::SubStep &s : f.steps) {
    w.text(s.op);
    w.attrs(s.attrs);
    w.ints(s.inputs);
  }
  w.ints(f.outputs);
  w.count(f.scalar.size());
  for (bool s : f.scalar)
    w.put(uint8_t(s));
  w.put(uint8_t(f.gpu != nullptr));
  if (f.gpu) {
    w.text(f.gpu->ptx ? *f.gpu->ptx : std::string());
    w.text(f.gpu->name);
  }
  if (version < 2)
    return;
  // The region's entry in the file's host code (version 2), when it has one there.
  const GeneratedKernel *code = host_entry_of(f);
  const bool hostEntry = hostEntries && code && code->object && !code->symbol.empty();
  w.put(uint8_t(hostEntry));
  if (hostEntry)
    w.text(code->symbol);
}

/// The kernels of `op` on `device`, or a failure naming the step. A step that runs an
/// epilogue in its library call ("dlc.conv2d+relu") calls its op's kernels.
KernelEntry kernelsOf(Reader &r, const std::string &op, Device device, const std::string &where) {
  const KernelEntry *entry = r.ok() ? find_kernel(op.substr(0, op.find('+')), device) : nullptr;
  if (r.ok() && !entry)
    r.fail(where + ": this build has no kernel for " + op + " on " + device.str());
  return entry ? *entry : KernelEntry{};
}

/// What decoding reads besides the bytes: the format version and the model's loaded
/// host code (null: regions run their sub-kernels).
struct DecodeContext {
  uint32_t version;
  const std::shared_ptr<const LoadedHostCode> &host;
  std::map<std::string, std::shared_ptr<const std::string>> ptx; // one copy per module text
};

std::shared_ptr<FusedElementwise> decodeFused(Reader &r, Device device, const std::string &where,
                                              DecodeContext &context) {
  auto f = std::make_shared<FusedElementwise>();
  f->inputs = r.get<int32_t>("a fused region's input count");
  f->elements = r.get<int64_t>("a fused region's element count");
  if (r.ok() && (f->inputs < 0 || f->elements < 0))
    r.fail(where + ": negative input or element count");
  size_t n = r.count("a fused region's sub-steps", 9);
  for (size_t k = 0; k < n && r.ok(); ++k) {
    FusedElementwise::SubStep s;
    s.op = r.text("a sub-step's op");
    s.attrs = r.attrs("a sub-step's attributes");
    s.inputs = r.ints("a sub-step's inputs");
    int defined = f->inputs + int(k); // local values defined before this sub-step
    for (int in : s.inputs)
      if (r.ok() && (in < 0 || in >= defined))
        r.fail(where + ": sub-step " + std::to_string(k) + " (" + s.op + ") reads local value " +
               std::to_string(in) + " of " + std::to_string(defined));
    s.kernels = kernelsOf(r, s.op, device, where + " sub-step " + std::to_string(k));
    f->steps.push_back(std::move(s));
  }
  f->outputs = r.ints("a fused region's outputs");
  size_t locals = size_t(std::max(f->inputs, 0)) + f->steps.size();
  for (int out : f->outputs)
    if (r.ok() && (out < 0 || size_t(out) >= locals))
      r.fail(where + ": output local value " + std::to_string(out) + " of " +
             std::to_string(locals));
  size_t scalars = r.count("a fused region's scalar flags");
  if (r.ok() && scalars != locals)
    r.fail(where + ": " + std::to_string(scalars) + " scalar flags for " +
           std::to_string(locals) + " local values");
  for (size_t k = 0; k < scalars && r.ok(); ++k)
    f->scalar.push_back(r.get<uint8_t>("a scalar flag") != 0);
  std::shared_ptr<GeneratedGpuKernel> gpu; // f->gpu, while the host build may still come
  if (r.get<uint8_t>("a fused region's GPU kernel flag")) {
    gpu = std::make_shared<GeneratedGpuKernel>();
    std::string text = r.text("a GPU kernel's PTX");
    gpu->name = r.text("a GPU kernel's name");
    std::shared_ptr<const std::string> &shared = context.ptx[text];
    if (!shared)
      shared = std::make_shared<const std::string>(std::move(text));
    gpu->ptx = shared;
    if (r.ok() && device.is_host())
      r.fail(where + ": a GPU kernel for a region on " + device.str());
    f->gpu = gpu;
  }
  if (context.version >= 2 && r.get<uint8_t>("a fused region's host entry flag")) {
    std::string symbol = r.text("a host entry's name");
    // On a GPU, the host build of the region's kernel (for emulated GPUs).
    if (r.ok() && !device.is_host() && !f->gpu)
      r.fail(where + ": a host entry for a region on " + device.str() + " without a GPU kernel");
    if (r.ok() && context.host) {
      auto kernel = std::make_shared<GeneratedKernel>();
      kernel->entry = context.host->entry(symbol);
      kernel->owner = context.host;
      kernel->symbol = symbol;
      if (!kernel->entry)
        r.fail(where + ": the file's host code has no entry " + symbol);
      if (gpu)
        gpu->host_build = std::move(kernel);
      else
        f->generated = std::move(kernel);
    }
  }
  return f;
}

} // namespace

std::string encode_program(const Program &p, uint32_t version, bool host_entries) {
  // Before version 3 a file has no prepared block: its values then go after the end of
  // the program's one arena, and its steps run on every run, as they did before.
  const bool preparedBlock = version >= 3;
  std::vector<Program::Arena> arenas = p.arenas;
  size_t preparedBase = 0;
  if (!preparedBlock && p.prepared_bytes > 0) {
    auto prepared = std::find_if(p.values.begin(), p.values.end(), [](const ProgramValue &v) {
      return v.storage == StorageKind::prepared;
    });
    Device device = prepared != p.values.end() ? prepared->device : cpu(0);
    if (arenas.empty())
      arenas.push_back({device, 0});
    if (arenas.size() != 1 || arenas.front().device != device)
      throw UnsupportedError("model file version " + std::to_string(version) + ": program '" +
                             p.name + "' keeps prepared values, which a file of that version "
                             "holds only for programs with one arena on their device");
    preparedBase = (arenas.front().bytes + 63) / 64 * 64;
    arenas.front().bytes = preparedBase + p.prepared_bytes;
  }
  Writer w;
  w.text(p.name);
  w.count(p.values.size());
  for (const ProgramValue &value : p.values) {
    ProgramValue v = value;
    if (!preparedBlock && v.storage == StorageKind::prepared) {
      v.storage = StorageKind::arena;
      v.index = 0;
      v.offset += preparedBase;
    }
    w.count(v.shape.size());
    for (int64_t d : v.shape)
      w.put(int64_t(d));
    w.put(int32_t(v.dtype));
    w.device(v.device);
    w.put(int32_t(v.alias_of));
    w.put(uint8_t(v.layout));
    w.put(uint8_t(v.storage));
    w.put(int32_t(v.index));
    w.put(uint64_t(v.offset));
  }
  w.count(p.steps.size());
  for (const ProgramStep &s : p.steps) {
    // A model file is one process's: a reduction over a job's processes belongs to its
    // training step, which is not saved.
    if (s.processes != 1)
      throw UnsupportedError("model file: the program has an all-reduce over " +
                             std::to_string(s.processes) +
                             " processes; a model file holds one process's program");
    w.put(uint8_t(s.kind));
    w.text(s.op);
    w.attrs(s.attrs);
    w.device(s.device);
    w.ints(s.inputs);
    w.ints(s.outputs);
    w.count(s.devices.size());
    for (Device d : s.devices)
      w.device(d);
    w.put(int64_t(s.reduce_kind));
    w.put(uint8_t(s.fresh_seed));
    w.put(uint8_t(s.fused != nullptr));
    if (s.fused)
      encodeFused(w, *s.fused, version, host_entries);
    if (preparedBlock)
      w.put(uint8_t(s.prepared));
    // Before version 4 the kernel prepares its weights on every call.
    if (version >= 4)
      w.ints(s.kept_inputs);
  }
  w.ints(p.arguments);
  w.ints(p.results);
  w.count(p.updates.size());
  for (const auto &[value, argument] : p.updates) {
    w.put(int32_t(value));
    w.put(int32_t(argument));
  }
  w.count(arenas.size());
  for (const Program::Arena &a : arenas) {
    w.device(a.device);
    w.put(uint64_t(a.bytes));
  }
  if (preparedBlock)
    w.put(uint64_t(p.prepared_bytes));
  const MemoryPlan &m = p.memory();
  w.put(uint64_t(m.arena_bytes));
  w.put(uint64_t(m.intermediate_bytes));
  w.put(uint64_t(m.result_bytes));
  w.put(int64_t(m.reused));
  w.put(int64_t(m.in_place));
  return w.take();
}

std::shared_ptr<Program> decode_program(const std::string &bytes, std::string &error,
                                        uint32_t version,
                                        const std::shared_ptr<const LoadedHostCode> &host) {
  error.clear();
  register_builtin_kernels();
  Reader r(bytes, error);
  auto p = std::make_shared<Program>();
  p->name = r.text("the program's name");
  size_t values = r.count("the value count", 30);
  auto valueId = [&](int id, const std::string &where) {
    if (r.ok() && (id < 0 || size_t(id) >= values))
      r.fail(where + " names value %" + std::to_string(id) + " of " + std::to_string(values));
  };
  for (size_t i = 0; i < values && r.ok(); ++i) {
    ProgramValue v;
    std::string where = "value %" + std::to_string(i);
    size_t rank = r.count("a value's rank", 8);
    int64_t elements = 1;
    for (size_t d = 0; d < rank && r.ok(); ++d) {
      int64_t extent = r.get<int64_t>("a value's shape");
      if (extent < 0 || (extent > 0 && elements > (int64_t(1) << 48) / extent)) {
        r.fail(where + ": extent " + std::to_string(extent) + " is negative or too large");
        break;
      }
      elements *= std::max<int64_t>(extent, 1);
      v.shape.push_back(extent);
    }
    int32_t dtype = r.get<int32_t>("a value's dtype");
    if (r.ok() && (dtype < 0 || dtype > int32_t(DType::boolean)))
      r.fail(where + ": dtype " + std::to_string(dtype) + " is unknown");
    v.dtype = DType(dtype);
    v.device = r.device("a value's device");
    v.alias_of = r.get<int32_t>("a value's alias");
    if (r.ok() && (v.alias_of < -1 || v.alias_of >= int(i)))
      r.fail(where + " views value %" + std::to_string(v.alias_of) + ", not an earlier one");
    uint8_t layout = r.get<uint8_t>("a value's layout");
    uint8_t storage = r.get<uint8_t>("a value's storage");
    const uint8_t lastStorage = uint8_t(version >= 3 ? StorageKind::prepared : StorageKind::arena);
    if (r.ok() && (layout > uint8_t(kLastLayout) || storage > lastStorage))
      r.fail(where + ": layout " + std::to_string(layout) + " or storage " +
             std::to_string(storage) + " is unknown");
    v.layout = Layout(layout);
    if (r.ok() && v.layout != Layout::plain && !blockable(v.shape, v.dtype, v.layout))
      r.fail(where + ": " + dtype_name(v.dtype) + " " + shape_rules::str(v.shape) +
             " cannot be in " + layout_name(v.layout));
    v.storage = StorageKind(storage);
    v.index = r.get<int32_t>("a value's buffer index");
    v.offset = size_t(r.get<uint64_t>("a value's offset"));
    p->values.push_back(std::move(v));
  }
  size_t steps = r.count("the step count", 40);
  DecodeContext context{version, host, {}};
  for (size_t i = 0; i < steps && r.ok(); ++i) {
    ProgramStep s;
    std::string where = "step " + std::to_string(i);
    uint8_t kind = r.get<uint8_t>("a step's kind");
    if (r.ok() && kind > uint8_t(ProgramStep::Kind::all_reduce))
      r.fail(where + ": kind " + std::to_string(kind) + " is unknown");
    s.kind = ProgramStep::Kind(kind);
    s.op = r.text("a step's op");
    where += " (" + s.op + ")";
    s.attrs = r.attrs("a step's attributes");
    s.device = r.device("a step's device");
    s.inputs = r.ints("a step's inputs");
    s.outputs = r.ints("a step's outputs");
    for (int id : s.inputs)
      valueId(id, where);
    for (int id : s.outputs)
      valueId(id, where);
    size_t devices = r.count("a step's devices", 8);
    for (size_t d = 0; d < devices && r.ok(); ++d)
      s.devices.push_back(r.device("an all-reduce's device"));
    s.reduce_kind = r.get<int64_t>("a step's reduction");
    s.fresh_seed = r.get<uint8_t>("a step's seed flag") != 0;
    bool fused = r.get<uint8_t>("a step's fused flag") != 0;
    if (fused) {
      std::shared_ptr<FusedElementwise> region = decodeFused(r, s.device, where, context);
      region->name = fused_elementwise_name(s.op, *region);
      s.fused = std::move(region);
    }
    if (version >= 3)
      s.prepared = r.get<uint8_t>("a step's prepared flag") != 0;
    if (version >= 4)
      s.kept_inputs = r.ints("a step's kept inputs");
    if (r.ok() && s.kind == ProgramStep::Kind::copy &&
        (s.inputs.size() != 1 || s.outputs.size() != 1))
      r.fail(where + ": a copy takes one input and one output");
    if (r.ok() && s.kind == ProgramStep::Kind::all_reduce &&
        (s.inputs.size() != s.devices.size() || s.outputs.size() != s.devices.size()))
      r.fail(where + ": an all-reduce over " + std::to_string(s.devices.size()) +
             " devices with " + std::to_string(s.inputs.size()) + " inputs");
    if (s.kind == ProgramStep::Kind::kernel && !s.fused)
      s.kernels = kernelsOf(r, s.op, s.device, where);
    // Operands live where the step runs (a copy's input anywhere; an all-reduce's k-th
    // operands on its k-th device), as the lowering places them.
    auto on = [&](int id, Device d) {
      if (r.ok() && p->values[size_t(id)].device.is_host() != d.is_host())
        r.fail(where + ": value %" + std::to_string(id) + " is on " +
               p->values[size_t(id)].device.str() + ", the step runs on " + d.str());
      else if (r.ok() && !d.is_host() && p->values[size_t(id)].device != d)
        r.fail(where + ": value %" + std::to_string(id) + " is on " +
               p->values[size_t(id)].device.str() + ", the step runs on " + d.str());
    };
    for (size_t k = 0; k < s.inputs.size() && r.ok(); ++k)
      if (s.kind == ProgramStep::Kind::all_reduce)
        on(s.inputs[k], s.devices[k]);
      else if (s.kind == ProgramStep::Kind::kernel)
        on(s.inputs[k], s.device);
    for (size_t k = 0; k < s.outputs.size() && r.ok(); ++k)
      on(s.outputs[k], s.kind == ProgramStep::Kind::all_reduce ? s.devices[k] : s.device);
    p->steps.push_back(std::move(s));
  }
  p->arguments = r.ints("the arguments");
  p->results = r.ints("the results");
  for (int id : p->arguments)
    valueId(id, "an argument");
  for (int id : p->results)
    valueId(id, "a result");
  size_t updates = r.count("the updates", 8);
  for (size_t i = 0; i < updates && r.ok(); ++i) {
    int value = r.get<int32_t>("an update");
    int argument = r.get<int32_t>("an update");
    valueId(value, "an update");
    if (r.ok() && (argument < 0 || size_t(argument) >= p->arguments.size()))
      r.fail("an update names argument " + std::to_string(argument) + " of " +
             std::to_string(p->arguments.size()));
    p->updates.push_back({value, argument});
  }
  size_t arenas = r.count("the arenas", 16);
  for (size_t i = 0; i < arenas && r.ok(); ++i) {
    Program::Arena a;
    a.device = r.device("an arena's device");
    a.bytes = size_t(r.get<uint64_t>("an arena's size"));
    if (r.ok() && a.bytes > (size_t(1) << 48))
      r.fail("arena " + std::to_string(i) + " claims " + std::to_string(a.bytes) + " bytes");
    p->arenas.push_back(a);
  }
  if (version >= 3) {
    p->prepared_bytes = size_t(r.get<uint64_t>("the prepared block's size"));
    if (r.ok() && p->prepared_bytes > (size_t(1) << 48))
      r.fail("the prepared block claims " + std::to_string(p->prepared_bytes) + " bytes");
  }
  MemoryPlan m;
  m.arena_bytes = size_t(r.get<uint64_t>("the memory plan"));
  m.intermediate_bytes = size_t(r.get<uint64_t>("the memory plan"));
  m.result_bytes = size_t(r.get<uint64_t>("the memory plan"));
  m.reused = r.get<int64_t>("the memory plan");
  m.in_place = r.get<int64_t>("the memory plan");
  if (r.ok() && !r.done())
    r.fail("bytes follow the program's end");
  if (!r.ok())
    return nullptr;
  // Fused regions' values must be float32 and as large as the region says (what
  // run_fused_elementwise assumes without checking).
  for (const ProgramStep &s : p->steps) {
    if (!s.fused)
      continue;
    if (s.inputs.size() != size_t(s.fused->inputs) || s.outputs.size() != s.fused->outputs.size()) {
      error = "a fused step (" + s.op + ") has operands its region does not";
      return nullptr;
    }
    for (size_t k = 0; k < s.inputs.size() + s.outputs.size(); ++k) {
      bool input = k < s.inputs.size();
      const ProgramValue &v =
          p->values[size_t(input ? s.inputs[k] : s.outputs[k - s.inputs.size()])];
      bool scalar = input && s.fused->scalar[k];
      if (v.dtype != DType::f32 ||
          shape_rules::numElements(v.shape) < (scalar ? 1 : s.fused->elements)) {
        error = "a fused step (" + s.op + ") has an operand that is not float32 of " +
                std::to_string(s.fused->elements) + " elements";
        return nullptr;
      }
    }
  }
  error = p->set_plan(m);
  if (error.empty())
    error = check_memory_plan(*p);
  return error.empty() ? p : nullptr;
}

ModelFile model_file_for(const Program &program, std::vector<ModelArgument> arguments) {
  if (arguments.size() != program.arguments.size())
    throw Error("model file for " + program.name + ": " + std::to_string(arguments.size()) +
                " bindings for " + std::to_string(program.arguments.size()) + " arguments");
  std::vector<Device> devices = program.devices();
  ModelFile file;
  file.target = devices.empty() || devices.front().is_host() ? "cpu" : "cuda";
  file.dlc_version = DLC_VERSION;
  file.program = encode_program(program);
  // The generated host code, linked into one shared object. Without a linker the file
  // is still whole: its regions then run their sub-kernels wherever it is loaded.
  if (std::vector<std::shared_ptr<const HostObject>> objects = host_objects_of(program);
      !objects.empty()) {
    std::string why;
    file.host_code = link_host_objects(objects, why);
    file.host_target = objects.front()->target;
    if (file.host_code.empty()) {
      std::fprintf(stderr,
                   "dlc: the model file for %s carries no generated host code (%s); its "
                   "fused regions will run their interpreted kernels\n",
                   program.name.c_str(), why.c_str());
      file.program = encode_program(program, kModelFileVersion, /*host_entries=*/false);
    }
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    ModelArgument &a = arguments[i];
    const ProgramValue &v = program.values[size_t(program.arguments[i])];
    if (a.input) {
      file.inputs.push_back({a.name, int(i), v.shape, v.dtype});
      continue;
    }
    if (a.bytes.size() != v.bytes())
      throw Error("model file for " + program.name + ": weight '" + a.name + "' has " +
                  std::to_string(a.bytes.size()) + " bytes, its argument " + std::to_string(i) +
                  " (" + dtype_name(v.dtype) + " " + shape_rules::str(v.shape) + ") takes " +
                  std::to_string(v.bytes()));
    file.weights.push_back({int(i), a.name, v.shape, v.dtype, std::move(a.bytes)});
  }
  for (size_t k = 0; k < program.results.size(); ++k) {
    const ProgramValue &v = program.values[size_t(program.results[k])];
    file.outputs.push_back(
        {k == 0 ? "output" : "output" + std::to_string(k), int(k), v.shape, v.dtype});
  }
  return file;
}

} // namespace dlc
