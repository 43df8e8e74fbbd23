//===- NNKernelTable.cpp - the NN ops' CPU kernels in the kernel table --------===//
//
// Adapters from the kernel interface (tensors + dialect attributes) to the plain-pointer
// kernels of NNKernels.h: oneDNN as the fast kernel, plain loops as the reference.
//
//===----------------------------------------------------------------------===//
#include "CpuKernels.h"
#include "../KernelMath/DropoutMask.h"

#include "dlc/Runtime/CPU/NNKernels.h"
#include "dlc/Runtime/CPU/PooledFilterGradient.h"
#include "dlc/Core/OpFacts.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace dlc::cpu_kernels {

namespace {

std::array<int64_t, 2> pairAttr(const Attrs &attrs, const char *name, int64_t fallback) {
  std::vector<int64_t> values = attrs.get_ints(name, {fallback, fallback});
  return {values.at(0), values.at(1)};
}

} // namespace

namespace {

/// Geometry from the (N,C,H,W) input, the (O,C/g,KH,KW) weight, the output and the attrs.
Conv2DGeometry convGeometry(const Shape &x, const Shape &w, const Shape &y, const Attrs &a) {
  auto stride = pairAttr(a, "stride", 1), padding = pairAttr(a, "padding", 0),
       dilation = pairAttr(a, "dilation", 1);
  Conv2DGeometry g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], y[2], y[3]};
  g.strideH = stride[0];
  g.strideW = stride[1];
  g.padH = padding[0];
  g.padW = padding[1];
  g.dilationH = dilation[0];
  g.dilationW = dilation[1];
  g.groups = a.get_int("groups", 1);
  int64_t algorithm = a.get_int("algorithm", int64_t(op_enums::ConvAlgorithm::direct));
  if (algorithm != int64_t(op_enums::ConvAlgorithm::direct) &&
      algorithm != int64_t(op_enums::ConvAlgorithm::winograd))
    throw Error("conv2d: algorithm " + std::to_string(algorithm) +
                " is none of the dialect's (0: direct, 1: winograd)");
  g.algorithm = op_enums::ConvAlgorithm(algorithm);
  return g;
}

BatchNormGeometry batchNormGeometry(const Shape &x) {
  return {x[0], x[1], shape_rules::numElements(Shape(x.begin() + 2, x.end()))};
}

const float *f32(const TensorRef &t) { return t.as<const float>(); }
float *f32out(const TensorRef &t) { return t.as<float>(); }

void requireF32(const KernelArgs &args, const char *op) {
  for (const TensorRef &t : args.inputs)
    if (t.dtype != DType::f32 && t.dtype != DType::i32 && t.dtype != DType::i64)
      throw DTypeError(std::string(op) + ": the CPU kernels take float32, got " +
                       dtype_name(t.dtype));
}

/// The reference kernels read NCHW only; the dispatcher never hands them a blocked tensor
/// (it converts first), which this checks.
void requirePlainLayouts(const KernelArgs &k, const char *op) {
  for (const auto *side : {&k.inputs, &k.outputs})
    for (const TensorRef &t : *side)
      if (t.layout != Layout::plain)
        throw Error(std::string(op) + ": internal error: the reference kernel was given a "
                    "tensor in a blocked layout");
}

/// Whether a compiled program asks for a ReLU epilogue (dlc-fuse's conv2d_relu and
/// dense_relu regions lower to the library op with activation = "relu"), or, on a
/// backward op, for the gradient of the ReLU before it (max_pool2d_backward_relu).
bool reluEpilogue(const KernelArgs &k) {
  std::string activation = k.attrs->get_string("activation", "");
  if (!activation.empty() && activation != "relu")
    throw UnsupportedError("activation '" + activation + "' is not a fused epilogue the CPU "
                           "kernels have; expected relu");
  return activation == "relu";
}

/// A dense layer's epilogue: the ReLU, or GELU (dlc-fuse's dense_gelu regions).
DenseEpilogue denseEpilogue(const KernelArgs &k) {
  if (k.attrs->get_string("activation", "") == "gelu")
    return DenseEpilogue::gelu;
  return reluEpilogue(k);
}

/// A convolution's epilogue: the ReLU, ReLU6 or SiLU (dlc-fuse's conv2d_relu6 and
/// conv2d_silu regions).
ConvEpilogue convEpilogue(const KernelArgs &k) {
  if (k.attrs->get_string("activation", "") == "relu6")
    return ConvEpilogue::capped(6);
  if (k.attrs->get_string("activation", "") == "silu")
    return ConvEpilogue::swish();
  return reluEpilogue(k);
}

/// The indices of a max pooling: uint8, the shape and layout of `like` (its output or
/// output gradient), windows of at most kMaxIndexedPoolTaps taps.
void requireIndices(const TensorRef &indices, const TensorRef &like, const Pool2DGeometry &g,
                    const char *op) {
  if (indices.dtype != DType::u8 || indices.shape != like.shape || indices.layout != like.layout)
    throw Error(std::string(op) + ": indices are " + dtype_name(indices.dtype) + " " +
                shape_rules::str(indices.shape) + " (" + layout_name(indices.layout) +
                "), expected uint8 " + shape_rules::str(like.shape) + " (" +
                layout_name(like.layout) + ")");
  if (g.kernelH * g.kernelW > kMaxIndexedPoolTaps)
    throw Error(std::string(op) + ": a " + std::to_string(g.kernelH) + "x" +
                std::to_string(g.kernelW) + " window has more taps than an index holds (" +
                std::to_string(kMaxIndexedPoolTaps) + ")");
}

/// Images per call of a convolution with a pooling epilogue: as many as make an
/// activation of about this size, so that the pooling finds it in the cache. On the
/// LeafNetwork's blocks at batch 32 (AVX-512 EPYC, 32 MiB L3) chunks of 1 to 8 images
/// (0.4 to 16 MB) ran alike; the whole batch at once cost 1.3-2.1x as much on the first
/// block, whose 66 MB activation went to memory and back.
constexpr int64_t kConvPoolChunkBytes = int64_t(4) << 20;

/// Scratch of 64-byte aligned floats kept per thread: a pooled convolution's activation
/// where nothing outside the step reads it.
float *activationScratch(int64_t floats) {
  thread_local std::shared_ptr<void> block;
  thread_local int64_t capacity = 0;
  if (floats > capacity) {
    const size_t bytes = (size_t(floats) * sizeof(float) + 63) / 64 * 64;
    block.reset(std::aligned_alloc(64, bytes), std::free);
    if (!block)
      throw OutOfMemoryError("conv2d with a pooling epilogue: cannot allocate " +
                             std::to_string(bytes) + " bytes of scratch for its activation");
    capacity = floats;
  }
  return static_cast<float *>(block.get());
}

/// `attrs` less the entries named `prefix`..., which go to `under` without it (a fused
/// step's attributes of its second op, KernelGeometry.h's prefixes).
Attrs splitAttrs(const Attrs &attrs, const std::string &prefix, Attrs &under) {
  Attrs rest;
  for (const auto &[name, value] : attrs.items())
    if (name.rfind(prefix, 0) == 0)
      under.set(name.substr(prefix.size()), value);
    else
      rest.set(name, value);
  return rest;
}

/// The shape of a convolution's output from its input and weight shapes and attributes.
Shape convOutputShape(const Shape &x, const Shape &w, const Attrs &a, const char *op) {
  shape_rules::Conv2DParams params;
  params.stride = pairAttr(a, "stride", 1);
  params.padding = pairAttr(a, "padding", 0);
  params.dilation = pairAttr(a, "dilation", 1);
  params.groups = a.get_int("groups", 1);
  shape_rules::Inferred shape = shape_rules::conv2d(x, w, nullptr, params);
  if (!shape.ok())
    throw ShapeError(std::string(op) + ": " + shape.error);
  return shape.shape;
}

/// Images per chunk of a fused convolution step whose activation holds `perImage`
/// floats per image (kConvPoolChunkBytes).
int64_t imagesPerChunk(int64_t batch, int64_t perImage) {
  return std::clamp<int64_t>(kConvPoolChunkBytes / std::max<int64_t>(1, perImage * 4), 1,
                             std::max<int64_t>(batch, 1));
}

/// `t`'s images [first, first + count) (the batch is the outermost dimension in every
/// layout).
TensorRef images(const TensorRef &t, int64_t first, int64_t count) {
  TensorRef part = t;
  const int64_t perImage = t.shape[0] ? t.numel() / t.shape[0] : 0;
  part.shape[0] = count;
  part.data = static_cast<char *>(t.data) + size_t(first * perImage) * dtype_size(t.dtype);
  return part;
}

// Each op's kernels, written once over the two implementations.
template <bool Fast> struct NN {
  // float32 inputs; and plain layouts for the reference, which reads NCHW only.
  static void check(const KernelArgs &k, const char *op) {
    requireF32(k, op);
    if (!Fast)
      requirePlainLayouts(k, op);
  }
  // y = conv2d(x, w) + b
  static void conv2d(const KernelArgs &k) {
    if (k.attrs->has(std::string(kernels::kPoolEpiloguePrefix) + "kernel"))
      return conv2dPooled(k);
    check(k, "conv2d");
    auto g = convGeometry(k.inputs[0].shape, k.inputs[1].shape, k.outputs[0].shape, *k.attrs);
    g.inputLayout = k.inputs[0].layout;
    g.outputLayout = k.outputs[0].layout;
    const float *bias = k.inputs.size() > 2 ? f32(k.inputs[2]) : nullptr;
    (Fast ? onednn::conv2d_forward : ref::conv2d_forward)(g, f32(k.inputs[0]), f32(k.inputs[1]),
                                                          bias, f32out(k.outputs[0]),
                                                          convEpilogue(k),
                                                          {k.memo, k.memo_generation});
  }
  // (x, w[, b]) -> ([activation,] pooled, indices): conv2d, its epilogue, then the
  // indexed max pooling of the activation (attributes under kPoolEpiloguePrefix; a
  // conv2d_max_pool2d region), a few images at a time. The activation is an output
  // where someone else reads it, scratch otherwise.
  static void conv2dPooled(const KernelArgs &k) {
    const bool visible = k.outputs.size() == 3;
    if (k.outputs.size() != 2 && !visible)
      throw Error("conv2d with a pooling epilogue: " + std::to_string(k.outputs.size()) +
                  " outputs, expected the pooling's output and indices, after the "
                  "activation where it is kept");
    Attrs poolAttrs;
    const Attrs convAttrs = splitAttrs(*k.attrs, kernels::kPoolEpiloguePrefix, poolAttrs);
    const TensorRef &x = k.inputs[0], &pooled = k.outputs[visible ? 1 : 0],
                    &indices = k.outputs[visible ? 2 : 1];
    TensorRef activation =
        visible ? k.outputs[0]
                : TensorRef{nullptr,
                            convOutputShape(x.shape, k.inputs[1].shape, convAttrs,
                                            "conv2d with a pooling epilogue"),
                            DType::f32, pooled.layout};
    if (activation.layout != pooled.layout)
      throw Error(std::string("conv2d with a pooling epilogue: the activation is ") +
                  layout_name(activation.layout) + " and the pooling's output " +
                  layout_name(pooled.layout) + "; the pooling reads its input as written");
    const int64_t batch = x.shape.at(0);
    const int64_t perImage = batch ? activation.numel() / batch : 0;
    const int64_t chunk = imagesPerChunk(batch, perImage);
    float *scratch = visible ? nullptr : activationScratch(chunk * perImage);
    for (int64_t first = 0; first < batch; first += chunk) {
      const int64_t count = std::min(chunk, batch - first);
      KernelArgs conv = k;
      conv.attrs = &convAttrs;
      conv.inputs[0] = images(x, first, count);
      if (visible) {
        conv.outputs = {images(activation, first, count)};
      } else {
        activation.data = scratch;
        conv.outputs = {images(activation, 0, count)};
      }
      // A memo holds the weights as one primitive wants them: the chunks of the full
      // size share it; a last, smaller one prepares them itself.
      if (count != chunk)
        conv.memo = nullptr;
      conv2d(conv);
      KernelArgs pool = k;
      pool.attrs = &poolAttrs;
      pool.memo = nullptr;
      pool.inputs = {conv.outputs[0]};
      pool.outputs = {images(pooled, first, count), images(indices, first, count)};
      maxPoolIndexed(pool);
    }
  }
  // dx from (dy, w); dx's shape is the output's
  static void conv2dBackwardData(const KernelArgs &k) {
    check(k, "conv2d_backward_data");
    auto g = convGeometry(k.outputs[0].shape, k.inputs[1].shape, k.inputs[0].shape, *k.attrs);
    g.inputLayout = k.outputs[0].layout;
    g.outputLayout = k.inputs[0].layout;
    (Fast ? onednn::conv2d_backward_data : ref::conv2d_backward_data)(
        g, f32(k.inputs[0]), f32(k.inputs[1]), f32out(k.outputs[0]));
  }
  // dw, and db when asked for, from (dy, x); dw's shape is the output's
  static void conv2dBackwardFilter(const KernelArgs &k) {
    if (k.attrs->has(std::string(kernels::kPoolEpiloguePrefix) + "kernel"))
      return poolConvBackward(k);
    check(k, "conv2d_backward_filter");
    auto g = convGeometry(k.inputs[1].shape, k.outputs[0].shape, k.inputs[0].shape, *k.attrs);
    g.inputLayout = k.inputs[1].layout;
    g.outputLayout = k.inputs[0].layout;
    float *db = k.outputs.size() > 1 ? f32out(k.outputs[1]) : nullptr;
    (Fast ? onednn::conv2d_backward_filter : ref::conv2d_backward_filter)(
        g, f32(k.inputs[0]), f32(k.inputs[1]), f32out(k.outputs[0]), db);
  }
  // (dy, indices[, w], x) -> ([dx,] dw[, db]): the indexed max pooling's gradient
  // (attributes under kPoolEpiloguePrefix; `relu` for the ReLU's before it) gives the
  // activation's gradient a few images at a time, in scratch, where the data gradient
  // (attributes under kDataGradientPrefix) and this filter gradient read it; the filter
  // gradients of the chunks are summed (a max_pool2d_backward_conv2d region).
  // PooledFilterGradient.h's kernel takes dw and db straight from dy and the codes
  // instead where it applies.
  static void poolConvBackward(const KernelArgs &k) {
    const bool withData = k.inputs.size() == 4;
    const size_t filterAt = withData ? 1 : 0;
    if ((k.inputs.size() != 3 && !withData) ||
        (k.outputs.size() != filterAt + 1 && k.outputs.size() != filterAt + 2))
      throw Error("conv2d_backward_filter after a pooling's gradient: " +
                  std::to_string(k.inputs.size()) + " inputs and " +
                  std::to_string(k.outputs.size()) + " outputs, expected (dy, indices[, "
                  "weight], input) -> ([input gradient,] weight gradient[, bias gradient])");
    Attrs poolAttrs, dataAttrs;
    const Attrs filterAttrs = splitAttrs(
        splitAttrs(*k.attrs, kernels::kPoolEpiloguePrefix, poolAttrs),
        kernels::kDataGradientPrefix, dataAttrs);
    const TensorRef &dy = k.inputs[0], &indices = k.inputs[1], &x = k.inputs.back();
    const TensorRef &dw = k.outputs[filterAt];
    const bool withBias = k.outputs.size() == filterAt + 2;
    TensorRef gradient{nullptr,
                       convOutputShape(x.shape, dw.shape, filterAttrs,
                                       "conv2d_backward_filter after a pooling's gradient"),
                       DType::f32, dy.layout};
    const int64_t batch = x.shape.at(0);
    if (batch == 0) { // no images: no gradient (the chunk loop below writes none)
      std::fill_n(f32out(dw), dw.numel(), 0.0f);
      if (withBias)
        std::fill_n(f32out(k.outputs[filterAt + 1]), k.outputs[filterAt + 1].numel(), 0.0f);
      return;
    }
    // dw and db from dy and the codes where that kernel applies; the chunks below then
    // compute the data gradient only.
    const bool fromCodes =
        Fast && pooledFilterGradient(k, poolAttrs, filterAttrs, gradient.shape, filterAt);
    if (fromCodes && !withData)
      return;
    const int64_t perImage = gradient.numel() / batch;
    const int64_t chunk = imagesPerChunk(batch, perImage);
    gradient.data = activationScratch(chunk * perImage);
    // The later chunks' filter gradients, added to the first's.
    thread_local std::vector<float> partial;
    const int64_t biasCount = withBias ? k.outputs[filterAt + 1].numel() : 0;
    partial.resize(size_t(dw.numel() + biasCount));
    for (int64_t first = 0; first < batch; first += chunk) {
      const int64_t count = std::min(chunk, batch - first);
      const TensorRef part = images(gradient, 0, count);
      KernelArgs pool = k;
      pool.attrs = &poolAttrs;
      pool.inputs = {images(dy, first, count), images(indices, first, count)};
      pool.outputs = {part};
      maxPoolBackwardIndexed(pool);
      if (withData) {
        KernelArgs data = k;
        data.attrs = &dataAttrs;
        data.inputs = {part, k.inputs[2]};
        data.outputs = {images(k.outputs[0], first, count)};
        conv2dBackwardData(data);
      }
      if (fromCodes)
        continue;
      KernelArgs filter = k;
      filter.attrs = &filterAttrs;
      filter.inputs = {part, images(x, first, count)};
      filter.outputs = {dw};
      if (withBias)
        filter.outputs.push_back(k.outputs[filterAt + 1]);
      if (first > 0) {
        filter.outputs[0].data = partial.data();
        if (withBias)
          filter.outputs[1].data = partial.data() + dw.numel();
      }
      check(filter, "conv2d_backward_filter");
      auto g = convGeometry(filter.inputs[1].shape, dw.shape, part.shape, filterAttrs);
      g.inputLayout = filter.inputs[1].layout;
      g.outputLayout = part.layout;
      (Fast ? onednn::conv2d_backward_filter : ref::conv2d_backward_filter)(
          g, f32(part), f32(filter.inputs[1]), f32out(filter.outputs[0]),
          withBias ? f32out(filter.outputs[1]) : nullptr);
      if (first > 0) {
        float *sum = f32out(dw);
        for (int64_t i = 0; i < dw.numel(); ++i)
          sum[i] += partial[size_t(i)];
        if (withBias) {
          float *bias = f32out(k.outputs[filterAt + 1]);
          for (int64_t i = 0; i < biasCount; ++i)
            bias[i] += partial[size_t(dw.numel() + i)];
        }
      }
    }
  }
  // The filter gradient straight from the pooling's dy and codes, without the
  // activation's gradient (PooledFilterGradient.h), where that kernel applies; false
  // where it does not, and poolConvBackward computes it chunk by chunk.
  static bool pooledFilterGradient(const KernelArgs &k, const Attrs &poolAttrs,
                                   const Attrs &filterAttrs, const Shape &activation,
                                   size_t filterAt) {
    const TensorRef &dy = k.inputs[0], &indices = k.inputs[1], &x = k.inputs.back();
    const TensorRef &dw = k.outputs[filterAt];
    auto conv = convGeometry(x.shape, dw.shape, activation, filterAttrs);
    conv.inputLayout = x.layout;
    conv.outputLayout = dy.layout;
    auto pool = pool_geometry(activation, dy.shape, poolAttrs);
    pool.layout = dy.layout;
    if (dy.dtype != DType::f32 || x.dtype != DType::f32 ||
        !pooled_filter_gradient::applies(conv, pool))
      return false; // the chunked path names a wrong dtype
    requireIndices(indices, dy, pool, "max_pool2d_backward_indexed");
    pooled_filter_gradient::backward(
        conv, pool, indices.as<const uint8_t>(), f32(dy), f32(x),
        poolAttrs.get(op_attrs::max_pool2d_backward_indexed::relu), f32out(dw),
        k.outputs.size() > filterAt + 1 ? f32out(k.outputs[filterAt + 1]) : nullptr);
    return true;
  }
  // Whether max pooling runs dlc's direct kernels (fast ones, planes within int32); the
  // reference otherwise, which reads plain layouts only.
  static bool useDirectPool(const KernelArgs &k, const Pool2DGeometry &g, const char *op) {
    const bool direct = Fast && direct::max_pool2d_supported(g);
    if (!direct)
      requirePlainLayouts(k, op);
    return direct;
  }
  static void maxPool(const KernelArgs &k) {
    check(k, "max_pool2d");
    auto g = pool_geometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
    g.layout = k.inputs[0].layout;
    (useDirectPool(k, g, "max_pool2d") ? direct::max_pool2d_forward : ref::max_pool2d_forward)(
        g, f32(k.inputs[0]), f32out(k.outputs[0]));
  }
  // dx from (dy, x); with activation = "relu" (dlc-fuse's max_pool2d_backward_relu
  // region) the gradient of the ReLU that made x is folded in
  static void maxPoolBackward(const KernelArgs &k) {
    check(k, "max_pool2d_backward");
    auto g = pool_geometry(k.inputs[1].shape, k.inputs[0].shape, *k.attrs);
    g.layout = k.inputs[1].layout;
    (useDirectPool(k, g, "max_pool2d_backward") ? direct::max_pool2d_backward
                                                 : ref::max_pool2d_backward)(
        g, f32(k.inputs[1]), f32(k.inputs[0]), f32out(k.outputs[0]), reluEpilogue(k));
  }
  // (x) -> (y, indices): max_pool2d, and where each window's maximum was (pool_index)
  static void maxPoolIndexed(const KernelArgs &k) {
    check(k, "max_pool2d_indexed");
    auto g = pool_geometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
    g.layout = k.inputs[0].layout;
    requireIndices(k.outputs[1], k.outputs[0], g, "max_pool2d_indexed");
    (useDirectPool(k, g, "max_pool2d_indexed") ? direct::max_pool2d_indexed_forward
                                                : ref::max_pool2d_indexed_forward)(
        g, f32(k.inputs[0]), f32out(k.outputs[0]), k.outputs[1].as<uint8_t>());
  }
  // dx from (dy, indices); with `relu`, the gradient of the ReLU before the pooling
  static void maxPoolBackwardIndexed(const KernelArgs &k) {
    const TensorRef &dy = k.inputs[0], &indices = k.inputs[1], &dx = k.outputs[0];
    if (dy.dtype != DType::f32)
      throw DTypeError(std::string("max_pool2d_backward_indexed: the CPU kernels take float32, "
                                   "got ") + dtype_name(dy.dtype));
    if (!Fast)
      requirePlainLayouts(k, "max_pool2d_backward_indexed");
    auto g = pool_geometry(dx.shape, dy.shape, *k.attrs);
    g.layout = dx.layout;
    requireIndices(indices, dy, g, "max_pool2d_backward_indexed");
    (useDirectPool(k, g, "max_pool2d_backward_indexed") ? direct::max_pool2d_indexed_backward
                                                         : ref::max_pool2d_indexed_backward)(
        g, indices.as<const uint8_t>(), f32(dy), f32out(dx),
        k.attrs->get(op_attrs::max_pool2d_backward_indexed::relu));
  }
  static void avgPool(const KernelArgs &k) {
    check(k, "avg_pool2d");
    auto g = pool_geometry(k.inputs[0].shape, k.outputs[0].shape, *k.attrs);
    bool includePad = k.attrs->get(op_attrs::avg_pool2d::count_include_pad);
    (Fast ? onednn::avg_pool2d_forward : ref::avg_pool2d_forward)(g, includePad, f32(k.inputs[0]),
                                                                  f32out(k.outputs[0]));
  }
  // dx from dy; dx's shape is the output's
  static void avgPoolBackward(const KernelArgs &k) {
    check(k, "avg_pool2d_backward");
    auto g = pool_geometry(k.outputs[0].shape, k.inputs[0].shape, *k.attrs);
    bool includePad = k.attrs->get(op_attrs::avg_pool2d_backward::count_include_pad);
    (Fast ? onednn::avg_pool2d_backward : ref::avg_pool2d_backward)(
        g, includePad, f32(k.inputs[0]), f32out(k.outputs[0]));
  }
  // The activation a batch_norm_activation region folds into the batch norm's kernels
  // (its `activation` attribute), or none.
  static direct::NormActivation normActivation(const KernelArgs &k, const char *op) {
    const std::string name = k.attrs->get_string("activation", "");
    if (name.empty())
      return direct::NormActivation::none;
    if (name == "relu")
      return direct::NormActivation::relu;
    if (name == "relu6")
      return direct::NormActivation::relu6;
    throw Error(std::string(op) + ": activation '" + name + "', expected relu or relu6");
  }
  // The activation on y in place, for the reference path.
  static void activateInPlace(direct::NormActivation act, float *y, int64_t n) {
    if (act != direct::NormActivation::none)
      for (int64_t i = 0; i < n; ++i) {
        const float r = y[i] > 0.0f ? y[i] : 0.0f;
        y[i] = act == direct::NormActivation::relu6 && !(r < 6.0f) ? 6.0f : r;
      }
  }
  // training: (x, gamma, beta, running_mean, running_var) -> (y, mean, var); else -> y.
  // With an activation (training only), y is activated in the normalizing pass, after
  // adding the last input to it where `residual` is set (a batch_norm_activation region
  // with its add). Training
  // runs dlc's own kernels with or without one (not oneDNN's, as fast here): a
  // batch_norm_activation region then rounds as the ops it replaces, and a compiled step
  // ends where the eager one does; small-batch networks amplify the last bits of the
  // statistics by 1e-3 within three steps.
  static void batchNorm(const KernelArgs &k) {
    check(k, "batch_norm");
    auto g = batchNormGeometry(k.inputs[0].shape);
    g.layout = k.inputs[0].layout;
    double epsilon = k.attrs->get_float("epsilon", 1e-5);
    const direct::NormActivation act = normActivation(k, "batch_norm");
    const bool training = k.attrs->get_bool("training", false);
    const float *residual = nullptr;
    if (k.attrs->get_bool("residual", false)) {
      const TensorRef &r = k.inputs.back();
      if (!training || act == direct::NormActivation::none || k.inputs.size() < 4 ||
          r.shape != k.outputs[0].shape || r.layout != k.outputs[0].layout)
        throw Error("batch_norm with a residual: expected a training batch norm with an "
                    "activation and a last input of the output's shape " +
                    shape_rules::str(k.outputs[0].shape) + " and layout " +
                    layout_name(k.outputs[0].layout) + ", got " +
                    std::to_string(k.inputs.size()) + " inputs, the last " +
                    shape_rules::str(r.shape) + " " + layout_name(r.layout));
      residual = f32(r);
    }
    if (!training) {
      if (act != direct::NormActivation::none)
        throw Error("batch_norm: an activation folds into training batch norm only");
      return (Fast ? direct::batch_norm_forward_inference : ref::batch_norm_forward_inference)(
          g, f32(k.inputs[0]), f32(k.inputs[1]), f32(k.inputs[2]), f32(k.inputs[3]),
          f32(k.inputs[4]), epsilon, f32out(k.outputs[0]));
    }
    if (Fast)
      return direct::batch_norm_forward_training(
          g, f32(k.inputs[0]), f32(k.inputs[1]), f32(k.inputs[2]), epsilon, act,
          f32out(k.outputs[0]), f32out(k.outputs[1]), f32out(k.outputs[2]), residual);
    ref::batch_norm_forward_training(g, f32(k.inputs[0]), f32(k.inputs[1]), f32(k.inputs[2]),
                                     epsilon, f32out(k.outputs[0]), f32out(k.outputs[1]),
                                     f32out(k.outputs[2]));
    float *y = f32out(k.outputs[0]);
    if (residual)
      for (int64_t i = 0, n = k.outputs[0].numel(); i < n; ++i)
        y[i] += residual[i];
    activateInPlace(act, y, k.outputs[0].numel());
  }
  // (dy, x, gamma, mean, var) -> (dx, dgamma, dbeta); with an activation
  // (dz, z, x, gamma, mean, var): dy is the activation's gradient of dz at its output z,
  // also written to a fourth output where there is one (for a residual's shortcut).
  static void batchNormBackward(const KernelArgs &k) {
    check(k, "batch_norm_backward");
    const direct::NormActivation act = normActivation(k, "batch_norm_backward");
    if (act != direct::NormActivation::none) {
      if (k.inputs.size() != 6 || (k.outputs.size() != 3 && k.outputs.size() != 4))
        throw Error("batch_norm_backward with an activation: " + std::to_string(k.inputs.size()) +
                    " inputs and " + std::to_string(k.outputs.size()) +
                    " outputs, expected (dz, z, x, gamma, mean, var) -> (dx, dgamma, dbeta[, dy])");
      if (k.outputs.size() == 4 && (k.outputs[3].shape != k.inputs[0].shape ||
                                    k.outputs[3].layout != k.inputs[0].layout))
        throw Error("batch_norm_backward with an activation: the masked gradient is " +
                    shape_rules::str(k.outputs[3].shape) + " " +
                    layout_name(k.outputs[3].layout) + ", expected dz's " +
                    shape_rules::str(k.inputs[0].shape) + " " + layout_name(k.inputs[0].layout));
      float *masked = k.outputs.size() == 4 ? f32out(k.outputs[3]) : nullptr;
      auto g = batchNormGeometry(k.inputs[2].shape);
      g.layout = k.inputs[2].layout;
      const double epsilon = k.attrs->get_float("epsilon", 1e-5);
      if (Fast)
        return direct::batch_norm_backward(
            g, f32(k.inputs[0]), f32(k.inputs[1]), act, f32(k.inputs[2]), f32(k.inputs[3]),
            f32(k.inputs[4]), f32(k.inputs[5]), epsilon, f32out(k.outputs[0]),
            f32out(k.outputs[1]), f32out(k.outputs[2]), masked);
      // The reference: the activation's gradient into dx, then the batch norm's from it.
      const int64_t n = k.inputs[0].numel();
      std::vector<float> dy(static_cast<size_t>(n));
      const float *dz = f32(k.inputs[0]), *z = f32(k.inputs[1]);
      for (int64_t i = 0; i < n; ++i)
        dy[size_t(i)] = z[i] > 0.0f && (act == direct::NormActivation::relu || z[i] < 6.0f)
                            ? dz[i]
                            : 0.0f;
      if (masked)
        std::copy(dy.begin(), dy.end(), masked);
      return ref::batch_norm_backward(g, dy.data(), f32(k.inputs[2]), f32(k.inputs[3]),
                                      f32(k.inputs[4]), f32(k.inputs[5]), epsilon,
                                      f32out(k.outputs[0]), f32out(k.outputs[1]),
                                      f32out(k.outputs[2]));
    }
    auto g = batchNormGeometry(k.inputs[1].shape);
    g.layout = k.inputs[1].layout;
    const double epsilon = k.attrs->get_float("epsilon", 1e-5);
    if (Fast) // dlc's own, as the forward (batchNorm)
      return direct::batch_norm_backward(g, f32(k.inputs[0]), /*z=*/nullptr, act,
                                         f32(k.inputs[1]), f32(k.inputs[2]), f32(k.inputs[3]),
                                         f32(k.inputs[4]), epsilon, f32out(k.outputs[0]),
                                         f32out(k.outputs[1]), f32out(k.outputs[2]));
    ref::batch_norm_backward(g, f32(k.inputs[0]), f32(k.inputs[1]), f32(k.inputs[2]),
                             f32(k.inputs[3]), f32(k.inputs[4]), epsilon,
                             f32out(k.outputs[0]), f32out(k.outputs[1]),
                             f32out(k.outputs[2]));
  }
  // y (..., units) = x (..., K) · wᵀ + b
  static void dense(const KernelArgs &k) {
    check(k, "dense");
    const Shape &x = k.inputs[0].shape, &w = k.inputs[1].shape;
    int64_t K = x.back(), units = w[0];
    int64_t M = shape_rules::numElements(Shape(x.begin(), x.end() - 1));
    const float *bias = k.inputs.size() > 2 ? f32(k.inputs[2]) : nullptr;
    // No input features (K = 0): y is the bias, which the loop writes; oneDNN takes no
    // empty dimension.
    const DenseEpilogue epilogue = denseEpilogue(k);
    auto kernel = !Fast || K == 0                                  ? ref::dense_forward
                  : direct::dense_is_small(M, K, units, epilogue) ? direct::dense_forward
                                                                   : onednn::dense_forward;
    kernel(M, K, units, f32(k.inputs[0]), f32(k.inputs[1]), bias, f32out(k.outputs[0]), epilogue);
  }
};

/// Labels as int64 (the kernels' type), converting int32 ones.
std::vector<int64_t> labelsOf(const TensorRef &labels) {
  std::vector<int64_t> out(size_t(labels.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = labels.dtype == DType::i64 ? labels.as<int64_t>()[i]
                                        : int64_t(labels.as<int32_t>()[i]);
  return out;
}

// loss (N) from logits (N, C) and labels (N)
template <bool Fast> void softmaxCrossEntropy(const KernelArgs &k) {
  requireF32(k, "softmax_cross_entropy");
  const Shape &logits = k.inputs[0].shape;
  (Fast ? fast::softmax_cross_entropy_forward : ref::softmax_cross_entropy_forward)(
      logits[0], logits[1], f32(k.inputs[0]), labelsOf(k.inputs[1]).data(),
      f32out(k.outputs[0]));
}

// dlogits (N, C) from dloss (N), logits (N, C), labels (N)
template <bool Fast> void softmaxCrossEntropyBackward(const KernelArgs &k) {
  requireF32(k, "softmax_cross_entropy_backward");
  const Shape &logits = k.inputs[1].shape;
  (Fast ? fast::softmax_cross_entropy_backward : ref::softmax_cross_entropy_backward)(
      logits[0], logits[1], f32(k.inputs[0]), f32(k.inputs[1]), labelsOf(k.inputs[2]).data(),
      f32out(k.outputs[0]));
}

// (y, mask) = dropout(x): each element kept with probability 1 - ratio, scaled by
// 1 / (1 - ratio); the mask (bool) says which were kept. Seeded by the `seed` attribute;
// the draw is DropoutMask.h's, which the GPU kernel shares.
void dropout(const KernelArgs &k) {
  requireF32(k, "dropout");
  double ratio = k.attrs->get_float("ratio", 0.5);
  uint64_t seed = uint64_t(k.attrs->get_int("seed", 0));
  uint64_t threshold = dropout_mask::threshold(1.0 - ratio);
  const float *x = f32(k.inputs[0]);
  float *y = f32out(k.outputs[0]);
  bool *mask = k.outputs[1].as<bool>();
  float scale = float(1.0 / (1.0 - ratio));
  for (int64_t i = 0, n = k.inputs[0].numel(); i < n; ++i) {
    mask[i] = dropout_mask::keep(seed, uint64_t(i), threshold);
    y[i] = mask[i] ? x[i] * scale : 0.f;
  }
}

// y = x in another memory layout (dlc/Core/Layout.h): the conversion the dispatcher
// inserts between a blocked tensor and an op that wants it plain, or the reverse (or
// another blocked layout).
void reorderLayout(const KernelArgs &k) {
  const TensorRef &x = k.inputs[0], &y = k.outputs[0];
  if (x.dtype != DType::f32 && x.layout != y.layout)
    throw Error(std::string("reorder_layout: internal error: ") + dtype_name(x.dtype) + " " +
                shape_rules::str(x.shape) + " from " + layout_name(x.layout) + " to " +
                layout_name(y.layout) + ": only float32 tensors change layouts");
  if (x.layout == y.layout) {
    std::memcpy(y.data, x.data, size_t(x.numel()) * dtype_size(x.dtype));
    return;
  }
  for (Layout side : {x.layout, y.layout})
    if (side != Layout::plain && !blockable(x.shape, x.dtype, side))
      throw Error(std::string("reorder_layout: internal error: ") + dtype_name(x.dtype) + " " +
                  shape_rules::str(x.shape) + " cannot be in " + layout_name(side));
  // Up to 16 KB the calling thread moves the elements faster than oneDNN starts a reorder.
  constexpr int64_t kSmallElements = 4096;
  (x.numel() <= kSmallElements ? direct::reorder_layout : onednn::reorder_layout)(
      x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.layout, y.layout, f32(x), f32out(y));
}

bool isHalf(const TensorRef &t) { return t.dtype == DType::f16 || t.dtype == DType::bf16; }

/// Converts `count` elements between float and a 16-bit float type (rounding to nearest
/// even into the narrow one).
template <typename From, typename To> void convert(const void *from, void *to, int64_t count) {
  const From *source = static_cast<const From *>(from);
  To *target = static_cast<To *>(to);
  parallel_for(count, count, [&](int64_t i) { target[i] = store<To>(load(source[i])); });
}

void widen(const TensorRef &half, float *wide) {
  if (half.dtype == DType::f16)
    convert<float16, float>(half.data, wide, half.numel());
  else
    convert<bfloat16, float>(half.data, wide, half.numel());
}

void narrow(const float *wide, const TensorRef &half) {
  if (half.dtype == DType::f16)
    convert<float, float16>(wide, half.data, half.numel());
  else
    convert<float, bfloat16>(wide, half.data, half.numel());
}

/// `Kernel`, written for float32, on float16 and bfloat16 tensors too: their values are
/// widened to float32 copies, the kernel runs on those, and its results are rounded once
/// to their dtype, what cuDNN and cuBLAS compute with float32 accumulation. (The 16-bit
/// tensors are plain: blocked layouts hold float32 only.)
template <KernelFn Kernel> void inFloat32(const KernelArgs &k) {
  bool any = false;
  for (const auto *side : {&k.inputs, &k.outputs})
    for (const TensorRef &t : *side)
      any = any || isHalf(t);
  if (!any)
    return Kernel(k);
  KernelArgs wide = k;
  std::vector<std::vector<float>> copies;
  copies.reserve(k.inputs.size() + k.outputs.size());
  auto widened = [&](TensorRef &t) {
    copies.emplace_back(size_t(t.numel()));
    t.data = copies.back().data();
    t.dtype = DType::f32;
  };
  for (size_t i = 0; i < wide.inputs.size(); ++i)
    if (isHalf(k.inputs[i])) {
      widened(wide.inputs[i]);
      widen(k.inputs[i], wide.inputs[i].as<float>());
    }
  for (TensorRef &t : wide.outputs)
    if (isHalf(t))
      widened(t);
  Kernel(wide);
  for (size_t i = 0; i < wide.outputs.size(); ++i)
    if (isHalf(k.outputs[i]))
      narrow(wide.outputs[i].as<float>(), k.outputs[i]);
}

template <KernelFn Fast, KernelFn Reference> void registerPair(const char *op) {
  register_kernel(op, DeviceKind::cpu, {inFloat32<Fast>, inFloat32<Reference>});
}

template <KernelFn Kernel> void registerOne(const char *op) {
  register_host_kernel(op, inFloat32<Kernel>);
}

} // namespace

void register_nn_kernels() {
  registerPair<NN<true>::conv2d, NN<false>::conv2d>(ops::conv2d);
  registerPair<NN<true>::conv2dBackwardData, NN<false>::conv2dBackwardData>(
      ops::conv2d_backward_data);
  registerPair<NN<true>::conv2dBackwardFilter, NN<false>::conv2dBackwardFilter>(
      ops::conv2d_backward_filter);
  registerPair<NN<true>::maxPool, NN<false>::maxPool>(ops::max_pool2d);
  registerPair<NN<true>::maxPoolBackward, NN<false>::maxPoolBackward>(ops::max_pool2d_backward);
  registerPair<NN<true>::maxPoolIndexed, NN<false>::maxPoolIndexed>(ops::max_pool2d_indexed);
  registerPair<NN<true>::maxPoolBackwardIndexed, NN<false>::maxPoolBackwardIndexed>(
      ops::max_pool2d_backward_indexed);
  registerPair<NN<true>::avgPool, NN<false>::avgPool>(ops::avg_pool2d);
  registerPair<NN<true>::avgPoolBackward, NN<false>::avgPoolBackward>(ops::avg_pool2d_backward);
  registerPair<NN<true>::batchNorm, NN<false>::batchNorm>(ops::batch_norm);
  registerPair<NN<true>::batchNormBackward, NN<false>::batchNormBackward>(
      ops::batch_norm_backward);
  registerPair<NN<true>::dense, NN<false>::dense>(ops::dense);
  registerPair<softmaxCrossEntropy<true>, softmaxCrossEntropy<false>>(ops::softmax_cross_entropy);
  registerPair<softmaxCrossEntropyBackward<true>, softmaxCrossEntropyBackward<false>>(
      ops::softmax_cross_entropy_backward);
  registerOne<dropout>(ops::dropout);
  register_host_kernel(ops::to_layout, reorderLayout);
}

} // namespace dlc::cpu_kernels
