//===- Vision.cpp - ImageFolderDataset and image transforms with OpenCV -------===//
#include "dlc/Gluon/Vision.h"

#include "dlc/Frontend/NumPy.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace dlc::gluon::data {

namespace {
thread_local uint64_t currentSampleSeed = 0;
} // namespace

uint64_t sample_seed() { return currentSampleSeed; }
void set_sample_seed(uint64_t seed) { currentSampleSeed = seed; }

namespace vision {

namespace {

/// The image tensor (H, W, C) uint8 on the host, as an OpenCV matrix sharing its memory.
cv::Mat asMat(const Tensor &image, const char *transform) {
  if (image.ndim() != 3 || image.dtype() != DType::u8)
    throw ShapeError(std::string(transform) + ": expects an HWC uint8 image, got " +
                     dtype_name(image.dtype()) + " " + shape_rules::str(image.shape()));
  if (!image.device().is_host())
    throw DeviceMismatchError(std::string(transform) + ": images are transformed on the host, "
                              "this one is on " + image.device().str());
  image.wait_to_read();
  const Shape &s = image.shape();
  return cv::Mat(int(s[0]), int(s[1]), CV_8UC(int(s[2])), image.data());
}

/// A new HWC uint8 tensor holding a copy of `mat`.
Tensor fromMat(const cv::Mat &mat) {
  cv::Mat contiguous = mat.isContinuous() ? mat : mat.clone();
  Tensor image = Tensor::empty({contiguous.rows, contiguous.cols, contiguous.channels()},
                               DType::u8, cpu());
  std::memcpy(image.data(), contiguous.data, image.nbytes());
  return image;
}

/// The random generator of one transform for the current sample.
std::mt19937_64 generatorFor(uint64_t salt) {
  return std::mt19937_64(sample_seed() * 0x9e3779b97f4a7c15ull ^ salt);
}

bool isImageFile(const std::filesystem::path &path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp";
}

/// Whether `bytes` start as a PNG, JPEG or BMP file does. OpenCV picks its decoder by
/// content, not by name, and links many more (TIFF, OpenEXR, JPEG 2000, ...): a folder
/// of training images needs none of them, so no other decoder sees a file.
bool hasReadableSignature(const std::vector<unsigned char> &bytes) {
  auto startsWith = [&](std::initializer_list<unsigned char> prefix) {
    return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
  };
  return startsWith({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) ||
         startsWith({0xff, 0xd8, 0xff}) || startsWith({'B', 'M'});
}

/// The width and height the header of a PNG, JPEG or BMP file announces, or {0, 0} when
/// it cannot be read (OpenCV then refuses the file itself).
std::pair<int64_t, int64_t> announcedSize(const std::vector<unsigned char> &b) {
  auto be16 = [&](size_t at) { return int64_t(b[at]) << 8 | b[at + 1]; };
  auto le32 = [&](size_t at) {
    return int64_t(int32_t(uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 |
                           uint32_t(b[at + 3]) << 24));
  };
  if (b.size() >= 24 && b[0] == 0x89 && std::equal(b.begin() + 12, b.begin() + 16, "IHDR"))
    return {be16(16) << 16 | be16(18), be16(20) << 16 | be16(22)}; // PNG's IHDR
  if (b.size() >= 26 && b[0] == 'B') { // BMP: a 12-byte core header has 16-bit sizes
    if (le32(14) == 12)
      return {int64_t(b[18]) | int64_t(b[19]) << 8, int64_t(b[20]) | int64_t(b[21]) << 8};
    return {std::abs(le32(18)), std::abs(le32(22))}; // negative: stored top-down
  }
  for (size_t i = 2; b.size() >= 2 && b[0] == 0xff && i + 4 <= b.size();) { // JPEG
    if (b[i] != 0xff) { // stray bytes before a marker: libjpeg skips them too
      ++i;
      continue;
    }
    int marker = b[i + 1];
    if (marker == 0xff || marker == 0x00 || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd9)) {
      // a fill byte; 0xff00, which is data, not a marker; or a marker without a length
      i += marker == 0xff ? 1 : 2;
      continue;
    }
    bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
                 marker != 0xcc; // a start of frame, which holds the size
    if (frame && i + 9 <= b.size())
      return {be16(i + 7), be16(i + 5)};
    i += 2 + size_t(be16(i + 2));
  }
  return {0, 0};
}

/// The image at `path` (RGB or gray), or an empty Mat and `why` when it is not a
/// readable PNG, JPEG or BMP file of at most kMaxImagePixels.
cv::Mat decode(const std::string &path, ImageFolderDataset::Flag flag, std::string *why) {
  *why = "not a readable JPEG/PNG/BMP";
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return {};
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  if (!hasReadableSignature(bytes))
    return {};
  // A few bytes can announce billions of pixels, which OpenCV allocates before it finds
  // the data missing: such a file is refused from its header.
  auto [width, height] = announcedSize(bytes);
  if (width > 0 && height > kMaxImagePixels / width) {
    *why = "its header announces " + std::to_string(width) + "x" + std::to_string(height) +
           " pixels, more than the " + std::to_string(kMaxImagePixels) + " dlc reads";
    return {};
  }
  cv::Mat bgr;
  try {
    bgr = cv::imdecode(bytes, flag == ImageFolderDataset::Flag::color ? cv::IMREAD_COLOR
                                                                      : cv::IMREAD_GRAYSCALE);
  } catch (const cv::Exception &) { // a damaged file some decoder refuses loudly
    return {};
  }
  if (bgr.empty())
    return bgr;
  if (bgr.channels() == 3)
    cv::cvtColor(bgr, bgr, cv::COLOR_BGR2RGB);
  return bgr;
}

} // namespace

ImageFolderDataset::ImageFolderDataset(const std::string &root, Flag flag, bool skip_unreadable)
    : flag_(flag) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(root))
    throw Error("ImageFolderDataset: '" + root + "' is not a folder");
  for (const auto &entry : fs::directory_iterator(root))
    if (entry.is_directory())
      classes_.push_back(entry.path().filename().string());
  std::sort(classes_.begin(), classes_.end());
  for (size_t label = 0; label < classes_.size(); ++label) {
    std::vector<std::string> files;
    for (const auto &entry : fs::directory_iterator(fs::path(root) / classes_[label]))
      if (entry.is_regular_file() && isImageFile(entry.path()))
        files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string &file : files) {
      std::string why;
      if (skip_unreadable && decode(file, flag_, &why).empty()) {
        skipped_.push_back(file);
        continue;
      }
      items_.emplace_back(file, int64_t(label));
    }
  }
  if (classes_.empty())
    throw Error("ImageFolderDataset: '" + root + "' has no class folders");
}

Sample ImageFolderDataset::get(size_t index) const {
  if (index >= items_.size())
    throw IndexError("ImageFolderDataset: index " + std::to_string(index) + " of " +
                     std::to_string(items_.size()));
  const auto &[path, label] = items_[index];
  std::string why;
  cv::Mat image = decode(path, flag_, &why);
  if (image.empty())
    throw Error("ImageFolderDataset: cannot decode '" + path + "' (" + why +
                "); pass skip_unreadable = true to leave such files out");
  return {fromMat(image), label};
}

void save_image(const Tensor &image, const std::string &path) {
  cv::Mat mat = asMat(image, "save_image");
  cv::Mat bgr;
  if (mat.channels() == 3)
    cv::cvtColor(mat, bgr, cv::COLOR_RGB2BGR);
  else
    bgr = mat;
  bool written = false;
  try {
    written = cv::imwrite(path, bgr);
  } catch (const cv::Exception &e) {
    throw Error("save_image: cannot write '" + path + "': " + e.what());
  }
  if (!written)
    throw Error("save_image: cannot write '" + path + "'");
}

namespace transforms {

Transform Compose(std::vector<Transform> transforms) {
  return [transforms](const Tensor &x) {
    Tensor y = x;
    for (const Transform &t : transforms)
      y = t(y);
    return y;
  };
}

Transform Resize(int size, bool keep_ratio, int interpolation) {
  if (size <= 0)
    throw ValueError("Resize: size must be positive");
  return [=](const Tensor &x) {
    cv::Mat image = asMat(x, "Resize");
    int h = image.rows, w = image.cols, outH = size, outW = size;
    int64_t longSide = size;
    if (keep_ratio) // the short side becomes `size`; the long one is truncated, as MXNet does
      longSide = h < w ? int64_t(w) * size / h : int64_t(h) * size / w;
    if (longSide > kMaxImagePixels / size)
      throw ValueError("Resize(" + std::to_string(size) + "): the " + std::to_string(w) + "x" +
                       std::to_string(h) + " image would become " + std::to_string(size) + "x" +
                       std::to_string(longSide) + " pixels, more than " +
                       std::to_string(kMaxImagePixels));
    if (keep_ratio)
      (h < w ? outW : outH) = int(longSide);
    cv::Mat resized;
    cv::resize(image, resized, cv::Size(outW, outH), 0, 0, interpolation);
    if (resized.channels() != image.channels()) // OpenCV drops a single channel's axis
      resized = resized.reshape(image.channels());
    return fromMat(resized);
  };
}

Transform CenterCrop(int size) {
  return [=](const Tensor &x) {
    cv::Mat image = asMat(x, "CenterCrop");
    if (image.rows < size || image.cols < size)
      throw ShapeError("CenterCrop(" + std::to_string(size) + "): the image is only " +
                       std::to_string(image.rows) + "x" + std::to_string(image.cols));
    int top = (image.rows - size) / 2, left = (image.cols - size) / 2;
    return fromMat(image(cv::Rect(left, top, size, size)));
  };
}

Transform RandomResizedCrop(int size, std::array<double, 2> scale, std::array<double, 2> ratio) {
  return [=](const Tensor &x) {
    cv::Mat image = asMat(x, "RandomResizedCrop");
    std::mt19937_64 generator = generatorFor(0x1111);
    double area = double(image.rows) * image.cols;
    cv::Rect box(0, 0, image.cols, image.rows);
    for (int attempt = 0; attempt < 10; ++attempt) {
      double target = area * std::uniform_real_distribution<double>(scale[0], scale[1])(generator);
      double aspect = std::exp(std::uniform_real_distribution<double>(
          std::log(ratio[0]), std::log(ratio[1]))(generator));
      int w = int(std::lround(std::sqrt(target * aspect)));
      int h = int(std::lround(std::sqrt(target / aspect)));
      if (w > 0 && h > 0 && w <= image.cols && h <= image.rows) {
        int left = std::uniform_int_distribution<int>(0, image.cols - w)(generator);
        int top = std::uniform_int_distribution<int>(0, image.rows - h)(generator);
        box = cv::Rect(left, top, w, h);
        break;
      }
    }
    cv::Mat resized;
    cv::resize(image(box), resized, cv::Size(size, size), 0, 0, cv::INTER_LINEAR);
    if (resized.channels() != image.channels())
      resized = resized.reshape(image.channels());
    return fromMat(resized);
  };
}

Transform RandomFlipLeftRight() {
  return [](const Tensor &x) {
    cv::Mat image = asMat(x, "RandomFlipLeftRight");
    std::mt19937_64 generator = generatorFor(0x2222);
    if (!std::bernoulli_distribution(0.5)(generator))
      return x;
    cv::Mat flipped;
    cv::flip(image, flipped, 1);
    return fromMat(flipped);
  };
}

Transform RandomColorJitter(double brightness, double contrast, double saturation) {
  return [=](const Tensor &x) {
    cv::Mat image = asMat(x, "RandomColorJitter");
    std::mt19937_64 generator = generatorFor(0x3333);
    auto factor = [&](double amount) {
      return amount > 0 ? std::uniform_real_distribution<double>(1 - amount, 1 + amount)(generator)
                        : 1.0;
    };
    double b = factor(brightness), c = factor(contrast), s = factor(saturation);
    cv::Mat work;
    image.convertTo(work, CV_32F);
    work *= b;
    // Contrast blends with the mean gray level, saturation with each pixel's gray value.
    cv::Mat gray;
    if (work.channels() == 3)
      cv::cvtColor(work, gray, cv::COLOR_RGB2GRAY);
    else
      gray = work;
    double meanGray = cv::mean(gray)[0];
    work = work * c + cv::Scalar::all(meanGray * (1 - c));
    if (work.channels() == 3 && s != 1.0) {
      cv::Mat grayNow, gray3;
      cv::cvtColor(work, grayNow, cv::COLOR_RGB2GRAY);
      cv::cvtColor(grayNow, gray3, cv::COLOR_GRAY2RGB);
      work = work * s + gray3 * (1 - s);
    }
    cv::Mat out;
    work.convertTo(out, CV_8U); // saturates to [0, 255]
    return fromMat(out);
  };
}

Transform ToTensor() {
  return [](const Tensor &x) {
    if (x.ndim() != 3 || x.dtype() != DType::u8)
      throw ShapeError("ToTensor: expects an HWC uint8 image, got " +
                       std::string(dtype_name(x.dtype())) + " " + shape_rules::str(x.shape()));
    return np::transpose(x.astype(DType::f32), {2, 0, 1}) * (1.0 / 255.0);
  };
}

Transform Normalize(std::vector<float> mean, std::vector<float> std) {
  if (mean.size() != std.size() || mean.empty())
    throw ValueError("Normalize: mean and std need one entry per channel");
  for (float s : std)
    if (!(s > 0))
      throw ValueError("Normalize: std entries must be positive");
  return [mean, std](const Tensor &x) {
    if (x.ndim() != 3 || x.shape()[0] != int64_t(mean.size()))
      throw ShapeError("Normalize: expects a CHW tensor with " + std::to_string(mean.size()) +
                       " channels, got " + shape_rules::str(x.shape()));
    int64_t c = int64_t(mean.size());
    Tensor m = np::array(mean, Shape{c, 1, 1}, x.device());
    Tensor s = np::array(std, Shape{c, 1, 1}, x.device());
    return (x - m) / s;
  };
}

} // namespace transforms
} // namespace vision
} // namespace dlc::gluon::data
