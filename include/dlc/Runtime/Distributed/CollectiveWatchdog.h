//===- CollectiveWatchdog.h - ends a job whose collective waits too long ------===//
//
// A process of a multi-process job that dies is noticed by the launcher (mpirun ends
// the job and names it). One that hangs, or is stopped, is not: its peers would wait in
// their next sum forever. The watchdog watches this process's collectives; one that has
// waited longer than the timeout ends the job with a message naming the call, the ranks
// it waits for and the time waited. The timeout bounds a legitimate wait too (rank 0
// alone evaluating or saving while the others wait at a barrier), so it is generous by
// default: DLC_DIST_TIMEOUT seconds (1800 unless set; 0 waits forever).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_DISTRIBUTED_COLLECTIVEWATCHDOG_H
#define DLC_RUNTIME_DISTRIBUTED_COLLECTIVEWATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dlc {

/// DLC_DIST_TIMEOUT in seconds: 1800 when unset, 0 (never) when "0"; a value that is not
/// a non-negative number throws, naming the variable.
double collective_timeout_seconds();

class CollectiveWatchdog {
public:
  /// Ends the job: called once, from the watchdog's thread, with the message; it must
  /// not return (MPI_Abort) or the watchdog stops watching.
  using EndJob = std::function<void(const std::string &message)>;

  /// Watches the collectives of process `rank` of `size`; `timeout` 0 watches nothing
  /// (and starts no thread).
  CollectiveWatchdog(int rank, int size, std::chrono::milliseconds timeout, EndJob endJob);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog &) = delete;
  CollectiveWatchdog &operator=(const CollectiveWatchdog &) = delete;

  /// A collective in progress, from construction to destruction: `call` (a static
  /// string, e.g. "MPI_Allgather") on `channel` ("data" or "control"). One per channel
  /// at a time: each channel's collectives run in one order on every process.
  class Watch {
  public:
    Watch(CollectiveWatchdog &dog, const char *call, int channel);
    ~Watch();
    Watch(const Watch &) = delete;
    Watch &operator=(const Watch &) = delete;

  private:
    CollectiveWatchdog &dog_;
    int channel_;
  };

  static constexpr int kChannels = 2;
  static const char *channelName(int channel);

private:
  void watch();

  struct InProgress {
    const char *call = nullptr; ///< null: none
    long number = 0;            ///< the channel's collectives so far, this one included
    std::chrono::steady_clock::time_point since;
  };

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  EndJob endJob_;
  std::mutex mutex_;
  std::condition_variable wake_;
  InProgress channels_[kChannels];
  long started_[kChannels] = {0, 0};
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace dlc

#endif // DLC_RUNTIME_DISTRIBUTED_COLLECTIVEWATCHDOG_H
