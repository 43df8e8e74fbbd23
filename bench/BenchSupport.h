//===- BenchSupport.h - timing and reporting shared by the dlc benchmarks -----===//
#ifndef DLC_BENCH_BENCHSUPPORT_H
#define DLC_BENCH_BENCHSUPPORT_H

#include <dlc/gluon.h>
#include <dlc/Runtime/Engine/Profile.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <functional>
#include <vector>

namespace dlc::bench {

/// Median seconds of `repeats` runs of `work` after `warmup` runs; each run ends with
/// waitall so that queued work is counted.
inline double timeIt(const std::function<void()> &work, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) {
    work();
    npx::waitall();
  }
  if (KernelProfile *profile = KernelProfile::get())
    profile->reset(); // DLC_PROFILE then reports the timed repeats only
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    npx::waitall();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Best seconds of `runs` calls of `work`: a kernel called directly on warm memory, with
/// no engine queue to wait for (the fastest call is the one the machine least disturbed).
template <typename Work> double bestOf(int runs, Work &&work) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

/// The devices a benchmark runs on: `fallback`, unless DLC_BENCH_DEVICES says "gpu" (every
/// GPU), "gpu:N" (the first N GPUs; scripts/gpu-check.sh sets it) or "cpu:N" (cpu(0) to
/// cpu(N-1): "cpu:1" compares one device with the peers' single process).
inline std::vector<Device> benchDevices(std::vector<Device> fallback) {
  const char *wanted = std::getenv("DLC_BENCH_DEVICES");
  std::string text = wanted ? wanted : "";
  if (text.rfind("cpu:", 0) == 0) {
    int count = std::atoi(text.c_str() + 4);
    if (count < 1 || count > kMaxHostDevices)
      throw Error("DLC_BENCH_DEVICES=" + text + ": expected cpu:1 to cpu:" +
                  std::to_string(kMaxHostDevices));
    std::vector<Device> cpus;
    for (int i = 0; i < count; ++i)
      cpus.push_back(cpu(i));
    return cpus;
  }
  if (text.rfind("gpu", 0) != 0)
    return fallback;
  int count = text.size() > 4 ? std::atoi(text.c_str() + 4) : num_gpus();
  if (count < 1 || count > num_gpus())
    throw Error("DLC_BENCH_DEVICES=" + text + ": this process sees " +
                std::to_string(num_gpus()) + " GPUs");
  std::vector<Device> gpus;
  for (int i = 0; i < count; ++i)
    gpus.push_back(gpu(i));
  return gpus;
}

/// One JSON line per measurement, in the format bench/peers/*.py print, so that
/// bench/compare.py can put dlc and its peers side by side.
inline void report(const char *bench, int64_t batch, double seconds) {
  std::printf("{\"framework\": \"dlc\", \"bench\": \"%s\", \"batch\": %lld, \"seconds\": %.6f, "
              "\"samples_per_s\": %.2f}\n",
              bench, (long long)batch, seconds, double(batch) / seconds);
  std::fflush(stdout);
}

/// Batch norm's running statistics drawn at random (means in [-0.5, 0.5), variances in
/// [0.5, 2)), so that a predicting network's every batch norm computes something a peer
/// given the same parameters must match.
inline void randomizeRunningStatistics(gluon::ParameterDict parameters) {
  for (const std::string &key : parameters.keys()) {
    const gluon::ParameterPtr &p = parameters[key];
    if (key.find("running_mean") != std::string::npos)
      p->set_data(np::random::uniform(-0.5, 0.5, p->shape()));
    else if (key.find("running_var") != std::string::npos)
      p->set_data(np::random::uniform(0.5, 2.0, p->shape()));
  }
}

} // namespace dlc::bench

#endif // DLC_BENCH_BENCHSUPPORT_H
