//===- Ops.cpp - np, npx and autograd: MXNet's functions over dlc's ops --------===//
#include "Bindings.h"

#include "dlc/Core/OpFacts.h"
#include "dlc/Frontend/OpRegistry.h"

namespace dlc::python {

namespace {

using GilFree = py::call_guard<py::gil_scoped_release>;

std::optional<DType> optional_dtype(const py::object &dtype) {
  return dtype.is_none() ? std::nullopt : std::optional(to_dtype(dtype));
}

/// A binary function of numpy: arrays and numbers in any position.
template <Tensor (*Op)(const Tensor &, const Tensor &)> void def_binary(py::module_ &m, const char *name) {
  m.def(name, [](const py::object &a, const py::object &b) {
    if (py::isinstance<Tensor>(a)) {
      Tensor x = Op == true_divide ? as_floating(a.cast<Tensor>()) : a.cast<Tensor>();
      Tensor y = operand(b, x);
      py::gil_scoped_release release;
      return Op(x, y);
    }
    Tensor y = py::isinstance<Tensor>(b) ? b.cast<Tensor>() : to_tensor(b);
    if (Op == true_divide)
      y = as_floating(y);
    Tensor x = operand(a, y);
    py::gil_scoped_release release;
    return Op(x, y);
  }, py::arg("x1"), py::arg("x2"));
}

/// Every element-wise op the frontend registers with a module (OpDef::module), bound
/// there under its name: a new op needs no line here. A unary one takes an array (or
/// anything np.array reads), a binary one arrays and numbers in any position, as numpy's
/// functions do.
void bind_registered_elementwise_ops(py::module_ &np_module, py::module_ &npx_module) {
  for (const OpDef *op : all_ops()) {
    if (op->module.empty())
      continue;
    py::module_ &m = op->module == "np" ? np_module : npx_module;
    const op_facts::OpInfo *facts = op_facts::find(op->dialect_op);
    if (facts && facts->min_operands == 2) {
      m.def(op->name.c_str(), [op](const py::object &a, const py::object &b) {
        Tensor x = py::isinstance<Tensor>(a) ? a.cast<Tensor>() : Tensor();
        Tensor y = py::isinstance<Tensor>(b) ? b.cast<Tensor>() : Tensor();
        if (!x.defined() && !y.defined())
          y = to_tensor(b);
        if (!x.defined())
          x = operand(a, y);
        if (!y.defined())
          y = operand(b, x);
        py::gil_scoped_release release;
        return invoke1(*op, {x, y});
      }, py::arg("x1"), py::arg("x2"));
    } else {
      m.def(op->name.c_str(), [op](const py::object &x) {
        Tensor t = to_tensor(x);
        py::gil_scoped_release release;
        return invoke1(*op, {t});
      }, py::arg("x"));
    }
  }
}

template <Tensor (*Op)(const Tensor &)> void def_unary(py::module_ &m, const char *name) {
  m.def(name, [](const py::object &x) {
    Tensor t = to_tensor(x);
    py::gil_scoped_release release;
    return Op(t);
  }, py::arg("x"));
}

void bind_np(py::module_ &np_module) {
  auto &m = np_module;
  m.def("array", [](const py::object &obj, const py::object &dtype, const py::object &device) {
    Tensor t = to_tensor(obj, optional_dtype(dtype), optional_device(device));
    // np.array copies, as numpy's does (an ndarray passed in is not shared).
    return py::isinstance<Tensor>(obj) && t.impl() == obj.cast<Tensor>().impl() ? t.copyto(t.device()) : t;
  }, py::arg("object"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("asarray", [](const py::object &obj, const py::object &dtype, const py::object &device) {
    return to_tensor(obj, optional_dtype(dtype), optional_device(device));
  }, py::arg("object"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("zeros", [](const py::object &shape, const py::object &dtype, const py::object &device) {
    return np::zeros(to_shape(shape), to_dtype(dtype), to_device(device));
  }, py::arg("shape"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("ones", [](const py::object &shape, const py::object &dtype, const py::object &device) {
    return np::ones(to_shape(shape), to_dtype(dtype), to_device(device));
  }, py::arg("shape"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("empty", [](const py::object &shape, const py::object &dtype, const py::object &device) {
    return Tensor::empty(to_shape(shape), to_dtype(dtype), to_device(device));
  }, py::arg("shape"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("full", [](const py::object &shape, double value, const py::object &dtype, const py::object &device) {
    return np::full(to_shape(shape), value, to_dtype(dtype), to_device(device));
  }, py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("arange", [](double start, const py::object &stop, double step, const py::object &dtype,
                     const py::object &device) {
    if (stop.is_none())
      return np::arange(0, start, step, to_dtype(dtype), to_device(device));
    return np::arange(start, stop.cast<double>(), step, to_dtype(dtype), to_device(device));
  }, py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1.0,
     py::arg("dtype") = py::none(), py::arg("device") = py::none());

  def_binary<true_divide>(m, "divide");
  def_binary<true_divide>(m, "true_divide");
  def_binary<np::equal>(m, "equal");
  def_binary<np::not_equal>(m, "not_equal");
  def_binary<np::less>(m, "less");
  def_binary<np::less_equal>(m, "less_equal");
  def_binary<np::greater>(m, "greater");
  def_binary<np::greater_equal>(m, "greater_equal");
  def_binary<np::dot>(m, "dot");
  m.def("matmul", [](const Tensor &a, const Tensor &b) { return np::matmul(a, b); }, GilFree());
  m.def("broadcast_to", [](const Tensor &x, const py::object &shape) { return np::broadcast_to(x, to_shape(shape)); });
  m.def("where", [](const Tensor &condition, const py::object &x, const py::object &y) {
    Tensor a = py::isinstance<Tensor>(x) ? x.cast<Tensor>() : Tensor();
    Tensor b = py::isinstance<Tensor>(y) ? y.cast<Tensor>() : Tensor();
    const Tensor &like = a.defined() ? a : b.defined() ? b : condition;
    DType dtype = like.dtype() == DType::boolean ? DType::f32 : like.dtype();
    if (!a.defined())
      a = to_tensor(x, dtype, condition.device());
    if (!b.defined())
      b = to_tensor(y, dtype, condition.device());
    return np::where(condition, a, b);
  }, py::arg("condition"), py::arg("x"), py::arg("y"));
  auto reduction = [&m](const char *name, Tensor (*op)(const Tensor &, const std::vector<int64_t> &, bool)) {
    m.def(name, [op](const Tensor &x, const py::object &axis, bool keepdims) {
      return op(x, to_axes(axis), keepdims);
    }, py::arg("a"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  };
  reduction("sum", np::sum);
  reduction("mean", np::mean);
  reduction("max", np::max);
  reduction("min", np::min);
  reduction("amax", np::max);
  reduction("amin", np::min);
  m.def("argmax", [](const Tensor &x, const py::object &axis, bool keepdims) {
    return axis.is_none() ? np::argmax(x.reshape({-1}), 0, false) : np::argmax(x, axis.cast<int64_t>(), keepdims);
  }, py::arg("a"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  m.def("reshape", [](const Tensor &x, const py::object &shape) { return np::reshape(x, to_shape(shape)); },
        py::arg("a"), py::arg("newshape"));
  m.def("transpose", [](const Tensor &x, const py::object &axes) { return np::transpose(x, to_axes(axes)); },
        py::arg("a"), py::arg("axes") = py::none());
  m.def("concatenate", [](const std::vector<Tensor> &tensors, int64_t axis) {
    return np::concatenate(tensors, axis);
  }, py::arg("seq"), py::arg("axis") = 0, GilFree());
  m.def("split", [](const Tensor &x, const py::object &sections, int64_t axis) {
    if (py::isinstance<py::int_>(sections))
      return np::split(x, sections.cast<int64_t>(), axis);
    // numpy's list of split points.
    int64_t extent = x.shape().at(size_t(axis < 0 ? axis + x.ndim() : axis));
    std::vector<int64_t> sizes;
    int64_t previous = 0;
    for (int64_t point : to_shape(sections)) {
      point = std::clamp<int64_t>(point, previous, extent);
      sizes.push_back(point - previous);
      previous = point;
    }
    sizes.push_back(extent - previous);
    return np::split_sizes(x, sizes, axis);
  }, py::arg("ary"), py::arg("indices_or_sections"), py::arg("axis") = 0);

  // Arguments as C++ types: the call runs without the GIL.
  m.def("take", [](const Tensor &a, const Tensor &indices, std::optional<int64_t> axis,
                   const std::string &mode) {
    if (mode != "raise")
      throw UnsupportedError("take: mode '" + mode + "' is not supported; dlc's take raises "
                             "an IndexError for an index out of range (mode='raise')");
    return axis ? np::take(a, indices, *axis) : np::take(a, indices);
  }, py::arg("a"), py::arg("indices"), py::arg("axis") = py::none(), py::arg("mode") = "raise",
     GilFree());

  py::module_ random = m.def_submodule("random", "Random arrays (MXNet's np.random).");
  random.def("seed", [](uint64_t seed, const py::object &device) { np::random::seed(seed, optional_device(device)); },
             py::arg("seed"), py::arg("device") = py::none());
  random.def("uniform", [](double low, double high, const py::object &size, const py::object &dtype, const py::object &device) {
    return np::random::uniform(low, high, size.is_none() ? Shape{} : to_shape(size), optional_device(device), to_dtype(dtype));
  }, py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("size") = py::none(), py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
  random.def("normal", [](double loc, double scale, const py::object &size, const py::object &dtype, const py::object &device) {
    return np::random::normal(loc, scale, size.is_none() ? Shape{} : to_shape(size), optional_device(device), to_dtype(dtype));
  }, py::arg("loc") = 0.0, py::arg("scale") = 1.0, py::arg("size") = py::none(), py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
  random.def("randint", [](int64_t low, const py::object &high, const py::object &size, const py::object &dtype,
                           const py::object &device) {
    int64_t lo = high.is_none() ? 0 : low, hi = high.is_none() ? low : high.cast<int64_t>();
    return np::random::randint(lo, hi, size.is_none() ? Shape{} : to_shape(size), optional_device(device),
                               to_dtype(dtype, DType::i64));
  }, py::arg("low"), py::arg("high") = py::none(), py::arg("size") = py::none(), py::arg("dtype") = py::none(),
     py::arg("device") = py::none());
}

void bind_npx(py::module_ &m) {
  def_unary<npx::batch_flatten>(m, "batch_flatten");
  m.def("softmax", [](const Tensor &x, int64_t axis) { return npx::softmax(x, axis); },
        py::arg("data"), py::arg("axis") = -1, GilFree());
  m.def("log_softmax", [](const Tensor &x, int64_t axis) { return npx::log_softmax(x, axis); },
        py::arg("data"), py::arg("axis") = -1, GilFree());
  // PyTorch's scaled_dot_product_attention as one fused dlc.attention; dropout applies as
  // given (pass 0 outside training, as torch's callers do).
  m.def("scaled_dot_product_attention",
        [](const Tensor &query, const Tensor &key, const Tensor &value,
           const std::optional<Tensor> &mask, bool causal, double dropout,
           std::optional<double> scale) {
          npx::AttentionOptions options;
          if (mask)
            options.mask = *mask;
          options.causal = causal;
          options.dropout = dropout;
          options.scale = scale;
          return npx::scaled_dot_product_attention(query, key, value, options);
        },
        py::arg("query"), py::arg("key"), py::arg("value"), py::arg("mask") = py::none(),
        py::arg("causal") = false, py::arg("dropout") = 0.0, py::arg("scale") = py::none(),
        GilFree());
  // MXNet's masked_softmax / masked_log_softmax (a boolean mask, true: keep).
  m.def("masked_softmax", [](const Tensor &x, const Tensor &mask, int64_t axis,
                             double temperature, bool normalize) {
    if (!normalize)
      throw UnsupportedError("masked_softmax: normalize=False is not supported");
    return npx::masked_softmax(x, mask, axis, temperature);
  }, py::arg("data"), py::arg("mask"), py::arg("axis") = -1, py::arg("temperature") = 1.0,
     py::arg("normalize") = true, GilFree());
  m.def("masked_log_softmax", [](const Tensor &x, const Tensor &mask, int64_t axis,
                                 double temperature, bool normalize) {
    if (!normalize)
      throw UnsupportedError("masked_log_softmax: normalize=False is not supported");
    return npx::masked_log_softmax(x, mask, axis, temperature);
  }, py::arg("data"), py::arg("mask"), py::arg("axis") = -1, py::arg("temperature") = 1.0,
     py::arg("normalize") = true, GilFree());
  m.def("activation", [](const Tensor &x, const std::string &act_type) {
    return gluon::nn::activate(act_type, x);
  }, py::arg("data"), py::arg("act_type") = "relu", GilFree());
  // MXNet's leaky_relu (npx.leaky_relu, 1.x's LeakyReLU): one op for its act_types.
  m.def("leaky_relu", [](const Tensor &x, const std::optional<Tensor> &gamma,
                         const std::string &act_type, double slope) {
    if (act_type == "leaky")
      return npx::leaky_relu(x, slope);
    if (act_type == "prelu") {
      if (!gamma)
        throw ValueError("leaky_relu: act_type 'prelu' needs gamma, the learned slopes");
      return npx::prelu(x, *gamma);
    }
    if (act_type == "elu")
      return npx::elu(x, slope);
    if (act_type == "selu")
      return npx::selu(x);
    if (act_type == "gelu")
      return npx::gelu(x);
    throw ValueError("leaky_relu: unknown act_type '" + act_type +
                     "'; expected leaky, prelu, elu, selu or gelu (rrelu is not available)");
  }, py::arg("data"), py::arg("gamma") = py::none(), py::arg("act_type") = "leaky",
     py::arg("slope") = 0.25, GilFree());
  m.def("upsampling", [](const Tensor &x, int64_t scale, const std::string &sample_type) {
    if (sample_type != "nearest")
      throw ValueError("upsampling: sample_type '" + sample_type + "' is not available; dlc "
                       "up-samples by 'nearest' (a learned 'bilinear' one is a Conv2DTranspose)");
    return npx::upsampling_nearest(x, scale);
  }, py::arg("data"), py::arg("scale") = 2, py::arg("sample_type") = "nearest", GilFree());
  m.def("pad", [](const Tensor &x, const std::string &mode, const std::vector<int64_t> &pad_width,
                  double constant_value) {
    npx::PadMode padMode = mode == "constant" ? npx::PadMode::constant
                           : mode == "edge"   ? npx::PadMode::edge
                           : mode == "reflect"
                               ? npx::PadMode::reflect
                               : throw ValueError("pad: unknown mode '" + mode +
                                                  "'; expected constant, edge or reflect");
    return npx::pad(x, padMode, pad_width, constant_value);
  }, py::arg("data"), py::arg("mode") = "constant", py::arg("pad_width") = std::vector<int64_t>{},
     py::arg("constant_value") = 0.0, GilFree());
  m.def("bilinear_resize2d", [](const Tensor &x, int64_t height, int64_t width, bool align_corners) {
    return npx::bilinear_resize(x, height, width, align_corners);
  }, py::arg("data"), py::arg("height"), py::arg("width"), py::arg("align_corners") = true,
     GilFree());
  m.def("hard_sigmoid", [](const Tensor &x, double alpha, double beta) {
    return npx::hard_sigmoid(x, alpha, beta);
  }, py::arg("data"), py::arg("alpha") = 0.2, py::arg("beta") = 0.5, GilFree());
  m.def("waitall", &npx::waitall, GilFree(), "Waits for every queued op on every device.");
  m.def("convolution", [](const Tensor &data, const Tensor &weight, const std::optional<Tensor> &bias,
                          const py::object &stride, const py::object &pad, const py::object &dilate,
                          int64_t num_group, bool no_bias) {
    npx::ConvOptions options;
    options.stride = pair_of(stride, "convolution stride");
    options.padding = pair_of(pad, "convolution pad");
    options.dilation = pair_of(dilate, "convolution dilate");
    options.groups = num_group;
    Tensor b = no_bias || !bias ? Tensor() : *bias;
    return npx::convolution(data, weight, b, options);
  }, py::arg("data"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
     py::arg("pad") = 0, py::arg("dilate") = 1, py::arg("num_group") = 1, py::arg("no_bias") = false);
  m.def("deconvolution", [](const Tensor &data, const Tensor &weight, const std::optional<Tensor> &bias,
                            const py::object &stride, const py::object &pad, const py::object &adj,
                            const py::object &dilate, int64_t num_group, bool no_bias) {
    npx::DeconvOptions options;
    options.conv.stride = pair_of(stride, "deconvolution stride");
    options.conv.padding = pair_of(pad, "deconvolution pad");
    options.conv.dilation = pair_of(dilate, "deconvolution dilate");
    options.conv.groups = num_group;
    options.output_padding = pair_of(adj, "deconvolution adj");
    Tensor b = no_bias || !bias ? Tensor() : *bias;
    return npx::deconvolution(data, weight, b, options);
  }, py::arg("data"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
     py::arg("pad") = 0, py::arg("adj") = 0, py::arg("dilate") = 1, py::arg("num_group") = 1,
     py::arg("no_bias") = false);
  m.def("pooling", [](const Tensor &data, const py::object &kernel, const py::object &stride,
                      const py::object &pad, const std::string &pool_type,
                      const std::string &pooling_convention, bool count_include_pad) {
    npx::PoolOptions options;
    options.kernel = pair_of(kernel, "pooling kernel");
    options.stride = stride.is_none() ? options.kernel : pair_of(stride, "pooling stride");
    options.padding = pair_of(pad, "pooling pad");
    if (pooling_convention != "valid" && pooling_convention != "full")
      throw ValueError("pooling: pooling_convention must be 'valid' or 'full', got '" + pooling_convention + "'");
    options.ceil_mode = pooling_convention == "full";
    options.count_include_pad = count_include_pad;
    if (pool_type == "max")
      return npx::max_pool2d(data, options);
    if (pool_type == "avg")
      return npx::avg_pool2d(data, options);
    throw ValueError("pooling: pool_type must be 'max' or 'avg', got '" + pool_type + "'");
  }, py::arg("data"), py::arg("kernel"), py::arg("stride") = py::none(), py::arg("pad") = 0,
     py::arg("pool_type") = "max", py::arg("pooling_convention") = "valid",
     py::arg("count_include_pad") = true);
  m.def("fully_connected", [](const Tensor &x, const Tensor &weight, const std::optional<Tensor> &bias,
                              bool no_bias, bool flatten) {
    Tensor input = flatten && x.ndim() > 2 ? npx::batch_flatten(x) : x;
    return npx::fully_connected(input, weight, no_bias || !bias ? Tensor() : *bias);
  }, py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("no_bias") = false,
     py::arg("flatten") = true);
  m.def("dropout", [](const Tensor &x, double p) {
    return autograd::is_training() ? npx::dropout(x, p).output : x;
  }, py::arg("data"), py::arg("p") = 0.5, GilFree());
  m.def("batch_norm", [](const Tensor &x, const Tensor &gamma, const Tensor &beta,
                         const Tensor &running_mean, const Tensor &running_var, double eps,
                         bool use_global_stats) {
    if (use_global_stats || !autograd::is_training())
      return npx::batch_norm_inference(x, gamma, beta, running_mean, running_var, eps);
    return npx::batch_norm_training(x, gamma, beta, eps).output;
  }, py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("running_mean"), py::arg("running_var"),
     py::arg("eps") = 1e-3, py::arg("use_global_stats") = false, GilFree());
  m.def("embedding", [](const Tensor &data, const Tensor &weight, std::optional<int64_t> input_dim,
                        std::optional<int64_t> output_dim) {
    const Shape &w = weight.shape();
    if ((input_dim && (w.size() != 2 || *input_dim != w[0])) ||
        (output_dim && (w.size() != 2 || *output_dim != w[1]))) {
      auto text = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string("None"); };
      throw ShapeError("embedding: the weight " + shape_rules::str(w) + " is not (input_dim, "
                       "output_dim) = (" + text(input_dim) + ", " + text(output_dim) + ")");
    }
    return npx::embedding(data, weight);
  }, py::arg("data"), py::arg("weight"), py::arg("input_dim") = py::none(),
     py::arg("output_dim") = py::none(), GilFree());
  // MXNet's npx.slice: begin and end tuples whose entries may be None, step likewise.
  m.def("slice", [](const Tensor &data, const std::vector<std::optional<int64_t>> &begin,
                    const std::vector<std::optional<int64_t>> &end,
                    const std::optional<std::vector<std::optional<int64_t>>> &step) {
    if (begin.size() != end.size() || (step && step->size() != begin.size()))
      throw ValueError("slice: begin, end and step must have one entry per sliced axis, got " +
                       std::to_string(begin.size()) + ", " + std::to_string(end.size()) +
                       " and " + std::to_string(step ? step->size() : begin.size()));
    std::vector<npx::SliceRange> ranges;
    for (size_t d = 0; d < begin.size(); ++d)
      ranges.push_back({begin[d], end[d], step ? (*step)[d].value_or(1) : 1});
    return npx::slice(data, ranges);
  }, py::arg("data"), py::arg("begin"), py::arg("end"), py::arg("step") = py::none(), GilFree());
  m.def("slice_axis", [](const Tensor &data, int64_t axis, int64_t begin,
                         std::optional<int64_t> end) {
    return npx::slice_axis(data, axis, begin, end);
  }, py::arg("data"), py::arg("axis"), py::arg("begin"), py::arg("end"), GilFree());
  auto optional = [](const std::optional<Tensor> &t) { return t ? *t : Tensor(); };
  m.def("layer_norm", [optional](const Tensor &x, const std::optional<Tensor> &gamma,
                                 const std::optional<Tensor> &beta, int64_t axis, double eps) {
    return npx::layer_norm(x, optional(gamma), optional(beta), axis, eps);
  }, py::arg("data"), py::arg("gamma") = py::none(), py::arg("beta") = py::none(),
     py::arg("axis") = -1, py::arg("eps") = 1e-5, GilFree());
  m.def("instance_norm", [optional](const Tensor &x, const std::optional<Tensor> &gamma,
                                    const std::optional<Tensor> &beta, double eps) {
    return npx::instance_norm(x, optional(gamma), optional(beta), eps);
  }, py::arg("data"), py::arg("gamma") = py::none(), py::arg("beta") = py::none(),
     py::arg("eps") = 1e-3, GilFree());
  m.def("group_norm", [optional](const Tensor &x, const std::optional<Tensor> &gamma,
                                 const std::optional<Tensor> &beta, int64_t num_groups,
                                 double eps) {
    return npx::group_norm(x, optional(gamma), optional(beta), num_groups, eps);
  }, py::arg("data"), py::arg("gamma") = py::none(), py::arg("beta") = py::none(),
     py::arg("num_groups") = 1, py::arg("eps") = 1e-5, GilFree());
  m.def("all_reduce", [](const std::vector<Tensor> &tensors, bool mean) {
    return npx::all_reduce(tensors, mean);
  }, py::arg("tensors"), py::arg("mean") = false, GilFree(),
     "The sum (or mean) of one array per device, as one result on each device.");
}

/// `with autograd.record():` and its kin: the C++ scope lives between __enter__ and
/// __exit__.
template <typename Scope> void bind_scope(py::module_ &m, const char *name, bool default_mode) {
  struct Holder {
    bool mode;
    std::unique_ptr<Scope> scope;
  };
  py::class_<Holder>(m, (std::string("_") + name + "_scope").c_str())
      .def("__enter__", [](Holder &h) {
        if (h.scope)
          throw ValueError("this scope object is already entered; make a new one per 'with'");
        h.scope = std::make_unique<Scope>(h.mode);
      })
      .def("__exit__", [](Holder &h, py::args) {
        h.scope.reset();
        return false;
      });
  m.def(name, [](bool mode) { return Holder{mode, nullptr}; }, py::arg("train_mode") = default_mode);
}

void bind_autograd_module(py::module_ &m) {
  bind_scope<autograd::Record>(m, "record", true);
  bind_scope<autograd::Pause>(m, "pause", false);
  bind_scope<autograd::TrainMode>(m, "_train_mode", true);
  m.def("is_recording", &autograd::is_recording);
  m.def("is_training", &autograd::is_training);
  m.def("backward", [](const py::object &heads, const py::object &head_grads, bool retain_graph, bool train_mode) {
    std::vector<Tensor> hs, gs;
    if (py::isinstance<Tensor>(heads))
      hs.push_back(heads.cast<Tensor>());
    else
      hs = heads.cast<std::vector<Tensor>>();
    if (!head_grads.is_none()) {
      if (py::isinstance<Tensor>(head_grads))
        gs.push_back(head_grads.cast<Tensor>());
      else
        for (py::handle g : head_grads)
          gs.push_back(g.is_none() ? Tensor() : g.cast<Tensor>());
    }
    py::gil_scoped_release release;
    autograd::TrainMode mode(train_mode);
    autograd::backward(hs, gs, retain_graph);
  }, py::arg("heads"), py::arg("head_grads") = py::none(), py::arg("retain_graph") = false,
     py::arg("train_mode") = true);
}

} // namespace

void bind_ops(py::module_ &m) {
  py::module_ np_module = m.def_submodule("np", "numpy-style arrays and ops (MXNet's np).");
  bind_np(np_module);
  py::module_ npx_module = m.def_submodule("npx", "neural-network ops (MXNet's npx).");
  bind_npx(npx_module);
  bind_registered_elementwise_ops(np_module, npx_module);
}

void bind_autograd(py::module_ &m) {
  py::module_ autograd_module = m.def_submodule("autograd", "recording and gradients (MXNet's autograd).");
  bind_autograd_module(autograd_module);
}

} // namespace dlc::python
