//===- ImageFuzzer.cpp - any bytes as an image in a training folder -----------===//
//
// One file in a one-class ImageFolderDataset, read the way dlc-train reads image
// folders: with and without skip_unreadable, through the seed's transforms.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Gluon/Vision.h"

#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // OpenCV's own cap (2^30 pixels) is gigabytes per image, past the fuzzer's memory
  // limit; a smaller one keeps huge-image inputs a refusal, as they are for a user.
  setenv("OPENCV_IO_MAX_IMAGE_PIXELS", "16777216", 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace vision = dlc::gluon::data::vision;
  namespace T = vision::transforms;
  std::filesystem::path root = dlc::fuzz::scratch() / "images";
  std::filesystem::create_directories(root / "class");
  dlc::fuzz::writeFile(root / "class" / "input.png", data, size);
  for (bool skip : {false, true}) {
    try {
      auto folder = std::make_shared<vision::ImageFolderDataset>(
          root.string(), vision::ImageFolderDataset::Flag::color, skip);
      auto transformed = folder->transform_first(
          T::Compose({T::Resize(32, /*keep_ratio=*/true), T::CenterCrop(28), T::ToTensor(),
                      T::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})}));
      for (size_t i = 0; i < transformed->size(); ++i)
        transformed->get(i).data.wait_to_read();
    } catch (const dlc::Error &) {
    }
  }
  return 0;
}
