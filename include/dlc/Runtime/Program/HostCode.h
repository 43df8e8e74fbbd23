//===- HostCode.h - generated host kernels as a shared object, without LLVM ---===//
//
// A model file carries the native code the compiler generated for its fused host
// regions (docs/design/model-file.md). When the file is written, the programs'
// relocatable objects (position-independent, as the compiler emits them) are linked
// into one shared object by the system's C compiler driver (`cc -shared`, or the one
// DLC_LINKER names), the way AOTInductor and ONNX-MLIR package their code; when it is
// loaded, the shared object is opened from memory (memfd_create + dlopen), so running a
// model needs neither LLVM, nor a linker, nor a writable directory.
//
// Native code is trusted as any shared library is: the file's checksums catch damage,
// not intent. DLC_MODEL_HOST_CODE=0 runs a model's regions on their interpreted
// sub-kernels instead.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_PROGRAM_HOSTCODE_H
#define DLC_RUNTIME_PROGRAM_HOSTCODE_H

#include "dlc/Runtime/Program/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace dlc {

/// The host code of a fused region: its generated host kernel, or on a GPU the host
/// build of its generated GPU kernel (emulated GPUs run it); null when it has none.
const GeneratedKernel *host_entry_of(const FusedElementwise &region);

/// The objects the fused regions of `program` run host code from (host_entry_of), each
/// once.
std::vector<std::shared_ptr<const HostObject>> host_objects_of(const Program &program);

/// `objects` linked into one shared object (with libm); its bytes, or "" with `error`
/// saying why (no linker, a failed link, objects for different targets).
std::string link_host_objects(const std::vector<std::shared_ptr<const HostObject>> &objects,
                              std::string &error);

/// A shared object opened from memory; its code stays loaded while this lives.
class LoadedHostCode {
public:
  /// Opens `bytes`; null with `error` saying why.
  static std::shared_ptr<const LoadedHostCode> open(const std::string &bytes,
                                                    std::string &error);
  ~LoadedHostCode();
  LoadedHostCode(const LoadedHostCode &) = delete;
  LoadedHostCode &operator=(const LoadedHostCode &) = delete;

  /// The packed entry named `symbol`, or null.
  GeneratedKernel::Entry entry(const std::string &symbol) const;

private:
  LoadedHostCode(void *handle, int fd) : handle_(handle), fd_(fd) {}
  void *handle_;
  int fd_; // kept open while loaded: dlopen names the code by /proc/self/fd/N
};

/// Why this process cannot run code compiled for `target` (LLVM's "triple cpu
/// +feature,..." as HostObject::target holds it): another architecture, or the
/// instruction-set features it uses that this CPU lacks; "" when it can.
std::string host_code_unrunnable(const std::string &target);

/// Whether loaded models run their stored host code (DLC_MODEL_HOST_CODE=0: no).
bool model_host_code_enabled();

} // namespace dlc

#endif // DLC_RUNTIME_PROGRAM_HOSTCODE_H
