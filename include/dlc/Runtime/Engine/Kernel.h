//===- Kernel.h - the kernel interface and the kernel table -------------------===//
//
// Kernels are registered under the `dlc` dialect op they implement ("dlc.conv2d") and a
// device kind, with a fast version and a reference (plain loops) one, so that eager
// calls and compiled programs find the same code, and tests find the oracle.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_KERNEL_H
#define DLC_RUNTIME_ENGINE_KERNEL_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/ShapeRules.h"
#include "dlc/Core/Attrs.h"
#include "dlc/Core/Layout.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlc {

using Shape = shape_rules::Shape;

/// A contiguous tensor as a kernel sees it.
struct TensorRef {
  void *data = nullptr;
  Shape shape;
  DType dtype = DType::f32;
  Layout layout = Layout::plain;

  int64_t numel() const { return shape_rules::numElements(shape); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// What a kernel keeps between runs of one compiled program step: its weights as it
/// prepared them for its library (a oneDNN convolution's, reordered or transformed),
/// valid while the program's weights generation stays `generation` and the weights are
/// read from `source`. Owned by the program; only the step's kernel touches it, on the
/// program's one device queue.
struct KernelMemo {
  uint64_t generation = 0;      ///< when `data` was filled; 0: never
  const void *source = nullptr; ///< the weights buffer it was prepared from
  std::shared_ptr<void> data;   ///< 64-byte aligned
  size_t bytes = 0;
};

/// What a kernel gets: its inputs and (already allocated) outputs, the op's attributes,
/// and the device whose worker thread runs it.
struct KernelArgs {
  std::vector<TensorRef> inputs;
  std::vector<TensorRef> outputs;
  const Attrs *attrs = nullptr;
  Device device;
  const char *op = nullptr; ///< the dialect op being run, for error messages (may be null)
  /// A random kernel's seed in the device's memory, read when the kernel runs instead of
  /// the `seed` attribute (kernels whose entry says seed_on_device): a replayed CUDA graph
  /// repeats its launches, and gets new seeds through this memory.
  const int64_t *device_seed = nullptr;
  /// A compiled step whose weights change only with the parameters (its op's
  /// dlc.prepared_operands): where its kernel may keep them prepared, and the program's
  /// weights generation. Null: prepare them on every call.
  KernelMemo *memo = nullptr;
  uint64_t memo_generation = 0;
};

using KernelFn = void (*)(const KernelArgs &);

/// The kernels of one op on one kind of device.
struct KernelEntry {
  KernelFn fast = nullptr;      ///< what runs (may equal reference when there is no other)
  KernelFn reference = nullptr; ///< plain loops: the oracle of tests
  /// A random kernel that takes its seed from KernelArgs::device_seed when given one.
  bool seed_on_device = false;
};

/// Registers `entry` for `dialectOp` on `kind` (host kinds share cpu's kernels).
void register_kernel(const std::string &dialectOp, DeviceKind kind, KernelEntry entry);
/// The kernels of `dialectOp` for `device`, or null.
const KernelEntry *find_kernel(const std::string &dialectOp, Device device);

/// Registers the host's built-in kernels (once; later calls do nothing). A GPU backend's
/// are registered when it is loaded, the first time a GPU is asked for.
void register_builtin_kernels();

/// Whether this build has kernels for `device` and the device exists in this process.
bool can_compute_on(Device device);

/// When true, every op runs its reference kernel (for debugging and tests).
void use_reference_kernels(bool enabled);
bool reference_kernels_enabled();

/// When false, CPU ops, eager and compiled, keep every tensor plain (Layout.h): the path
/// before blocked layouts. On by default where oneDNN has blocked kernels (AVX2 or
/// AVX-512); the environment variable DLC_BLOCKED_LAYOUTS=0 turns it off at start-up.
/// Tensors already blocked stay so until read.
void use_blocked_layouts(bool enabled);
bool blocked_layouts_enabled();
/// The blocked layout CPU ops use while blocked layouts are on: the CPU's (nChw16c with
/// AVX-512, nChw8c with AVX2), or the one DLC_BLOCKED_LAYOUTS names (nChw16c, nChw8c) or
/// the last use_blocked_layout set; Layout::plain while they are off.
Layout blocked_layout();
/// Turns blocked layouts on in `layout`, whatever the CPU (tests run both layouts on
/// every machine); Layout::plain turns them off.
void use_blocked_layout(Layout layout);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_KERNEL_H
