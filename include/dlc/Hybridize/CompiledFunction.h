//===- CompiledFunction.h - a tensor function compiled by input signature ----===//
//
// The engine behind HybridBlock::hybridize(): the function (tensors in, tensors out) is
// traced once per input signature (shapes, dtypes, device, training mode, which inputs
// need gradients) into
// the `dlc` dialect, compiled into runtime Programs, and run as one task per call.
// Under autograd::Record the compiled forward also saves what the backward needs and
// records a single tape node whose VJP runs a compiled backward program, derived from
// the same trace with the op registry's VJP rules.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_HYBRIDIZE_COMPILEDFUNCTION_H
#define DLC_HYBRIDIZE_COMPILEDFUNCTION_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Frontend/Tensor.h"
#include "dlc/Frontend/Trace.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlc {

/// How often a compiled function compiled and ran, and what its programs need.
struct CompileStats {
  int64_t calls = 0;      ///< calls that ran compiled programs
  int64_t compiles = 0;   ///< signatures traced and compiled (each a "recompile" after the first)
  int64_t cache_hits = 0; ///< calls that reused a compiled signature
  double last_compile_seconds = 0; ///< trace + compile of the latest new signature
  size_t forward_arena_bytes = 0;  ///< intermediates of the latest forward program
  size_t backward_arena_bytes = 0; ///< ... and backward program (0 without one)
  int64_t forward_steps = 0;       ///< kernel calls per forward run (latest signature)
  int64_t backward_steps = 0;
};

/// A parameter as a compiled function binds it: its name and its copy on one device.
struct BoundParameter {
  std::string name;
  Tensor data;       ///< undefined while its initialization is deferred (unknown shape)
  bool grad = false; ///< whether backward computes its gradient (grad_req != null)
};

class CompiledFunction {
public:
  using Forward = std::function<Tensor(const Tensor &)>;
  /// A function of several inputs and outputs (a hybridized block's forward_multi).
  using ForwardMulti = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;
  /// The parameters the function may read, with their copies on a device.
  using Parameters = std::function<std::vector<BoundParameter>(Device)>;

  /// `name` names the function in logs, dumps and error messages; it compiles as
  /// `options` say.
  CompiledFunction(std::string name, Forward forward, Parameters parameters,
                   CompileOptions options = compile_options_from_environment());
  CompiledFunction(std::string name, ForwardMulti forward, Parameters parameters,
                   CompileOptions options = compile_options_from_environment());

  /// The options the next compiles use. Signatures compiled under other options stay
  /// cached (the options are part of every key) and are reused if they come back.
  void set_options(CompileOptions options);
  CompileOptions options() const;
  /// How many compiled signatures the cache holds (one per signature and option set).
  int64_t cached_signatures() const;

  /// Runs the compiled program for `x`'s signature, compiling it first if it is new;
  /// the function must return one tensor.
  Tensor operator()(const Tensor &x);
  /// Runs the compiled program for the inputs' signature (all on one device), compiling
  /// it first if it is new. Under autograd::Record one tape node covers every output;
  /// outputs whose gradient the backward does not get count as zero.
  std::vector<Tensor> operator()(const std::vector<Tensor> &inputs);

  CompileStats stats() const;
  /// The latest compiled module, as traced and after the pipeline ("" before a call).
  std::string traced_ir() const;
  std::string compiled_ir() const;
  /// The latest programs as text (steps and memory plan).
  std::string programs() const;
  /// Forgets every compiled signature (the next call traces again).
  void clear();
  /// Writes the program compiled for predicting (a call outside autograd's recording;
  /// of several, the one for the largest input) as a model file (dlc/Frontend/CompiledModel.h) at `path`, with the
  /// parameters as they are now on the program's device: input "data" (several: "data0",
  /// "data1", ... as MXNet's export names them), outputs "output", "output1", ...
  /// Throws dlc::Error when there is no such program yet.
  void save_compiled(const std::string &path) const;

  struct State;

private:
  std::shared_ptr<State> state_;
};

} // namespace dlc

#endif // DLC_HYBRIDIZE_COMPILEDFUNCTION_H
