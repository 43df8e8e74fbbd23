//===- SafeTensorsFuzzer.cpp - any bytes as a safetensors file ----------------===//
//
// Reads the header (sizes, offsets, dtypes, nesting), then every tensor it lists, as
// load_parameters and dlc-train --resume do.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Frontend/SafeTensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::filesystem::path path = dlc::fuzz::scratch() / "input.safetensors";
  dlc::fuzz::writeFile(path, data, size);
  try {
    dlc::safetensors::Reader reader(path.string());
    for (const dlc::safetensors::TensorInfo &entry : reader.tensors())
      reader.read(entry).wait_to_read();
  } catch (const dlc::Error &) {
  }
  return 0;
}
