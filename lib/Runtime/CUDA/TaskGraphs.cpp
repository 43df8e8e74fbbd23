//===- TaskGraphs.cpp - a task's launches recorded once, replayed (CUDA graphs) -===//
//
// The CUDA side of Program's graphed runs (TaskGraphs in Program.h). A capture records
// the launches on the task's compute stream in relaxed mode (the kernels have filled
// their caches in an earlier, launched run, but an allocator miss must not break the
// recording), and instantiates the graph. What the recorded kernels rely on beyond
// their arguments stays with the recording: the context's workspace and scratch
// buffers as they were (a later, larger request replaces them in the context, not
// here), and the checks the kernels registered (the error flags they set), which every
// replay registers again for its task.
//
//===----------------------------------------------------------------------===//
#include "CudaContext.h"
#include "CudaEngine.h"

#include "dlc/Core/Error.h"
#include "dlc/Runtime/Program/Program.h"

#include <utility>

namespace dlc::cuda {

namespace {

struct Recording {
  cudaGraphExec_t exec = nullptr;
  std::vector<std::function<void()>> checks;
  std::vector<std::shared_ptr<Storage>> buffers;
  ~Recording() {
    if (exec)
      cudaGraphExecDestroy(exec);
  }
};

/// Ends a capture that went wrong, dropping what it recorded; the stream is usable again.
void discardCapture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream, &graph);
  if (graph)
    cudaGraphDestroy(graph);
  cudaGetLastError();
}

std::shared_ptr<void> capture(int ordinal, const std::function<void()> &launches) {
  DeviceContext &ctx = current_context();
  if (ctx.ordinal() != ordinal || !ctx.on_compute_stream())
    throw Error("internal error: a graph of " + gpu(ordinal).str() +
                " recorded outside its compute stream's task");
  cudaStream_t stream = ctx.stream();
  // Checks that the task registered before the recording belong to the task.
  std::vector<std::function<void()>> before = ctx.take_completion_checks();
  auto restore = [&] {
    for (auto &check : before)
      ctx.after_completion(std::move(check));
  };
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  try {
    launches();
  } catch (...) {
    discardCapture(stream);
    ctx.take_completion_checks(); // nothing they check has run
    restore();
    throw;
  }
  auto recording = std::make_shared<Recording>();
  recording->checks = ctx.take_completion_checks();
  restore();
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess) {
    discardCapture(stream);
    throw Error(std::string("recording the launches of ") + gpu(ordinal).str() +
                " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
                ")");
  }
  status = cudaGraphInstantiate(&recording->exec, graph, 0);
  cudaGraphDestroy(graph);
  check(status, "cudaGraphInstantiate");
  recording->buffers = ctx.scratch_buffers();
  return recording;
}

void replay(const std::shared_ptr<void> &graph, int ordinal) {
  DeviceContext &ctx = current_context();
  auto recording = std::static_pointer_cast<Recording>(graph);
  check(cudaGraphLaunch(recording->exec, ctx.stream()), "cudaGraphLaunch");
  for (const auto &check : recording->checks)
    ctx.after_completion(check);
  ctx.after_completion([recording] {}); // the graph outlives its launch
  (void)ordinal;
}

} // namespace

void register_task_graphs_backend() {
  TaskGraphs graphs;
  graphs.capture = capture;
  graphs.replay = replay;
  register_task_graphs(DeviceKind::gpu, graphs);
}

} // namespace dlc::cuda
