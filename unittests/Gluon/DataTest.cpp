//===- DataTest.cpp - datasets, Fashion-MNIST files, the data loader ---------===//
#include "dlc/gluon.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

using namespace dlc;
using namespace dlc::gluon::data;

namespace {

/// Sample i holds the value i (shape 2), label i % 3.
std::shared_ptr<ArrayDataset> counting(int64_t n) {
  std::vector<float> values;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(float(i));
    values.push_back(float(i));
    labels.push_back(i % 3);
  }
  return std::make_shared<ArrayDataset>(np::array(values, Shape{n, 2}), labels);
}

/// The first element of every sample of every batch, in order.
std::vector<int64_t> order(DataLoader &loader, std::vector<size_t> *sizes = nullptr) {
  std::vector<int64_t> seen;
  for (Batch batch : loader) {
    std::vector<float> values = batch.data.to_vector<float>();
    for (size_t i = 0; i < values.size(); i += 2)
      seen.push_back(int64_t(values[i]));
    if (sizes)
      sizes->push_back(size_t(batch.data.shape()[0]));
    EXPECT_EQ(batch.label.shape()[0], batch.data.shape()[0]);
  }
  return seen;
}

} // namespace

TEST(Data, FashionMNISTFilesFromDebian) {
  vision::FashionMNIST train, test("/usr/share/datasets/fashion-mnist", /*train=*/false);
  EXPECT_EQ(train.size(), 60000u);
  EXPECT_EQ(test.size(), 10000u);
  Sample sample = train.get(0);
  EXPECT_EQ(sample.data.shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(sample.data.dtype(), DType::u8);
  std::set<int64_t> labels(train.labels().begin(), train.labels().end());
  EXPECT_EQ(labels, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<int64_t> counts(10, 0);
  for (int64_t l : test.labels())
    ++counts[size_t(l)];
  EXPECT_EQ(counts, std::vector<int64_t>(10, 1000)) << "the test split is balanced";
  std::vector<uint8_t> pixels = sample.data.to_vector<uint8_t>();
  EXPECT_GT(*std::max_element(pixels.begin(), pixels.end()), 200) << "real images, not zeros";
  EXPECT_THROW(vision::MNIST("/nonexistent"), Error);
  EXPECT_THROW(train.get(60000), IndexError);
}

TEST(Data, DamagedIdxFilesAreErrorsNamingTheFile) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(::testing::TempDir()) / "dlc_damaged_idx";
  fs::remove_all(root);
  fs::create_directories(root);
  auto write = [&](const std::string &name, const std::string &bytes) {
    std::ofstream(root / name, std::ios::binary) << bytes;
  };
  auto bigEndian = [](std::vector<uint32_t> words) {
    std::string bytes;
    for (uint32_t w : words)
      for (int shift : {24, 16, 8, 0})
        bytes.push_back(char((w >> shift) & 0xff));
    return bytes;
  };
  auto expectError = [&](const std::string &fragment) {
    try {
      vision::MNIST(root.string(), /*train=*/true);
      FAIL() << "expected an error containing '" << fragment << "'";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  std::string labels = bigEndian({0x801, 2}) + std::string("\x01\x02", 2);
  write("train-labels-idx1-ubyte", labels);
  // A gzip stream that breaks off: the error quoted zlib's message after gzclose had
  // freed it (a use after free the IDX fuzzer found).
  write("train-images-idx3-ubyte.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
                                                  "garbage that is not deflate data",
                                                  41));
  expectError("is not a readable gzip file");
  fs::remove(root / "train-images-idx3-ubyte.gz");
  write("train-images-idx3-ubyte", bigEndian({0x801, 2, 2, 2}));
  expectError("is not an IDX file of the expected kind");
  write("train-images-idx3-ubyte", bigEndian({0x803, 2}));
  expectError("is truncated in its header");
  write("train-images-idx3-ubyte", bigEndian({0x803, 2, 2, 2}) + std::string(7, '\0'));
  expectError("holds 23 bytes, its header announces 24");
  write("train-images-idx3-ubyte", bigEndian({0x803, 3, 2, 2}) + std::string(12, '\0'));
  expectError("3 images in");
  write("train-images-idx3-ubyte", bigEndian({0x803, 2, 2, 2}) + std::string(8, '\0'));
  EXPECT_EQ(vision::MNIST(root.string(), true).size(), 2u);
}

TEST(Data, LoaderOrderIsReproducible) {
  auto dataset = counting(23);
  DataLoader inOrder(dataset, 5);
  std::vector<int64_t> plain = order(inOrder);
  std::vector<int64_t> expected(23);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(plain, expected);
  DataLoader a(dataset, 5, true, LastBatch::keep, 0, 2, 7), b(dataset, 5, true, LastBatch::keep, 2, 2, 7);
  std::vector<int64_t> first = order(a), second = order(b);
  EXPECT_EQ(first, second) << "same seed, same order, with or without workers";
  EXPECT_NE(first, expected) << "shuffled";
  EXPECT_NE(order(a), first) << "each epoch reshuffles";
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, expected) << "every sample exactly once";
}

TEST(Data, LastBatchModes) {
  auto dataset = counting(23);
  std::vector<size_t> sizes;
  DataLoader keep(dataset, 5, false, LastBatch::keep);
  EXPECT_EQ(keep.size(), 5u);
  order(keep, &sizes);
  EXPECT_EQ(sizes, (std::vector<size_t>{5, 5, 5, 5, 3}));
  sizes.clear();
  DataLoader discard(dataset, 5, false, LastBatch::discard);
  EXPECT_EQ(order(discard, &sizes).size(), 20u);
  EXPECT_EQ(sizes.size(), 4u);
  DataLoader rollover(dataset, 5, false, LastBatch::rollover);
  std::vector<int64_t> epoch1 = order(rollover), epoch2 = order(rollover);
  EXPECT_EQ(epoch1.size(), 20u);
  EXPECT_EQ(epoch2.size(), 25u) << "the 3 left over lead the next epoch";
  EXPECT_EQ(std::vector<int64_t>(epoch2.begin(), epoch2.begin() + 3),
            (std::vector<int64_t>{20, 21, 22}));
}

TEST(Data, PinnedBatches) {
  DataLoader loader(counting(6), 3, false, LastBatch::keep, 1, 2, 0, /*pin_memory=*/true);
  for (Batch batch : loader) {
    EXPECT_EQ(batch.data.device(), cpu_pinned(0));
    EXPECT_EQ(batch.label.device(), cpu_pinned(0));
  }
}

TEST(Data, WorkerErrorsReachTheLoop) {
  auto dataset = counting(20)->transform_first([](const Tensor &x) {
    if (x.to_vector<float>()[0] == 13)
      throw std::runtime_error("sample 13 is broken");
    return x * 2.0;
  });
  DataLoader loader(dataset, 4, false, LastBatch::keep, 2);
  size_t batches = 0;
  try {
    for (Batch batch : loader) {
      EXPECT_EQ(batch.data.to_vector<float>()[0], float(batches * 8)) << "transform applied";
      ++batches;
    }
    FAIL() << "expected the worker's error";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "sample 13 is broken");
  }
  EXPECT_EQ(batches, 3u) << "batches before the broken one arrive";
  EXPECT_THROW(DataLoader(dataset, 0), ValueError);
  EXPECT_THROW(ArrayDataset(np::zeros({3, 2}), {1, 2}), ShapeError);
}

TEST(Data, TransformFirstOnADatasetNotSharedIsAnError) {
  // It threw a bare std::bad_weak_ptr, which a caller catching dlc::Error missed.
  ArrayDataset onTheStack(np::zeros({3, 2}), {0, 1, 2});
  try {
    onTheStack.transform_first([](const Tensor &x) { return x; });
    FAIL() << "expected a ValueError";
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("std::shared_ptr"), std::string::npos) << e.what();
  }
  EXPECT_EQ(counting(3)->transform_first([](const Tensor &x) { return x; })->size(), 3u);
}

// A distributed sampler: each of 3 processes takes its consecutive third of every batch
// of the same shuffled epoch; together they see each batch once, in order.
TEST(Data, ShardTakesEachProcessSliceOfEveryBatch) {
  auto dataset = counting(30);
  DataLoader whole(dataset, 6, /*shuffle=*/true, LastBatch::keep, 0, 2, /*seed=*/11);
  std::vector<size_t> wholeSizes;
  std::vector<int64_t> expected = order(whole, &wholeSizes);
  std::vector<std::vector<int64_t>> parts;
  for (size_t part = 0; part < 3; ++part) {
    DataLoader loader(dataset, 6, true, LastBatch::keep, 0, 2, 11);
    loader.shard(part, 3);
    std::vector<size_t> sizes;
    parts.push_back(order(loader, &sizes));
    EXPECT_EQ(sizes, std::vector<size_t>(5, 2));
  }
  for (size_t batch = 0; batch < 5; ++batch)
    for (size_t part = 0; part < 3; ++part)
      for (size_t i = 0; i < 2; ++i)
        EXPECT_EQ(parts[part][batch * 2 + i], expected[batch * 6 + part * 2 + i]);
  // A later epoch, and one resumed there, shuffle alike.
  DataLoader again(dataset, 6, true, LastBatch::keep, 0, 2, 11);
  DataLoader resumed(dataset, 6, true, LastBatch::keep, 0, 2, 11);
  order(again);
  resumed.set_epoch(1);
  EXPECT_EQ(order(again), order(resumed));
}

TEST(Data, ShardRefusesBatchesThatDoNotDivide) {
  DataLoader loader(counting(12), 4);
  EXPECT_THROW(loader.shard(0, 3), ValueError);
  EXPECT_THROW(loader.shard(2, 2), ValueError);
  try {
    loader.shard(0, 3);
  } catch (const ValueError &e) {
    EXPECT_STREQ(e.what(), "DataLoader.shard: a batch of 4 samples does not divide among 3 "
                           "processes; choose a batch size that is a multiple of 3");
  }
}
