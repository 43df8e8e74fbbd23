//===- CollectiveWatchdog.cpp - ends a job whose collective waits too long ----===//
#include "dlc/Runtime/Distributed/CollectiveWatchdog.h"

#include "dlc/Core/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dlc {

double collective_timeout_seconds() {
  const char *text = std::getenv("DLC_DIST_TIMEOUT");
  if (!text || !*text)
    return 1800;
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(seconds) || seconds < 0)
    throw ValueError("dist: DLC_DIST_TIMEOUT='" + std::string(text) +
                     "'; expected the seconds a collective may wait (a number >= 0; 0: "
                     "forever)");
  return seconds;
}

const char *CollectiveWatchdog::channelName(int channel) {
  return channel == 0 ? "data" : "control";
}

CollectiveWatchdog::CollectiveWatchdog(int rank, int size, std::chrono::milliseconds timeout,
                                       EndJob endJob)
    : rank_(rank), size_(size), timeout_(timeout), endJob_(std::move(endJob)) {
  if (timeout_.count() > 0)
    thread_ = std::thread([this] { watch(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog &dog, const char *call, int channel)
    : dog_(dog), channel_(channel) {
  std::lock_guard<std::mutex> lock(dog_.mutex_);
  InProgress &now = dog_.channels_[channel_];
  now.call = call;
  now.number = ++dog_.started_[channel_];
  now.since = std::chrono::steady_clock::now();
}

CollectiveWatchdog::Watch::~Watch() {
  std::lock_guard<std::mutex> lock(dog_.mutex_);
  dog_.channels_[channel_].call = nullptr;
}

void CollectiveWatchdog::watch() {
  // Checked a few times per timeout, at least once a second: a job ends at most a
  // quarter of the timeout (or a second) late.
  const auto period = std::clamp<std::chrono::milliseconds>(
      timeout_ / 4, std::chrono::milliseconds(1), std::chrono::seconds(1));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, period);
    const auto now = std::chrono::steady_clock::now();
    for (int c = 0; c < kChannels && !stopping_; ++c) {
      const InProgress &waiting = channels_[c];
      if (!waiting.call || now - waiting.since < timeout_)
        continue;
      std::string peers;
      for (int r = 0; r < size_; ++r)
        if (r != rank_)
          peers += (peers.empty() ? "" : ", ") + std::to_string(r);
      const double waited =
          std::chrono::duration<double>(now - waiting.since).count();
      char seconds[32], bound[32];
      std::snprintf(seconds, sizeof seconds, "%.0f", waited);
      std::snprintf(bound, sizeof bound, "%g", double(timeout_.count()) / 1000);
      std::string message =
          "dist: process " + std::to_string(rank_) + " of " + std::to_string(size_) +
          " has waited " + seconds + " s in " + waiting.call + " on the " + channelName(c) +
          " channel (its collective #" + std::to_string(waiting.number) + " there); " +
          (size_ == 2 ? "rank " + peers + " has" : "one or more of ranks " + peers + " have") +
          " not joined it: hung, stopped or far behind. Ending the job (DLC_DIST_TIMEOUT=" +
          bound + " s bounds the wait; 0 waits forever)";
      lock.unlock();
      endJob_(message); // does not return in a job (MPI_Abort)
      return;           // a test's endJob returns: the watchdog has done its part
    }
  }
}

} // namespace dlc
