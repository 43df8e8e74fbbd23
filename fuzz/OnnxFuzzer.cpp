//===- OnnxFuzzer.cpp - any bytes as an ONNX model, read, imported and run -----===//
//
// The bytes go through dlc::onnx::read_model as a file (external data is looked up in the
// scratch folder, where there is none), then through the importer (checks, constant
// folding) and, for a model whose inputs have known shapes, one eager call on zeros.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Onnx/Import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::filesystem::path path = dlc::fuzz::scratch() / "model.onnx";
  dlc::fuzz::writeFile(path, data, size);
  try {
    std::shared_ptr<dlc::onnx::OnnxBlock> block = dlc::onnx::import(path.string());
    std::vector<dlc::Tensor> inputs = block->example_inputs(dlc::npx::cpu(0));
    for (dlc::Tensor &out : block->forward_multi(inputs))
      out.wait_to_read();
  } catch (const dlc::Error &) {
  }
  return 0;
}
