//===- SafeTensorsFuzzer.cpp - any bytes as a parameter file ------------------===//
//
// Reads the header (sizes, offsets, dtypes, nesting), then every tensor it lists, as
// load_parameters and dlc-train --resume do: as an MXNet .params file when the bytes
// begin with its magic (the corpus holds files MXNet wrote), as safetensors otherwise.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Frontend/MXNetParams.h"
#include "dlc/Frontend/SafeTensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::filesystem::path path = dlc::fuzz::scratch() / "input.safetensors";
  dlc::fuzz::writeFile(path, data, size);
  auto readAll = [](const auto &reader) {
    for (const dlc::safetensors::TensorInfo &entry : reader.tensors())
      reader.read(entry).wait_to_read();
  };
  try {
    if (dlc::mxnet_params::is_params_file(path.string()))
      readAll(dlc::mxnet_params::Reader(path.string()));
    else
      readAll(dlc::safetensors::Reader(path.string()));
  } catch (const dlc::Error &) {
  }
  return 0;
}
