//===- Profile.h - time per kernel, collected when DLC_PROFILE is set --------===//
#ifndef DLC_RUNTIME_ENGINE_PROFILE_H
#define DLC_RUNTIME_ENGINE_PROFILE_H

#include <chrono>
#include <string>

namespace dlc {

/// Kernel time per op, for eager calls and compiled programs alike; printed to stderr at
/// exit. Costs nothing when DLC_PROFILE is unset or "0". On GPUs an op's time includes
/// waiting for its kernels, so it is the device time plus one launch and one wait.
class KernelProfile {
public:
  /// The process's profile, or null when profiling is off.
  static KernelProfile *get();
  void add(const std::string &op, double seconds);
  /// Runs `work`, adding its time to `op` when profiling is on.
  template <typename Work> static void timed(const std::string &op, Work &&work) {
    KernelProfile *profile = get();
    if (!profile) {
      work();
      return;
    }
    auto start = std::chrono::steady_clock::now();
    work();
    finish_device_work();
    profile->add(op,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  void print();
  /// Forgets what was collected so far (a benchmark calls it after its warm-up, so that
  /// the profile shows the steady state rather than first-use tuning).
  void reset();

private:
  /// On a GPU queue's worker, waits for the kernels `work` launched, so that a GPU op's
  /// time is its kernels' (profiling serializes the GPU's queue; off, nothing waits).
  static void finish_device_work();
  KernelProfile() = default;
  struct Data;
  Data *data_ = nullptr;
};

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_PROFILE_H
