//===- OnnxFuzzer.cpp - any bytes as an ONNX model, read, imported and run -----===//
//
// The bytes go through dlc::onnx::read_model as a file (external data is looked up in the
// scratch folder, where there is none), then through the importer (checks, constant
// folding) and, for a model whose inputs have known, small shapes, one eager call on
// zeros.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Onnx/Import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::filesystem::path path = dlc::fuzz::scratch() / "model.onnx";
  dlc::fuzz::writeFile(path, data, size);
  try {
    // Within the fuzzer's memory: conversions create at most 2^22 elements, and the call
    // runs only on inputs that small (a file may declare any size; a user calling with
    // it asks for that memory).
    dlc::onnx::ImportOptions options;
    options.max_created_elements = int64_t(1) << 22;
    std::shared_ptr<dlc::onnx::OnnxBlock> block = dlc::onnx::import(path.string(), options);
    for (const dlc::onnx::ValueInfo &input : block->inputs()) {
      int64_t elements = 1;
      for (int64_t d : input.dims) {
        if (d < 0 || (d > 0 && elements > (int64_t(1) << 22) / d))
          return 0;
        elements *= d;
      }
    }
    std::vector<dlc::Tensor> inputs = block->example_inputs(dlc::npx::cpu(0));
    for (dlc::Tensor &out : block->forward_multi(inputs))
      out.wait_to_read();
  } catch (const dlc::Error &) {
  }
  return 0;
}
