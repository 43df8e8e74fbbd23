//===- Data.cpp - datasets, IDX files, batches and the threaded loader -------===//
#include "dlc/Gluon/Data.h"
#include "dlc/Gluon/Vision.h"

#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/OpRegistry.h"

#include <zlib.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

namespace dlc::gluon::data {

//===----------------------------------------------------------------------===//
// Datasets
//===----------------------------------------------------------------------===//

namespace {
class TransformedDataset : public Dataset {
public:
  TransformedDataset(DatasetPtr base, std::function<Tensor(const Tensor &)> transform)
      : base_(std::move(base)), transform_(std::move(transform)) {}
  size_t size() const override { return base_->size(); }
  Sample get(size_t index) const override {
    Sample sample = base_->get(index);
    sample.data = transform_(sample.data);
    return sample;
  }

private:
  DatasetPtr base_;
  std::function<Tensor(const Tensor &)> transform_;
};
} // namespace

std::shared_ptr<Dataset>
Dataset::transform_first(std::function<Tensor(const Tensor &)> transform) const {
  // The transformed view keeps its base alive, so the base must be shared-owned.
  DatasetPtr self = weak_from_this().lock();
  if (!self)
    throw ValueError("transform_first: the dataset must be owned by a std::shared_ptr "
                     "(create it with std::make_shared), as the transformed dataset keeps "
                     "it alive");
  return std::make_shared<TransformedDataset>(std::move(self), std::move(transform));
}

ArrayDataset::ArrayDataset(Tensor data, std::vector<int64_t> labels)
    : data_(std::move(data)), labels_(std::move(labels)) {
  if (data_.ndim() == 0 || data_.shape()[0] != int64_t(labels_.size()))
    throw ShapeError("ArrayDataset: " + std::to_string(labels_.size()) + " labels for data " +
                     shape_rules::str(data_.shape()) + "; expected one label per row");
}

Sample ArrayDataset::get(size_t index) const {
  if (index >= labels_.size())
    throw IndexError("ArrayDataset: index " + std::to_string(index) + " of " +
                     std::to_string(labels_.size()));
  return {data_[int64_t(index)], labels_[index]};
}

namespace vision {

namespace {

/// The whole content of a gzip (or plain) file; throws naming the file.
std::vector<unsigned char> readGzip(const std::string &path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    throw Error("MNIST: cannot open '" + path + "': " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  int got;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + got);
  int error = 0;
  // gzerror's text lives in the gzFile: copied before gzclose frees it.
  std::string message = got < 0 ? gzerror(file, &error) : "";
  gzclose(file);
  if (got < 0)
    throw Error("MNIST: '" + path + "' is not a readable gzip file: " + message);
  return bytes;
}

uint32_t bigEndian(const std::vector<unsigned char> &bytes, size_t at) {
  return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 | uint32_t(bytes[at + 2]) << 8 |
         uint32_t(bytes[at + 3]);
}

/// An IDX file's dimensions and the offset of its data, checked against its size.
std::vector<uint32_t> idxDims(const std::vector<unsigned char> &bytes, uint32_t magic,
                              const std::string &path) {
  if (bytes.size() < 8 || bigEndian(bytes, 0) != magic)
    throw Error("MNIST: '" + path + "' is not an IDX file of the expected kind (magic " +
                std::to_string(magic) + ")");
  size_t rank = magic & 0xff;
  if (bytes.size() < 4 + 4 * rank)
    throw Error("MNIST: '" + path + "' is truncated in its header");
  std::vector<uint32_t> dims;
  uint64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    dims.push_back(bigEndian(bytes, 4 + 4 * i));
    elements *= dims.back();
  }
  if (bytes.size() != 4 + 4 * rank + elements)
    throw Error("MNIST: '" + path + "' holds " + std::to_string(bytes.size()) +
                " bytes, its header announces " + std::to_string(4 + 4 * rank + elements));
  return dims;
}

std::string findFile(const std::string &root, const std::string &stem) {
  for (const std::string &candidate : {root + "/" + stem + ".gz", root + "/" + stem})
    if (FILE *f = std::fopen(candidate.c_str(), "rb")) {
      std::fclose(f);
      return candidate;
    }
  throw Error("MNIST: neither '" + root + "/" + stem + ".gz' nor '" + root + "/" + stem +
              "' exists (Fashion-MNIST comes with Debian's dataset-fashion-mnist package)");
}

} // namespace

MNIST::MNIST(const std::string &root, bool train) {
  std::string prefix = train ? "train" : "t10k";
  std::string imagePath = findFile(root, prefix + "-images-idx3-ubyte");
  std::string labelPath = findFile(root, prefix + "-labels-idx1-ubyte");
  std::vector<unsigned char> imageBytes = readGzip(imagePath);
  std::vector<unsigned char> labelBytes = readGzip(labelPath);
  std::vector<uint32_t> imageDims = idxDims(imageBytes, 0x00000803, imagePath);
  std::vector<uint32_t> labelDims = idxDims(labelBytes, 0x00000801, labelPath);
  if (imageDims[0] != labelDims[0])
    throw Error("MNIST: " + std::to_string(imageDims[0]) + " images in '" + imagePath + "' but " +
                std::to_string(labelDims[0]) + " labels in '" + labelPath + "'");
  int64_t n = imageDims[0], h = imageDims[1], w = imageDims[2];
  images_ = Tensor::empty({n, h, w, 1}, DType::u8, cpu());
  std::memcpy(images_.data(), imageBytes.data() + 16, size_t(n * h * w));
  labels_.assign(labelBytes.begin() + 8, labelBytes.end());
}

Sample MNIST::get(size_t index) const {
  if (index >= labels_.size())
    throw IndexError("MNIST: index " + std::to_string(index) + " of " +
                     std::to_string(labels_.size()));
  return {images_[int64_t(index)], labels_[index]};
}

const std::vector<std::string> &FashionMNIST::classes() {
  static const std::vector<std::string> names = {"t-shirt/top", "trouser", "pullover", "dress",
                                                 "coat",        "sandal",  "shirt",    "sneaker",
                                                 "bag",         "ankle boot"};
  return names;
}

} // namespace vision

//===----------------------------------------------------------------------===//
// Batches
//===----------------------------------------------------------------------===//

Batch batchify(const std::vector<Sample> &samples, Device device) {
  if (!device.is_host())
    throw UnsupportedError("batchify: batches are assembled in host memory, not on " +
                           device.str());
  if (samples.empty())
    throw ValueError("batchify: no samples");
  const Tensor &first = samples.front().data;
  Shape shape = first.shape();
  shape.insert(shape.begin(), int64_t(samples.size()));
  Tensor data = Tensor::empty(shape, first.dtype(), device);
  size_t bytes = first.nbytes();
  std::vector<int64_t> labels;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor &sample = samples[i].data;
    if (sample.shape() != first.shape() || sample.dtype() != first.dtype())
      throw ShapeError("batchify: sample " + std::to_string(i) + " is " +
                       dtype_name(sample.dtype()) + " " + shape_rules::str(sample.shape()) +
                       " but sample 0 is " + dtype_name(first.dtype()) + " " +
                       shape_rules::str(first.shape()) + "; resize them to one shape");
    Tensor host = sample.device().is_host() ? detail::plain(sample) : sample.copyto(cpu());
    host.wait_to_read();
    std::memcpy(static_cast<char *>(data.data()) + i * bytes, host.data(), bytes);
    labels.push_back(samples[i].label);
  }
  return {data, np::array(labels, std::nullopt, device)};
}

//===----------------------------------------------------------------------===//
// DataLoader
//===----------------------------------------------------------------------===//

/// One pass over the planned batches: workers prepare them ahead, in any order; the
/// loop takes them in order.
class DataLoader::Epoch {
public:
  Epoch(DatasetPtr dataset, std::vector<std::vector<size_t>> plan, int workers, int prefetch,
        uint64_t seedBase, Device device)
      : dataset_(std::move(dataset)), plan_(std::move(plan)), seedBase_(seedBase), device_(device),
        window_(size_t(std::max(1, workers)) * size_t(std::max(1, prefetch))) {
    try {
      for (int i = 0; i < workers; ++i)
        threads_.emplace_back([this] { work(); });
    } catch (const std::system_error &e) {
      // The threads that did start are stopped and joined: a joinable thread destroyed
      // with the vector would end the process (std::terminate).
      size_t started = threads_.size();
      stop();
      throw Error("DataLoader: the system started " + std::to_string(started) + " of " +
                  std::to_string(workers) + " worker threads and refused the next (" +
                  e.what() + "); lower num_workers");
    }
  }

  ~Epoch() { stop(); }

  size_t size() const { return plan_.size(); }

  Batch take(size_t index) {
    if (threads_.empty())
      return make(index);
    std::unique_lock<std::mutex> lock(mutex_);
    consumed_ = index; // lets the workers run `window_` batches ahead of this one
    changed_.notify_all();
    changed_.wait(lock, [&] { return ready_.count(index) || failed_.count(index); });
    if (auto failure = failed_.find(index); failure != failed_.end())
      std::rethrow_exception(failure->second);
    Batch batch = std::move(ready_[index]);
    ready_.erase(index);
    return batch;
  }

private:
  /// Tells the workers to stop and waits for them.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (std::thread &thread : threads_)
      thread.join();
    threads_.clear();
  }

  Batch make(size_t index) const {
    std::vector<Sample> samples;
    for (size_t i : plan_[index]) {
      // Random transforms draw from this: the same sample gets the same draws in the
      // same epoch, whichever worker prepares it.
      set_sample_seed(seedBase_ ^ (uint64_t(i) + 1) * 0xbf58476d1ce4e5b9ull);
      samples.push_back(dataset_->get(i));
    }
    return batchify(samples, device_);
  }

  void work() {
    for (;;) {
      size_t index;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return stopping_ || (next_ < plan_.size() && next_ < consumed_ + window_);
        });
        if (stopping_)
          return;
        index = next_++;
      }
      std::exception_ptr error;
      Batch batch;
      try {
        batch = make(index);
        batch.data.wait_to_read();
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error)
          failed_[index] = error;
        else
          ready_[index] = std::move(batch);
      }
      changed_.notify_all();
    }
  }

  DatasetPtr dataset_;
  std::vector<std::vector<size_t>> plan_;
  uint64_t seedBase_;
  Device device_;
  size_t window_;
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t next_ = 0, consumed_ = 0;
  bool stopping_ = false;
  std::map<size_t, Batch> ready_;
  std::map<size_t, std::exception_ptr> failed_;
  std::vector<std::thread> threads_;
};

DataLoader::DataLoader(DatasetPtr dataset, size_t batch_size, bool shuffle, LastBatch last_batch,
                       int num_workers, int prefetch, uint64_t seed, bool pin_memory)
    : dataset_(std::move(dataset)), batchSize_(batch_size), shuffle_(shuffle),
      lastBatch_(last_batch), numWorkers_(num_workers), prefetch_(prefetch), seed_(seed),
      pinMemory_(pin_memory) {
  if (!dataset_)
    throw ValueError("DataLoader: no dataset");
  if (batch_size == 0)
    throw ValueError("DataLoader: batch_size must be positive");
  if (num_workers < 0 || prefetch < 1)
    throw ValueError("DataLoader: num_workers must be >= 0 and prefetch >= 1");
  if (num_workers > kMaxWorkers)
    throw ValueError("DataLoader: num_workers = " + std::to_string(num_workers) +
                     " worker threads is more than dlc starts (at most " +
                     std::to_string(kMaxWorkers) + ")");
}

DataLoader::~DataLoader() = default;

std::vector<std::vector<size_t>> DataLoader::planEpoch() {
  std::vector<size_t> order(dataset_->size());
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    std::mt19937_64 generator(seed_ * 0x9e3779b97f4a7c15ull + epochs_);
    std::shuffle(order.begin(), order.end(), generator);
  }
  ++epochs_;
  order.insert(order.begin(), carried_.begin(), carried_.end());
  carried_.clear();
  std::vector<std::vector<size_t>> plan;
  for (size_t start = 0; start < order.size(); start += batchSize_) {
    size_t end = std::min(order.size(), start + batchSize_);
    std::vector<size_t> batch(order.begin() + long(start), order.begin() + long(end));
    if (batch.size() < batchSize_) {
      if (lastBatch_ == LastBatch::discard)
        break;
      if (lastBatch_ == LastBatch::rollover) {
        carried_ = batch;
        break;
      }
    }
    plan.push_back(std::move(batch));
  }
  if (parts_ > 1)
    for (std::vector<size_t> &batch : plan) {
      const size_t each = batch.size() / parts_;
      batch = std::vector<size_t>(batch.begin() + long(part_ * each),
                                  batch.begin() + long((part_ + 1) * each));
    }
  // A last batch (LastBatch::keep) of fewer samples than processes has none for anyone.
  plan.erase(std::remove_if(plan.begin(), plan.end(),
                            [](const std::vector<size_t> &batch) { return batch.empty(); }),
             plan.end());
  return plan;
}

void DataLoader::shard(size_t part, size_t parts) {
  if (parts == 0 || part >= parts)
    throw ValueError("DataLoader.shard: part " + std::to_string(part) + " of " +
                     std::to_string(parts) + "; expected 0 <= part < parts");
  if (batchSize_ % parts != 0)
    throw ValueError("DataLoader.shard: a batch of " + std::to_string(batchSize_) +
                     " samples does not divide among " + std::to_string(parts) +
                     " processes; choose a batch size that is a multiple of " +
                     std::to_string(parts));
  part_ = part;
  parts_ = parts;
}

size_t DataLoader::size() const {
  size_t samples = dataset_->size() + carried_.size();
  return lastBatch_ == LastBatch::keep ? (samples + batchSize_ - 1) / batchSize_
                                       : samples / batchSize_;
}

DataLoader::Iterator DataLoader::begin() {
  current_.reset(); // stops the previous epoch's workers first
  uint64_t seedBase = (seed_ + 1) * 0x9e3779b97f4a7c15ull + epochs_;
  current_ = std::make_shared<Epoch>(dataset_, planEpoch(), numWorkers_, prefetch_, seedBase,
                                     pinMemory_ ? cpu_pinned(0) : cpu(0));
  return Iterator(current_, 0);
}

DataLoader::Iterator DataLoader::end() {
  return Iterator(current_, current_ ? current_->size() : 0);
}

Batch DataLoader::Iterator::operator*() const { return epoch_->take(index_); }

DataLoader::Iterator &DataLoader::Iterator::operator++() {
  ++index_;
  return *this;
}

} // namespace dlc::gluon::data
