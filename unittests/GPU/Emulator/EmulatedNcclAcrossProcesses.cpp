//===- EmulatedNcclAcrossProcesses.cpp - NCCL cliques that span processes -----===//
//
// ncclGetUniqueId makes a file under TMPDIR and the id is its path; every rank's
// ncclCommInitRank maps that file, wherever its process runs on this host. The file
// holds a process-shared mutex and condition variable, what each rank brought to the
// current collective, one slot per rank for its part of the data, and the sum. An
// all-reduce goes in rounds of one slot's worth: each rank copies its part into its slot
// and waits; the last to arrive adds the slots in rank order (as the one-process clique
// does, so the bits match) into the sum; every rank copies the sum out, and the next
// round starts when all have. The last rank to join unlinks the file; the mappings stay.
//
//===----------------------------------------------------------------------===//
#include "EmulatedNccl.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace dlc_emu::nccl {

namespace {

constexpr int kMaxRanks = 16;
constexpr size_t kSlotBytes = size_t(256) << 10;

struct Header {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int ranks;     // 0 until the first rank joins
  int joined;
  int arrived;   // ranks in the current round
  int departing; // ranks still to copy the last round's sum out
  uint64_t generation;
  int aborted;
  struct {
    size_t count;
    int type, op;
  } calls[kMaxRanks];
};

constexpr size_t kHeaderBytes = (sizeof(Header) + 63) / 64 * 64;
constexpr size_t kFileBytes = kHeaderBytes + size_t(kMaxRanks + 1) * kSlotBytes;

} // namespace

class JobClique {
public:
  JobClique(void *base, int ranks) : base_(static_cast<char *>(base)), ranks_(ranks) {}
  ~JobClique() { munmap(base_, kFileBytes); }
  Header &header() { return *reinterpret_cast<Header *>(base_); }
  char *slot(int rank) { return base_ + kHeaderBytes + size_t(rank) * kSlotBytes; }
  char *total() { return slot(kMaxRanks); }
  int ranks() const { return ranks_; }

private:
  char *base_;
  int ranks_;
};

namespace {

void *mapFile(int fd) {
  void *base = mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : base;
}

/// Holds the clique's mutex for a scope.
class Locked {
public:
  explicit Locked(Header &h) : h_(h) { pthread_mutex_lock(&h_.mutex); }
  ~Locked() { pthread_mutex_unlock(&h_.mutex); }
  void wait() { pthread_cond_wait(&h_.changed, &h_.mutex); }

private:
  Header &h_;
};

} // namespace

ncclResult_t make_job_id(ncclUniqueId *id) {
  if (!id)
    return ncclInvalidArgument;
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/dlc-emulated-nccl-XXXXXX";
  if (path.size() >= sizeof id->internal)
    return ncclSystemError;
  int fd = mkstemp(path.data());
  if (fd < 0)
    return ncclSystemError;
  void *base = ftruncate(fd, off_t(kFileBytes)) == 0 ? mapFile(fd) : nullptr;
  close(fd);
  if (!base) {
    unlink(path.c_str());
    return ncclSystemError;
  }
  auto *h = new (base) Header{};
  pthread_mutexattr_t mutexShared;
  pthread_mutexattr_init(&mutexShared);
  pthread_mutexattr_setpshared(&mutexShared, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&h->mutex, &mutexShared);
  pthread_condattr_t condShared;
  pthread_condattr_init(&condShared);
  pthread_condattr_setpshared(&condShared, PTHREAD_PROCESS_SHARED);
  pthread_cond_init(&h->changed, &condShared);
  munmap(base, kFileBytes);
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, path.c_str(), path.size());
  return ncclSuccess;
}

std::shared_ptr<JobClique> join_job_clique(const ncclUniqueId &id, int ranks, int rank) {
  if (ranks < 1 || ranks > kMaxRanks || rank < 0 || rank >= ranks ||
      !std::memchr(id.internal, 0, sizeof id.internal))
    return nullptr;
  int fd = open(id.internal, O_RDWR);
  if (fd < 0)
    return nullptr;
  void *base = mapFile(fd);
  close(fd);
  if (!base)
    return nullptr;
  auto clique = std::make_shared<JobClique>(base, ranks);
  Header &h = clique->header();
  Locked lock(h);
  if (h.ranks == 0)
    h.ranks = ranks;
  if (h.ranks != ranks || h.joined >= ranks)
    return nullptr; // ranks disagree on the clique's size, or too many joined
  if (++h.joined == ranks)
    unlink(id.internal); // every rank has it mapped
  return clique;
}

void job_all_reduce(JobClique &clique, int rank, const void *send, void *receive, size_t count,
                    ncclDataType_t type, ncclRedOp_t op) {
  Header &h = clique.header();
  const size_t bytes = element_bytes(type);
  const size_t perRound = kSlotBytes / bytes;
  for (size_t begin = 0; begin < count; begin += perRound) {
    const size_t n = std::min(perRound, count - begin);
    Locked lock(h);
    while (h.departing > 0 && !h.aborted)
      lock.wait();
    if (h.aborted)
      return;
    std::memcpy(clique.slot(rank), static_cast<const char *>(send) + begin * bytes, n * bytes);
    h.calls[rank] = {count, int(type), int(op)};
    const uint64_t generation = h.generation;
    if (++h.arrived == clique.ranks()) {
      std::vector<const void *> slots;
      for (int r = 0; r < clique.ranks(); ++r) {
        if (h.calls[r].count != count || h.calls[r].type != int(type) ||
            h.calls[r].op != int(op)) {
          // As in one process: ranks meeting different collectives is the ordering
          // mistake a GPU would hang or corrupt memory on. Stop loudly.
          std::fprintf(stderr, "emulated NCCL: the ranks of one all-reduce across processes "
                               "disagree (rank %d: count %zu, type %d, op %d; rank %d: "
                               "count %zu, type %d, op %d)\n",
                       r, h.calls[r].count, h.calls[r].type, h.calls[r].op, rank, count,
                       int(type), int(op));
          std::abort();
        }
        slots.push_back(clique.slot(r));
      }
      sum(type, slots, {clique.total()}, n, op == ncclAvg);
      h.arrived = 0;
      h.departing = clique.ranks();
      ++h.generation;
      pthread_cond_broadcast(&h.changed);
    } else {
      while (h.generation == generation && !h.aborted)
        lock.wait();
      if (h.aborted)
        return;
    }
    std::memcpy(static_cast<char *>(receive) + begin * bytes, clique.total(), n * bytes);
    if (--h.departing == 0)
      pthread_cond_broadcast(&h.changed);
  }
}

void abort_job_clique(JobClique &clique) {
  Header &h = clique.header();
  Locked lock(h);
  h.aborted = 1;
  pthread_cond_broadcast(&h.changed);
}

} // namespace dlc_emu::nccl
