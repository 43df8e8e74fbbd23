//===- ModelFileFuzzer.cpp - any bytes as a compiled model, or as its program --===//
//
// The first byte picks what the rest is. 'F': a whole .dlc file, loaded as
// CompiledModel::load loads one (container, program, op rules, weights), then run on
// zeros. Otherwise: a program section alone, decoded and checked against the op rules
// as loading does: past the container's checksums, which random bytes rarely pass.
// A file's generated host code is native code, trusted as a shared library is, not
// input to harden the loader against: it stays off here (DLC_MODEL_HOST_CODE=0).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Frontend/CompiledModel.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  setenv("DLC_MODEL_HOST_CODE", "0", 1); // read once, before the first load
  if (data[0] == 'F') {
    std::filesystem::path path = dlc::fuzz::scratch() / "input.dlc";
    dlc::fuzz::writeFile(path, data + 1, size - 1);
    try {
      auto model = dlc::CompiledModel::load(path.string());
      std::vector<dlc::Tensor> inputs;
      for (const dlc::ModelTensor &in : model->inputs())
        inputs.push_back(dlc::np::zeros(in.shape, in.dtype));
      for (dlc::Tensor &out : model->run(inputs))
        out.wait_to_read();
    } catch (const dlc::Error &) {
    }
    return 0;
  }
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::string error;
  if (std::shared_ptr<dlc::Program> program = dlc::decode_program(bytes, error))
    (void)dlc::check_program_ops(*program);
  return 0;
}
