//===- OneDNNPrimitiveCache.cpp - per-thread oneDNN engine, stream and primitive cache ===//
#include "OneDNNPrimitiveCache.h"

#include "dlc/Runtime/CPU/NNKernels.h"

#include <cstring>
#include <memory>
#include <stdexcept>

namespace dlc::cpu_kernels::onednn {
namespace detail {

namespace {

// Everything oneDNN-side that a thread owns. The kernels are declared after the engine
// so that they are destroyed first.
struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // unique_ptr keeps each kernel at a fixed address while the map rehashes, so callers
  // may hold the reference cachedKernel returned.
  std::unordered_map<std::string, std::unique_ptr<CachedKernel>> kernels;
};

ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

} // namespace

const dnnl::engine &threadEngine() { return threadState().engine; }

dnnl::memory CachedKernel::bindUserBuffer(const dnnl::memory::desc &md) {
  userBuffers.push_back(dnnl::memory(md, threadEngine(), DNNL_MEMORY_NONE));
  return userBuffers.back();
}

dnnl::memory CachedKernel::ownBuffer(const dnnl::memory::desc &md) {
  ownedBuffers.emplace_back(md, threadEngine());
  // Zeroed once, so a buffer oneDNN merely requires but never reads holds no garbage.
  std::memset(ownedBuffers.back().get_data_handle(), 0, md.get_size());
  return ownedBuffers.back();
}

void CachedKernel::addStep(const dnnl::primitive &primitive, Args args) {
  steps.emplace_back(primitive, std::move(args));
}

void CachedKernel::run(std::initializer_list<const void *> buffers) {
  if (buffers.size() != userBuffers.size())
    throw std::logic_error("oneDNN kernel run with " + std::to_string(buffers.size()) +
                           " buffers but built with " + std::to_string(userBuffers.size()));
  size_t i = 0;
  for (const void *buffer : buffers)
    // oneDNN takes a mutable handle for every memory; it only reads the inputs.
    userBuffers[i++].set_data_handle(const_cast<void *>(buffer));
  dnnl::stream &stream = threadState().stream;
  for (auto &[primitive, args] : steps)
    primitive.execute(stream, args);
  stream.wait();
}

CachedKernel &cachedKernel(const std::string &key,
                           const std::function<void(CachedKernel &)> &build) {
  auto &kernels = threadState().kernels;
  if (auto it = kernels.find(key); it != kernels.end())
    return *it->second;
  auto kernel = std::make_unique<CachedKernel>();
  try {
    build(*kernel);
  } catch (const dnnl::error &e) {
    throw std::runtime_error("oneDNN could not build kernel " + key + ": " + e.what());
  }
  return *kernels.emplace(key, std::move(kernel)).first->second;
}

int64_t threadPrimitiveCount() {
  int64_t count = 0;
  for (const auto &entry : threadState().kernels)
    count += int64_t(entry.second->primitiveCount());
  return count;
}

std::string geometryKey(const char *op, std::initializer_list<int64_t> fields) {
  std::string key = op;
  char separator = ':';
  for (int64_t field : fields) {
    key += separator;
    key += std::to_string(field);
    separator = ',';
  }
  return key;
}

} // namespace detail

int64_t cached_primitive_count() { return detail::threadPrimitiveCount(); }

} // namespace dlc::cpu_kernels::onednn
