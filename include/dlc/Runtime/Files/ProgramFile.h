//===- ProgramFile.h - a lowered program as bytes, and back -------------------===//
//
// What a compiled model file holds of its program (docs/design/model-file.md): every
// value's place, every step with its op, attributes and operands, the fused regions'
// sub-steps and their GPU kernels' PTX or the names of their entries in the file's host
// code, the arguments, results, updates and arenas. A step's kernels are not stored:
// decoding looks each op up in this process's kernel table, as lowering does. Decoding trusts nothing: every count is
// checked against the bytes left, every index against what it indexes, every enum
// against its values, and the result passes Program::set_plan's checks and
// check_memory_plan's.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_FILES_PROGRAMFILE_H
#define DLC_RUNTIME_FILES_PROGRAMFILE_H

#include "dlc/Runtime/Program/HostCode.h"
#include "dlc/Runtime/Files/ModelFile.h"
#include "dlc/Runtime/Program/Program.h"

#include <memory>
#include <string>

namespace dlc {

/// `program` as bytes, in the model file's format `version` (1 has no host entries;
/// before 3 there is no prepared block: its values go after the end of the program's
/// arena and its steps run on every run). Without `host_entries` the fused regions name
/// no entry in host code (a file written without a linker).
std::string encode_program(const Program &program, uint32_t version = kModelFileVersion,
                           bool host_entries = true);

/// The program `bytes` (format `version`) encode, ready to run; null with `error` saying
/// what is wrong (which field, which value) when the bytes are not a valid program for
/// this build. Fused host regions run their entries in `host` when given, and their
/// sub-kernels otherwise.
std::shared_ptr<Program> decode_program(const std::string &bytes, std::string &error,
                                        uint32_t version = kModelFileVersion,
                                        const std::shared_ptr<const LoadedHostCode> &host = {});

/// "" when `program`'s memory plan is one dlc-plan-memory could have made: views inside
/// what they view, argument and result buffers holding their own values, and no two
/// values of an arena in the same bytes while both are live (an element-wise step's
/// result over the input it reads last aside). Otherwise what is wrong, naming both
/// values, their places and their lifetimes. Every decoded program passes it.
std::string check_memory_plan(const Program &program);

/// How a model binds one program argument: an input the caller gives, or a weight the
/// file carries (its plain, row-major bytes).
struct ModelArgument {
  std::string name;
  bool input = false;
  std::string bytes;
};

/// The model file of `program`, whose argument k is bound as `arguments[k]` says (names
/// and byte counts are checked); its results are the outputs `output`, `output1`, ...
/// Generated host code is linked into the file (HostCode.h); when that fails (no
/// linker) a warning says so and the file, version 1, runs its regions' sub-kernels.
/// Throws dlc::Error when the bindings do not fit the program.
ModelFile model_file_for(const Program &program, std::vector<ModelArgument> arguments);

} // namespace dlc

#endif // DLC_RUNTIME_FILES_PROGRAMFILE_H
