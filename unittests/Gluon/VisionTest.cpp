//===- VisionTest.cpp - image transforms on hand-made pixels, ImageFolder ----===//
#include "dlc/gluon.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <fstream>

using namespace dlc;
using namespace dlc::gluon::data;
using namespace dlc::gluon::data::vision;
namespace T = dlc::gluon::data::vision::transforms;

namespace {

/// An H x W x C uint8 image whose pixel (h, w, c) is (10 * h + w + 100 * c) % 256.
Tensor pattern(int64_t h, int64_t w, int64_t c) {
  std::vector<double> values;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j)
      for (int64_t k = 0; k < c; ++k)
        values.push_back(double((10 * i + j + 100 * k) % 256));
  return np::array(values, Shape{h, w, c}, DType::u8);
}

uint8_t at(const Tensor &image, int64_t h, int64_t w, int64_t c) {
  const Shape &s = image.shape();
  return image.to_vector<uint8_t>()[size_t((h * s[1] + w) * s[2] + c)];
}

} // namespace

TEST(Transforms, ToTensorAndNormalize) {
  Tensor image = pattern(2, 3, 3);
  Tensor chw = T::ToTensor()(image);
  ASSERT_EQ(chw.shape(), (Shape{3, 2, 3}));
  std::vector<float> v = chw.to_vector<float>();
  EXPECT_FLOAT_EQ(v[0 * 6 + 1 * 3 + 2], 12.f / 255.f) << "channel 0, h 1, w 2";
  EXPECT_FLOAT_EQ(v[2 * 6 + 0 * 3 + 1], 201.f / 255.f) << "channel 2, h 0, w 1";
  Tensor normalized = T::Normalize({0.5f, 0.25f, 0.f}, {0.5f, 0.25f, 2.f})(chw);
  std::vector<float> n = normalized.to_vector<float>();
  EXPECT_NEAR(n[0], (0.f - 0.5f) / 0.5f, 1e-6);
  EXPECT_NEAR(n[6 + 4], (111.f / 255.f - 0.25f) / 0.25f, 1e-6);
  EXPECT_NEAR(n[12 + 5], (212.f / 255.f) / 2.f, 1e-6);
  EXPECT_THROW(T::Normalize({0.5f}, {0.5f})(chw), ShapeError);
  EXPECT_THROW(T::ToTensor()(chw), ShapeError);
}

TEST(Transforms, CropsAndResize) {
  Tensor image = pattern(4, 6, 3);
  Tensor crop = T::CenterCrop(2)(image);
  ASSERT_EQ(crop.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(at(crop, 0, 0, 0), at(image, 1, 2, 0));
  EXPECT_EQ(at(crop, 1, 1, 2), at(image, 2, 3, 2));
  EXPECT_THROW(T::CenterCrop(5)(image), ShapeError);
  Tensor nearest = T::Resize(4, false, /*INTER_NEAREST=*/0)(pattern(2, 2, 1));
  ASSERT_EQ(nearest.shape(), (Shape{4, 4, 1}));
  EXPECT_EQ(at(nearest, 3, 3, 0), 11) << "bottom-right quarter copies pixel (1, 1)";
  EXPECT_EQ(at(nearest, 0, 3, 0), 1);
  EXPECT_EQ(T::Resize(2, /*keep_ratio=*/true)(pattern(4, 8, 3)).shape(), (Shape{2, 4, 3}));
  // The long side is truncated, as MXNet's resize does: 305x200 (W x H) at 224 is
  // 341x224 (305 * 224 / 200 = 341.6), not 342 as rounding gave.
  EXPECT_EQ(T::Resize(224, true)(pattern(200, 305, 3)).shape(), (Shape{224, 341, 3}));
  EXPECT_EQ(T::Resize(224, true)(pattern(305, 200, 3)).shape(), (Shape{341, 224, 3}));
  // A 1-pixel-high strip's long side would pass 2^26 pixels (and int) at 32.
  EXPECT_THROW(T::Resize(32, true)(np::zeros({1, 3000000, 1}, DType::u8)), ValueError);
  EXPECT_EQ(T::RandomResizedCrop(5)(pattern(16, 12, 3)).shape(), (Shape{5, 5, 3}));
}

TEST(Transforms, RandomOnesFollowTheSampleSeed) {
  Tensor image = pattern(3, 4, 3);
  T::Transform flip = T::RandomFlipLeftRight();
  int flipped = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    set_sample_seed(seed);
    Tensor out = flip(image);
    set_sample_seed(seed);
    EXPECT_EQ(flip(image).to_vector<uint8_t>(), out.to_vector<uint8_t>()) << "same seed";
    if (at(out, 0, 0, 0) != at(image, 0, 0, 0)) {
      ++flipped;
      EXPECT_EQ(at(out, 2, 0, 1), at(image, 2, 3, 1)) << "a mirror image";
    }
  }
  EXPECT_GT(flipped, 8);
  EXPECT_LT(flipped, 32);
  // Brightness scales every pixel by one factor in [0.5, 1.5]; contrast leaves a flat image.
  Tensor flat = np::full({2, 2, 3}, 100, DType::u8);
  set_sample_seed(3);
  std::vector<uint8_t> bright = T::RandomColorJitter(0.5)(flat).to_vector<uint8_t>();
  EXPECT_GE(bright[0], 50);
  EXPECT_LE(bright[0], 150);
  EXPECT_EQ(std::vector<uint8_t>(bright.size(), bright[0]), bright);
  EXPECT_EQ(T::RandomColorJitter(0, 0.9)(flat).to_vector<uint8_t>(), flat.to_vector<uint8_t>());
  set_sample_seed(0);
}

TEST(ImageFolder, ClassesCorruptFilesAndEmptyClasses) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / "dlc_imagefolder";
  fs::remove_all(root);
  for (const char *name : {"cat", "dog", "empty"})
    fs::create_directories(root / name);
  cv::imwrite((root / "cat" / "a.png").string(), cv::Mat(4, 5, CV_8UC3, cv::Scalar(10, 20, 30)));
  cv::imwrite((root / "cat" / "b.bmp").string(), cv::Mat(4, 5, CV_8UC3, cv::Scalar(1, 2, 3)));
  cv::imwrite((root / "dog" / "c.jpg").string(), cv::Mat(6, 6, CV_8UC3, cv::Scalar(0, 0, 255)));
  std::ofstream(root / "dog" / "corrupt.jpg") << "not a jpeg";
  std::ofstream(root / "dog" / "notes.txt") << "ignored: not an image file";

  ImageFolderDataset strict(root.string());
  EXPECT_EQ(strict.synsets(), (std::vector<std::string>{"cat", "dog", "empty"}));
  EXPECT_EQ(strict.size(), 4u);
  Sample first = strict.get(0);
  EXPECT_EQ(first.label, 0);
  EXPECT_EQ(first.data.shape(), (Shape{4, 5, 3}));
  EXPECT_EQ(at(first.data, 0, 0, 0), 30) << "OpenCV's BGR becomes RGB";
  EXPECT_EQ(strict.get(2).label, 1);
  try {
    strict.get(3);
    FAIL() << "expected an error naming the corrupt file";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("corrupt.jpg"), std::string::npos) << e.what();
  }
  ImageFolderDataset lenient(root.string(), ImageFolderDataset::Flag::gray, true);
  EXPECT_EQ(lenient.size(), 3u);
  ASSERT_EQ(lenient.skipped().size(), 1u);
  EXPECT_NE(lenient.skipped()[0].find("corrupt.jpg"), std::string::npos);
  EXPECT_EQ(lenient.get(0).data.shape(), (Shape{4, 5, 1}));
  EXPECT_THROW(ImageFolderDataset((root / "missing").string()), Error);

  // OpenCV picks its decoder by content: a TIFF named .png reached the TIFF decoder. Only
  // files that start as PNG, JPEG or BMP files do are decoded.
  fs::path other = root.parent_path() / "dlc_imagefolder_other";
  fs::remove_all(other);
  fs::create_directories(other / "cls");
  ASSERT_TRUE(cv::imwrite((other / "x.tiff").string(), cv::Mat(3, 3, CV_8UC3, cv::Scalar(5))));
  fs::rename(other / "x.tiff", other / "cls" / "x.png");
  ImageFolderDataset disguised(other.string(), ImageFolderDataset::Flag::color, true);
  EXPECT_EQ(disguised.size(), 0u);
  ASSERT_EQ(disguised.skipped().size(), 1u);

  // A few bytes can announce billions of pixels, which OpenCV allocated before finding
  // the data missing (gigabytes; the image fuzzer found it): such files are refused from
  // their header, in each format.
  fs::remove_all(other / "cls");
  fs::create_directories(other / "cls");
  cv::Mat small(2, 3, CV_8UC3, cv::Scalar(9));
  for (const char *ext : {".png", ".bmp", ".jpg"})
    ASSERT_TRUE(cv::imwrite((other / "cls" / (std::string("huge") + ext)).string(), small));
  auto patch = [&](const char *name, size_t at, std::vector<unsigned char> bytes) {
    std::fstream file(other / "cls" / name, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(at));
    file.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  };
  patch("huge.png", 16, {0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0}); // IHDR: 100000 x 100000
  patch("huge.bmp", 18, {0xa0, 0x86, 1, 0, 0xa0, 0x86, 1, 0}); // 100000 x 100000
  {
    std::ifstream in(other / "cls" / "huge.jpg", std::ios::binary);
    std::vector<unsigned char> jpeg((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    for (size_t i = 2; i + 9 < jpeg.size(); ++i) // the baseline frame's height and width
      if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
        patch("huge.jpg", i + 5, {0xff, 0xff, 0xff, 0xff}); // 65535 x 65535
        break;
      }
  }
  { // stray bytes before the frame header, which libjpeg skips (the fuzzer's input had
    // them), and a size OpenCV's own limit lets through: 20000 x 20000
    std::ifstream in(other / "cls" / "huge.jpg", std::ios::binary);
    std::vector<unsigned char> jpeg((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    for (size_t i = 2; i + 9 < jpeg.size(); ++i)
      if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
        jpeg[i + 5] = jpeg[i + 7] = 0x4e; // 0x4e20 = 20000
        jpeg[i + 6] = jpeg[i + 8] = 0x20;
        jpeg.insert(jpeg.begin() + std::ptrdiff_t(i), {0x12, 0x34, 0x56});
        break;
      }
    std::ofstream out(other / "cls" / "huge-stray.jpg", std::ios::binary);
    out.write(reinterpret_cast<const char *>(jpeg.data()), std::streamsize(jpeg.size()));
  }
  ImageFolderDataset huge(other.string(), ImageFolderDataset::Flag::color, true);
  EXPECT_EQ(huge.size(), 0u);
  EXPECT_EQ(huge.skipped().size(), 4u);
  ImageFolderDataset strictHuge(other.string());
  for (size_t i = 0; i < strictHuge.size(); ++i)
    try {
      strictHuge.get(i);
      ADD_FAILURE() << "file " << i << " was decoded";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("pixels, more than the 67108864 dlc reads"),
                std::string::npos)
          << e.what();
    }

  // Through a loader with random transforms, workers or not, the same seed gives the
  // same batches.
  auto transformed = std::make_shared<ImageFolderDataset>(root.string(), ImageFolderDataset::Flag::color, true)
                         ->transform_first(T::Compose({T::Resize(4), T::RandomFlipLeftRight(),
                                                       T::RandomColorJitter(0.3), T::ToTensor()}));
  auto run = [&](int workers) {
    DataLoader loader(transformed, 3, true, LastBatch::keep, workers, 2, 9);
    std::vector<float> all;
    for (Batch batch : loader)
      for (float v : batch.data.to_vector<float>())
        all.push_back(v);
    return all;
  };
  EXPECT_EQ(run(0), run(2));
  fs::remove_all(root);
}
