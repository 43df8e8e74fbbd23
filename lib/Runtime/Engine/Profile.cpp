//===- Profile.cpp - the DLC_PROFILE kernel profile ----------------------------===//
#include "dlc/Runtime/Engine/Profile.h"

#include "dlc/Runtime/Engine/DeviceBackend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace dlc {

struct KernelProfile::Data {
  std::mutex mutex;
  std::map<std::string, std::pair<int64_t, double>> calls; // op -> (count, seconds)
};

KernelProfile *KernelProfile::get() {
  static KernelProfile *profile = [] {
    const char *flag = std::getenv("DLC_PROFILE");
    if (!flag || !*flag || std::string(flag) == "0")
      return static_cast<KernelProfile *>(nullptr);
    auto *created = new KernelProfile;
    created->data_ = new Data;
    std::atexit([] { get()->print(); });
    return created;
  }();
  return profile;
}

void KernelProfile::finish_device_work() {
  if (DeviceBackend *gpus = device_backend(DeviceKind::gpu))
    gpus->synchronize_if_worker();
}

void KernelProfile::add(const std::string &op, double seconds) {
  std::lock_guard<std::mutex> lock(data_->mutex);
  auto &entry = data_->calls[op];
  ++entry.first;
  entry.second += seconds;
}

void KernelProfile::reset() {
  std::lock_guard<std::mutex> lock(data_->mutex);
  data_->calls.clear();
}

void KernelProfile::print() {
  std::lock_guard<std::mutex> lock(data_->mutex);
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> rows(data_->calls.begin(),
                                                                       data_->calls.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.second > b.second.second; });
  double total = 0;
  for (const auto &row : rows)
    total += row.second.second;
  // A fused region's name lists its ops: the column widens for them, up to a point (an
  // optimizer's region names a dozen ops; its row then runs past the column).
  int width = 34;
  for (const auto &row : rows)
    width = std::clamp(int(row.first.size()), width, 64);
  std::fprintf(stderr, "dlc kernel profile (DLC_PROFILE): %.3f s in kernels\n", total);
  std::fprintf(stderr, "  %-*s %8s %10s %6s\n", width, "op", "calls", "seconds", "share");
  for (const auto &[op, entry] : rows)
    std::fprintf(stderr, "  %-*s %8lld %10.4f %5.1f%%\n", width, op.c_str(), (long long)entry.first,
                 entry.second, total > 0 ? 100 * entry.second / total : 0.0);
}

} // namespace dlc
