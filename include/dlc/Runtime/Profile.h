//===- Profile.h - time per kernel, collected when DLC_PROFILE is set --------===//
#ifndef DLC_RUNTIME_PROFILE_H
#define DLC_RUNTIME_PROFILE_H

#include <string>

namespace dlc {

/// Kernel time per op, for eager calls and compiled programs alike; printed to stderr at
/// exit. Costs nothing when DLC_PROFILE is unset or "0".
class KernelProfile {
public:
  /// The process's profile, or null when profiling is off.
  static KernelProfile *get();
  void add(const std::string &op, double seconds);
  void print();

private:
  KernelProfile() = default;
  struct Data;
  Data *data_ = nullptr;
};

} // namespace dlc

#endif // DLC_RUNTIME_PROFILE_H
