//===- MPIProcessGroup.cpp - the job's processes over MPI (Open MPI) ----------===//
//
// The only file that includes <mpi.h>. MPI is started with MPI_THREAD_MULTIPLE: the
// engine's queue runs the gradient sums (the `data` communicator) while the program's
// own thread may broadcast or wait at a barrier (`control`); each channel has its own
// duplicate of MPI_COMM_WORLD, so their messages never match each other's. Errors are
// returned, not fatal, and become dlc errors naming the call and the process.
//
//===----------------------------------------------------------------------===//
#define OMPI_SKIP_MPICXX 1 // the C API only: Open MPI's mpi.h pulls in C++ bindings else
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Distributed/CollectiveWatchdog.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

namespace dlc {

namespace {

class MPIProcessGroup final : public ProcessGroup {
public:
  MPIProcessGroup() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        throw Error("dist: MPI_Init_thread failed");
      if (provided < MPI_THREAD_MULTIPLE)
        throw UnsupportedError("dist: this MPI library does not allow calls from several "
                               "threads at once (MPI_THREAD_MULTIPLE), which dlc's queues "
                               "need");
      // After the engine drained its queues (the main thread's end waits for them
      // before exit handlers run), so no sum is still in flight.
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized)
          MPI_Finalize();
      });
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &data_);
    MPI_Comm_dup(MPI_COMM_WORLD, &control_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &localRank_);
    MPI_Comm_size(local, &localSize_);
    MPI_Comm_free(&local);
    for (MPI_Comm comm : {data_, control_})
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, size_t(length));
    description_ = text.substr(0, text.find_first_of(",\n"));
    // Read before any collective: a bad value is an error of this call, not of a sum.
    const auto timeout = std::chrono::milliseconds(
        static_cast<long long>(collective_timeout_seconds() * 1000));
    watchdog_.emplace(rank_, size_, timeout, [](const std::string &message) {
      std::fprintf(stderr, "%s\n", message.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    });
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return localRank_; }
  int local_size() const override { return localSize_; }
  std::string description() const override { return description_; }

  void barrier(Channel channel) override {
    CollectiveWatchdog::Watch watch(*watchdog_, "MPI_Barrier", int(channel));
    check(MPI_Barrier(comm(channel)), "MPI_Barrier");
  }

  void broadcast(void *data, size_t bytes, int root, Channel channel) override {
    auto *at = static_cast<char *>(data);
    CollectiveWatchdog::Watch watch(*watchdog_, "MPI_Bcast", int(channel));
    for (size_t done = 0; done < bytes;) { // MPI counts in int
      int n = int(std::min<size_t>(bytes - done, INT_MAX));
      check(MPI_Bcast(at + done, n, MPI_BYTE, root, comm(channel)), "MPI_Bcast");
      done += size_t(n);
    }
  }

  void all_gather(const void *in, void *out, size_t bytes, Channel channel) override {
    if (bytes > size_t(INT_MAX))
      throw Error("dist: all_gather of " + std::to_string(bytes) +
                  " bytes per process; at most 2 GiB at a time");
    CollectiveWatchdog::Watch watch(*watchdog_, "MPI_Allgather", int(channel));
    check(MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, comm(channel)),
          "MPI_Allgather");
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; this says so to the compiler
  }

private:
  MPI_Comm comm(Channel channel) const { return channel == Channel::data ? data_ : control_; }

  void check(int status, const char *call) const {
    if (status == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw Error("dist: " + std::string(call) + " failed on process " + std::to_string(rank_) +
                " of " + std::to_string(size_) + ": " + std::string(text, size_t(length)) +
                " (a process of the job may have died)");
  }

  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  std::string description_;
  std::optional<CollectiveWatchdog> watchdog_; ///< a peer that hangs ends the job
};

} // namespace

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  return std::make_unique<MPIProcessGroup>();
}

} // namespace dlc
