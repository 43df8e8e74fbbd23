//===- DeviceTest.cpp - devices, scopes, GPU count ---------------------------===//
#include "dlc/dlc.h"

#include <gtest/gtest.h>

#include <thread>

using namespace dlc;

TEST(Device, PrintsLikeMXNet) {
  EXPECT_EQ(cpu().str(), "cpu(0)");
  EXPECT_EQ(gpu(1).str(), "gpu(1)");
  EXPECT_EQ(cpu_pinned().str(), "cpu_pinned(0)");
  EXPECT_EQ(cpu_shared(2).str(), "cpu_shared(2)");
  EXPECT_EQ(int(DeviceKind::cpu_shared), 5) << "MXNet's device type id";
  EXPECT_NE(cpu(0), cpu(1));
  EXPECT_EQ(npx::gpu(), gpu(0));
}

TEST(Device, ScopesNestAndArePerThread) {
  EXPECT_EQ(current_device(), cpu(0));
  {
    DeviceScope outer(cpu(1));
    EXPECT_EQ(np::zeros({2}).device(), cpu(1));
    {
      DeviceScope inner(cpu(2));
      EXPECT_EQ(current_device(), cpu(2));
      Device seenByOtherThread;
      std::thread([&] { seenByOtherThread = current_device(); }).join();
      EXPECT_EQ(seenByOtherThread, cpu(0));
    }
    EXPECT_EQ(current_device(), cpu(1));
    EXPECT_EQ(np::ones({2}, cpu(3)).device(), cpu(3)) << "an explicit device wins";
  }
  EXPECT_EQ(current_device(), cpu(0));
}

TEST(Device, NoGpuMeansZeroNotAnError) {
  // This machine has no usable GPU (no driver); num_gpus must say 0, not throw.
  int count = -1;
  EXPECT_NO_THROW(count = num_gpus());
  EXPECT_GE(count, 0);
  if (count == 0) {
    EXPECT_THROW(np::zeros({2}, gpu(0)), UnsupportedError);
  }
}

TEST(Device, AllReduceSumsOneTensorPerDevice) {
  np::random::seed(11, cpu(0));
  std::vector<Device> devices{cpu(0), cpu(1), cpu(2)};
  std::vector<Tensor> parts;
  std::vector<double> expected(6, 0.0);
  for (Device d : devices) {
    Tensor t = np::random::uniform(-1, 1, {2, 3}, cpu(0)).to(d);
    std::vector<float> v = t.to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i)
      expected[i] += v[i];
    parts.push_back(t);
  }
  for (bool mean : {false, true}) {
    std::vector<Tensor> results = npx::all_reduce(parts, mean);
    ASSERT_EQ(results.size(), devices.size());
    for (size_t k = 0; k < results.size(); ++k) {
      EXPECT_EQ(results[k].device(), devices[k]);
      EXPECT_EQ(results[k].shape(), (Shape{2, 3}));
      std::vector<float> got = results[k].to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i] / (mean ? 3.0 : 1.0), 1e-6) << "result " << k;
    }
  }
}

// Many tensors at once, bucketed by dtype: each result is what all_reduce gives that
// tensor alone, bit for bit, whatever the bucket size (one bucket, several, one per item).
TEST(Device, AllReduceCoalescedEqualsOneAllReducePerTensor) {
  np::random::seed(12, cpu(0));
  std::vector<Device> devices{cpu(0), cpu(1), cpu(2)};
  std::vector<Shape> shapes{{2, 3}, {5}, {}, {4, 1, 3}, {7, 2}};
  std::vector<DType> dtypes{DType::f32, DType::f16, DType::f32, DType::i32, DType::f32};
  std::vector<std::vector<Tensor>> items;
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<Tensor> copies;
    for (Device d : devices) {
      Tensor t = np::random::uniform(-4, 4, shapes[k], cpu(0));
      copies.push_back(t.astype(dtypes[k]).to(d));
    }
    items.push_back(copies);
  }
  std::vector<std::vector<Tensor>> floating = items; // a mean needs floating-point tensors
  floating.erase(floating.begin() + 3);
  for (size_t bucketBytes : {size_t(64) << 20, size_t(40), size_t(1)}) {
    for (bool mean : {false, true}) {
      const std::vector<std::vector<Tensor>> &in = mean ? floating : items;
      std::vector<std::vector<Tensor>> got = npx::all_reduce_coalesced(in, mean, bucketBytes);
      ASSERT_EQ(got.size(), in.size());
      for (size_t k = 0; k < in.size(); ++k) {
        std::vector<Tensor> want = npx::all_reduce(in[k], mean);
        ASSERT_EQ(got[k].size(), devices.size());
        for (size_t j = 0; j < devices.size(); ++j) {
          std::string what = "item " + std::to_string(k) + " on " + devices[j].str() +
                             ", buckets of " + std::to_string(bucketBytes) + " bytes" +
                             (mean ? ", mean" : "");
          EXPECT_EQ(got[k][j].device(), devices[j]) << what;
          EXPECT_EQ(got[k][j].shape(), in[k][j].shape()) << what;
          ASSERT_EQ(got[k][j].dtype(), in[k][j].dtype()) << what;
          EXPECT_EQ(got[k][j].astype(DType::f32).to_vector<float>(),
                    want[j].astype(DType::f32).to_vector<float>())
              << what;
        }
      }
    }
  }
  // Every item on the same devices, in the same order.
  std::vector<Tensor> swapped{items[0][1], items[0][0], items[0][2]};
  EXPECT_THROW(npx::all_reduce_coalesced({items[0], swapped}), ValueError);
}

TEST(Device, AllReduceRejectsMismatchedTensors) {
  Tensor a = np::ones({2, 3}, DType::f32, cpu(0)), b = np::ones({3, 2}, DType::f32, cpu(1));
  EXPECT_THROW(npx::all_reduce({a, b}), ShapeError);
  EXPECT_THROW(npx::all_reduce({a, np::ones({2, 3}, DType::i32, cpu(1))}), DTypeError);
  EXPECT_THROW(npx::all_reduce({a, np::ones({2, 3}, DType::f32, cpu(0))}), ValueError);
  EXPECT_THROW(npx::all_reduce({}), ValueError);
  Tensor flags = np::ones({2}, DType::boolean, cpu(0));
  EXPECT_THROW(npx::all_reduce({flags, np::ones({2}, DType::boolean, cpu(1))}), DTypeError);
  Tensor counts = np::ones({2}, DType::i32, cpu(0));
  EXPECT_THROW(npx::all_reduce({counts, np::ones({2}, DType::i32, cpu(1))}, true), DTypeError);
  // One tensor: its values, in new memory.
  std::vector<Tensor> alone = npx::all_reduce({a});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_NE(alone[0].data(), a.data());
  EXPECT_EQ(alone[0].to_vector<float>(), a.to_vector<float>());
  try {
    npx::all_reduce({a, b});
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("cpu(1)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3x2"), std::string::npos) << e.what();
  }
}

TEST(Device, HostDeviceIdsAreBounded) {
  // cpu(-1) and cpu(1000) were accepted: each id is a queue and a worker thread for the
  // life of the process.
  EXPECT_FALSE(can_compute_on(cpu(-1)));
  EXPECT_FALSE(can_compute_on(cpu(kMaxHostDevices)));
  EXPECT_TRUE(can_compute_on(cpu(kMaxHostDevices - 1)));
  try {
    np::zeros({2}, cpu(1000));
    FAIL() << "cpu(1000) was accepted";
  } catch (const UnsupportedError &e) {
    EXPECT_NE(std::string(e.what()).find("host devices are cpu(0) to cpu(63)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(np::ones({2}, cpu(-1)), UnsupportedError);
  EXPECT_EQ(np::ones({2}, cpu(kMaxHostDevices - 1)).to_vector<float>(), std::vector<float>(2, 1.f));
}
