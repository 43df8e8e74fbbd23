//===- EmulatedContext.cpp - what the kernel files need of CudaContext.cpp ---===//
//
// Built like the emulated kernel files (namespace dlc::cuda renamed, see CMakeLists), in
// place of CudaContext.cpp, whose streams, events and library handles need a GPU. One
// context, GPU 0; launches finish before they return, so a workspace is free to reuse
// at once and the checks a kernel leaves for after its task wait in the context until the
// test takes them (take_completion_checks), as the engine does.
//
//===----------------------------------------------------------------------===//
#include "CudaKernels.h"

#include <cstring>
#include <map>
#include <string>

namespace dlc::cuda {

namespace {

thread_local const char *currentOp = nullptr;

std::map<std::string, KernelFn> &emulatedKernels() {
  static std::map<std::string, KernelFn> table;
  return table;
}

/// A fresh host block of `bytes`, filled with 0xff (NaN as float or double) so that
/// a kernel reading scratch space it did not write shows in its results.
void *poisoned(std::shared_ptr<Storage> &block, size_t bytes) {
  if (!block || block->bytes() < bytes)
    block = allocate(cpu(0), std::max<size_t>(bytes, 1));
  std::memset(block->data(), 0xff, block->bytes());
  return block->data();
}

} // namespace

void check(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    throw Error(std::string(call) + " failed in the CUDA emulator (error " +
                std::to_string(int(status)) + ") in " + (currentOp ? currentOp : "no op"));
}

void check_launch(const char *) {} // emulated launches throw instead

OpScope::OpScope(const char *op) : previous_(currentOp) { currentOp = op; }
OpScope::~OpScope() { currentOp = previous_; }
const char *current_op() { return currentOp ? currentOp : ""; }

DeviceContext::DeviceContext(int ordinal) : ordinal_(ordinal) {}
void *DeviceContext::workspace(size_t bytes) { return poisoned(workspace_, bytes); }
void *DeviceContext::scratch(size_t bytes) { return poisoned(scratch_, bytes); }
void DeviceContext::after_completion(std::function<void()> check) {
  checks_.push_back(std::move(check));
}
std::vector<std::function<void()>> DeviceContext::take_completion_checks() {
  return std::exchange(checks_, {});
}

DeviceContext &current_context() {
  static DeviceContext *gpu0 = new DeviceContext(0);
  return *gpu0;
}

ErrorFlag::ErrorFlag() : storage_(allocate(cpu(0), sizeof(int))) {
  *static_cast<int *>(storage_->data()) = 0;
}

// cuBLAS and cuDNN calls need a GPU: their kernels are left out of the emulated table.
void register_blas_kernels() {}
void register_cudnn_kernels() {}

void register_gpu_kernel(const char *op, KernelFn fn) { emulatedKernels()[op] = fn; }

/// The emulated GPU kernel of `op`, or null (declared in the emulator's tests).
KernelFn emulated_kernel(const std::string &op) {
  if (emulatedKernels().empty())
    register_cuda_kernels();
  auto it = emulatedKernels().find(op);
  return it == emulatedKernels().end() ? nullptr : it->second;
}

} // namespace dlc::cuda
