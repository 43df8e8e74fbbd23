//===- CollectiveWatchdogTest.cpp - a collective that waits too long ends the job -===//
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Distributed/CollectiveWatchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

using namespace dlc;
using namespace std::chrono_literals;

namespace {

/// What the watchdog asked for: how often it ended the job, and its last message.
struct Ended {
  std::mutex mutex;
  int times = 0;
  std::string message;
  CollectiveWatchdog::EndJob recorder() {
    return [this](const std::string &text) {
      std::lock_guard<std::mutex> lock(mutex);
      ++times;
      message = text;
    };
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex);
    return times;
  }
};

} // namespace

TEST(CollectiveWatchdog, ACollectiveWaitingPastTheTimeoutEndsTheJobNamingItsPeer) {
  Ended ended;
  CollectiveWatchdog dog(0, 2, 100ms, ended.recorder());
  {
    CollectiveWatchdog::Watch first(dog, "MPI_Allgather", 0); // returns at once
  }
  CollectiveWatchdog::Watch stuck(dog, "MPI_Allgather", 0);
  for (int i = 0; i < 200 && ended.count() == 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(ended.count(), 1);
  EXPECT_NE(ended.message.find("process 0 of 2 has waited"), std::string::npos) << ended.message;
  EXPECT_NE(ended.message.find("in MPI_Allgather on the data channel (its collective #2 there)"),
            std::string::npos)
      << ended.message;
  EXPECT_NE(ended.message.find("rank 1 has not joined it"), std::string::npos) << ended.message;
  EXPECT_NE(ended.message.find("DLC_DIST_TIMEOUT=0.1 s"), std::string::npos) << ended.message;
}

TEST(CollectiveWatchdog, ALargerJobNamesEveryPeerItMayWaitFor) {
  Ended ended;
  CollectiveWatchdog dog(2, 4, 50ms, ended.recorder());
  CollectiveWatchdog::Watch stuck(dog, "MPI_Barrier", 1);
  for (int i = 0; i < 200 && ended.count() == 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(ended.count(), 1);
  EXPECT_NE(ended.message.find("MPI_Barrier on the control channel"), std::string::npos)
      << ended.message;
  EXPECT_NE(ended.message.find("one or more of ranks 0, 1, 3 have not joined it"),
            std::string::npos)
      << ended.message;
}

TEST(CollectiveWatchdog, CollectivesThatFinishInTimeNeverEndTheJob) {
  Ended ended;
  {
    CollectiveWatchdog dog(1, 2, 200ms, ended.recorder());
    for (int i = 0; i < 30; ++i) { // 30 collectives of 10 ms: 300 ms in all, none long
      CollectiveWatchdog::Watch watch(dog, "MPI_Allgather", i % 2);
      std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(500ms); // idle between collectives is not waiting
  }
  EXPECT_EQ(ended.count(), 0) << ended.message;
}

TEST(CollectiveWatchdog, ATimeoutOfZeroWaitsForever) {
  Ended ended;
  CollectiveWatchdog dog(0, 2, 0ms, ended.recorder());
  CollectiveWatchdog::Watch stuck(dog, "MPI_Allgather", 0);
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(ended.count(), 0);
}

TEST(CollectiveWatchdog, TheTimeoutComesFromTheEnvironment) {
  ::unsetenv("DLC_DIST_TIMEOUT");
  EXPECT_EQ(collective_timeout_seconds(), 1800);
  ::setenv("DLC_DIST_TIMEOUT", "2.5", 1);
  EXPECT_EQ(collective_timeout_seconds(), 2.5);
  ::setenv("DLC_DIST_TIMEOUT", "0", 1);
  EXPECT_EQ(collective_timeout_seconds(), 0);
  for (const char *bad : {"ten", "-1", "5s"}) {
    ::setenv("DLC_DIST_TIMEOUT", bad, 1);
    try {
      collective_timeout_seconds();
      ADD_FAILURE() << "DLC_DIST_TIMEOUT=" << bad << " was accepted";
    } catch (const ValueError &e) {
      EXPECT_NE(std::string(e.what()).find("DLC_DIST_TIMEOUT='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("DLC_DIST_TIMEOUT");
}
