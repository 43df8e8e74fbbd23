//===- Vision.h - image datasets and transforms (gluon.data.vision) ----------===//
//
// Images are host tensors in HWC layout, uint8, RGB (or one channel for gray), until
// ToTensor turns them into CHW float in [0, 1]. Random transforms draw from the seed the
// DataLoader sets for each sample, so a run is reproducible whatever the workers' timing.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_VISION_H
#define DLC_GLUON_VISION_H

#include "dlc/Gluon/Data.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace dlc::gluon::data {

/// The random seed of the sample being prepared on this thread (set by the DataLoader;
/// 0 outside it). Random transforms derive their draws from it.
uint64_t sample_seed();
/// Sets sample_seed() for this thread (the DataLoader does this before each get()).
void set_sample_seed(uint64_t seed);

namespace vision {

/// The most pixels an image may have (8192 x 8192): a dataset refuses files whose
/// header announces more, and Resize results larger than this.
constexpr int64_t kMaxImagePixels = int64_t(1) << 26;

/// Images in one folder per class: labels are the sorted folder names' positions.
/// JPEG, PNG and BMP files are decoded with OpenCV (files whose bytes are another
/// format's are not, whatever their name).
class ImageFolderDataset : public Dataset {
public:
  enum class Flag { gray = 0, color = 1 };
  /// With `skip_unreadable`, files OpenCV cannot decode are left out (listed by
  /// skipped()); otherwise reading one throws an error naming its path.
  explicit ImageFolderDataset(const std::string &root, Flag flag = Flag::color,
                              bool skip_unreadable = false);
  size_t size() const override { return items_.size(); }
  Sample get(size_t index) const override;
  const std::vector<std::string> &synsets() const { return classes_; }
  const std::vector<std::string> &skipped() const { return skipped_; }

private:
  std::vector<std::pair<std::string, int64_t>> items_;
  std::vector<std::string> classes_, skipped_;
  Flag flag_;
};

/// Writes an HWC uint8 image (1 or 3 channels, RGB) to `path`; the format follows the
/// extension (.png, .jpg, .bmp). Throws naming the path on failure.
void save_image(const Tensor &image, const std::string &path);

namespace transforms {

using Transform = std::function<Tensor(const Tensor &)>;

/// Applies the transforms in order.
Transform Compose(std::vector<Transform> transforms);
/// Resizes to `size` x `size`, or, with keep_ratio, the shorter side to `size`.
/// interpolation: OpenCV's code (1 = bilinear, MXNet's default).
Transform Resize(int size, bool keep_ratio = false, int interpolation = 1);
/// The central `size` x `size` crop (the image must be at least that large).
Transform CenterCrop(int size);
/// A random crop of scale (area fraction) and aspect ratio in the given ranges, resized
/// to `size` x `size`.
Transform RandomResizedCrop(int size, std::array<double, 2> scale = {0.08, 1.0},
                            std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});
/// Mirrors left-right with probability 1/2.
Transform RandomFlipLeftRight();
/// Scales brightness, contrast and saturation by factors drawn from [1-x, 1+x].
Transform RandomColorJitter(double brightness = 0, double contrast = 0, double saturation = 0);
/// HWC uint8 -> CHW float32 in [0, 1].
Transform ToTensor();
/// (x - mean[c]) / std[c] per channel of a CHW float tensor.
Transform Normalize(std::vector<float> mean, std::vector<float> std);

} // namespace transforms
} // namespace vision
} // namespace dlc::gluon::data

#endif // DLC_GLUON_VISION_H
