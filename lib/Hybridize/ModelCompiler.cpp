//===- ModelCompiler.cpp - an exported block compiled into a model file --------===//
#include "dlc/Hybridize/ModelCompiler.h"

#include "CompiledLayouts.h"

#include "dlc/Compiler/Compiler.h"
#include "dlc/Core/Error.h"
#include "dlc/Core/InputFile.h"
#include "dlc/Frontend/SafeTensors.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

namespace dlc {

CompiledExportedModel compile_exported_model(const std::string &modulePath,
                                             const std::string &weightsPath, DeviceKind target,
                                             const std::string &function,
                                             const CompileOptions &options) {
  // A module is read whole; a folder is named as one, and a stream that does not end
  // (/dev/zero) is cut off at kMaxModuleBytes instead of filling memory.
  constexpr size_t kMaxModuleBytes = size_t(256) << 20;
  if (regular_file_problem(modulePath) == "it is a directory")
    throw Error(modulePath + " is a directory, not a module");
  std::ifstream in(modulePath, std::ios::binary);
  if (!in)
    throw Error("cannot read " + modulePath + ": " + std::strerror(errno));
  std::string module;
  char piece[1 << 16];
  while (module.size() <= kMaxModuleBytes && in.read(piece, sizeof piece).gcount() > 0)
    module.append(piece, size_t(in.gcount()));
  if (module.size() > kMaxModuleBytes)
    throw Error(modulePath + " holds more than " + std::to_string(kMaxModuleBytes >> 20) +
                " MiB: that is no module an export wrote");
  // The weights first: a wrong file is reported before a compile's work.
  safetensors::Reader weights(weightsPath);
  std::map<std::string, const safetensors::TensorInfo *> byName;
  for (const safetensors::TensorInfo &entry : weights.tensors())
    byName[entry.name] = &entry;

  // Unless the options name one, the CPU's blocked layout, as hybridize() compiles
  // (DLC_BLOCKED_LAYOUTS=nChw16c or =nChw8c compiles for another CPU's kernels, =0 for
  // plain tensors).
  compiler::CompiledExport compiled;
  std::string error = compiler::compile_exported(module, modulePath, function, target, compiled,
                                                 detail::resolved(options));
  if (!error.empty())
    throw Error(error);
  const Program &program = *compiled.program;
  CompiledExportedModel out;
  std::vector<ModelArgument> arguments;
  for (size_t i = 0; i < compiled.argument_names.size(); ++i) {
    const std::string &name = compiled.argument_names[i];
    const ProgramValue &v = program.values[size_t(program.arguments[i])];
    // A hybridized block's forward takes its input as "data", several as "data0",
    // "data1", ... (CompiledFunction); every other argument is a parameter, which the
    // weights file must hold.
    bool numbered = name.size() > 4 && name.compare(0, 4, "data") == 0 &&
                    name.find_first_not_of("0123456789", 4) == std::string::npos;
    if (name == "data" || numbered) {
      arguments.push_back({name, true, {}});
      continue;
    }
    auto entry = byName.find(name);
    if (entry == byName.end())
      throw Error(modulePath + ": argument " + std::to_string(i) + " ('" + name + "') of @" +
                  function + " is not in " + weightsPath +
                  (name.rfind("captured.", 0) == 0
                       ? ": it is a tensor the forward captured, which export_model does not "
                         "save; make it a parameter of the block"
                       : " (" + std::to_string(weights.tensors().size()) +
                             " tensors): were both files written by one export_model?"));
    const safetensors::TensorInfo &info = *entry->second;
    if (info.shape != v.shape || info.dtype != v.dtype)
      throw Error(weightsPath + ": '" + name + "' is " + dtype_name(info.dtype) + " " +
                  shape_rules::str(info.shape) + ", argument " + std::to_string(i) + " of @" +
                  function + " in " + modulePath + " is " + dtype_name(v.dtype) + " " +
                  shape_rules::str(v.shape));
    Tensor host = weights.read(info);
    host.wait_to_read();
    if (int64_t at = first_non_finite(host.data(), host.dtype(), host.size()); at >= 0)
      out.warnings.push_back(weightsPath + ": weight '" + name + "' holds NaN or infinite "
                             "values (the first at element " + std::to_string(at) + " of " +
                             std::to_string(host.size()) + "): every output it reaches will too");
    arguments.push_back(
        {name, false, std::string(static_cast<const char *>(host.data()), host.nbytes())});
  }
  out.file = model_file_for(program, std::move(arguments));
  if (out.file.inputs.empty())
    throw Error(modulePath + ": @" + function + " has no argument 'data', the input of a "
                "hybridized block's forward");
  out.optimized_ir = std::move(compiled.ir);
  out.steps = program.steps.size();
  return out;
}

} // namespace dlc
