//===- EmulatedRuntime.cpp - the CUDA runtime calls dlc makes, on the CPU ----===//
//
// Emulated GPUs for the GPU tests on machines without one. Linked into a test program
// beside dlc's real runtime, these definitions stand in for libcudart's: the program's
// own symbols win at link time. A stream is a thread that runs what was put in it in
// order (kernels through CudaEmulator.h's launches, copies, memsets, event records and
// waits), so work really runs behind the host's back and in parallel across streams
// and GPUs, as on a GPU, and ordering mistakes show as wrong values or hangs.
//
// What follows CUDA's documented semantics because dlc relies on it:
// - cudaMemcpyAsync from pageable host memory reads the source before it returns (the
//   driver stages it); to pageable memory it returns once the copy is done; pinned
//   memory (cudaHostAlloc) is read and written when the stream gets there.
// - cudaStreamWaitEvent and cudaEventSynchronize wait for the event's latest record at
//   the time of the call (each record has its own state); an event never recorded has
//   passed. An event is recorded on a stream of the device it was created on.
// - cudaFree waits for the streams of the block's device; cudaFreeHost for every stream.
// - Device memory starts as 0xff bytes (NaN as floats): reading what nobody wrote shows.
// - Stream capture (cudaStreamBeginCapture ... cudaStreamEndCapture) records what is put
//   in the stream instead of running it; cudaGraphLaunch runs the recording, in order, as
//   one piece of the stream's work. Stricter than CUDA: inside a capture, any wait
//   (cudaStreamSynchronize, events) and any copy touching pageable memory invalidates it.
// The number of GPUs is DLC_EMULATED_GPUS (default 2), each with 132 multiprocessors and
// DLC_EMULATED_GPU_MEMORY_MIB of memory (default 16384).
//
//===----------------------------------------------------------------------===//
#include "CudaEmulator.h"

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "per-thread default streams rename the runtime calls (_ptsz); the emulator defines the plain ones"
#endif

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

// The runtime's opaque handle types, defined here.

/// What a stream capture recorded: the jobs, in stream order.
struct CUgraph_st {
  int device = 0;
  std::vector<std::function<void()>> jobs;
  bool invalid = false; // an operation a capture cannot hold was attempted
};

struct CUgraphExec_st {
  int device = 0;
  std::shared_ptr<const std::vector<std::function<void()>>> jobs; // shared with launches
};

struct CUstream_st {
  int device = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> jobs;
  uint64_t queued = 0, finished = 0; // jobs put in, jobs done
  std::unique_ptr<CUgraph_st> capture; // set while the stream is being captured
};

/// One cudaEventRecord: passed once its stream has reached it.
struct EventRecord {
  bool passed = false;
};

struct CUevent_st {
  int device = 0;
  std::mutex mutex;
  std::condition_variable passed;
  // The latest record; waits take the one current at their call, as CUDA's do (a later
  // record passing on another stream does not release them). Null: never recorded.
  std::shared_ptr<EventRecord> latest;
};

namespace {

/// Environment integer, or `fallback`.
long envOr(const char *name, long fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::strtol(value, nullptr, 10) : fallback;
}

int deviceCount() {
  static int count = int(envOr("DLC_EMULATED_GPUS", 2));
  return count;
}

size_t deviceBytes() {
  static size_t bytes = size_t(envOr("DLC_EMULATED_GPU_MEMORY_MIB", 16384)) << 20;
  return bytes;
}

/// RuntimeCalls, updated from every thread.
struct AtomicCalls {
  std::atomic<long> kernelLaunches{0}, copies{0}, blockingCopies{0}, mallocs{0}, frees{0},
      streamSynchronizes{0}, eventRecords{0}, eventSynchronizes{0}, streamWaits{0},
      allReduces{0}, graphLaunches{0}, graphInstantiations{0};
};
AtomicCalls calls;

thread_local int currentDevice = 0;
thread_local cudaError_t lastError = cudaSuccess;

cudaError_t fail(cudaError_t error) {
  lastError = error;
  return error;
}

struct Allocation {
  size_t bytes;
  int device; // -1: pinned host memory
};

/// Every live cudaMalloc and cudaHostAlloc block, by address; streams (never destroyed,
/// like the runtime's objects at exit).
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> blocks;
  std::vector<size_t> inUse = std::vector<size_t>(size_t(deviceCount()), 0);
  std::vector<CUstream_st *> streams;
  std::set<std::pair<int, int>> peerAccess;
};

Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

enum class Memory { pageable, pinned, device };

Memory kindOf(const void *pointer) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto address = reinterpret_cast<uintptr_t>(pointer);
  auto it = r.blocks.upper_bound(address);
  if (it == r.blocks.begin())
    return Memory::pageable;
  --it;
  if (address >= it->first + it->second.bytes)
    return Memory::pageable;
  return it->second.device < 0 ? Memory::pinned : Memory::device;
}

void runStream(CUstream_st *stream) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(stream->mutex);
      stream->changed.wait(lock, [&] { return !stream->jobs.empty(); });
      job = std::move(stream->jobs.front());
    }
    try {
      job();
    } catch (const std::exception &e) {
      // A fault inside work already queued: on a GPU the context would be lost.
      std::fprintf(stderr, "emulated GPU %d: a stream's work failed: %s\n", stream->device,
                   e.what());
      std::abort();
    }
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->jobs.pop_front();
    ++stream->finished;
    stream->changed.notify_all();
  }
}

/// Puts `job` in `stream` and returns its position (wait for it with waitFor). A stream
/// being captured records the job instead (its position does not move).
uint64_t enqueue(CUstream_st *stream, std::function<void()> job) {
  std::lock_guard<std::mutex> lock(stream->mutex);
  if (stream->capture) {
    stream->capture->jobs.push_back(std::move(job));
    return stream->queued;
  }
  stream->jobs.push_back(std::move(job));
  stream->changed.notify_all();
  return ++stream->queued;
}

/// Whether `stream` is being captured; if so, the capture is invalidated (the caller
/// then fails with cudaErrorStreamCaptureUnsupported, as CUDA fails what it cannot record).
bool invalidatesCapture(CUstream_st *stream) {
  std::lock_guard<std::mutex> lock(stream->mutex);
  if (stream->capture)
    stream->capture->invalid = true;
  return stream->capture != nullptr;
}

void waitFor(CUstream_st *stream, uint64_t position) {
  std::unique_lock<std::mutex> lock(stream->mutex);
  stream->changed.wait(lock, [&] { return stream->finished >= position; });
}

void synchronize(CUstream_st *stream) {
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    position = stream->queued;
  }
  waitFor(stream, position);
}

/// Waits for the streams of `device` (every stream for -1).
void synchronizeAll(int device) {
  std::vector<CUstream_st *> streams;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    streams = r.streams;
  }
  for (CUstream_st *s : streams)
    if (device < 0 || s->device == device)
      synchronize(s);
}

/// The null stream: one per device, for calls that pass none.
CUstream_st *streamOrDefault(cudaStream_t stream);

CUstream_st *newStream(int device) {
  auto *stream = new CUstream_st;
  stream->device = device;
  std::thread(runStream, stream).detach();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams.push_back(stream);
  return stream;
}

CUstream_st *streamOrDefault(cudaStream_t stream) {
  if (stream)
    return stream;
  static std::vector<CUstream_st *> defaults = [] {
    std::vector<CUstream_st *> made;
    for (int d = 0; d < deviceCount(); ++d)
      made.push_back(newStream(d));
    return made;
  }();
  return defaults.at(size_t(currentDevice));
}

/// A copy in `stream`'s order with CUDA's rules for pageable memory (see the top).
cudaError_t copyInStream(void *target, const void *source, size_t bytes, cudaStream_t stream) {
  if (bytes == 0)
    return cudaSuccess;
  CUstream_st *s = streamOrDefault(stream);
  Memory from = kindOf(source), to = kindOf(target);
  if ((from == Memory::pageable || to == Memory::pageable) && invalidatesCapture(s))
    return fail(cudaErrorStreamCaptureUnsupported); // a graph cannot hold pageable copies
  ++calls.copies;
  calls.blockingCopies += to == Memory::pageable;
  if (from == Memory::pageable) { // staged: the caller may reuse the source at once
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char *>(source), static_cast<const unsigned char *>(source) + bytes);
    uint64_t position =
        enqueue(s, [target, staged] { std::memcpy(target, staged->data(), staged->size()); });
    if (to == Memory::pageable)
      waitFor(s, position);
    return cudaSuccess;
  }
  uint64_t position = enqueue(s, [target, source, bytes] { std::memcpy(target, source, bytes); });
  if (to == Memory::pageable)
    waitFor(s, position); // returns once the copy is done
  return cudaSuccess;
}

const char *errorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
  case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  case cudaErrorIllegalState: return "cudaErrorIllegalState";
  default: return "cudaErrorUnknown";
  }
}

} // namespace

void dlc_emu::submit(cudaStream_t stream, std::function<void()> job) {
  ++calls.kernelLaunches;
  enqueue(streamOrDefault(stream), std::move(job));
}

dlc_emu::RuntimeCalls dlc_emu::runtime_calls() {
  RuntimeCalls r;
  r.kernelLaunches = calls.kernelLaunches;
  r.copies = calls.copies;
  r.blockingCopies = calls.blockingCopies;
  r.mallocs = calls.mallocs;
  r.frees = calls.frees;
  r.streamSynchronizes = calls.streamSynchronizes;
  r.eventRecords = calls.eventRecords;
  r.eventSynchronizes = calls.eventSynchronizes;
  r.streamWaits = calls.streamWaits;
  r.allReduces = calls.allReduces;
  r.graphLaunches = calls.graphLaunches;
  r.graphInstantiations = calls.graphInstantiations;
  return r;
}

void dlc_emu::count_all_reduce() { ++calls.allReduces; }

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
  *count = deviceCount();
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= deviceCount())
    return fail(cudaErrorInvalidDevice);
  currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device) {
  *device = currentDevice;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int device) {
  if (device < 0 || device >= deviceCount())
    return fail(cudaErrorInvalidDevice);
  if (attribute != cudaDevAttrMultiProcessorCount)
    return fail(cudaErrorInvalidValue);
  *value = 132;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return std::exchange(lastError, cudaSuccess); }
const char *cudaGetErrorName(cudaError_t error) { return errorName(error); }
const char *cudaGetErrorString(cudaError_t error) { return errorName(error); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int) {
  *stream = newStream(currentDevice);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  ++calls.streamSynchronizes;
  if (invalidatesCapture(streamOrDefault(stream)))
    return fail(cudaErrorStreamCaptureUnsupported);
  synchronize(streamOrDefault(stream));
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
  *event = new CUevent_st;
  (*event)->device = currentDevice;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  ++calls.eventRecords;
  CUstream_st *s = streamOrDefault(stream);
  if (s->device != event->device)
    return fail(cudaErrorInvalidResourceHandle); // an event of another GPU
  if (invalidatesCapture(s))
    return fail(cudaErrorStreamCaptureUnsupported);
  auto record = std::make_shared<EventRecord>();
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    event->latest = record;
  }
  enqueue(s, [event, record] {
    std::lock_guard<std::mutex> lock(event->mutex);
    record->passed = true;
    event->passed.notify_all();
  });
  return cudaSuccess;
}

/// The record a wait issued now waits for (null: none, it has passed).
static std::shared_ptr<EventRecord> currentRecord(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(event->mutex);
  return event->latest;
}

static void waitForRecord(cudaEvent_t event, const std::shared_ptr<EventRecord> &record) {
  if (!record)
    return;
  std::unique_lock<std::mutex> lock(event->mutex);
  event->passed.wait(lock, [&] { return record->passed; });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  ++calls.eventSynchronizes;
  waitForRecord(event, currentRecord(event));
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  ++calls.streamWaits;
  if (invalidatesCapture(streamOrDefault(stream)))
    return fail(cudaErrorStreamCaptureUnsupported);
  std::shared_ptr<EventRecord> record = currentRecord(event);
  enqueue(streamOrDefault(stream), [event, record] { waitForRecord(event, record); });
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  ++calls.mallocs;
  if (bytes > deviceBytes())
    return fail(cudaErrorMemoryAllocation); // before rounding, which could wrap around
  Registry &r = registry();
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.inUse[size_t(currentDevice)] + rounded > deviceBytes())
      return fail(cudaErrorMemoryAllocation);
    r.inUse[size_t(currentDevice)] += rounded;
  }
  void *block = std::aligned_alloc(256, rounded);
  if (!block) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.inUse[size_t(currentDevice)] -= rounded;
    return fail(cudaErrorMemoryAllocation);
  }
  std::memset(block, 0xff, rounded);
  std::lock_guard<std::mutex> lock(r.mutex);
  r.blocks[reinterpret_cast<uintptr_t>(block)] = {rounded, currentDevice};
  *pointer = block;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned int) {
  ++calls.mallocs;
  if (bytes > (size_t(1) << 40))
    return fail(cudaErrorMemoryAllocation);
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  void *block = std::aligned_alloc(256, rounded);
  if (!block)
    return fail(cudaErrorMemoryAllocation);
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.blocks[reinterpret_cast<uintptr_t>(block)] = {rounded, -1};
  *pointer = block;
  return cudaSuccess;
}

static cudaError_t release(void *pointer, bool pinned) {
  if (!pointer)
    return cudaSuccess;
  ++calls.frees;
  Registry &r = registry();
  int device;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.blocks.find(reinterpret_cast<uintptr_t>(pointer));
    if (it == r.blocks.end() || (it->second.device < 0) != pinned)
      return fail(cudaErrorInvalidValue);
    device = it->second.device;
  }
  synchronizeAll(device); // as cudaFree does: the block's device (every one for pinned)
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.blocks.find(reinterpret_cast<uintptr_t>(pointer));
  if (!pinned)
    r.inUse[size_t(it->second.device)] -= it->second.bytes;
  r.blocks.erase(it);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaFree(void *pointer) { return release(pointer, false); }
cudaError_t cudaFreeHost(void *pointer) { return release(pointer, true); }

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  *total = deviceBytes();
  *free = deviceBytes() - r.inUse[size_t(currentDevice)];
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *possible, int device, int peer) {
  if (device < 0 || device >= deviceCount() || peer < 0 || peer >= deviceCount())
    return fail(cudaErrorInvalidDevice);
  *possible = envOr("DLC_EMULATED_PEER_ACCESS", 1) != 0 && device != peer;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.peerAccess.insert({currentDevice, peer}).second)
    return fail(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *target, const void *source, size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  return copyInStream(target, source, bytes, stream);
}

cudaError_t cudaMemcpyPeerAsync(void *target, int, const void *source, int, size_t bytes,
                                cudaStream_t stream) {
  return copyInStream(target, source, bytes, stream);
}

cudaError_t cudaMemcpy2DAsync(void *target, size_t targetPitch, const void *source,
                              size_t sourcePitch, size_t width, size_t height, cudaMemcpyKind,
                              cudaStream_t stream) {
  if (width > targetPitch || width > sourcePitch)
    return fail(cudaErrorInvalidPitchValue);
  if (kindOf(source) != Memory::device || kindOf(target) != Memory::device)
    return fail(cudaErrorInvalidValue); // dlc makes 2D copies within a GPU only
  enqueue(streamOrDefault(stream), [=] {
    for (size_t row = 0; row < height; ++row)
      std::memcpy(static_cast<char *>(target) + row * targetPitch,
                  static_cast<const char *>(source) + row * sourcePitch, width);
  });
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *target, int value, size_t bytes, cudaStream_t stream) {
  enqueue(streamOrDefault(stream), [=] { std::memset(target, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!stream)
    return fail(cudaErrorStreamCaptureUnsupported); // the null stream cannot be captured
  std::lock_guard<std::mutex> lock(stream->mutex);
  if (stream->capture)
    return fail(cudaErrorIllegalState);
  stream->capture = std::make_unique<CUgraph_st>();
  stream->capture->device = stream->device;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  *graph = nullptr;
  if (!stream)
    return fail(cudaErrorIllegalState);
  std::unique_ptr<CUgraph_st> captured;
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    captured = std::move(stream->capture);
  }
  if (!captured)
    return fail(cudaErrorIllegalState);
  if (captured->invalid)
    return fail(cudaErrorStreamCaptureInvalidated);
  *graph = captured.release();
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status) {
  CUstream_st *s = streamOrDefault(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  *status = !s->capture                ? cudaStreamCaptureStatusNone
            : s->capture->invalid      ? cudaStreamCaptureStatusInvalidated
                                       : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
  if (!graph)
    return fail(cudaErrorInvalidValue);
  ++calls.graphInstantiations;
  *exec = new CUgraphExec_st;
  (*exec)->device = graph->device;
  (*exec)->jobs = std::make_shared<const std::vector<std::function<void()>>>(graph->jobs);
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  CUstream_st *s = streamOrDefault(stream);
  if (!exec || s->device != exec->device)
    return fail(cudaErrorInvalidValue);
  if (invalidatesCapture(s))
    return fail(cudaErrorStreamCaptureUnsupported); // no graphs inside graphs here
  ++calls.graphLaunches;
  enqueue(s, [jobs = exec->jobs] {
    for (const auto &job : *jobs)
      job();
  });
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec; // launches in flight keep the jobs
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

} // extern "C"
