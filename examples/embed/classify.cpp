//===- classify.cpp - classify Fashion-MNIST test images with a .dlc model -----===//
//
//   dlc-classify model.dlc [--images FILE] [--labels FILE] [--count N] [--device cpu:0]
//
// Loads a compiled model (as dlc-train writes it) with dlc::CompiledModel, feeds it
// Fashion-MNIST test images in batches of the size it was compiled for, normalized as
// dlc-train normalizes them, and prints the first predictions and the accuracy. The
// images are IDX files, gzip'd or not (default: Debian's dataset-fashion-mnist).
//
//===----------------------------------------------------------------------===//
#include <dlc/dlc.h>

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <algorithm>
#include <string>
#include <vector>

namespace {

const char *kClasses[] = {"t-shirt", "trouser", "pullover", "dress", "coat",
                          "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};

/// The bytes of an IDX file (gzip'd or plain: zlib reads both) after its header, whose
/// dimensions go to `dims`.
std::vector<unsigned char> readIdx(const std::string &path, std::vector<int> &dims) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    throw dlc::Error("cannot open " + path);
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (int n; (n = gzread(file, chunk, sizeof chunk)) > 0;)
    bytes.insert(bytes.end(), chunk, chunk + n);
  gzclose(file);
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08)
    throw dlc::Error(path + " is not an IDX file of unsigned bytes");
  size_t rank = bytes[3], header = 4 + 4 * rank, count = 1;
  if (bytes.size() < header)
    throw dlc::Error(path + " is truncated");
  for (size_t k = 0; k < rank; ++k) {
    const unsigned char *d = &bytes[4 + 4 * k];
    dims.push_back(int(d[0]) << 24 | int(d[1]) << 16 | int(d[2]) << 8 | int(d[3]));
    count *= size_t(dims.back());
  }
  if (bytes.size() != header + count)
    throw dlc::Error(path + " holds " + std::to_string(bytes.size() - header) +
                     " bytes, its header says " + std::to_string(count));
  return std::vector<unsigned char>(bytes.begin() + long(header), bytes.end());
}

} // namespace

int main(int argc, char **argv) {
  std::string model = argc > 1 ? argv[1] : "";
  std::string images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  std::string labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  std::string device;
  long count = 1000;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--images")
      images = argv[i + 1];
    else if (flag == "--labels")
      labels = argv[i + 1];
    else if (flag == "--count")
      count = std::atol(argv[i + 1]);
    else if (flag == "--device")
      device = argv[i + 1];
    else
      model.clear();
  }
  if (model.empty() || count < 1) {
    std::fprintf(stderr, "usage: dlc-classify model.dlc [--images FILE] [--labels FILE] "
                         "[--count N] [--device cpu:N|gpu:N]\n");
    return 2;
  }
  try {
    std::optional<dlc::Device> on;
    if (!device.empty())
      on = dlc::Device{device.rfind("gpu", 0) == 0 ? dlc::DeviceKind::gpu : dlc::DeviceKind::cpu,
                       std::atoi(device.c_str() + device.find(':') + 1)};
    auto net = dlc::CompiledModel::load(model, on);
    const dlc::ModelTensor &input = net->inputs().at(0);
    if (input.shape.size() != 4 || input.shape[1] != 1 || input.shape[2] != 28 ||
        input.shape[3] != 28 || input.dtype != dlc::DType::f32)
      throw dlc::Error(model + " takes " + dlc::dtype_name(input.dtype) + " " +
                       dlc::shape_rules::str(input.shape) +
                       "; this example feeds float32 Nx1x28x28 images");
    std::vector<int> imageDims, labelDims;
    std::vector<unsigned char> pixels = readIdx(images, imageDims);
    std::vector<unsigned char> truth = readIdx(labels, labelDims);
    long available = std::min<long>(imageDims.at(0), labelDims.at(0));
    count = std::min(count, available);
    const int64_t batch = input.shape[0], size = 28 * 28;
    std::printf("dlc-classify: %s (%s model on %s, batch %lld), %ld images of %s\n",
                model.c_str(), net->target().c_str(), net->device().str().c_str(),
                (long long)batch, count, images.c_str());

    long correct = 0;
    for (long first = 0; first < count; first += batch) {
      // One batch, normalized as dlc-train normalizes (mean 0.2860, deviation 0.3530);
      // the last batch is padded with its first image and the padding ignored.
      dlc::Tensor x = dlc::Tensor::empty(input.shape, dlc::DType::f32, dlc::cpu(0));
      float *data = static_cast<float *>(x.data());
      for (int64_t b = 0; b < batch; ++b) {
        long image = first + b < count ? first + b : first;
        for (int64_t p = 0; p < size; ++p)
          data[b * size + p] = (pixels[size_t(image * size + p)] / 255.0f - 0.2860f) / 0.3530f;
      }
      dlc::Tensor scores = net->run({x}).at(0).copyto(dlc::cpu(0));
      scores.wait_to_read();
      const float *s = static_cast<const float *>(scores.data());
      const int64_t classes = scores.shape().at(1);
      for (int64_t b = 0; b < batch && first + b < count; ++b) {
        int64_t best = 0;
        for (int64_t c = 1; c < classes; ++c)
          if (s[b * classes + c] > s[b * classes + best])
            best = c;
        int label = truth[size_t(first + b)];
        correct += best == label;
        if (first + b < 5)
          std::printf("image %ld: %s (label %s)\n", first + b,
                      best < 10 ? kClasses[best] : "?", kClasses[label % 10]);
      }
    }
    std::printf("dlc-classify: accuracy %.4f on %ld test images\n", double(correct) / double(count),
                count);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dlc-classify: %s\n", e.what());
    return 1;
  }
  return 0;
}
