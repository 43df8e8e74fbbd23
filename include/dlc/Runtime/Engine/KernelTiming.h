//===- KernelTiming.h - how long one host kernel call takes, for the compiler -===//
//
// Some choices are best made by measuring this machine: dlc-choose-conv-algorithms asks
// whether oneDNN's Winograd convolution beats its direct one for each shape of a
// program. The compiler links the runtime, so it times the very kernels the program
// will run, once per shape, and records the answer in the IR (and so in model files).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_KERNELTIMING_H
#define DLC_RUNTIME_ENGINE_KERNELTIMING_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/Layout.h"
#include "dlc/Core/ShapeRules.h"

#include <optional>
#include <string>
#include <vector>

namespace dlc {

/// One tensor of a timed call: its shape, dtype and memory layout.
struct TimedTensor {
  shape_rules::Shape shape;
  DType dtype = DType::f32;
  Layout layout = Layout::plain;
};

/// Seconds that one call of the host kernel of `op` ("dlc.conv2d") takes with `attrs`, on
/// random inputs of these shapes: the fastest of `repeats` calls after one warm-up call
/// (the warm-up builds and caches what the kernel builds at first use, as a program's
/// first run would). nullopt when the host has no kernel for `op` or the kernel throws
/// (callers built without exceptions, as the compiler is, can call it). With
/// `kept_weights` the calls share one KernelMemo and weights generation, as a compiled
/// step whose weights stay fixed does: only the warm-up prepares them.
std::optional<double> time_host_kernel(const std::string &op,
                                       const std::vector<TimedTensor> &inputs,
                                       const std::vector<TimedTensor> &outputs,
                                       const Attrs &attrs, bool kept_weights = false,
                                       int repeats = 3);

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_KERNELTIMING_H
