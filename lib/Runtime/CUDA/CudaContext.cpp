//===- CudaContext.cpp - per-GPU streams, handles, fences and error checks ---===//
#include "CudaContext.h"
#include "CudaEngine.h"
#include "CudaOptions.h"

#include "dlc/Core/Error.h"

#include <atomic>
#include <unordered_map>

namespace dlc::cuda {

namespace {

thread_local const char *currentOp = nullptr;
thread_local const char *lastOp = nullptr;
thread_local DeviceContext *boundContext = nullptr;

std::string where() {
  int device = -1;
  std::string text;
  if (boundContext)
    text = gpu(boundContext->ordinal()).str();
  else if (cudaGetDevice(&device) == cudaSuccess)
    text = gpu(device).str();
  else
    text = "an unknown GPU";
  if (currentOp && *currentOp)
    text += std::string(" in ") + currentOp;
  return text;
}

[[noreturn]] void fail(const std::string &call, const std::string &what, bool outOfMemory) {
  std::string message = call + " failed on " + where() + ": " + what;
  if (outOfMemory)
    throw OutOfMemoryError(message);
  throw Error(message);
}

std::atomic<bool> tf32Enabled{false};

} // namespace

void check(cudaError_t status, const char *call) {
  if (status == cudaSuccess)
    return;
  cudaGetLastError(); // clear a non-sticky error so that later calls start clean
  fail(call, std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")",
       status == cudaErrorMemoryAllocation);
}

void check(cudnnStatus_t status, const char *call) {
  if (status == CUDNN_STATUS_SUCCESS)
    return;
  char detail[256] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  fail(call, std::string(cudnnGetErrorString(status)) + (detail[0] ? std::string(": ") + detail : ""),
       status == CUDNN_STATUS_ALLOC_FAILED);
}

void check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  fail(call, std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")",
       status == CUBLAS_STATUS_ALLOC_FAILED);
}

void check_launch(const char *kernel) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    fail(std::string("launching ") + kernel,
         std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")", false);
}

OpScope::OpScope(const char *op) : previous_(currentOp) { currentOp = lastOp = op; }
OpScope::~OpScope() { currentOp = previous_; }
const char *current_op() { return currentOp ? currentOp : ""; }

void set_tf32(bool enabled) { tf32Enabled = enabled; }
bool tf32() { return tf32Enabled; }

//===----------------------------------------------------------------------===//
// DeviceContext
//===----------------------------------------------------------------------===//

DeviceContext::DeviceContext(int ordinal) : ordinal_(ordinal) {
  DeviceGuard guard(ordinal);
  // Non-blocking: the legacy default stream must not serialize dlc's queues.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  active_ = stream_;
}

void DeviceContext::use_stream(int kind) {
  if (kind == kCopyStream && !copyStream_) {
    DeviceGuard guard(ordinal_);
    check(cudaStreamCreateWithFlags(&copyStream_, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags (copy stream)");
  }
  active_ = kind == kCopyStream ? copyStream_ : stream_;
}

cudnnHandle_t DeviceContext::cudnn() {
  if (!on_compute_stream())
    throw Error("internal error: a cuDNN call in a task on the copy stream of " +
                device().str());
  if (!cudnn_) {
    check(cudnnCreate(&cudnn_), "cudnnCreate");
    check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
  }
  return cudnn_;
}

cublasHandle_t DeviceContext::cublas() {
  if (!on_compute_stream())
    throw Error("internal error: a cuBLAS call in a task on the copy stream of " +
                device().str());
  if (!cublas_) {
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
  }
  // Strict float32 unless TF32 was asked for (results then match the CPU to 1e-4).
  // 16-bit products accumulate in float32 throughout: no split-K reduction in the output's
  // 16-bit type.
  auto mode = cublasMath_t((tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) |
                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  check(cublasSetMathMode(cublas_, mode), "cublasSetMathMode");
  return cublas_;
}

namespace {

/// At least `bytes` in `buffer`, grown when needed; the old block is released only after
/// the current task's fence (kernels issued earlier may still use it).
void *grownBuffer(DeviceContext &ctx, std::shared_ptr<Storage> &buffer, size_t bytes) {
  // Reuse is safe in the compute stream's order only.
  if (!ctx.on_compute_stream())
    throw Error("internal error: a task on the copy stream of " + ctx.device().str() +
                " asked for the workspace");
  if (bytes == 0)
    return nullptr;
  if (!buffer || buffer->bytes() < bytes) {
    std::shared_ptr<Storage> grown = allocate(ctx.device(), bytes); // may throw: keep the old
    if (buffer)
      ctx.after_completion([old = std::move(buffer)] {});
    buffer = std::move(grown);
  }
  return buffer->data();
}

} // namespace

void *DeviceContext::workspace(size_t bytes) { return grownBuffer(*this, workspace_, bytes); }
void *DeviceContext::scratch(size_t bytes) { return grownBuffer(*this, scratch_, bytes); }

cudaEvent_t DeviceContext::record_fence() {
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    if (!freeEvents_.empty()) {
      event = freeEvents_.back();
      freeEvents_.pop_back();
    }
  }
  // Blocking sync: the completion thread sleeps instead of spinning on a shared core.
  if (!event)
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync),
          "cudaEventCreateWithFlags");
  cudaError_t status = cudaEventRecord(event, active_);
  if (status != cudaSuccess) {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    freeEvents_.push_back(event);
  }
  check(status, "cudaEventRecord");
  return event;
}

void DeviceContext::synchronize_streams() {
  for (cudaStream_t stream : {stream_, copyStream_})
    if (stream && cudaStreamSynchronize(stream) != cudaSuccess)
      cudaGetLastError();
}

void DeviceContext::recycle(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(eventsMutex_);
  freeEvents_.push_back(event);
}

void DeviceContext::wait_fence(cudaEvent_t fence, const std::string &op) {
  cudaError_t status = cudaEventSynchronize(fence);
  if (status != cudaSuccess)
    throw Error("a kernel failed on " + device().str() + (op.empty() ? "" : " in " + op) +
                " (reported asynchronously by cudaEventSynchronize): " +
                cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void DeviceContext::after_completion(std::function<void()> check) {
  checks_.push_back(std::move(check));
}

std::vector<std::function<void()>> DeviceContext::take_completion_checks() {
  return std::exchange(checks_, {});
}

DeviceContext &context(int ordinal) {
  static std::mutex *mutex = new std::mutex;
  static auto *contexts = new std::unordered_map<int, DeviceContext *>;
  std::lock_guard<std::mutex> lock(*mutex);
  DeviceContext *&slot = (*contexts)[ordinal];
  if (!slot)
    slot = new DeviceContext(ordinal);
  return *slot;
}

void bind_worker_thread(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  boundContext = &context(ordinal);
}

DeviceContext &current_context() {
  if (!boundContext)
    throw Error(std::string("a GPU kernel") + (currentOp ? std::string(" (") + currentOp + ")" : "") +
                " ran outside a GPU queue's worker thread");
  return *boundContext;
}

void synchronize_if_gpu_worker() {
  if (boundContext)
    check(cudaStreamSynchronize(boundContext->stream()), "cudaStreamSynchronize (DLC_PROFILE)");
}

DeviceGuard::DeviceGuard(int ordinal) {
  check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != ordinal)
    check(cudaSetDevice(ordinal), "cudaSetDevice");
  else
    previous_ = -1;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0)
    cudaSetDevice(previous_);
}

ErrorFlag::ErrorFlag() : storage_(allocate(cpu_pinned(0), sizeof(int))) {
  *static_cast<volatile int *>(storage_->data()) = 0;
}

//===----------------------------------------------------------------------===//
// The engine's side (CudaEngine.h)
//===----------------------------------------------------------------------===//

void start_worker(int ordinal) { bind_worker_thread(ordinal); }

// The worker's own context (bound to its thread): no lookup under the contexts' lock.
void begin_task(int, int stream) { current_context().use_stream(stream); }

void wait_on_device(int, const std::shared_ptr<void> &fence) {
  check(cudaStreamWaitEvent(current_context().stream(), static_cast<cudaEvent_t>(fence.get()), 0),
        "cudaStreamWaitEvent");
}

namespace {

/// Makes the compute stream current again when the worker is done with a task.
struct BackToComputeStream {
  DeviceContext &ctx;
  ~BackToComputeStream() { ctx.use_stream(kComputeStream); }
};

} // namespace

IssuedTask issue(int) {
  DeviceContext &ctx = current_context();
  BackToComputeStream reset{ctx};
  IssuedTask task;
  // The fence first: if recording it fails, the checks (and the memory they keep) stay
  // for abandon_issue, which waits for the stream before dropping them.
  DeviceContext *owner = &ctx; // contexts are never destroyed
  task.fence = std::shared_ptr<void>(static_cast<void *>(ctx.record_fence()), [owner](void *event) {
    owner->recycle(static_cast<cudaEvent_t>(event));
  });
  task.op = lastOp ? lastOp : "";
  lastOp = nullptr;
  task.checks = ctx.take_completion_checks();
  return task;
}

void abandon_issue(int ordinal) {
  DeviceContext &ctx = context(ordinal);
  lastOp = nullptr;
  // Without a fence nothing tells when the launches have finished: wait for both streams
  // here (the task may have used either), so that the task's buffers and what it
  // deferred (a replaced workspace) are released only after.
  ctx.synchronize_streams();
  ctx.use_stream(kComputeStream);
  ctx.take_completion_checks();
}

std::exception_ptr complete(int ordinal, IssuedTask &task) {
  try {
    context(ordinal).wait_fence(static_cast<cudaEvent_t>(task.fence.get()), task.op);
  } catch (...) {
    return std::current_exception();
  }
  // Every check runs, the task ends with the first error: a check also clears its flag,
  // which a replayed graph sets again in the next step.
  std::exception_ptr first;
  for (auto &check : task.checks) {
    try {
      check();
    } catch (...) {
      if (!first)
        first = std::current_exception();
    }
  }
  return first;
}

} // namespace dlc::cuda
