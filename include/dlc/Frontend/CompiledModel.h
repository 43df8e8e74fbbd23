//===- CompiledModel.h - a compiled model file, loaded and run -----------------===//
//
// A `.dlc` file (docs/design/model-file.md) holds one compiled program, the weights it
// binds and its inputs and outputs. Loading needs no compiler: the file's container and
// program are checked (ModelFile.h, ProgramFile.h), then every step is checked against
// its op's shape and dtype rule (the registry the eager ops use), so a file that loads
// runs no kernel on operands it does not take; the weights are put on the program's
// device, in the layouts its kernels read, once. A loaded model may be run from several
// threads at once.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_COMPILEDMODEL_H
#define DLC_FRONTEND_COMPILEDMODEL_H

#include "dlc/Frontend/Tensor.h"
#include "dlc/Runtime/Program/HostCode.h"
#include "dlc/Runtime/Files/ModelFile.h"
#include "dlc/Runtime/Program/Program.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlc {

class CompiledModel {
public:
  /// Reads and checks `path`, to run on `device` (default: the device it was compiled
  /// for; another device of the same kind may be given); throws dlc::Error naming the
  /// file and the problem.
  static std::shared_ptr<const CompiledModel> load(const std::string &path,
                                                   std::optional<Device> device = {});
  /// Checks `file` (read from `source`, for messages) and binds its weights on `device`.
  CompiledModel(ModelFile file, const std::string &source, std::optional<Device> device = {});

  const std::vector<ModelTensor> &inputs() const { return file_.inputs; }
  const std::vector<ModelTensor> &outputs() const { return file_.outputs; }
  /// "cpu" or "cuda".
  const std::string &target() const { return file_.target; }
  /// The device the program runs on.
  Device device() const;
  const Program &program() const { return *program_; }

  /// Runs the model: one tensor per input, in inputs() order, of its shape and dtype (on
  /// any device: moved to the model's). Returns the outputs, on the model's device.
  /// Throws ValueError, ShapeError or DTypeError naming the input that does not fit.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs) const;

private:
  /// The file's generated host code, loaded; null when it has none, it is turned off
  /// (DLC_MODEL_HOST_CODE=0) or this process cannot run it (a warning says why).
  std::shared_ptr<const LoadedHostCode> loadHostCode() const;

  ModelFile file_;
  std::string source_;
  std::shared_ptr<Program> program_;
  std::vector<Tensor> bound_; ///< per program argument: its weight, undefined for inputs
};

/// Checks every step of `program` against its op's shape and dtype rule: "" or the first
/// step that does not fit, named with its operands.
std::string check_program_ops(const Program &program);

} // namespace dlc

#endif // DLC_FRONTEND_COMPILEDMODEL_H
