//===- Block.h - layers and networks (gluon.nn Block / HybridBlock) ----------===//
#ifndef DLC_GLUON_BLOCK_H
#define DLC_GLUON_BLOCK_H

#include "dlc/Hybridize/CompiledFunction.h"
#include "dlc/Gluon/Parameter.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dlc::gluon {

/// Where an entry of another framework's parameter file goes in a network.
struct MappedName {
  std::string parameter;  ///< the network's name for it ("layers.0.attention.out_proj.weight")
  bool transpose = false; ///< a 2-d value stored (in, out), as GPT-2's Conv1D layers store it
};
/// Translates a file's entry names to the network's; nullopt: the entry belongs to no
/// parameter and is skipped (a buffer, a head the network does not have).
using NameMap = std::function<std::optional<MappedName>(const std::string &entry)>;

/// Options of load_parameters, as in Gluon.
struct LoadOptions {
  bool allow_missing = false; ///< parameters absent from the file keep their values
  bool ignore_extra = false;  ///< entries of the file that match no parameter are skipped
  bool cast_dtype = false;    ///< values of another dtype are converted instead of refused
  NameMap name_map;           ///< unset: the file's names are the network's
};

/// A layer or a network of layers. Children and parameters are registered under names,
/// and a block's parameters are named by their path ("conv1.0.weight"), as in Gluon 2.
class Block {
public:
  virtual ~Block() = default;

  /// The computation. Runs eagerly; ops run on the input's device with the parameters'
  /// copies there. A block overrides this or forward_multi.
  virtual Tensor forward(const Tensor &x);
  /// The computation of a block with several inputs or several outputs (MXNet's
  /// `forward(self, x, y)` returning a tuple). By default, forward of the one input.
  virtual std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs);
  /// Calls the block: forward(x), or its compiled program once hybridized.
  Tensor operator()(const Tensor &x) { return call(x); }
  /// Calls the block on several inputs: forward_multi, or its compiled program once
  /// hybridized.
  std::vector<Tensor> operator()(const std::vector<Tensor> &inputs) { return call_multi(inputs); }

  /// Registers a child under `name` and returns it (typed).
  template <typename B> std::shared_ptr<B> register_child(const std::string &name,
                                                          std::shared_ptr<B> child) {
    addChild(name, child);
    return child;
  }
  /// Registers a parameter of this block.
  ParameterPtr register_parameter(const std::string &name, ParameterPtr parameter);

  /// Every parameter of the block and its children, by path; `select` is a regex.
  ParameterDict collect_params(const std::string &select = "") const;
  const std::vector<std::pair<std::string, std::shared_ptr<Block>>> &children() const {
    return children_;
  }
  /// The child registered under `name`, or null.
  std::shared_ptr<Block> child(const std::string &name) const;
  /// Puts `block` where the child `name` was (fine-tuning's new output layer: `net.output
  /// = nn.Dense(classes)` in Gluon); an Error when there is no such child. A hybridized
  /// block forgets what it compiled.
  virtual void replace_child(const std::string &name, std::shared_ptr<Block> block);

  /// Initializes every parameter on every device of `devices`.
  void initialize(const init::InitializerPtr &init = nullptr,
                  const std::vector<Device> &devices = {cpu()}, bool force_reinit = false);
  /// initialize(init::Xavier(), ...) with an initializer value.
  template <typename I, typename = std::enable_if_t<std::is_base_of_v<init::Initializer, I>>>
  void initialize(const I &init, const std::vector<Device> &devices = {cpu()},
                  bool force_reinit = false) {
    initialize(init::InitializerPtr(std::make_shared<I>(init)), devices, force_reinit);
  }
  /// Moves every parameter to `devices` (one copy each, values kept).
  void reset_device(const std::vector<Device> &devices);
  /// Converts every parameter (values and gradients) to `dtype`, MXNet's `Block.cast`;
  /// inputs must then come in `dtype` too. A BatchNorm keeps float32 parameters when
  /// `dtype` is float16 or bfloat16, as MXNet's does (and as the batch norm op requires).
  virtual void cast(DType dtype);

  /// Writes the parameters (first device's copies) to `path` in the safetensors format,
  /// atomically (a temporary file renamed over `path`).
  /// `metadata` joins the file's "__metadata__" (dlc-train records the epoch there).
  void save_parameters(const std::string &path,
                       const std::map<std::string, std::string> &metadata = {}) const;
  /// Reads parameters saved by save_parameters (or any safetensors file with matching
  /// names), or by MXNet's save_parameters (a .params file of MXNet 1.x or 2.x, whose
  /// names are the same paths), onto `devices`. Names, shapes and dtypes that do not match raise an error
  /// listing every difference, unless `options` allow them.
  void load_parameters(const std::string &path, const std::vector<Device> &devices = {cpu()},
                       const LoadOptions &options = {});

  /// A multi-line description of the block tree.
  virtual std::string str(int indent = 0) const;
  virtual std::string kind() const { return "Block"; }

protected:
  /// What operator() does; HybridBlock runs compiled programs here.
  virtual Tensor call(const Tensor &x) { return forward(x); }
  virtual std::vector<Tensor> call_multi(const std::vector<Tensor> &inputs) {
    return forward_multi(inputs);
  }
  void addChild(const std::string &name, std::shared_ptr<Block> child);
  /// Registers `child` under the next position ("0", "1", ...): sequential containers.
  void addPositionalChild(std::shared_ptr<Block> child);
  /// Runs the children in order, each on the previous one's output.
  Tensor forwardThroughChildren(const Tensor &x);

private:
  void collect(const std::string &prefix, ParameterDict &into) const;
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> children_;
  std::vector<std::pair<std::string, ParameterPtr>> params_;
};

/// A block that can be hybridized: once hybridize() is called, calling it traces forward
/// into the dlc dialect once per input signature (shape, dtype, device, training mode,
/// gradients needed) and runs the compiled program; under autograd::Record its backward
/// is compiled too. Children of a hybridized block are traced into its program.
/// forward() must not branch on tensor values: reading one while tracing throws.
class HybridBlock : public Block {
public:
  /// Turns compilation on or off for this block and its hybrid children, compiling as
  /// `options` say (dlc/Core/CompileOptions.h; by default as the environment asks).
  /// Turning it on again starts with an empty cache.
  void hybridize(bool active = true,
                 const CompileOptions &options = compile_options_from_environment());
  /// The options its compiles use.
  const CompileOptions &compile_options() const { return options_; }
  /// Compiles from now on as `options` say, for this block and its hybrid children,
  /// keeping what was compiled: the options are part of each compiled signature's key,
  /// so coming back to earlier options reuses their programs.
  void set_compile_options(const CompileOptions &options);
  bool hybridized() const { return hybridized_; }
  std::string kind() const override { return "HybridBlock"; }
  /// Block::cast, and forgets the compiled programs (they were built for the old dtypes).
  void cast(DType dtype) override;
  /// Block::replace_child, and forgets the compiled programs (they ran the old child).
  void replace_child(const std::string &name, std::shared_ptr<Block> block) override;

  /// How often this block compiled and ran compiled (zeros before the first call).
  CompileStats compile_stats() const;
  /// The compiled function, or null before the first hybridized call.
  const CompiledFunction *compiled() const { return compiled_.get(); }

  /// Writes `prefix`.mlir (the latest traced module: forward, and backward when it
  /// trained; `dlc-opt` reads it) and `prefix`.safetensors (the parameters). MXNet's
  /// `export`, renamed because `export` is a C++ keyword. Throws before the first
  /// hybridized call, as there is no trace yet.
  void export_model(const std::string &prefix) const;
  /// Writes the block's latest program compiled for predicting, with its parameters, as
  /// one model file (dlc/Frontend/CompiledModel.h loads and runs it without the
  /// compiler). Throws before a hybridized call outside autograd.record().
  void save_compiled(const std::string &path) const;

protected:
  Tensor call(const Tensor &x) override;
  std::vector<Tensor> call_multi(const std::vector<Tensor> &inputs) override;

private:
  /// How logs, dumps and errors name this block's compiled function.
  std::string compiledName() const;
  /// The compiled function, made on the first hybridized call.
  CompiledFunction &compiledFunction();
  bool hybridized_ = false;
  CompileOptions options_;
  std::shared_ptr<CompiledFunction> compiled_;
};

/// Children run in order; each child is named by its position ("0", "1", ...).
class Sequential : public Block {
public:
  Sequential &add(std::shared_ptr<Block> block);
  template <typename... Blocks> Sequential &add(std::shared_ptr<Blocks>... blocks) {
    (add(std::static_pointer_cast<Block>(blocks)), ...);
    return *this;
  }
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "Sequential"; }
};

class HybridSequential : public HybridBlock {
public:
  HybridSequential &add(std::shared_ptr<Block> block);
  template <typename... Blocks> HybridSequential &add(std::shared_ptr<Blocks>... blocks) {
    (add(std::static_pointer_cast<Block>(blocks)), ...);
    return *this;
  }
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "HybridSequential"; }
};

/// Runs every child on the same input and concatenates their outputs along `axis`
/// (MXNet 1.x's contrib HybridConcurrent, Gluon 2's HybridConcatenate): the branches of
/// Inception, SqueezeNet's fire modules, DenseNet's growing features. Children are named
/// "0", "1", ... as in HybridSequential.
class HybridConcatenate : public HybridBlock {
public:
  explicit HybridConcatenate(int64_t axis = -1) : axis_(axis) {}
  HybridConcatenate &add(std::shared_ptr<Block> block);
  template <typename... Blocks> HybridConcatenate &add(std::shared_ptr<Blocks>... blocks) {
    (add(std::static_pointer_cast<Block>(blocks)), ...);
    return *this;
  }
  Tensor forward(const Tensor &x) override;
  std::string kind() const override { return "HybridConcatenate(axis=" + std::to_string(axis_) + ")"; }
  int64_t axis() const { return axis_; }

private:
  int64_t axis_;
};
/// MXNet 1.x's name for it (mxnet.gluon.contrib.nn.HybridConcurrent).
using HybridConcurrent = HybridConcatenate;

} // namespace dlc::gluon

#endif // DLC_GLUON_BLOCK_H
