//===- ProgramFile.h - a lowered program as bytes, and back -------------------===//
//
// What a compiled model file holds of its program (docs/design/model-file.md): every
// value's place, every step with its op, attributes and operands, the fused regions'
// sub-steps and their GPU kernels' PTX, the arguments, results, updates and arenas. A
// step's kernels are not stored: decoding looks each op up in this process's kernel
// table, as lowering does. Host code generated for fused regions is not stored yet;
// decoded host regions run their sub-kernels. Decoding trusts nothing: every count is
// checked against the bytes left, every index against what it indexes, every enum
// against its values, and the result passes Program::set_plan's checks.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_PROGRAMFILE_H
#define DLC_RUNTIME_PROGRAMFILE_H

#include "dlc/Runtime/ModelFile.h"
#include "dlc/Runtime/Program.h"

#include <memory>
#include <string>

namespace dlc {

/// `program` as bytes (the format's version is the model file's).
std::string encode_program(const Program &program);

/// The program `bytes` encode, ready to run; null with `error` saying what is wrong
/// (which field, which value) when the bytes are not a valid program for this build.
std::shared_ptr<Program> decode_program(const std::string &bytes, std::string &error);

/// How a model binds one program argument: an input the caller gives, or a weight the
/// file carries (its plain, row-major bytes).
struct ModelArgument {
  std::string name;
  bool input = false;
  std::string bytes;
};

/// The model file of `program`, whose argument k is bound as `arguments[k]` says (names
/// and byte counts are checked); its results are the outputs `output`, `output1`, ...
/// Throws dlc::Error when the bindings do not fit the program.
ModelFile model_file_for(const Program &program, std::vector<ModelArgument> arguments);

} // namespace dlc

#endif // DLC_RUNTIME_PROGRAMFILE_H
