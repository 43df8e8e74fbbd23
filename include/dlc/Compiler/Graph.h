//===- Graph.h - a traced dataflow graph, before it becomes MLIR -------------===//
//
// What the tracer records while a hybridized block runs: values with static shapes and
// dtypes, nodes named by the `dlc` dialect op they map to, carrying the same attributes
// the eager kernels get. Plain C++ (no MLIR types), so the frontend builds it without
// the compiler's headers; compile() turns it into a `func.func` of the dialect.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_GRAPH_H
#define DLC_COMPILER_GRAPH_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/ShapeRules.h"
#include "dlc/Core/Attrs.h"

#include <string>
#include <utility>
#include <vector>

namespace dlc::compiler {

struct GraphValue {
  shape_rules::Shape shape;
  DType dtype = DType::f32;
};

/// One op call: `op` is the dialect op ("dlc.conv2d"); `name` the user-facing op
/// ("convolution"), kept for messages.
struct GraphNode {
  std::string op;
  std::string name;
  Attrs attrs;
  std::vector<int> inputs;
  std::vector<int> outputs;
  bool gradient = false; ///< a parameter's gradient (summed over data-parallel replicas)
};

/// A function argument: a value the graph reads from outside (the block's input, a
/// parameter, a tensor the forward captured), named for the module and for binding.
struct GraphArgument {
  int value = -1;
  std::string name;
  bool batch = false; ///< holds samples: split over devices by data parallelism
  /// The result of the module's first graph (a forward) this argument is bound to, or
  /// -1: a backward takes saved activations in the layout the forward returns them in.
  int saved_result = -1;
  /// A parameter or another tensor the function captured (not its input, not a saved
  /// activation): work that reads only such arguments and constants is prepared once
  /// and kept while they stay unchanged (dlc-hoist-parameter-work).
  bool parameter = false;
};

/// A value written back into an argument's storage when the function ends (BatchNorm's
/// running statistics).
struct GraphUpdate {
  int value = -1;
  int argument = -1;
};

struct Graph {
  std::string name = "forward";
  Device device;
  std::vector<GraphValue> values;
  std::vector<GraphArgument> arguments;
  std::vector<GraphNode> nodes;
  std::vector<int> results;
  /// Results from this one on are returned only for a backward to read (`dlc.saved`):
  /// the pipeline drops those it leaves unread.
  size_t first_saved = SIZE_MAX;
  std::vector<GraphUpdate> updates;
  /// Results may be returned in a blocked layout (the caller reads each one's layout).
  bool blocked_results = false;

  int add_value(const shape_rules::Shape &shape, DType dtype) {
    values.push_back({shape, dtype});
    return int(values.size()) - 1;
  }
};

} // namespace dlc::compiler

#endif // DLC_COMPILER_GRAPH_H
