//===- ProcessGroup.cpp - the job's processes: registry and the ordered sum ----===//
#include "dlc/Runtime/Distributed/ProcessGroup.h"

#include "dlc/Core/Error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace dlc {

// The process groups this build has, one DLC_PROCESS_GROUP(name) line each in the
// generated ProcessGroups.inc: make_<name>_process_group() joins the launched job.
#define DLC_PROCESS_GROUP(name) std::unique_ptr<ProcessGroup> make_##name##_process_group();
#include "ProcessGroups.inc"
#undef DLC_PROCESS_GROUP

namespace {

/// A process launched alone.
class SelfGroup final : public ProcessGroup {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string description() const override { return "one process"; }
  void barrier(Channel) override {}
  void broadcast(void *, size_t, int root, Channel) override {
    if (root != 0)
      throw Error("broadcast: root " + std::to_string(root) + " is not a process of a "
                  "job of one");
  }
  void all_gather(const void *in, void *out, size_t bytes, Channel) override {
    std::memmove(out, in, bytes);
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

std::mutex joinMutex;
std::unique_ptr<ProcessGroup> joined; // set once, kept until the process ends

int positiveFromEnvironment(const char *name) {
  const char *text = std::getenv(name);
  return text ? std::max(0, std::atoi(text)) : 0;
}

} // namespace

void ProcessGroup::all_reduce_sum(const std::vector<const float *> &in, float *out,
                                  int64_t count, Channel channel) {
  const int processes = size();
  const auto parts = int64_t(in.size());
  // Gathered in slices of at most 4 Mi floats in all, so a large model does not need
  // size() * parts copies of its gradients at once.
  const int64_t sliceCount =
      std::max<int64_t>(1, (int64_t(4) << 20) / std::max<int64_t>(1, processes * parts));
  std::vector<float> mine, gathered;
  for (int64_t begin = 0; begin < count; begin += sliceCount) {
    const int64_t n = std::min(sliceCount, count - begin);
    mine.resize(size_t(parts * n));
    for (int64_t p = 0; p < parts; ++p)
      std::memcpy(&mine[size_t(p * n)], in[size_t(p)] + begin, size_t(n) * sizeof(float));
    gathered.resize(size_t(processes) * mine.size());
    all_gather(mine.data(), gathered.data(), mine.size() * sizeof(float), channel);
    const int64_t vectors = processes * parts; // in rank order, then part order
    for (int64_t i = 0; i < n; ++i) {
      float sum = gathered[size_t(i)];
      for (int64_t v = 1; v < vectors; ++v)
        sum += gathered[size_t(v * n + i)];
      out[begin + i] = sum;
    }
  }
}

int launched_processes() {
  // Open MPI's mpirun, then the PMI variables of MPICH's and Slurm's launchers.
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (int n = positiveFromEnvironment(name))
      return n;
  return 1;
}

bool gpu_sums_through_host() {
  const char *flag = std::getenv("DLC_GPU_SUMS_THROUGH_HOST");
  return flag && flag[0] == '1';
}

ProcessGroup &join_process_group() {
  std::lock_guard<std::mutex> lock(joinMutex);
  if (joined)
    return *joined;
  const int launched = launched_processes();
  if (launched > 1) {
#define DLC_PROCESS_GROUP(name)                                                          \
  if (!joined)                                                                             \
    joined = make_##name##_process_group();
#include "ProcessGroups.inc"
#undef DLC_PROCESS_GROUP
    if (!joined)
      throw UnsupportedError(
          "dist: this process is one of " + std::to_string(launched) +
          " started by a launcher (mpirun), but dlc was built without MPI "
          "(-DDLC_ENABLE_MPI; Debian: openmpi-bin libopenmpi-dev); it would train as " +
          std::to_string(launched) + " unrelated copies");
  } else {
    joined = std::make_unique<SelfGroup>();
  }
  return *joined;
}

ProcessGroup &process_group() {
  {
    std::lock_guard<std::mutex> lock(joinMutex);
    if (joined)
      return *joined;
  }
  static SelfGroup *alone = new SelfGroup;
  return *alone;
}

} // namespace dlc
