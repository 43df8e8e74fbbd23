//===- Data.h - datasets and the data loader (gluon.data) ---------------------===//
#ifndef DLC_GLUON_DATA_H
#define DLC_GLUON_DATA_H

#include "dlc/Frontend/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlc::gluon::data {

/// One sample: its data (e.g. an HWC uint8 image) and its label.
struct Sample {
  Tensor data;
  int64_t label = 0;
};

/// Samples by index. Implementations must allow get() from several threads at once.
class Dataset : public std::enable_shared_from_this<Dataset> {
public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual Sample get(size_t index) const = 0;
  /// The same samples with `transform` applied to their data (Gluon's transform_first).
  /// The dataset must be owned by a std::shared_ptr (ValueError otherwise).
  std::shared_ptr<Dataset> transform_first(std::function<Tensor(const Tensor &)> transform) const;
};
using DatasetPtr = std::shared_ptr<const Dataset>;

/// Rows of `data` along axis 0, with one label each.
class ArrayDataset : public Dataset {
public:
  ArrayDataset(Tensor data, std::vector<int64_t> labels);
  size_t size() const override { return labels_.size(); }
  Sample get(size_t index) const override;

private:
  Tensor data_;
  std::vector<int64_t> labels_;
};

namespace vision {

/// MNIST-format datasets (IDX files, optionally gzipped): images as (28, 28, 1) uint8
/// HWC tensors and labels 0-9, as MXNet's gluon.data.vision.MNIST gives them.
class MNIST : public Dataset {
public:
  explicit MNIST(const std::string &root, bool train = true);
  size_t size() const override { return labels_.size(); }
  Sample get(size_t index) const override;
  /// Every image as one (N, 28, 28, 1) uint8 tensor.
  const Tensor &images() const { return images_; }
  const std::vector<int64_t> &labels() const { return labels_; }

private:
  Tensor images_;
  std::vector<int64_t> labels_;
};

/// Fashion-MNIST, by default from Debian's dataset-fashion-mnist package.
class FashionMNIST : public MNIST {
public:
  explicit FashionMNIST(const std::string &root = "/usr/share/datasets/fashion-mnist",
                        bool train = true)
      : MNIST(root, train) {}
  /// The class names, by label.
  static const std::vector<std::string> &classes();
};

} // namespace vision

/// What to do with a last batch smaller than batch_size.
enum class LastBatch { keep, discard, rollover };

/// A batch: the samples' data stacked along a new axis 0, and their labels (int64).
struct Batch {
  Tensor data;
  Tensor label;
};

/// Batches of a dataset, in order or shuffled (reproducibly for a seed: epoch e uses the
/// seed and e), assembled by `num_workers` threads ahead of the training loop (0: by the
/// loop itself), into `cpu_pinned(0)` memory with `pin_memory` (faster copies to GPUs).
/// An exception thrown while preparing a batch reaches the loop when it asks for that
/// batch, with its message. More than kMaxWorkers workers is refused; workers the
/// system will not start are an Error when the epoch starts, the others stopped.
class DataLoader {
public:
  static constexpr int kMaxWorkers = 1024;

  DataLoader(DatasetPtr dataset, size_t batch_size, bool shuffle = false,
             LastBatch last_batch = LastBatch::keep, int num_workers = 0, int prefetch = 2,
             uint64_t seed = 0, bool pin_memory = false);
  ~DataLoader();

  /// Number of batches the next epoch yields.
  size_t size() const;

  /// One process's share of every batch, in a job of `parts` processes (a distributed
  /// sampler): the epoch's batches are planned as before, from the same seed on every
  /// process, and each yields its `part`-th of `parts` equal, consecutive slices, so the
  /// processes together see each whole batch once and a process with the devices
  /// part*k .. part*k+k-1 gets the samples those devices get in one process. The batch
  /// size must divide by `parts`; a short last batch (LastBatch::keep) loses the samples
  /// past its largest multiple of `parts`. Throws ValueError otherwise.
  void shard(size_t part, size_t parts);
  /// The next epoch is the loader's `epoch`-th (from 0): its shuffle is the one that epoch
  /// of an uninterrupted run had (a resumed run continues the sequence).
  void set_epoch(uint64_t epoch) { epochs_ = epoch; }

  class Epoch;
  class Iterator {
  public:
    Batch operator*() const;
    Iterator &operator++();
    bool operator!=(const Iterator &other) const { return index_ != other.index_; }

  private:
    friend class DataLoader;
    Iterator(std::shared_ptr<Epoch> epoch, size_t index) : epoch_(std::move(epoch)), index_(index) {}
    std::shared_ptr<Epoch> epoch_;
    size_t index_;
  };
  /// Starts an epoch.
  Iterator begin();
  Iterator end();

private:
  std::vector<std::vector<size_t>> planEpoch();

  DatasetPtr dataset_;
  size_t batchSize_;
  bool shuffle_;
  LastBatch lastBatch_;
  int numWorkers_, prefetch_;
  uint64_t seed_;
  bool pinMemory_;
  uint64_t epochs_ = 0;
  size_t part_ = 0, parts_ = 1;
  std::vector<size_t> carried_; // rollover: samples left from the previous epoch
  std::shared_ptr<Epoch> current_;
};

/// Stacks samples into a batch on host `device` (their data must share shape and dtype).
Batch batchify(const std::vector<Sample> &samples, Device device = cpu());

} // namespace dlc::gluon::data

#endif // DLC_GLUON_DATA_H
