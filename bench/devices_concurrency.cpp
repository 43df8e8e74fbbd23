//===- devices_concurrency.cpp - do two cpu(i) devices compute at once? -------===//
//
// Runs the same number of independent 256x256 matmuls (a) all on cpu(0) with one
// thread, (b) split over cpu(0) and cpu(1) with one thread each, enqueued interleaved
// as data-parallel code does, and (c) all on cpu(0) with every core. (a)/(b) near the
// number of devices means the devices' queues really run concurrently.
//
//===----------------------------------------------------------------------===//
#include <dlc/dlc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace dlc;

namespace {

double seconds(const std::function<void()> &work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Enqueues `count` matmuls on each of `devices`, interleaved, then waits for all.
void matmuls(const std::vector<Device> &devices, int count, int64_t n) {
  std::vector<Tensor> a, b, last(devices.size());
  for (Device d : devices) {
    a.push_back(np::random::uniform(-1, 1, {n, n}, d));
    b.push_back(np::random::uniform(-1, 1, {n, n}, d));
  }
  npx::waitall();
  for (int i = 0; i < count; ++i)
    for (size_t k = 0; k < devices.size(); ++k)
      last[k] = np::matmul(a[k], b[k]);
  npx::waitall();
}

} // namespace

int main(int argc, char **argv) {
  int total = argc > 1 ? std::atoi(argv[1]) : 400;
  int64_t n = 256;
  int cores = int(std::thread::hardware_concurrency());
  matmuls({cpu(0), cpu(1)}, 10, n); // warm up both queues and their caches

  set_device_threads(cpu(0), 1);
  double one = seconds([&] { matmuls({cpu(0)}, total, n); });
  set_device_threads(cpu(0), 1);
  set_device_threads(cpu(1), 1);
  double two = seconds([&] { matmuls({cpu(0), cpu(1)}, total / 2, n); });
  set_device_threads(cpu(0), cores);
  double oneAllCores = seconds([&] { matmuls({cpu(0)}, total, n); });

  double gflop = 2.0 * double(n) * double(n) * double(n) * total / 1e9;
  std::printf("%d matmuls of %lldx%lld (%.1f GFLOP), %d cores\n", total, (long long)n,
              (long long)n, gflop, cores);
  std::printf("  (a) cpu(0), 1 thread:               %.3f s  %.1f GFLOP/s\n", one, gflop / one);
  std::printf("  (b) cpu(0)+cpu(1), 1 thread each:   %.3f s  %.1f GFLOP/s\n", two, gflop / two);
  std::printf("  (c) cpu(0), %d threads:              %.3f s  %.1f GFLOP/s\n", cores,
              oneAllCores, gflop / oneAllCores);
  std::printf("speed-up of two devices over one (a/b): %.2fx; over one device with all "
              "cores (c/b): %.2fx\n",
              one / two, oneAllCores / two);
  return 0;
}
