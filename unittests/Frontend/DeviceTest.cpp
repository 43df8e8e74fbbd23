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
