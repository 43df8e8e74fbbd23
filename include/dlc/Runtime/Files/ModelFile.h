//===- ModelFile.h - a compiled model as one file: the container --------------===//
//
// The bytes of a `.dlc` file (docs/design/model-file.md): a header (magic, format
// version, section table with each section's offset, size and CRC-32), then the
// sections: the metadata (target, dlc version, the inputs and outputs), the program
// (ProgramFile.h), the weights and, from version 2, the generated host code (a shared
// object, HostCode.h) when the program has some. Reading checks the magic, the version, that every
// section lies inside the file, and every checksum before any section is decoded, then
// decodes each section with the same checked reader: damaged and hostile files get an
// error naming the file and the problem, never a crash.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_FILES_MODELFILE_H
#define DLC_RUNTIME_FILES_MODELFILE_H

#include "dlc/Core/DType.h"
#include "dlc/Core/ShapeRules.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dlc {

/// The format version this build writes; it reads this one and every earlier one.
constexpr uint32_t kModelFileVersion = 4;

/// A tensor the model takes or gives: its name, which program argument (inputs) or
/// result (outputs) it is, and its type.
struct ModelTensor {
  std::string name;
  int index = -1;
  shape_rules::Shape shape;
  DType dtype = DType::f32;
};

/// A weight the file carries: the program argument it is bound to, its type, its bytes.
struct ModelWeight {
  int argument = -1;
  std::string name;
  shape_rules::Shape shape;
  DType dtype = DType::f32;
  std::string bytes;
};

struct ModelFile {
  uint32_t version = kModelFileVersion; ///< of the format (what the program is encoded in)
  std::string target;      ///< "cpu" or "cuda": the devices the program was compiled for
  std::string dlc_version; ///< of the compiler that wrote it
  std::vector<ModelTensor> inputs, outputs;
  std::string program; ///< encode_program's bytes
  std::vector<ModelWeight> weights;
  /// The shared object of the program's generated host kernels ("" when none), and the
  /// target its code was generated for (HostObject::target).
  std::string host_code, host_target;
};

/// The file's bytes.
std::string encode_model_file(const ModelFile &model);
/// Decodes `bytes`; on failure returns false with `error` saying what is wrong (without
/// the file's name, which the caller adds). The program section stays encoded.
bool decode_model_file(const std::string &bytes, ModelFile &model, std::string &error);

/// Writes `model` to `path` through a temporary file renamed over it (a failed write
/// leaves the old file); throws dlc::Error naming the path.
void write_model_file(const std::string &path, const ModelFile &model);
/// Reads and decodes `path`; throws dlc::Error naming the path and the problem.
ModelFile read_model_file(const std::string &path);

} // namespace dlc

#endif // DLC_RUNTIME_FILES_MODELFILE_H
