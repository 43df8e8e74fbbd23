//===- dlc-train.cpp - the main job: train a LeafNetwork-style CNN on real data ===//
//
// Trains on Fashion-MNIST (Debian's dataset-fashion-mnist) on every device, with
// per-batch speed and per-epoch accuracy. By default each step is one compiled
// data-parallel TrainStep (forward, loss, backward, all-reduce, update);
// --compiled-step=false (or --hybridize=false) runs the seed's recipe instead:
// split_and_load, autograd on each device, Trainer.step. Shows a progress bar, evaluates
// on the test split, and writes parameters (safetensors), a CSV log and an SVG training
// curve to the output folder.
//
// The network is the seed's LeafNetwork adapted to 28x28 images
// (leafnet::fashion_network in examples/LeafNetwork.h), or with --network NAME any
// network of the vision model zoo (dlc/Gluon/ModelZoo.h), fed images resized to its
// size (--image-size) with Fashion-MNIST's gray channel repeated into three.
//
// With --task lm it trains a byte-level GPT-2 on a text corpus instead
// (LanguageModel.cpp).
//
// Under `mpirun -np N` the job's --devices are shared out among the N processes (each
// takes its block, dist::local_devices), each process reads its share of every batch,
// and the gradients are summed over all of them; process 0 alone prints, evaluates and
// writes the output folder. The parameters equal those of one process with all the
// devices.
//
//===----------------------------------------------------------------------===//
#include <dlc/gluon.h>

#include <dlc/Core/AtomicFile.h>
#include <dlc/Runtime/Distributed/ProcessGroup.h>
#include "../../examples/LeafNetwork.h"
#include <dlc/Gluon/ModelZoo.h>
#include <dlc/Onnx/Export.h>

#include "../common/CompileOptionFlags.h"
#include "LanguageModel.h"
#include "Progress.h"

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace dlc;
using namespace dlc::gluon;
namespace cl = llvm::cl;

namespace {

/// dlc-train's own options: --help lists these, not the ones LLVM's libraries register.
cl::OptionCategory trainOptions("dlc-train options");

cl::opt<std::string> taskOption(
    "task",
    cl::desc("classify (images, the default) or lm (a byte-level GPT-2 language model on a "
             "text corpus, Debian's fortunes by default)"),
    cl::cat(trainOptions), cl::init("classify"));
cl::opt<std::string> dataOption(
    "data",
    cl::desc("dataset: fashion-mnist, or imagefolder:PATH (PATH/train and PATH/test hold one "
             "folder per class; images are resized to 28x28); with --task lm: fortunes (the "
             "default), or a text file or folder"),
    cl::cat(trainOptions), cl::init("fashion-mnist"));
cl::opt<int> sequenceLength("seq-len", cl::desc("with --task lm: bytes per training sequence"),
                            cl::cat(trainOptions), cl::init(128));
cl::opt<int> sampleCount("samples",
                         cl::desc("with --task lm: texts to sample from the trained model"),
                         cl::cat(trainOptions), cl::init(3));
cl::opt<std::string> exportFolder(
    "export-imagefolder",
    cl::desc("write Fashion-MNIST (the first --limit images of each split) as PNG files in "
             "DIR/train/<class>/ and DIR/test/<class>/, then exit"),
    cl::cat(trainOptions), cl::init(""));
cl::opt<std::string> dataRoot("data-root", cl::desc("folder of the IDX files"),
                              cl::cat(trainOptions), cl::init("/usr/share/datasets/fashion-mnist"));
cl::opt<std::string> networkOption(
    "network",
    cl::desc("leafnet (the seed's LeafNetwork for 28x28 images), or a network of the model "
             "zoo: resnet18_v1 ... resnet152_v2, vgg11 ... vgg19_bn, alexnet, densenet121 ... "
             "densenet201, squeezenet1.0, squeezenet1.1, inceptionv3, mobilenet1.0 ... "
             "mobilenet0.25, mobilenetv2_1.0 ... mobilenetv2_0.25, vit_b_16; with --task lm: "
             "gpt2_small (the default) or gpt2_124m"),
    cl::cat(trainOptions), cl::init("leafnet"));
cl::opt<int> imageSizeOption(
    "image-size",
    cl::desc("side of the square images a model-zoo network is fed (0: its own, 224, or 299 "
             "for inceptionv3; networks that end in a global pool also train on smaller "
             "ones, e.g. 32; vit_b_16 on any multiple of 16)"),
    cl::cat(trainOptions), cl::init(0));
cl::opt<int> epochs("epochs", cl::desc("passes over the training set"), cl::cat(trainOptions), cl::init(5));
cl::opt<int> batchSize("batch-size",
                       cl::desc("samples per step, over all devices (of all processes); 64, "
                                "or 16 sequences with --task lm"),
                       cl::cat(trainOptions), cl::init(64));
cl::opt<std::string> devicesOption("devices",
                                   cl::desc("devices, e.g. cpu:0,cpu:1 or gpu:0,gpu:1 "
                                            "(default: every GPU, else cpu:0,cpu:1)"),
                                   cl::cat(trainOptions), cl::init(""));
cl::opt<double> learningRate("lr", cl::desc("learning rate"), cl::cat(trainOptions), cl::init(0.001));
cl::opt<std::string> optimizerOption("optimizer", cl::desc("sgd, nag or adam"),
                                     cl::cat(trainOptions), cl::init("adam"));
cl::opt<std::string> outputFolder("out", cl::desc("output folder"), cl::cat(trainOptions), cl::init("dlc-train-out"));
cl::opt<std::string> resumeFrom("resume", cl::desc("parameters (.safetensors) to start from"),
                                cl::cat(trainOptions), cl::init(""));
cl::opt<int> limit("limit",
                   cl::desc("train on N samples only (0: all): Fashion-MNIST's first N, or N "
                            "drawn with --seed from an image folder; with --task lm, the "
                            "first N bytes (and N/10 held out)"),
                   cl::cat(trainOptions), cl::init(0));
cl::opt<bool> skipUnreadable(
    "skip-unreadable",
    cl::desc("with an image folder, leave out (and list) the files OpenCV cannot decode "
             "instead of stopping at the first"),
    cl::cat(trainOptions), cl::init(false));
cl::opt<uint64_t> seedOption("seed", cl::desc("random seed"), cl::cat(trainOptions), cl::init(1));
cl::opt<bool> compiledStepOption(
    "compiled-step",
    cl::desc("train with one compiled data-parallel program per step (forward, loss, "
             "backward, all-reduce, update); --compiled-step=false runs the seed's loop "
             "(split_and_load, record, backward, trainer.step)"),
    cl::cat(trainOptions), cl::init(true));
cl::opt<bool> syncBatchNormOption(
    "sync-batch-norm",
    cl::desc("with the compiled step, normalize BatchNorm with the whole batch's statistics "
             "over all devices (SyncBatchNorm); default: per device, as the seed's loop"),
    cl::cat(trainOptions), cl::init(false));
cl::opt<bool> checkNumerics(
    "check-numerics",
    cl::desc("check every op's output for NaN and infinity and stop at the first op that "
             "makes one, naming it (slow: for finding where a run diverges; the same as "
             "DLC_CHECK_NUMERICS=1)"),
    cl::cat(trainOptions), cl::init(false));
cl::opt<bool> exportOnnxOption(
    "export-onnx",
    cl::desc("also write the trained network as model.onnx (ONNX opset 17, one image per "
             "call) for ONNX Runtime and other ONNX consumers; --export-onnx=false does not"),
    cl::cat(trainOptions), cl::init(true));
cl::opt<bool> hybridizeOption(
    "hybridize",
    cl::desc("compile the network (forward and backward) per input signature; "
             "--hybridize=false runs it eagerly, op by op"),
    cl::cat(trainOptions), cl::init(true));

std::vector<Device> parseDevices(const std::string &text) {
  std::vector<Device> devices;
  if (text.empty()) {
    for (int i = 0; i < npx::num_gpus() && can_compute_on(npx::gpu(i)); ++i)
      devices.push_back(npx::gpu(i));
    if (devices.empty())
      devices = {cpu(0), cpu(1)};
    return devices;
  }
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    try {
      devices.push_back(parse_device(item));
    } catch (const ValueError &e) {
      throw ValueError("--devices: " + std::string(e.what()));
    }
  }
  return devices;
}

/// This process's block of the job's devices, checked: each device can compute here and
/// appears once in the block. Other processes' blocks may name the same devices: their
/// own (on another host, each host's gpu(0); on this one, logical host devices).
std::vector<Device> localBlock(const std::vector<Device> &job) {
  std::vector<Device> local = dist::local_devices(job);
  for (size_t i = 0; i < local.size(); ++i) {
    Device device = local[i];
    if (!can_compute_on(device))
      throw UnsupportedError(
          "--devices: cannot compute on " + device.str() +
          (device.is_host()
               ? " (host devices are cpu:0 to cpu:" + std::to_string(kMaxHostDevices - 1) + ")"
               : " (this process sees " + std::to_string(npx::num_gpus()) + " GPU(s))"));
    if (std::count(local.begin(), local.begin() + long(i), device) > 0)
      throw ValueError("--devices: " + device.str() + " is listed twice" +
                       (dist::size() > 1 ? " in the block of process " +
                                               std::to_string(dist::rank())
                                         : std::string()));
  }
  return local;
}

/// How many blocks before this process's name `device` too: 0 for a device that keeps
/// the stream it has in one process, k for the k-th repeat, which gets a stream of its own.
int64_t earlierNamings(const std::vector<Device> &job, Device device) {
  const size_t block = job.size() / size_t(dist::size());
  return std::count(job.begin(), job.begin() + long(block * size_t(dist::rank())), device);
}

/// Channels the network takes: 1 for the LeafNetwork, 3 for the model zoo's (ImageNet's).
int64_t networkChannels = 1;

/// ToTensor + Normalize on a whole batch: (B, H, W, 1) uint8 -> (B, 1, H, W) float,
/// scaled to [0, 1] and standardized with Fashion-MNIST's mean and deviation, the gray
/// channel repeated for a network that takes three. Batches of image folders arrive
/// transformed already (CHW float).
Tensor prepare(const Tensor &images) {
  if (images.dtype() == DType::f32)
    return images;
  Tensor x = np::transpose(images.astype(DType::f32), {0, 3, 1, 2});
  x = (x * (1.0 / 255.0) - 0.2860) * (1.0 / 0.3530);
  if (networkChannels == 1)
    return x;
  const Shape &s = x.shape();
  return np::broadcast_to(x, {s[0], networkChannels, s[2], s[3]});
}

/// The seed's pipeline, sized for the network (`size`: 28 for the LeafNetwork): resize
/// (to 8/7 of it, ImageNet's habit), crop the center square, (for training) random flips
/// and contrast jitter, then ToTensor and Normalize with the seed's mean/std.
std::shared_ptr<data::Dataset>
imageFolder(const std::shared_ptr<data::vision::ImageFolderDataset> &folder, bool train,
            int size) {
  namespace T = data::vision::transforms;
  std::vector<T::Transform> steps{T::Resize(size * 8 / 7, /*keep_ratio=*/true),
                                  T::CenterCrop(size)};
  if (train) {
    steps.push_back(T::RandomFlipLeftRight());
    steps.push_back(T::RandomColorJitter(0, 0.05));
  }
  steps.push_back(T::ToTensor());
  steps.push_back(T::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}));
  return folder->transform_first(T::Compose(steps));
}

/// Writes images (N, 28, 28, 1) as PNG files in DIR/<class>/NNNNN.png.
void exportSplit(const data::vision::FashionMNIST &set, const std::string &dir, size_t count) {
  const auto &classes = data::vision::FashionMNIST::classes();
  for (const std::string &name : classes) {
    std::string safe = name;
    std::replace(safe.begin(), safe.end(), '/', '-');
    std::filesystem::create_directories(dir + "/" + safe);
  }
  for (size_t i = 0; i < count && i < set.size(); ++i) {
    data::Sample sample = set.get(i);
    std::string safe = classes[size_t(sample.label)];
    std::replace(safe.begin(), safe.end(), '/', '-');
    char file[32];
    std::snprintf(file, sizeof file, "/%05zu.png", i);
    data::vision::save_image(sample.data, dir + "/" + safe + file);
  }
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The samples of `dataset` at `indices`, in that order.
class SubsetDataset : public data::Dataset {
public:
  SubsetDataset(data::DatasetPtr base, std::vector<size_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {}
  size_t size() const override { return indices_.size(); }
  data::Sample get(size_t index) const override { return base_->get(indices_.at(index)); }

private:
  data::DatasetPtr base_;
  std::vector<size_t> indices_;
};

/// `count` samples of `dataset` drawn with `seed`, kept in the dataset's order: an image
/// folder lists its classes one after another, so its first N would be one class.
data::DatasetPtr drawSubset(const data::DatasetPtr &dataset, size_t count, uint64_t seed) {
  std::vector<size_t> indices(dataset->size());
  for (size_t i = 0; i < indices.size(); ++i)
    indices[i] = i;
  std::mt19937_64 generator(seed);
  std::shuffle(indices.begin(), indices.end(), generator);
  indices.resize(count);
  std::sort(indices.begin(), indices.end());
  return std::make_shared<SubsetDataset>(dataset, std::move(indices));
}

/// Writes `text` to `path` through `path`.tmp and a rename (write_file_atomically):
/// a kill leaves the old file whole and a full disk is an error; a temporary left by an
/// interrupted run has that one name, which the next run removes.
void writeFileAtomically(const std::string &path, const std::string &text) {
  write_file_atomically(path, [&](std::ostream &file) { file << text; }, "", ".tmp");
}

/// Removes the temporary files a killed run left in `folder` (a checkpoint or log being
/// written), naming each.
void removeLeftovers(const std::string &folder) {
  namespace fs = std::filesystem;
  const std::string checkpoint = networkOption + ".safetensors.tmp",
                    states = networkOption + ".states.tmp";
  for (const fs::directory_entry &entry : fs::directory_iterator(folder)) {
    std::string name = entry.path().filename().string();
    for (const std::string &prefix :
         {checkpoint, states, std::string("log.csv.tmp"), std::string("accuracy.svg.tmp"),
          std::string("model.dlc.tmp"), std::string("model.onnx.tmp")})
      if (name.rfind(prefix, 0) == 0 && entry.is_regular_file()) {
        std::printf("dlc-train: removing %s, left by an interrupted run\n", entry.path().c_str());
        fs::remove(entry.path());
      }
  }
}

const std::string kSafetensors = ".safetensors";

bool isSafetensors(const std::string &path) {
  return path.size() > kSafetensors.size() &&
         path.compare(path.size() - kSafetensors.size(), kSafetensors.size(), kSafetensors) == 0;
}

/// The optimizer's state beside checkpoint `parameters` (OUT/NETWORK.safetensors ->
/// OUT/NETWORK.states: Trainer::save_states' file, safetensors inside).
std::string statesBeside(const std::string &parameters) {
  if (isSafetensors(parameters))
    return parameters.substr(0, parameters.size() - kSafetensors.size()) + ".states";
  return parameters + ".states";
}

/// The checkpoint metadata's entry for the generator of the job's device `index`.
std::string generatorKey(size_t index) { return "random." + std::to_string(index); }

/// Where the generators of the job's devices stand, in job order, as checkpoint metadata
/// ("random.<i>": "seed draws"). A collective: every process calls it.
std::map<std::string, std::string> jobGeneratorStates(const std::vector<Device> &local) {
  std::vector<uint64_t> mine;
  for (Device device : local) {
    np::random::GeneratorState state = np::random::get_state(device);
    mine.insert(mine.end(), {state.seed, state.draws});
  }
  std::vector<uint64_t> job(mine.size() * size_t(dist::size()));
  process_group().all_gather(mine.data(), job.data(), mine.size() * sizeof(uint64_t),
                             ProcessGroup::Channel::control);
  std::map<std::string, std::string> metadata;
  for (size_t i = 0; i + 1 < job.size(); i += 2)
    metadata[generatorKey(i / 2)] =
        std::to_string(job[i]) + " " + std::to_string(job[i + 1]);
  return metadata;
}

/// Puts this process's generators where a checkpoint's metadata says they stood; false
/// when it does not say (a checkpoint of an older dlc-train, another device list).
bool restoreGeneratorStates(const std::map<std::string, std::string> &metadata,
                            const std::vector<Device> &local) {
  const size_t first = local.size() * size_t(dist::rank());
  std::vector<np::random::GeneratorState> states;
  for (size_t i = 0; i < local.size(); ++i) {
    auto it = metadata.find(generatorKey(first + i));
    unsigned long long seed = 0, draws = 0;
    if (it == metadata.end() || std::sscanf(it->second.c_str(), "%llu %llu", &seed, &draws) != 2)
      return false;
    states.push_back({seed, draws});
  }
  if (metadata.count(generatorKey(local.size() * size_t(dist::size()))))
    return false; // written for a job of more devices
  for (size_t i = 0; i < local.size(); ++i)
    np::random::set_state(local[i], states[i]);
  return true;
}

/// The first parameter of `net` holding a NaN or an infinity, or "" when all are finite.
std::string firstNonFinite(Block &net) {
  ParameterDict params = net.collect_params();
  for (const std::string &name : params.keys()) {
    Tensor values = params[name]->data();
    if (!is_floating(values.dtype()))
      continue;
    for (double v : values.astype(DType::f32).to_vector<float>())
      if (!std::isfinite(v))
        return name;
  }
  return "";
}

metric::Accuracy evaluate(HybridBlock &net, data::DataLoader &loader,
                          const std::vector<Device> &devices) {
  metric::Accuracy accuracy;
  for (data::Batch batch : loader) {
    // A last batch smaller than the device count runs on as many devices as it has samples.
    int64_t samples = batch.label.shape()[0];
    std::vector<Device> used(devices.begin(),
                             devices.begin() + std::min<int64_t>(int64_t(devices.size()), samples));
    std::vector<Tensor> inputs = utils::split_and_load(prepare(batch.data), used, 0, false);
    std::vector<Tensor> labels = utils::split_and_load(batch.label, used, 0, false);
    std::vector<Tensor> outputs;
    for (const Tensor &x : inputs)
      outputs.push_back(net(x));
    accuracy.update(labels, outputs);
  }
  return accuracy;
}

struct EpochLog {
  int epoch;
  double loss, trainAccuracy, testAccuracy, seconds; // testAccuracy NaN: not evaluated
};

/// The rows of epochs before `next` in the log.csv at `path` (a run resumed into the same
/// folder continues its log); none when it is missing or unreadable.
std::vector<EpochLog> readCsv(const std::string &path, int next) {
  std::vector<EpochLog> log;
  std::ifstream file(path);
  std::string line;
  std::getline(file, line); // the header
  while (std::getline(file, line)) {
    EpochLog e{};
    std::string test;
    std::istringstream row(line);
    char comma;
    if (!(row >> e.epoch >> comma >> e.loss >> comma >> e.trainAccuracy >> comma))
      return {};
    std::getline(row, test, ',');
    e.testAccuracy = test.empty() ? std::nan("") : std::atof(test.c_str());
    if (!(row >> e.seconds) || e.epoch != int(log.size()) + 1)
      return {};
    if (e.epoch < next)
      log.push_back(e);
  }
  return log;
}

void writeCsv(const std::string &path, const std::vector<EpochLog> &log) {
  std::ostringstream csv;
  csv << "epoch,train_loss,train_accuracy,test_accuracy,seconds\n";
  for (const EpochLog &e : log) {
    csv << e.epoch << ',' << e.loss << ',' << e.trainAccuracy << ',';
    if (!std::isnan(e.testAccuracy))
      csv << e.testAccuracy;
    csv << ',' << e.seconds << '\n';
  }
  writeFileAtomically(path, csv.str());
}

/// Accuracy curves (train and test) against epochs, as a small standalone SVG.
void writeSvg(const std::string &path, const std::vector<EpochLog> &log) {
  const double w = 480, h = 300, margin = 40;
  auto x = [&](double epoch) {
    const double first = log.empty() ? 1 : log.front().epoch;
    return margin +
           (w - 2 * margin) * (log.size() > 1 ? (epoch - first) / double(log.size() - 1) : 0.5);
  };
  auto y = [&](double accuracy) { return h - margin - (h - 2 * margin) * accuracy; };
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h << "'>\n"
      << "<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << margin << "' y='20' font-family='sans-serif' font-size='14'>"
      << "dlc-train: accuracy per epoch (blue train, orange test)</text>\n"
      << "<line x1='" << margin << "' y1='" << y(0) << "' x2='" << w - margin << "' y2='" << y(0)
      << "' stroke='black'/>\n<line x1='" << margin << "' y1='" << y(0) << "' x2='" << margin
      << "' y2='" << y(1) << "' stroke='black'/>\n";
  for (double tick : {0.0, 0.5, 0.9, 1.0})
    svg << "<text x='4' y='" << y(tick) + 4 << "' font-size='10'>" << tick << "</text>\n";
  for (auto [pick, color] : {std::pair<int, const char *>{0, "#1f77b4"}, {1, "#ff7f0e"}}) {
    svg << "<polyline fill='none' stroke='" << color << "' stroke-width='2' points='";
    for (const EpochLog &e : log)
      if (!(pick && std::isnan(e.testAccuracy)))
        svg << x(e.epoch) << ',' << y(pick ? e.testAccuracy : e.trainAccuracy) << ' ';
    svg << "'/>\n";
  }
  svg << "</svg>\n";
  writeFileAtomically(path, svg.str());
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions({&trainOptions, &tools::compileOptionFlags});
  cl::ParseCommandLineOptions(argc, argv,
                              "dlc-train: trains a LeafNetwork-style CNN on Fashion-MNIST (or "
                              "with --task lm a GPT-2 on text) on every device, with progress, "
                              "a CSV log, a plot and checkpoints\n");
  try {
    // First: under mpirun this joins the job (and shares the host's cores).
    dist::init();
    const bool root = dist::rank() == 0; // prints and writes the output folder
    if (!exportFolder.empty()) {
      size_t count = limit > 0 ? size_t(limit) : SIZE_MAX;
      exportSplit(data::vision::FashionMNIST(dataRoot, true), exportFolder + "/train", count);
      exportSplit(data::vision::FashionMNIST(dataRoot, false), exportFolder + "/test", count);
      std::printf("dlc-train: wrote Fashion-MNIST PNG files to %s/train and %s/test\n",
                  exportFolder.c_str(), exportFolder.c_str());
      return 0;
    }
    // Settings that cannot train are refused before any work.
    if (epochs < 1)
      throw ValueError("--epochs " + std::to_string(epochs) + ": at least one epoch is needed");
    if (batchSize < 1)
      throw ValueError("--batch-size " + std::to_string(batchSize) + ": must be positive");
    if (limit < 0)
      throw ValueError("--limit " + std::to_string(limit) + ": must be 0 (all) or positive");
    if (!std::isfinite(learningRate) || learningRate <= 0)
      throw ValueError("--lr " + std::to_string(learningRate.getValue()) +
                       ": the learning rate must be a positive finite number");
    const std::vector<Device> jobDevices = parseDevices(devicesOption);
    if (size_t(batchSize) < jobDevices.size())
      throw ValueError("--batch-size " + std::to_string(batchSize) + " is smaller than the " +
                       std::to_string(jobDevices.size()) + " devices it is split over");
    const std::vector<Device> devices = localBlock(jobDevices); // this process's
    if (root) {
      std::filesystem::create_directories(outputFolder.getValue());
      removeLeftovers(outputFolder);
    }
    if (checkNumerics)
      set_check_numerics(true);
    const CompileOptions compileOptions = tools::compileOptionsFromFlags();
    np::random::seed(seedOption);

    if (taskOption == "lm") {
      tools::LanguageModelJob job;
      if (imageSizeOption.getNumOccurrences())
        throw ValueError("--image-size is for images; --task lm trains on text");
      job.data = dataOption.getNumOccurrences() ? dataOption.getValue() : "fortunes";
      job.network = networkOption.getNumOccurrences() ? networkOption.getValue() : "gpt2_small";
      job.epochs = epochs;
      // Smaller batches than for images: more updates per byte read, at the same speed.
      job.batchSize = batchSize.getNumOccurrences() ? batchSize.getValue() : 16;
      job.sequenceLength = sequenceLength;
      job.learningRate = learningRate;
      job.optimizer = optimizerOption;
      job.outputFolder = outputFolder;
      job.resume = resumeFrom;
      job.limit = limit;
      job.seed = seedOption;
      job.compiledStep = compiledStepOption;
      job.hybridize = hybridizeOption;
      job.devices = devices;
      job.compileOptions = compileOptions;
      job.sampleLines = sampleCount;
      tools::trainLanguageModel(job);
      return 0;
    }
    if (taskOption != "classify")
      throw ValueError("--task " + taskOption + ": expected classify or lm");

    const bool zooNetwork = networkOption != "leafnet";
    int imageSize = 28;
    if (zooNetwork) {
      networkChannels = 3;
      imageSize = imageSizeOption > 0 ? imageSizeOption.getValue()
                                      : (networkOption == "inceptionv3" ? 299 : 224);
      // The name (and a ViT's image size) is checked before any data is read.
      model_zoo::vision::ModelOptions check;
      check.image_size = imageSize;
      model_zoo::vision::get_model(networkOption, check);
    } else if (imageSizeOption != 0) {
      throw ValueError("--image-size " + std::to_string(imageSizeOption) +
                       ": the leafnet network takes 28x28 images; --image-size is for "
                       "--network with a model-zoo name");
    }
    if (imageSize < 8)
      throw ValueError("--image-size " + std::to_string(imageSize) + ": at least 8 pixels");
    data::DatasetPtr trainSet, testSet;
    int64_t classes = 10;
    std::string dataName;
    Tensor sampleBatch; // two training inputs, to settle the deferred shapes
    if (dataOption == "fashion-mnist") {
      auto train = std::make_shared<data::vision::FashionMNIST>(dataRoot, true);
      testSet = std::make_shared<data::vision::FashionMNIST>(dataRoot, false);
      trainSet = train;
      if (limit > 0 && size_t(limit) < train->size())
        trainSet = std::make_shared<data::ArrayDataset>(
            train->images().slice(0, limit),
            std::vector<int64_t>(train->labels().begin(), train->labels().begin() + limit));
      dataName = "Fashion-MNIST";
      if (imageSize != 28) {
        // Each image resized (OpenCV, bilinear) when it is read.
        auto resize = data::vision::transforms::Resize(imageSize);
        trainSet = trainSet->transform_first(resize);
        testSet = testSet->transform_first(resize);
      }
    } else if (dataOption.getValue().rfind("imagefolder:", 0) == 0) {
      std::string path = dataOption.getValue().substr(12);
      using data::vision::ImageFolderDataset;
      auto train = std::make_shared<ImageFolderDataset>(
          path + "/train", ImageFolderDataset::Flag::color, skipUnreadable);
      auto test = std::make_shared<ImageFolderDataset>(
          path + "/test", ImageFolderDataset::Flag::color, skipUnreadable);
      // Labels are positions in the sorted class folders of each split: two splits with
      // different classes would be scored against each other's labels.
      if (train->synsets() != test->synsets()) {
        auto list = [](const std::vector<std::string> &names) {
          std::string text;
          for (const std::string &name : names)
            text += (text.empty() ? "" : ", ") + name;
          return "[" + text + "]";
        };
        throw ValueError("--data " + dataOption + ": train/ has the classes " +
                         list(train->synsets()) + " but test/ has " + list(test->synsets()) +
                         "; both need the same class folders");
      }
      for (const auto &set : {train, test})
        for (const std::string &file : set->skipped())
          std::printf("dlc-train: skipped %s (OpenCV cannot decode it)\n", file.c_str());
      trainSet = imageFolder(train, true, imageSize);
      testSet = imageFolder(test, false, imageSize);
      classes = int64_t(train->synsets().size());
      if (limit > 0 && size_t(limit) < trainSet->size())
        trainSet = drawSubset(trainSet, size_t(limit), seedOption);
      dataName = "image folder " + path;
    } else {
      throw ValueError("--data " + dataOption + ": expected fashion-mnist or imagefolder:PATH");
    }
    if (size_t(batchSize) > trainSet->size())
      throw ValueError("--batch-size " + std::to_string(batchSize) + " is larger than the " +
                       std::to_string(trainSet->size()) +
                       " training samples: no full batch to train on");
    if (testSet->size() == 0)
      throw ValueError("--data " + dataOption + ": the test split has no samples");
    sampleBatch =
        prepare(data::batchify({trainSet->get(0), trainSet->get(1 % trainSet->size())}).data);
    bool toGpus = !devices.front().is_host(); // pinned batches copy faster to GPUs
    data::DataLoader trainLoader(trainSet, size_t(batchSize), /*shuffle=*/true,
                                 data::LastBatch::discard, /*num_workers=*/2, 4, seedOption,
                                 toGpus);
    if (dist::size() > 1)
      trainLoader.shard(size_t(dist::rank()), size_t(dist::size()));
    // Every process evaluates its share of each test batch, on its devices, as those
    // devices would in one process.
    const size_t testBatch = (500 + size_t(dist::size()) - 1) / size_t(dist::size()) *
                             size_t(dist::size());
    data::DataLoader testLoader(testSet, testBatch, false, data::LastBatch::keep, 2);
    if (dist::size() > 1)
      testLoader.shard(size_t(dist::rank()), size_t(dist::size()));

    if (root) {
      std::printf("dlc-train: %s on %s (%dx%d images), %zu training and %zu test images, "
                  "batch %d on",
                  networkOption.c_str(), dataName.c_str(), imageSize, imageSize, trainSet->size(),
                  testSet->size(), batchSize.getValue());
      for (Device d : jobDevices)
        std::printf(" %s", d.str().c_str());
      if (dist::size() > 1) {
        std::printf(" (%s", dist::describe().c_str());
        if (!jobDevices.front().is_host())
          std::printf(", gradients summed %s", gpu_sums_through_host()
                                                   ? "through the host"
                                                   : "by NCCL across the processes");
        std::printf(")");
      }
      std::printf(", %s lr %g, %d epochs\n", optimizerOption.c_str(), learningRate.getValue(),
                  epochs.getValue());
    }

    std::shared_ptr<HybridBlock> net;
    if (zooNetwork) {
      model_zoo::vision::ModelOptions zooOptions;
      zooOptions.classes = classes;
      zooOptions.image_size = imageSize; // a ViT is built for it
      net = model_zoo::vision::get_model(networkOption, zooOptions);
    } else {
      net = leafnet::fashion_network();
    }
    net->initialize(init::Xavier(), devices, /*force_reinit=*/true);
    net->forward(sampleBatch.to(devices[0])); // settles the deferred shapes
    int firstEpoch = 1;
    std::map<std::string, std::string> resumedMetadata; // the checkpoint's
    if (!resumeFrom.empty()) {
      net->load_parameters(resumeFrom, devices);
      // A checkpoint of dlc-train's says how many epochs it holds: the run goes on from
      // there, with the shuffles, random draws and optimizer state an uninterrupted run
      // would have had (below). Other parameter files start at epoch 1.
      if (isSafetensors(resumeFrom)) {
        resumedMetadata = safetensors::Reader(resumeFrom).metadata();
        if (auto it = resumedMetadata.find("epoch"); it != resumedMetadata.end())
          firstEpoch = std::max(1, std::atoi(it->second.c_str()) + 1);
      }
      if (std::string bad = firstNonFinite(*net); !bad.empty())
        throw ValueError("--resume " + resumeFrom + ": parameter '" + bad +
                         "' holds NaN or infinite values; training from it would spread "
                         "them to every parameter");
      if (root)
        std::printf(firstEpoch > 1 ? "resumed from %s after epoch %d\n" : "resumed from %s\n",
                    resumeFrom.c_str(), firstEpoch - 1);
      if (firstEpoch > epochs) {
        if (root)
          std::printf("dlc-train: %s holds all %d epochs of --epochs %d; nothing to train\n",
                      resumeFrom.c_str(), firstEpoch - 1, epochs.getValue());
        return 0;
      }
      trainLoader.set_epoch(uint64_t(firstEpoch - 1));
    }
    if (dist::size() > 1) {
      // Every process starts from process 0's values; the others' devices drew nothing
      // for the job yet, as in one process, where only the first device initializes.
      net->collect_params().broadcast(0);
      // A device another process names too (each host's gpu(0)) takes a stream of its
      // own, so that replicas do not draw the same dropout masks.
      if (!root)
        for (Device device : devices)
          np::random::seed(seedOption + 1000003 * uint64_t(earlierNamings(jobDevices, device)),
                            device);
    }
    if (firstEpoch > 1 && !restoreGeneratorStates(resumedMetadata, devices) && root)
      std::printf("dlc-train: %s does not say where the random generators stood (an older "
                  "checkpoint, or other devices): dropout draws afresh\n",
                  resumeFrom.c_str());
    if (hybridizeOption)
      net->hybridize(true, compileOptions);
    Trainer trainer(net->collect_params(), optimizerOption,
                    {{"learning_rate", learningRate},
                     {"check_numerics", check_numerics_enabled() ? 1.0 : 0.0}});
    loss::SoftmaxCrossEntropyLoss lossFn;
    bool compiledStep = compiledStepOption && hybridizeOption;
    TrainStep trainStep(*net, lossFn, trainer, devices, syncBatchNormOption, compileOptions);
    if (root)
      std::printf("dlc-train: %s\n", compiledStep ? "compiled data-parallel training step"
                                     : hybridizeOption ? "seed loop, hybridized network"
                                                       : "seed loop, eager network");
    if (firstEpoch > 1) {
      // The optimizer's state of the checkpoint's epoch (written just before it; a states
      // file of another epoch is from a run killed between the two writes).
      const std::string statesFile = statesBeside(resumeFrom);
      std::string why;
      if (!std::filesystem::exists(statesFile))
        why = "there is no " + statesFile;
      else if (auto meta = safetensors::Reader(statesFile).metadata();
               meta["epoch"] != std::to_string(firstEpoch - 1))
        why = statesFile + " is of epoch " + meta["epoch"] + ", not " +
              std::to_string(firstEpoch - 1);
      if (why.empty()) {
        if (compiledStep)
          trainStep.load_states(statesFile);
        else
          trainer.load_states(statesFile);
      } else if (root) {
        std::printf("dlc-train: %s: the %s optimizer starts afresh\n", why.c_str(),
                    optimizerOption.c_str());
      }
    }

    std::vector<EpochLog> log; // process 0's
    if (root && firstEpoch > 1)
      log = readCsv(outputFolder + "/log.csv", firstEpoch);
    std::string evaluationError;
    int lastEpoch = 0;
    for (int epoch = firstEpoch; epoch <= epochs && evaluationError.empty(); ++epoch) {
      lastEpoch = epoch;
      auto tic = std::chrono::steady_clock::now();
      metric::Accuracy accuracy;
      double lossSum = 0, waiting = 0;
      size_t seen = 0, total = trainLoader.size() * size_t(batchSize);
      auto waitStart = std::chrono::steady_clock::now();
      for (data::Batch batch : trainLoader) {
        waiting += secondsSince(waitStart); // time the loop stood waiting for this batch
        std::vector<Tensor> labels, outputs, losses;
        if (compiledStep) {
          losses = {trainStep(prepare(batch.data), batch.label)};
          outputs = {trainStep.last_output()};
          labels = {batch.label};
        } else {
          std::vector<Tensor> inputs = utils::split_and_load(prepare(batch.data), devices);
          labels = utils::split_and_load(batch.label, devices);
          {
            autograd::Record record;
            for (size_t i = 0; i < inputs.size(); ++i) {
              outputs.push_back((*net)(inputs[i]));
              losses.push_back(lossFn(outputs[i], labels[i]));
            }
          }
          for (Tensor &l : losses)
            l.backward();
          trainer.step(batchSize);
        }
        for (const Tensor &l : losses)
          lossSum += np::sum(l).item<double>();
        accuracy.update(labels, outputs);
        seen += size_t(batchSize);
        double elapsed = secondsSince(tic), rate = double(seen) / elapsed;
        if (root) { // its own share's loss and accuracy until the epoch's end
          char rateText[48], metrics[64];
          std::snprintf(rateText, sizeof rateText, "%.0f samples/s", rate);
          std::snprintf(metrics, sizeof metrics, "loss %.4f  acc %.4f",
                        lossSum / double(accuracy.num_inst()), accuracy.get().second);
          tools::showProgress(epoch, seen, total, rateText, metrics, double(total - seen) / rate);
        }
        waitStart = std::chrono::steady_clock::now();
      }
      double trainSeconds = secondsSince(tic);
      // The epoch's loss and accuracy over every process's share.
      double trainAccuracy = accuracy.get().second;
      if (dist::size() > 1) {
        std::vector<double> sums =
            dist::all_reduce({np::array(std::vector<float>{float(lossSum),
                                                           float(accuracy.num_correct()),
                                                           float(accuracy.num_inst())})})
                .to_vector<double>();
        lossSum = sums[0];
        trainAccuracy = sums[1] / sums[2];
      }
      if (root) {
        if (isatty(fileno(stderr)))
          std::fprintf(stderr, "\n");
        std::printf("[Epoch %d] training: accuracy=%.4f loss=%.4f\n", epoch, trainAccuracy,
                    lossSum / double(seen));
        std::printf("[Epoch %d] time cost: %.1f s (%.0f samples/s, %.1f %% waiting for data)\n",
                    epoch, trainSeconds, double(seen) / trainSeconds,
                    100 * waiting / trainSeconds);
        std::fflush(stdout);
      }
      // The epoch's training is saved before evaluating, so a failing evaluation (an
      // unreadable test image) loses nothing; a diverged network never replaces the
      // last good checkpoint.
      if (std::string bad = firstNonFinite(*net); !bad.empty())
        throw Error("epoch " + std::to_string(epoch) + ": parameter '" + bad +
                    "' holds NaN or infinite values (training diverged; try a lower --lr); "
                    "nothing was saved over " +
                    outputFolder + "/" + networkOption + ".safetensors");
      // The optimizer's state first, then the parameters, each written whole: the
      // parameters' epoch is the checkpoint's, and a resumed run takes the state only
      // when it is of that epoch.
      std::map<std::string, std::string> checkpointMetadata = jobGeneratorStates(devices);
      checkpointMetadata["epoch"] = std::to_string(epoch);
      if (root) {
        const std::string checkpoint = outputFolder + "/" + networkOption + ".safetensors";
        const std::map<std::string, std::string> epochOnly{{"epoch", std::to_string(epoch)}};
        if (compiledStep)
          trainStep.save_states(statesBeside(checkpoint), epochOnly);
        else
          trainer.save_states(statesBeside(checkpoint), epochOnly);
        net->save_parameters(checkpoint, checkpointMetadata);
      }
      double testAccuracy = std::nan("");
      // Correct answers, samples and failed processes, summed over the job.
      std::vector<double> tested{0, 0, 0};
      try {
        metric::Accuracy test = evaluate(*net, testLoader, devices);
        tested = {double(test.num_correct()), double(test.num_inst()), 0};
      } catch (const std::exception &e) {
        evaluationError = e.what();
        tested[2] = 1;
      }
      if (dist::size() > 1)
        tested = dist::all_reduce({np::array(std::vector<float>(tested.begin(), tested.end()))})
                     .to_vector<double>();
      if (tested[2] > 0 && evaluationError.empty())
        evaluationError = "the evaluation failed on another process of the job";
      if (evaluationError.empty())
        testAccuracy = tested[0] / tested[1];
      if (root) {
        if (evaluationError.empty())
          std::printf("[Epoch %d] test: accuracy=%.4f\n", epoch, testAccuracy);
        else
          std::printf("[Epoch %d] test: evaluation failed: %s\n", epoch, evaluationError.c_str());
        std::fflush(stdout);
        log.push_back(
            {epoch, lossSum / double(seen), trainAccuracy, testAccuracy, secondsSince(tic)});
        writeCsv(outputFolder + "/log.csv", log);
        writeSvg(outputFolder + "/accuracy.svg", log);
      }
    }
    if (!evaluationError.empty())
      throw Error("evaluation failed after epoch " + std::to_string(lastEpoch) + " (" +
                  evaluationError + "); that epoch's parameters and log are in " + outputFolder +
                  "/, --resume " + outputFolder + "/leafnet.safetensors continues from them");
    npx::waitall();
    // The trained network as one compiled model file, its program the evaluation's (one
    // device's share of a test batch), which dlc::CompiledModel runs without compiling.
    if (!root)
      return 0;
    std::string modelFile;
    if (hybridizeOption && !log.empty()) {
      modelFile = outputFolder + "/model.dlc";
      net->save_compiled(modelFile);
    }
    if (compiledStep)
      std::printf("dlc-train: compiled training step: %lld signature(s), %lld steps per "
                  "program run on %zu device(s)\n",
                  (long long)trainStep.compiled().compiles(),
                  (long long)trainStep.compiled().steps(), devices.size());
    if (hybridizeOption) {
      CompileStats stats = net->compile_stats();
      std::printf("dlc-train: hybridized: %lld signatures compiled (latest in %.3f s), %lld "
                  "compiled calls (latest: %lld + %lld kernels per forward + backward)\n",
                  (long long)stats.compiles, stats.last_compile_seconds, (long long)stats.calls,
                  (long long)stats.forward_steps, (long long)stats.backward_steps);
    }
    // After the statistics above: the export traces the network afresh.
    std::string onnxFile;
    if (exportOnnxOption && !log.empty()) {
      onnxFile = outputFolder + "/model.onnx";
      Shape oneImage = sampleBatch.shape();
      oneImage[0] = 1;
      onnx::export_onnx(*net, onnxFile, std::vector<Shape>{oneImage});
    }
    std::printf("dlc-train: test accuracy %.4f; parameters, log.csv%s%s and accuracy.svg in "
                "%s/\n",
                log.empty() ? 0.0 : log.back().testAccuracy,
                modelFile.empty() ? "" : ", model.dlc", onnxFile.empty() ? "" : ", model.onnx",
                outputFolder.c_str());
  } catch (const std::exception &e) {
    if (dist::size() > 1) {
      // The others would wait for this process's share of the next sum forever.
      std::fprintf(stderr, "\ndlc-train: process %d of %d: %s\n", dist::rank(), dist::size(),
                   e.what());
      std::fflush(stderr);
      dist::abort(1);
    }
    std::fprintf(stderr, "\ndlc-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
