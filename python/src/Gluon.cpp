//===- Gluon.cpp - gluon.nn: blocks (also subclassed in Python), layers, params -===//
#include "Bindings.h"
#include "dlc/Gluon/ModelZoo.h"

namespace dlc::python {

namespace {

using namespace gluon;

void bind_activation_layers(py::module_ &m);
void bind_normalization_layers(py::module_ &m);

// --- Blocks written in Python ------------------------------------------------------------

/// The Python class name of a block whose forward Python overrides.
template <typename Base> std::string python_kind(const Base *self, const char *fallback) {
  py::gil_scoped_acquire gil;
  py::function forward = py::get_override(self, "forward");
  if (!forward)
    return fallback;
  return py::str(forward.attr("__self__").attr("__class__").attr("__name__"));
}

/// What a forward returned, for a message: "a tuple of 2 (ndarray, ndarray)", "a list".
std::string describe_result(const py::handle &result) {
  auto type = [](const py::handle &obj) {
    return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
  };
  if (!py::isinstance<py::tuple>(result) && !py::isinstance<py::list>(result))
    return "a " + type(result);
  std::string items;
  for (py::handle item : result)
    items += (items.empty() ? "" : ", ") + type(item);
  return "a " + type(result) + " of " + std::to_string(py::len(result)) + " (" + items + ")";
}

/// Calls the Python override of `forward` on `self`, if there is one, into `out`. When C++
/// calls a block (hybridized, or inside a Sequential), its forward returns one ndarray.
template <typename Base>
bool python_forward(const Base *self, const char *fallback, const Tensor &x, Tensor &out) {
  py::gil_scoped_acquire gil;
  py::function forward = py::get_override(self, "forward");
  if (!forward)
    return false;
  py::object result = forward(x);
  if (!py::isinstance<Tensor>(result))
    throw UnsupportedError(
        python_kind<Base>(self, fallback) + ".forward returned " + describe_result(result) +
        ", but a block inside a Sequential (or another container that calls its children "
        "on one tensor) returns one ndarray; call a block with several outputs from a "
        "forward written in Python");
  out = result.cast<Tensor>();
  return true;
}

/// How a Python forward returned its outputs, so that a hybridized call returns them as
/// the eager one does.
enum class OutputForm { tensor, tuple, list };

/// Calls the Python override of `forward` on `self` with `inputs`, if there is one: its
/// outputs into `out` (one ndarray, or a tuple or list of them), their form into `form`.
template <typename Base>
bool python_forward_multi(const Base *self, const char *fallback,
                          const std::vector<Tensor> &inputs, std::vector<Tensor> &out,
                          OutputForm &form) {
  py::gil_scoped_acquire gil;
  py::function forward = py::get_override(self, "forward");
  if (!forward)
    return false;
  py::tuple args(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    args[i] = py::cast(inputs[i]);
  py::object result = forward(*args);
  out.clear();
  auto refuse = [&] {
    return UnsupportedError(python_kind<Base>(self, fallback) + ".forward returned " +
                            describe_result(result) +
                            ", but a hybridized block returns ndarrays: one, or a tuple or "
                            "list of them; call hybridize(False) to run it eagerly");
  };
  if (py::isinstance<Tensor>(result)) {
    out.push_back(result.cast<Tensor>());
    form = OutputForm::tensor;
    return true;
  }
  if (!py::isinstance<py::tuple>(result) && !py::isinstance<py::list>(result))
    throw refuse();
  for (py::handle item : result) {
    if (!py::isinstance<Tensor>(item))
      throw refuse();
    out.push_back(item.cast<Tensor>());
  }
  form = py::isinstance<py::tuple>(result) ? OutputForm::tuple : OutputForm::list;
  return true;
}

class PyBlock : public Block {
public:
  Tensor forward(const Tensor &x) override {
    Tensor y;
    if (!python_forward<Block>(this, "Block", x, y))
      throw UnsupportedError(kind() + ": a Block must define forward()");
    return y;
  }
  std::string kind() const override { return python_kind<Block>(this, "Block"); }
};

class PyHybridBlock : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override {
    Tensor y;
    if (!python_forward<HybridBlock>(this, "HybridBlock", x, y))
      throw UnsupportedError(kind() + ": a HybridBlock must define forward()");
    return y;
  }
  std::vector<Tensor> forward_multi(const std::vector<Tensor> &inputs) override {
    std::vector<Tensor> outputs;
    if (!python_forward_multi<HybridBlock>(this, "HybridBlock", inputs, outputs, output_form_))
      throw UnsupportedError(kind() + ": a HybridBlock must define forward()");
    return outputs;
  }
  std::string kind() const override { return python_kind<HybridBlock>(this, "HybridBlock"); }
  /// How the latest traced forward returned its outputs.
  OutputForm output_form() const { return output_form_; }

private:
  OutputForm output_form_ = OutputForm::tensor;
};

/// Sequential containers subclassed in Python may override forward too (the hybridized
/// call reaches it through C++).
class PySequential : public Sequential {
public:
  Tensor forward(const Tensor &x) override {
    Tensor y;
    return python_forward<Sequential>(this, "Sequential", x, y) ? y : Sequential::forward(x);
  }
};

class PyHybridSequential : public HybridSequential {
public:
  Tensor forward(const Tensor &x) override {
    Tensor y;
    return python_forward<HybridSequential>(this, "HybridSequential", x, y)
               ? y
               : HybridSequential::forward(x);
  }
  std::string kind() const override {
    return python_kind<HybridSequential>(this, "HybridSequential");
  }
};

// --- initializers ---------------------------------------------------------------------------

init::InitializerPtr to_initializer(const py::object &obj) {
  if (obj.is_none())
    return nullptr;
  if (py::isinstance<init::Initializer>(obj))
    return obj.cast<std::shared_ptr<init::Initializer>>();
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (name == "zeros" || name == "zero")
      return std::make_shared<init::Zero>();
    if (name == "ones" || name == "one")
      return std::make_shared<init::One>();
    if (name == "uniform")
      return std::make_shared<init::Uniform>();
    if (name == "normal")
      return std::make_shared<init::Normal>();
    if (name == "xavier")
      return std::make_shared<init::Xavier>();
    throw ValueError("initializer: unknown name '" + name +
                     "' (known: zeros, ones, uniform, normal, xavier)");
  }
  throw py::type_error("initializer: expected a dlc.init initializer or its name, got " +
                       py::repr(obj).cast<std::string>());
}

const char *grad_req_name(GradReq req) {
  return req == GradReq::write ? "write" : req == GradReq::add ? "add" : "null";
}

void bind_initializers(py::module_ &m) {
  py::class_<init::Initializer, std::shared_ptr<init::Initializer>>(m, "Initializer")
      .def("__repr__", &init::Initializer::str);
  py::class_<init::Uniform, init::Initializer, std::shared_ptr<init::Uniform>>(m, "Uniform")
      .def(py::init<double>(), py::arg("scale") = 0.07);
  py::class_<init::Normal, init::Initializer, std::shared_ptr<init::Normal>>(m, "Normal")
      .def(py::init<double>(), py::arg("sigma") = 0.01);
  py::class_<init::Constant, init::Initializer, std::shared_ptr<init::Constant>>(m, "Constant")
      .def(py::init<double>(), py::arg("value"));
  py::class_<init::Zero, init::Constant, std::shared_ptr<init::Zero>>(m, "Zero").def(py::init<>());
  py::class_<init::One, init::Constant, std::shared_ptr<init::One>>(m, "One").def(py::init<>());
  py::class_<init::Xavier, init::Initializer, std::shared_ptr<init::Xavier>>(m, "Xavier")
      .def(py::init([](const std::string &rnd_type, const std::string &factor_type, double magnitude) {
             init::Xavier::Distribution d;
             if (rnd_type == "uniform")
               d = init::Xavier::Distribution::uniform;
             else if (rnd_type == "gaussian")
               d = init::Xavier::Distribution::gaussian;
             else
               throw ValueError("Xavier: rnd_type must be 'uniform' or 'gaussian', got '" + rnd_type + "'");
             init::Xavier::Factor f;
             if (factor_type == "avg")
               f = init::Xavier::Factor::avg;
             else if (factor_type == "in")
               f = init::Xavier::Factor::in;
             else if (factor_type == "out")
               f = init::Xavier::Factor::out;
             else
               throw ValueError("Xavier: factor_type must be 'avg', 'in' or 'out', got '" + factor_type + "'");
             return init::Xavier(d, f, magnitude);
           }),
           py::arg("rnd_type") = "uniform", py::arg("factor_type") = "avg", py::arg("magnitude") = 3.0);
}

// --- parameters -------------------------------------------------------------------------

void bind_parameter(py::module_ &m) {
  py::class_<Parameter, std::shared_ptr<Parameter>>(m, "Parameter",
      "A trainable array with one copy (and gradient) per device (gluon.Parameter).")
      .def(py::init([](const std::string &name, const std::string &grad_req, const py::object &shape,
                       const py::object &dtype, const py::object &init) {
             return std::make_shared<Parameter>(name, shape.is_none() ? Shape{} : to_shape(shape),
                                                to_dtype(dtype), to_initializer(init), grad_req_of(grad_req));
           }),
           py::arg("name") = "weight", py::arg("grad_req") = "write", py::arg("shape") = py::none(),
           py::arg("dtype") = py::none(), py::arg("init") = py::none())
      .def_property_readonly("name", &Parameter::name)
      .def_property_readonly("shape", [](const Parameter &p) { return shape_tuple(p.shape()); })
      .def_property_readonly("dtype", [](const Parameter &p) { return dtype_object(p.dtype()); })
      .def_property("grad_req", [](const Parameter &p) { return grad_req_name(p.grad_req()); },
                    [](Parameter &p, const std::string &req) { p.set_grad_req(grad_req_of(req)); })
      .def("initialize",
           [](Parameter &p, const py::object &init, const py::object &device, const py::object &default_init,
              bool force_reinit) {
             init::InitializerPtr chosen = to_initializer(init);
             if (!chosen)
               chosen = to_initializer(default_init);
             p.initialize(chosen, to_devices(device), force_reinit);
           },
           py::arg("init") = py::none(), py::arg("device") = py::none(),
           py::arg("default_init") = py::none(), py::arg("force_reinit") = false)
      .def("data", [](const Parameter &p, const py::object &device) {
             return device.is_none() ? p.data() : p.data(to_device(device));
           }, py::arg("device") = py::none())
      .def("list_data", &Parameter::list_data)
      .def("grad", [](const Parameter &p, const py::object &device) {
             return device.is_none() ? p.grad(p.list_devices().at(0)) : p.grad(to_device(device));
           }, py::arg("device") = py::none())
      .def("list_grad", &Parameter::list_grad)
      .def("list_device", &Parameter::list_devices)
      .def("list_ctx", &Parameter::list_devices)
      .def("set_data", [](Parameter &p, const py::object &data) {
             p.set_data(to_tensor(data, p.dtype()));
           }, py::arg("data"))
      .def("reset_device", [](Parameter &p, const py::object &device) { p.reset_device(to_devices(device)); },
           py::arg("device"))
      .def("reset_ctx", [](Parameter &p, const py::object &device) { p.reset_device(to_devices(device)); },
           py::arg("ctx"))
      .def("zero_grad", &Parameter::zero_grad)
      .def("cast", [](Parameter &p, const py::object &dtype) { p.cast(to_dtype(dtype)); }, py::arg("dtype"))
      .def_property_readonly("initialized", &Parameter::initialized)
      .def("__repr__", [](const Parameter &p) {
        return "Parameter " + p.name() + " (shape=" + py::repr(shape_tuple(p.shape())).cast<std::string>() +
               ", dtype=" + dtype_name(p.dtype()) + ")";
      });
}

// --- blocks -----------------------------------------------------------------------------

py::object call_block(const py::object &self, const py::args &args) {
  Block &block = self.cast<Block &>();
  auto *hybrid = dynamic_cast<HybridBlock *>(&block);
  if (hybrid && hybrid->hybridized()) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!py::isinstance<Tensor>(args[i]))
        throw UnsupportedError(block.kind() + ": a hybridized block takes ndarrays, argument #" +
                               std::to_string(i) + " is " + describe_result(args[i]) +
                               "; call hybridize(False) to run it eagerly with others");
      inputs.push_back(args[i].cast<Tensor>());
    }
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = block(inputs);
    }
    auto *python = dynamic_cast<PyHybridBlock *>(hybrid);
    OutputForm form = python                ? python->output_form()
                      : outputs.size() == 1 ? OutputForm::tensor
                                            : OutputForm::tuple;
    if (form == OutputForm::tensor && outputs.size() == 1)
      return py::cast(outputs[0]);
    py::list items;
    for (const Tensor &t : outputs)
      items.append(py::cast(t));
    if (form == OutputForm::list)
      return std::move(items);
    return py::tuple(items);
  }
  // A C++ block runs its forward_multi (MultiHeadAttention(x, mask), an imported ONNX
  // model's several outputs), which is its forward for one input and one output; one
  // written in Python runs its forward as written, whatever it takes and returns.
  bool python = dynamic_cast<PyHybridBlock *>(&block) || dynamic_cast<PyBlock *>(&block);
  if (!python && args.size() > 0) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < args.size(); ++i)
      inputs.push_back(args[i].cast<Tensor>());
    std::vector<Tensor> outputs;
    {
      py::gil_scoped_release release;
      outputs = block(inputs);
    }
    if (outputs.size() == 1)
      return py::cast(outputs[0]);
    py::list items;
    for (const Tensor &t : outputs)
      items.append(py::cast(t));
    return py::tuple(items);
  }
  return self.attr("forward")(*args);
}

void load_parameters(Block &b, const std::string &filename, const py::object &device,
                     bool allow_missing, bool ignore_extra, bool cast_dtype,
                     const py::object &ctx) {
  LoadOptions options;
  options.allow_missing = allow_missing;
  options.ignore_extra = ignore_extra;
  options.cast_dtype = cast_dtype;
  std::vector<Device> devices = to_devices(device.is_none() ? ctx : device);
  py::gil_scoped_release release;
  b.load_parameters(filename, devices, options);
}

void bind_blocks(py::module_ &m) {
  py::class_<Block, PyBlock, std::shared_ptr<Block>>(m, "Block",
      "A layer or a network (gluon.nn.Block); subclass it and write forward().")
      .def(py::init<>())
      .def("__call__", &call_block)
      .def("forward", &Block::forward, py::arg("x"))
      .def("register_child", [](Block &b, std::shared_ptr<Block> child, const py::object &name) {
             std::string n = name.is_none() ? std::to_string(b.children().size()) : name.cast<std::string>();
             b.register_child(n, std::move(child));
           }, py::arg("block"), py::arg("name") = py::none())
      .def("_child", &Block::child, py::arg("name"))
      .def("_replace_child", &Block::replace_child, py::arg("name"), py::arg("block"))
      .def("_register_parameter", [](Block &b, const std::string &name, ParameterPtr p) {
             b.register_parameter(name, std::move(p));
           })
      .def("_collect_params", [](const Block &b, const py::object &select) {
             ParameterDict params = b.collect_params(select.is_none() ? "" : select.cast<std::string>());
             std::vector<std::pair<std::string, ParameterPtr>> items;
             for (const std::string &name : params.keys())
               items.emplace_back(name, params[name]);
             return items;
           }, py::arg("select") = py::none())
      .def("initialize", [](Block &b, const py::object &init, const py::object &device, bool verbose,
                            bool force_reinit, const py::object &ctx) {
             b.initialize(to_initializer(init), to_devices(device.is_none() ? ctx : device), force_reinit);
           }, py::arg("init") = py::none(), py::arg("device") = py::none(), py::arg("verbose") = false,
           py::arg("force_reinit") = false, py::arg("ctx") = py::none())
      .def("reset_device", [](Block &b, const py::object &device) { b.reset_device(to_devices(device)); },
           py::arg("device"))
      .def("reset_ctx", [](Block &b, const py::object &device) { b.reset_device(to_devices(device)); },
           py::arg("ctx"))
      .def("cast", [](Block &b, const py::object &dtype) { b.cast(to_dtype(dtype)); }, py::arg("dtype"))
      .def("zero_grad", [](const Block &b) { b.collect_params().zero_grad(); })
      .def("save_parameters", [](const Block &b, const std::string &filename, bool) {
             py::gil_scoped_release release;
             b.save_parameters(filename);
           }, py::arg("filename"), py::arg("deduplicate") = false)
      .def("load_parameters", &load_parameters, py::arg("filename"), py::arg("device") = py::none(),
           py::arg("allow_missing") = false, py::arg("ignore_extra") = false, py::arg("cast_dtype") = false,
           py::arg("ctx") = py::none())
      .def("__repr__", [](const Block &b) { return b.str(); });

  py::class_<HybridBlock, Block, PyHybridBlock, std::shared_ptr<HybridBlock>>(
      m, "HybridBlock",
      "A block that hybridize() compiles: forward() is traced into the dlc dialect once per "
      "input signature (gluon.nn.HybridBlock).")
      .def(py::init<>())
      .def(
          "hybridize",
          [](HybridBlock &b, bool active, const py::kwargs &kwargs) {
            b.hybridize(active, compile_options_of(kwargs, "hybridize"));
          },
          py::arg("active") = true,
          "Compiles the block (and its hybrid children) from its next call on. Keyword "
          "arguments set compile options: fuse, generated_kernels, cuda_graphs, timing, "
          "blocked_layout, cuda_toolkit, gpu_chip, cache_dir (the rest as the DLC_* "
          "environment variables ask); MXNet's static_alloc and static_shape are accepted.")
      .def_property_readonly(
          "compile_options",
          [](const HybridBlock &b) { return compile_options_dict(b.compile_options()); },
          "The options hybridize() compiles with, as a dict.")
      .def_property_readonly("hybridized", &HybridBlock::hybridized)
      .def(
          "export",
          [](const HybridBlock &b, const std::string &path, int64_t) {
            b.export_model(path);
            return py::make_tuple(path + ".mlir", path + ".safetensors");
          },
          py::arg("path"), py::arg("epoch") = 0,
          "Writes path.mlir (the traced module) and path.safetensors (the parameters).")
      .def(
          "save_compiled",
          [](const HybridBlock &b, const std::string &path) {
            py::gil_scoped_release release;
            b.save_compiled(path);
          },
          py::arg("path"),
          "Writes the compiled predicting program and its weights as one model file.")
      .def("compile_stats",
           [](const HybridBlock &b) {
             CompileStats s = b.compile_stats();
             py::dict d;
             d["calls"] = s.calls;
             d["compiles"] = s.compiles;
             d["cache_hits"] = s.cache_hits;
             d["last_compile_seconds"] = s.last_compile_seconds;
             d["forward_steps"] = s.forward_steps;
             d["backward_steps"] = s.backward_steps;
             return d;
           })
      .def("traced_ir",
           [](const HybridBlock &b) {
             return b.compiled() ? b.compiled()->traced_ir() : std::string();
           })
      .def("compiled_ir", [](const HybridBlock &b) {
        return b.compiled() ? b.compiled()->compiled_ir() : std::string();
      });

  py::class_<Sequential, Block, PySequential, std::shared_ptr<Sequential>>(m, "Sequential")
      .def(py::init<>())
      .def("_add", [](Sequential &s, std::shared_ptr<Block> b) { s.add(std::move(b)); })
      .def("forward", &Sequential::forward)
      .def("__len__", [](const Sequential &s) { return s.children().size(); });
  py::class_<HybridSequential, HybridBlock, PyHybridSequential, std::shared_ptr<HybridSequential>>(
      m, "HybridSequential")
      .def(py::init<>())
      .def("_add", [](HybridSequential &s, std::shared_ptr<Block> b) { s.add(std::move(b)); })
      .def("forward", &HybridSequential::forward)
      .def("__len__", [](const HybridSequential &s) { return s.children().size(); });
  py::class_<HybridConcatenate, HybridBlock, std::shared_ptr<HybridConcatenate>>(m, "HybridConcatenate")
      .def(py::init<int64_t>(), py::arg("axis") = -1)
      .def("_add", [](HybridConcatenate &s, std::shared_ptr<Block> b) { s.add(std::move(b)); })
      .def("forward", &HybridConcatenate::forward)
      .def("__len__", [](const HybridConcatenate &s) { return s.children().size(); });
}

// --- layers -------------------------------------------------------------------------------

std::string activation_name(const py::object &activation) {
  return activation.is_none() ? std::string() : activation.cast<std::string>();
}

void require_nchw(const std::string &layout, const char *layer) {
  if (layout != "NCHW")
    throw UnsupportedError(std::string(layer) + ": layout '" + layout +
                           "' is not supported; dlc's layers take NCHW (the compiler picks "
                           "blocked layouts itself)");
}

int64_t square_pool(const py::object &obj, const char *what) {
  std::array<int64_t, 2> p = pair_of(obj, what);
  if (p[0] != p[1])
    throw UnsupportedError(std::string(what) + ": dlc's pooling layers take square windows and "
                           "strides, got (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")");
  return p[0];
}

void bind_layers(py::module_ &m) {
  py::class_<nn::Conv2D, HybridBlock, std::shared_ptr<nn::Conv2D>>(m, "Conv2D")
      .def(py::init([](int64_t channels, const py::object &kernel_size, const py::object &strides,
                       const py::object &padding, const py::object &dilation, int64_t groups,
                       const std::string &layout, const py::object &activation, bool use_bias,
                       const py::object &weight_initializer, const py::object &bias_initializer,
                       int64_t in_channels) {
             require_nchw(layout, "Conv2D");
             nn::Conv2DOptions o;
             o.strides = pair_of(strides, "Conv2D strides");
             o.padding = pair_of(padding, "Conv2D padding");
             o.dilation = pair_of(dilation, "Conv2D dilation");
             o.groups = groups;
             o.use_bias = use_bias;
             o.in_channels = in_channels;
             o.weight_initializer = to_initializer(weight_initializer);
             o.bias_initializer = to_initializer(bias_initializer);
             return std::make_shared<nn::Conv2D>(channels, pair_of(kernel_size, "Conv2D kernel_size"),
                                                 activation_name(activation), o);
           }),
           py::arg("channels"), py::arg("kernel_size"), py::arg("strides") = 1, py::arg("padding") = 0,
           py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("layout") = "NCHW",
           py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("weight_initializer") = py::none(), py::arg("bias_initializer") = "zeros",
           py::arg("in_channels") = 0)
      .def_readonly("weight", &nn::Conv2D::weight)
      .def_readonly("bias", &nn::Conv2D::bias);
  py::class_<nn::Conv2DTranspose, HybridBlock, std::shared_ptr<nn::Conv2DTranspose>>(
      m, "Conv2DTranspose")
      .def(py::init([](int64_t channels, const py::object &kernel_size, const py::object &strides,
                       const py::object &padding, const py::object &output_padding,
                       const py::object &dilation, int64_t groups, const std::string &layout,
                       const py::object &activation, bool use_bias,
                       const py::object &weight_initializer, const py::object &bias_initializer,
                       int64_t in_channels) {
             require_nchw(layout, "Conv2DTranspose");
             nn::Conv2DTransposeOptions o;
             o.strides = pair_of(strides, "Conv2DTranspose strides");
             o.padding = pair_of(padding, "Conv2DTranspose padding");
             o.output_padding = pair_of(output_padding, "Conv2DTranspose output_padding");
             o.dilation = pair_of(dilation, "Conv2DTranspose dilation");
             o.groups = groups;
             o.use_bias = use_bias;
             o.in_channels = in_channels;
             o.weight_initializer = to_initializer(weight_initializer);
             o.bias_initializer = to_initializer(bias_initializer);
             return std::make_shared<nn::Conv2DTranspose>(
                 channels, pair_of(kernel_size, "Conv2DTranspose kernel_size"),
                 activation_name(activation), o);
           }),
           py::arg("channels"), py::arg("kernel_size"), py::arg("strides") = 1, py::arg("padding") = 0,
           py::arg("output_padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1,
           py::arg("layout") = "NCHW", py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("weight_initializer") = py::none(), py::arg("bias_initializer") = "zeros",
           py::arg("in_channels") = 0)
      .def_readonly("weight", &nn::Conv2DTranspose::weight)
      .def_readonly("bias", &nn::Conv2DTranspose::bias);
  auto pool = [](const py::object &pool_size, const py::object &strides, const py::object &padding,
                 const std::string &layout, bool ceil_mode, bool count_include_pad, const char *name) {
    require_nchw(layout, name);
    nn::PoolOptions o;
    o.padding = pair_of(padding, name);
    o.ceil_mode = ceil_mode;
    o.count_include_pad = count_include_pad;
    int64_t size = square_pool(pool_size, name);
    int64_t stride = strides.is_none() ? 0 : square_pool(strides, name);
    return std::make_tuple(size, stride, o);
  };
  py::class_<nn::MaxPool2D, HybridBlock, std::shared_ptr<nn::MaxPool2D>>(m, "MaxPool2D")
      .def(py::init([pool](const py::object &pool_size, const py::object &strides, const py::object &padding,
                           const std::string &layout, bool ceil_mode) {
             auto [size, stride, o] = pool(pool_size, strides, padding, layout, ceil_mode, true, "MaxPool2D");
             return std::make_shared<nn::MaxPool2D>(size, stride, o);
           }),
           py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = 0,
           py::arg("layout") = "NCHW", py::arg("ceil_mode") = false);
  py::class_<nn::AvgPool2D, HybridBlock, std::shared_ptr<nn::AvgPool2D>>(m, "AvgPool2D")
      .def(py::init([pool](const py::object &pool_size, const py::object &strides, const py::object &padding,
                           const std::string &layout, bool ceil_mode, bool count_include_pad) {
             auto [size, stride, o] = pool(pool_size, strides, padding, layout, ceil_mode, count_include_pad,
                                           "AvgPool2D");
             return std::make_shared<nn::AvgPool2D>(size, stride, o);
           }),
           py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = 0,
           py::arg("layout") = "NCHW", py::arg("ceil_mode") = false, py::arg("count_include_pad") = true);
  py::class_<nn::BatchNorm, HybridBlock, std::shared_ptr<nn::BatchNorm>>(m, "BatchNorm")
      .def(py::init([](int64_t axis, double momentum, double epsilon, bool center, bool scale,
                       bool use_global_stats, int64_t in_channels) {
             nn::BatchNormOptions o;
             o.axis = axis;
             o.momentum = momentum;
             o.epsilon = epsilon;
             o.center = center;
             o.scale = scale;
             o.use_global_stats = use_global_stats;
             o.in_channels = in_channels;
             return std::make_shared<nn::BatchNorm>(o);
           }),
           py::arg("axis") = 1, py::arg("momentum") = 0.9, py::arg("epsilon") = 1e-5,
           py::arg("center") = true, py::arg("scale") = true, py::arg("use_global_stats") = false,
           py::arg("in_channels") = 0)
      .def_readonly("gamma", &nn::BatchNorm::gamma)
      .def_readonly("beta", &nn::BatchNorm::beta)
      .def_readonly("running_mean", &nn::BatchNorm::running_mean)
      .def_readonly("running_var", &nn::BatchNorm::running_var);
  py::class_<nn::Dense, HybridBlock, std::shared_ptr<nn::Dense>>(m, "Dense")
      .def(py::init([](int64_t units, const py::object &activation, bool use_bias, bool flatten,
                       const py::object &dtype, const py::object &weight_initializer,
                       const py::object &bias_initializer, int64_t in_units) {
             if (to_dtype(dtype) != DType::f32)
               throw UnsupportedError("Dense: parameters are made float32; call cast() to change them");
             nn::DenseOptions o;
             o.use_bias = use_bias;
             o.flatten = flatten;
             o.in_units = in_units;
             o.weight_initializer = to_initializer(weight_initializer);
             o.bias_initializer = to_initializer(bias_initializer);
             return std::make_shared<nn::Dense>(units, activation_name(activation), o);
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("flatten") = true, py::arg("dtype") = "float32", py::arg("weight_initializer") = py::none(),
           py::arg("bias_initializer") = "zeros", py::arg("in_units") = 0)
      .def_readonly("weight", &nn::Dense::weight)
      .def_readonly("bias", &nn::Dense::bias);
  py::class_<nn::Embedding, HybridBlock, std::shared_ptr<nn::Embedding>>(m, "Embedding")
      .def(py::init([](int64_t input_dim, int64_t output_dim, const py::object &dtype,
                       const py::object &weight_initializer, bool sparse_grad) {
             if (to_dtype(dtype) != DType::f32)
               throw UnsupportedError("Embedding: parameters are made float32; call cast() to change them");
             if (sparse_grad)
               throw UnsupportedError("Embedding: sparse_grad=True is not supported; the "
                                      "weight's gradient is dense");
             return std::make_shared<nn::Embedding>(input_dim, output_dim,
                                                    to_initializer(weight_initializer));
           }),
           py::arg("input_dim"), py::arg("output_dim"), py::arg("dtype") = "float32",
           py::arg("weight_initializer") = py::none(), py::arg("sparse_grad") = false)
      .def_readonly("weight", &nn::Embedding::weight);
  py::class_<nn::MultiHeadAttention, HybridBlock, std::shared_ptr<nn::MultiHeadAttention>>(
      m, "MultiHeadAttention")
      .def(py::init([](int64_t units, int64_t num_heads, bool causal, double dropout,
                       bool use_bias, bool fused_qkv, int64_t in_units) {
             nn::MultiHeadAttentionOptions o;
             o.causal = causal;
             o.dropout = dropout;
             o.use_bias = use_bias;
             o.fused_qkv = fused_qkv;
             o.in_units = in_units;
             return std::make_shared<nn::MultiHeadAttention>(units, num_heads, o);
           }),
           py::arg("units"), py::arg("num_heads"), py::arg("causal") = false,
           py::arg("dropout") = 0.0, py::arg("use_bias") = true, py::arg("fused_qkv") = false,
           py::arg("in_units") = 0)
      .def_readonly("query_proj", &nn::MultiHeadAttention::query_proj)
      .def_readonly("key_proj", &nn::MultiHeadAttention::key_proj)
      .def_readonly("value_proj", &nn::MultiHeadAttention::value_proj)
      .def_readonly("qkv_proj", &nn::MultiHeadAttention::qkv_proj)
      .def_readonly("out_proj", &nn::MultiHeadAttention::out_proj);
  py::class_<nn::TransformerEncoderLayer, HybridBlock,
             std::shared_ptr<nn::TransformerEncoderLayer>>(m, "TransformerEncoderLayer")
      .def(py::init([](int64_t units, int64_t hidden_size, int64_t num_heads, bool pre_norm,
                       bool causal, const std::string &activation, bool gelu_tanh,
                       double dropout, double attention_dropout, double layer_norm_eps,
                       bool fused_qkv) {
             return std::make_shared<nn::TransformerEncoderLayer>(
                 units, hidden_size, num_heads,
                 nn::TransformerLayerOptions{pre_norm, causal, activation, gelu_tanh, dropout,
                                             attention_dropout, layer_norm_eps, fused_qkv});
           }),
           py::arg("units"), py::arg("hidden_size"), py::arg("num_heads"),
           py::arg("pre_norm") = false, py::arg("causal") = false, py::arg("activation") = "gelu",
           py::arg("gelu_tanh") = false, py::arg("dropout") = 0.0,
           py::arg("attention_dropout") = 0.0, py::arg("layer_norm_eps") = 1e-12,
           py::arg("fused_qkv") = false)
      .def_readonly("attention", &nn::TransformerEncoderLayer::attention)
      .def_readonly("attention_norm", &nn::TransformerEncoderLayer::attention_norm)
      .def_readonly("ffn_hidden", &nn::TransformerEncoderLayer::ffn_hidden)
      .def_readonly("ffn_out", &nn::TransformerEncoderLayer::ffn_out)
      .def_readonly("ffn_norm", &nn::TransformerEncoderLayer::ffn_norm);
  py::class_<nn::TransformerDecoderLayer, HybridBlock,
             std::shared_ptr<nn::TransformerDecoderLayer>>(
      m, "TransformerDecoderLayer",
      "Causal self-attention, attention over a memory, feed-forward: layer(x, memory"
      "[, memory_mask[, self_mask]]).")
      .def(py::init([](int64_t units, int64_t hidden_size, int64_t num_heads, bool pre_norm,
                       bool causal, const std::string &activation, bool gelu_tanh,
                       double dropout, double attention_dropout, double layer_norm_eps) {
             return std::make_shared<nn::TransformerDecoderLayer>(
                 units, hidden_size, num_heads,
                 nn::TransformerLayerOptions{pre_norm, causal, activation, gelu_tanh, dropout,
                                             attention_dropout, layer_norm_eps, false});
           }),
           py::arg("units"), py::arg("hidden_size"), py::arg("num_heads"),
           py::arg("pre_norm") = false, py::arg("causal") = true, py::arg("activation") = "gelu",
           py::arg("gelu_tanh") = false, py::arg("dropout") = 0.0,
           py::arg("attention_dropout") = 0.0, py::arg("layer_norm_eps") = 1e-12)
      .def_readonly("self_attention", &nn::TransformerDecoderLayer::self_attention)
      .def_readonly("self_attention_norm", &nn::TransformerDecoderLayer::self_attention_norm)
      .def_readonly("cross_attention", &nn::TransformerDecoderLayer::cross_attention)
      .def_readonly("cross_attention_norm", &nn::TransformerDecoderLayer::cross_attention_norm)
      .def_readonly("ffn_hidden", &nn::TransformerDecoderLayer::ffn_hidden)
      .def_readonly("ffn_out", &nn::TransformerDecoderLayer::ffn_out)
      .def_readonly("ffn_norm", &nn::TransformerDecoderLayer::ffn_norm);
  py::class_<nn::Dropout, HybridBlock, std::shared_ptr<nn::Dropout>>(m, "Dropout")
      .def(py::init<double>(), py::arg("rate"));
  py::class_<nn::Flatten, HybridBlock, std::shared_ptr<nn::Flatten>>(m, "Flatten").def(py::init<>());
  py::class_<nn::Activation, HybridBlock, std::shared_ptr<nn::Activation>>(m, "Activation")
      .def(py::init<std::string>(), py::arg("activation"));
  py::class_<nn::GlobalAvgPool2D, HybridBlock, std::shared_ptr<nn::GlobalAvgPool2D>>(m, "GlobalAvgPool2D")
      .def(py::init([](const std::string &layout) {
             require_nchw(layout, "GlobalAvgPool2D");
             return std::make_shared<nn::GlobalAvgPool2D>();
           }),
           py::arg("layout") = "NCHW");
  py::class_<nn::GlobalMaxPool2D, HybridBlock, std::shared_ptr<nn::GlobalMaxPool2D>>(m, "GlobalMaxPool2D")
      .def(py::init([](const std::string &layout) {
             require_nchw(layout, "GlobalMaxPool2D");
             return std::make_shared<nn::GlobalMaxPool2D>();
           }),
           py::arg("layout") = "NCHW");
  py::class_<nn::Identity, HybridBlock, std::shared_ptr<nn::Identity>>(m, "Identity").def(py::init<>());
  bind_activation_layers(m);
  bind_normalization_layers(m);
}

/// MXNet 1.9.1's LayerNorm, InstanceNorm and GroupNorm, with its constructor arguments.
void bind_normalization_layers(py::module_ &m) {
  auto options = [](double epsilon, bool center, bool scale, int64_t in_channels) {
    nn::NormOptions o;
    o.epsilon = epsilon;
    o.center = center;
    o.scale = scale;
    o.in_channels = in_channels;
    return o;
  };
  py::class_<nn::LayerNorm, HybridBlock, std::shared_ptr<nn::LayerNorm>>(m, "LayerNorm")
      .def(py::init([options](int64_t axis, double epsilon, bool center, bool scale,
                              int64_t in_channels) {
             return std::make_shared<nn::LayerNorm>(axis, options(epsilon, center, scale, in_channels));
           }),
           py::arg("axis") = -1, py::arg("epsilon") = 1e-5, py::arg("center") = true,
           py::arg("scale") = true, py::arg("in_channels") = 0)
      .def_readonly("gamma", &nn::LayerNorm::gamma)
      .def_readonly("beta", &nn::LayerNorm::beta);
  py::class_<nn::InstanceNorm, HybridBlock, std::shared_ptr<nn::InstanceNorm>>(m, "InstanceNorm")
      .def(py::init([options](int64_t axis, double epsilon, bool center, bool scale,
                              int64_t in_channels) {
             if (axis != 1)
               throw ValueError("InstanceNorm: only axis=1 (the channels of NCHW) is "
                                "supported, got " + std::to_string(axis));
             return std::make_shared<nn::InstanceNorm>(options(epsilon, center, scale, in_channels));
           }),
           py::arg("axis") = 1, py::arg("epsilon") = 1e-5, py::arg("center") = true,
           py::arg("scale") = false, py::arg("in_channels") = 0)
      .def_readonly("gamma", &nn::InstanceNorm::gamma)
      .def_readonly("beta", &nn::InstanceNorm::beta);
  py::class_<nn::GroupNorm, HybridBlock, std::shared_ptr<nn::GroupNorm>>(m, "GroupNorm")
      .def(py::init([options](int64_t num_groups, double epsilon, bool center, bool scale) {
             return std::make_shared<nn::GroupNorm>(num_groups, options(epsilon, center, scale, 0));
           }),
           py::arg("num_groups") = 1, py::arg("epsilon") = 1e-5, py::arg("center") = true,
           py::arg("scale") = true)
      .def_readonly("gamma", &nn::GroupNorm::gamma)
      .def_readonly("beta", &nn::GroupNorm::beta);
}

/// MXNet's activation blocks, with its constructor arguments.
void bind_activation_layers(py::module_ &m) {
  py::class_<nn::LeakyReLU, HybridBlock, std::shared_ptr<nn::LeakyReLU>>(m, "LeakyReLU")
      .def(py::init<double>(), py::arg("alpha"));
  py::class_<nn::PReLU, HybridBlock, std::shared_ptr<nn::PReLU>>(m, "PReLU")
      .def(py::init([](const py::object &alpha_initializer, int64_t in_channels) {
             return std::make_shared<nn::PReLU>(to_initializer(alpha_initializer), in_channels);
           }),
           py::arg("alpha_initializer") = py::none(), py::arg("in_channels") = 1)
      .def_readonly("alpha", &nn::PReLU::alpha);
  py::class_<nn::ELU, HybridBlock, std::shared_ptr<nn::ELU>>(m, "ELU")
      .def(py::init<double>(), py::arg("alpha") = 1.0);
  py::class_<nn::SELU, HybridBlock, std::shared_ptr<nn::SELU>>(m, "SELU").def(py::init<>());
  py::class_<nn::GELU, HybridBlock, std::shared_ptr<nn::GELU>>(m, "GELU")
      .def(py::init<std::string>(), py::arg("approximation") = "erf");
  py::class_<nn::Swish, HybridBlock, std::shared_ptr<nn::Swish>>(m, "Swish")
      .def(py::init<double>(), py::arg("beta") = 1.0);
  py::class_<nn::SiLU, HybridBlock, std::shared_ptr<nn::SiLU>>(m, "SiLU").def(py::init<>());
  py::class_<nn::HardSigmoid, HybridBlock, std::shared_ptr<nn::HardSigmoid>>(m, "HardSigmoid")
      .def(py::init<double, double>(), py::arg("alpha") = 0.2, py::arg("beta") = 0.5);
  py::class_<nn::HardSwish, HybridBlock, std::shared_ptr<nn::HardSwish>>(m, "HardSwish")
      .def(py::init<>());
  py::class_<nn::UpSampling2D, HybridBlock, std::shared_ptr<nn::UpSampling2D>>(m, "UpSampling2D")
      .def(py::init<int64_t>(), py::arg("scale") = 2);
  py::class_<nn::ReflectionPad2D, HybridBlock, std::shared_ptr<nn::ReflectionPad2D>>(
      m, "ReflectionPad2D")
      .def(py::init<int64_t>(), py::arg("padding") = 0);
}

void bind_model_zoo(py::module_ m) {
  namespace zoo = model_zoo::vision;
  m.def("get_model",
        [](const std::string &name, int64_t classes, bool pretrained, const std::string &root,
           int64_t image_size) {
          zoo::ModelOptions o;
          o.classes = classes;
          o.pretrained = pretrained;
          o.root = root;
          o.image_size = image_size;
          return zoo::get_model(name, o);
        },
        py::arg("name"), py::arg("classes") = 1000, py::arg("pretrained") = false,
        py::arg("root") = "", py::arg("image_size") = 0,
        "MXNet 1.9.1's model-zoo network `name`, with MXNet's parameter names.");
  m.def("model_names", &zoo::model_names, "Every name get_model takes.");
  m.def("mxnet_model_names", &zoo::mxnet_model_names,
        "The names of MXNet 1.9.1's own zoo (all but vit_b_16).");
  py::class_<zoo::VisionTransformer, HybridBlock, std::shared_ptr<zoo::VisionTransformer>>(
      m, "VisionTransformer",
      "ViT laid out as Hugging Face's ViTForImageClassification. net(images) -> (B, "
      "classes) logits, or the first token's (B, units) features without a classifier.")
      .def_property_readonly("config",
                             [](const zoo::VisionTransformer &v) {
                               const zoo::ViTConfig &c = v.config();
                               py::dict d;
                               d["image_size"] = c.image_size, d["patch_size"] = c.patch_size;
                               d["channels"] = c.channels, d["units"] = c.units;
                               d["hidden_size"] = c.hidden_size, d["num_layers"] = c.num_layers;
                               d["num_heads"] = c.num_heads, d["classes"] = c.classes;
                               d["layer_norm_eps"] = c.layer_norm_eps, d["dropout"] = c.dropout;
                               d["attention_dropout"] = c.attention_dropout;
                               d["activation"] = c.activation, d["gelu_tanh"] = c.gelu_tanh;
                               return d;
                             })
      .def("features", &zoo::VisionTransformer::features, py::arg("images"),
           "The final layer norm's output (B, 1 + patches, units).")
      .def("load_huggingface",
           [](zoo::VisionTransformer &v, const std::string &path, const py::object &device) {
             v.load_huggingface(path, to_devices(device));
           },
           py::arg("path"), py::arg("device") = py::none(),
           "Reads Hugging Face's model.safetensors of this configuration.")
      .def_readonly("cls_token", &zoo::VisionTransformer::cls_token)
      .def_readonly("position_embed", &zoo::VisionTransformer::position_embed)
      .def_readonly("patch_embed", &zoo::VisionTransformer::patch_embed)
      .def_readonly("layers", &zoo::VisionTransformer::layers)
      .def_readonly("final_norm", &zoo::VisionTransformer::final_norm)
      .def_readonly("head", &zoo::VisionTransformer::head);
  m.def("pretrained_file", &zoo::pretrained_file, py::arg("name"), py::arg("root") = "",
        "Where pretrained=True looks for MXNet's published weights.");
}

} // namespace

init::InitializerPtr initializer_of(const py::object &obj) { return to_initializer(obj); }

void bind_gluon(py::module_ &m) {
  py::module_ init_module = m.def_submodule("init", "initializers (MXNet's mx.init).");
  bind_initializers(init_module);
  py::module_ gluon_module = m.def_submodule("gluon", "blocks, layers and parameters.");
  bind_parameter(gluon_module);
  bind_blocks(gluon_module);
  py::module_ nn_module = gluon_module.def_submodule("nn", "layers (gluon.nn).");
  bind_layers(nn_module);
  py::module_ zoo_module = gluon_module.def_submodule("model_zoo", "gluon.model_zoo.");
  bind_model_zoo(
      zoo_module.def_submodule("vision", "gluon.model_zoo.vision: MXNet's vision networks."));
  bind_text_zoo(zoo_module.def_submodule(
      "text", "gluon.model_zoo.text: BERT and GPT-2, loading Hugging Face's checkpoints."));
}

} // namespace dlc::python
