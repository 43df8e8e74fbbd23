//===- ModelCompiler.h - an exported block compiled into a model file ----------===//
//
// What dlc-compile does, as a function: HybridBlock::export_model writes a block's traced
// module (PREFIX.mlir) and parameters (PREFIX.safetensors); compile_exported_model
// compiles the module's forward for a target with the pipeline hybridize uses, binds its
// argument "data" as the model's input and every other one to the parameter of its name
// in the safetensors file. (HybridBlock::save_compiled is the one-call equivalent inside a training
// program.) It links the compiler, hence MLIR: it is in dlc_hybridize, not in libdlc.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_HYBRIDIZE_MODELCOMPILER_H
#define DLC_HYBRIDIZE_MODELCOMPILER_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/Device.h"
#include "dlc/Runtime/Files/ModelFile.h"

#include <string>
#include <vector>

namespace dlc {

struct CompiledExportedModel {
  ModelFile file;
  std::string optimized_ir; ///< the module after the pipeline
  size_t steps = 0;         ///< of the lowered program
  /// What the caller should hear but that does not stop the compile: weights holding
  /// NaN or infinities (dlc-train refuses to save or resume from such parameters).
  std::vector<std::string> warnings;
};

/// Compiles `function` of the module at `module_path` for device 0 of `target`, with the
/// weights of `weights_path`. Throws dlc::Error naming the file and the problem: a module
/// that does not parse or compile, a forward traced while training, an argument the
/// forward captured (export_model saves parameters only), a parameter missing from the
/// weights file or of another type there. Compiles as `options` say (an unset blocked
/// layout: the process's, as hybridize()).
CompiledExportedModel
compile_exported_model(const std::string &module_path, const std::string &weights_path,
                       DeviceKind target, const std::string &function = "forward",
                       const CompileOptions &options = compile_options_from_environment());

} // namespace dlc

#endif // DLC_HYBRIDIZE_MODELCOMPILER_H
