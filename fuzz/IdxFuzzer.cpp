//===- IdxFuzzer.cpp - any bytes as a pair of MNIST IDX files -----------------===//
//
// The input's first four bytes (little-endian) are the images file's length; the images
// file follows, then the labels file. Both go through gluon.data.vision.MNIST as
// Debian's Fashion-MNIST files do (gzip or plain), then every sample is read.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Gluon/Data.h"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  size_t rest = size - 4;
  size_t split = std::min<size_t>(rest, size_t(data[0]) | size_t(data[1]) << 8 |
                                            size_t(data[2]) << 16 | size_t(data[3]) << 24);
  const std::filesystem::path &folder = dlc::fuzz::scratch();
  dlc::fuzz::writeFile(folder / "train-images-idx3-ubyte", data + 4, split);
  dlc::fuzz::writeFile(folder / "train-labels-idx1-ubyte", data + 4 + split, rest - split);
  try {
    dlc::gluon::data::vision::MNIST set(folder.string(), /*train=*/true);
    for (size_t i = 0; i < set.size(); ++i)
      set.get(i).data.wait_to_read();
  } catch (const dlc::Error &) {
  }
  return 0;
}
