//===- ConvPoolEpilogueTest.cpp - a convolution with the max pooling of its output ===//
//
// dlc-fuse-conv-pool's regions run as the convolution's kernel with the pooling's
// attributes under kPoolEpiloguePrefix, a few images at a time, and their gradients as
// the filter gradient's kernel with the pooling's gradient before it. Here those calls
// against the same kernels one after the other over the whole batch, through the kernel
// table (fast and reference kernels), on random inputs, with the activation kept as an
// output and in scratch, in plain and blocked layouts.
//
//===----------------------------------------------------------------------===//
#include "KernelTestSupport.h"

#include "dlc/Core/Error.h"
#include "dlc/Core/KernelGeometry.h"
#include "dlc/Runtime/Engine/Kernel.h"

namespace dlc::cpu_kernels::test {
namespace {

struct ConvPoolCase {
  const char *name;
  int64_t channels;          ///< input channels
  Layout input, activation;  ///< the activation's layout is the pooling's too
  bool relu, keepActivation, reference;
};

void PrintTo(const ConvPoolCase &c, std::ostream *os) { *os << c.name; }

class ConvPoolEpilogue : public ::testing::TestWithParam<ConvPoolCase> {};

TEST_P(ConvPoolEpilogue, EqualsTheConvolutionThenThePooling) {
  const ConvPoolCase &c = GetParam();
  register_builtin_kernels();
  const KernelEntry *convolution = find_kernel("dlc.conv2d", cpu(0));
  const KernelEntry *pooling = find_kernel("dlc.max_pool2d_indexed", cpu(0));
  ASSERT_TRUE(convolution && pooling);
  KernelFn conv = c.reference ? convolution->reference : convolution->fast;
  KernelFn pool = c.reference ? pooling->reference : pooling->fast;

  // 16 channels of 157x157 per image, 1.5 MiB: two images per chunk of the kernel's
  // 4 MiB, so 5 images run as 2 + 2 + 1 (a last chunk of another size).
  const int64_t N = 5, O = 16, H = 158, OH = 157, PH = 77;
  const Shape xShape{N, c.channels, H, H}, wShape{O, c.channels, 2, 2}, bShape{O},
      aShape{N, O, OH, OH}, pShape{N, O, PH, PH};
  std::vector<float> x = randomTensor(N * c.channels * H * H, 11),
                     w = randomTensor(O * c.channels * 4, 12, -0.5f, 0.5f),
                     b = randomTensor(O, 13, -0.2f, 0.2f);
  Attrs convAttrs;
  if (c.relu)
    convAttrs.set("activation", std::string("relu"));
  Attrs poolAttrs{{"kernel", std::vector<int64_t>{4, 4}}, {"stride", std::vector<int64_t>{2, 2}}};
  Attrs fusedAttrs = convAttrs;
  for (const auto &[name, value] : poolAttrs.items())
    fusedAttrs.set(kernels::kPoolEpiloguePrefix + name, value);

  auto ref = [](void *data, const Shape &shape, Layout layout, DType dtype = DType::f32) {
    return TensorRef{data, shape, dtype, layout};
  };
  // One after the other, over the whole batch.
  std::vector<float> wantActivation(size_t(N * O * OH * OH)), wantY(size_t(N * O * PH * PH));
  std::vector<uint8_t> wantCodes(wantY.size());
  KernelArgs alone;
  alone.device = cpu(0);
  alone.attrs = &convAttrs;
  alone.inputs = {ref(x.data(), xShape, c.input), ref(w.data(), wShape, Layout::plain),
                  ref(b.data(), bShape, Layout::plain)};
  alone.outputs = {ref(wantActivation.data(), aShape, c.activation)};
  conv(alone);
  alone.attrs = &poolAttrs;
  alone.inputs = {alone.outputs[0]};
  alone.outputs = {ref(wantY.data(), pShape, c.activation),
                   ref(wantCodes.data(), pShape, c.activation, DType::u8)};
  pool(alone);

  // Fused, twice: the second run finds the weights its memo kept from the first.
  KernelMemo memo;
  for (int run = 0; run < 2; ++run) {
    std::vector<float> activation(wantActivation.size(), -7.0f), y(wantY.size(), -7.0f);
    std::vector<uint8_t> codes(wantCodes.size(), 0x55);
    KernelArgs fused;
    fused.device = cpu(0);
    fused.attrs = &fusedAttrs;
    fused.memo = &memo;
    fused.memo_generation = 1;
    fused.inputs = {ref(x.data(), xShape, c.input), ref(w.data(), wShape, Layout::plain),
                    ref(b.data(), bShape, Layout::plain)};
    if (c.keepActivation)
      fused.outputs.push_back(ref(activation.data(), aShape, c.activation));
    fused.outputs.push_back(ref(y.data(), pShape, c.activation));
    fused.outputs.push_back(ref(codes.data(), pShape, c.activation, DType::u8));
    conv(fused);
    SCOPED_TRACE("run " + std::to_string(run));
    if (c.keepActivation) {
      EXPECT_TRUE(allClose(activation, wantActivation, 1e-5));
    }
    EXPECT_TRUE(allClose(y, wantY, 1e-5));
    // The same maxima at the same taps; a convolution over fewer images may round
    // differently, which could move a near-tie (none was seen).
    int64_t moved = 0;
    for (size_t i = 0; i < codes.size(); ++i)
      moved += codes[i] != wantCodes[i];
    EXPECT_LE(moved, int64_t(codes.size()) / 10000) << moved << " of " << codes.size();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, ConvPoolEpilogue,
    ::testing::Values(
        // The LeafNetwork's first block: 3 plain channels in, a blocked activation.
        ConvPoolCase{"Plain3To16cReluScratch", 3, Layout::plain, Layout::nChw16c, true, false, false},
        ConvPoolCase{"Blocked16cKept", 16, Layout::nChw16c, Layout::nChw16c, false, true, false},
        ConvPoolCase{"Blocked8cReluScratch", 8, Layout::nChw8c, Layout::nChw8c, true, false, false},
        ConvPoolCase{"ReferenceReluKept", 4, Layout::plain, Layout::plain, true, true, true},
        ConvPoolCase{"ReferenceScratch", 4, Layout::plain, Layout::plain, false, false, true}),
    [](const ::testing::TestParamInfo<ConvPoolCase> &info) { return std::string(info.param.name); });

struct PoolConvBackwardCase {
  const char *name;
  int64_t channels;
  Layout input, activation;
  bool relu, dataGradient, bias, reference;
};

void PrintTo(const PoolConvBackwardCase &c, std::ostream *os) { *os << c.name; }

class PoolConvBackward : public ::testing::TestWithParam<PoolConvBackwardCase> {};

// The gradients of a convolution block: the pooling's gradient, then the convolution's
// data and filter gradients of it, run as one filter-gradient call (a
// max_pool2d_backward_conv2d region) against the three kernels one after the other.
TEST_P(PoolConvBackward, EqualsThePoolingGradientThenTheConvolutionGradients) {
  const PoolConvBackwardCase &c = GetParam();
  register_builtin_kernels();
  auto kernel = [&](const char *op) {
    const KernelEntry *entry = find_kernel(op, cpu(0));
    EXPECT_TRUE(entry) << op;
    return c.reference ? entry->reference : entry->fast;
  };
  KernelFn forwardPool = kernel("dlc.max_pool2d_indexed"),
           poolGradient = kernel("dlc.max_pool2d_backward_indexed"),
           dataGradient = kernel("dlc.conv2d_backward_data"),
           filterGradient = kernel("dlc.conv2d_backward_filter");
  // As above: 1.5 MiB of activation gradient per image, chunks of 2 + 2 + 1 images.
  const int64_t N = 5, O = 16, H = 158, OH = 157, PH = 77;
  const Shape xShape{N, c.channels, H, H}, wShape{O, c.channels, 2, 2}, aShape{N, O, OH, OH},
      pShape{N, O, PH, PH};
  std::vector<float> x = randomTensor(N * c.channels * H * H, 21),
                     w = randomTensor(O * c.channels * 4, 22, -0.5f, 0.5f),
                     activation = randomTensor(N * O * OH * OH, 23),
                     dy = randomTensor(N * O * PH * PH, 24);
  auto ref = [](void *data, const Shape &shape, Layout layout, DType dtype = DType::f32) {
    return TensorRef{data, shape, dtype, layout};
  };
  // Indices from a forward over a random activation (about half its maxima > 0).
  Attrs poolAttrs{{"kernel", std::vector<int64_t>{4, 4}}, {"stride", std::vector<int64_t>{2, 2}}};
  std::vector<float> pooled(size_t(N * O * PH * PH));
  std::vector<uint8_t> indices(pooled.size());
  KernelArgs k;
  k.device = cpu(0);
  k.attrs = &poolAttrs;
  k.inputs = {ref(activation.data(), aShape, c.activation)};
  k.outputs = {ref(pooled.data(), pShape, c.activation),
               ref(indices.data(), pShape, c.activation, DType::u8)};
  forwardPool(k);
  Attrs gradientAttrs = poolAttrs;
  if (c.relu)
    gradientAttrs.set("relu", true);

  // One after the other, over the whole batch.
  std::vector<float> wantGradient(activation.size()), wantDx(x.size()), wantDw(w.size()),
      wantDb(static_cast<size_t>(O));
  Attrs none;
  k.attrs = &gradientAttrs;
  k.inputs = {ref(dy.data(), pShape, c.activation),
              ref(indices.data(), pShape, c.activation, DType::u8)};
  k.outputs = {ref(wantGradient.data(), aShape, c.activation)};
  poolGradient(k);
  const TensorRef gradient = k.outputs[0];
  k.attrs = &none;
  if (c.dataGradient) {
    k.inputs = {gradient, ref(w.data(), wShape, Layout::plain)};
    k.outputs = {ref(wantDx.data(), xShape, c.input)};
    dataGradient(k);
  }
  k.inputs = {gradient, ref(x.data(), xShape, c.input)};
  k.outputs = {ref(wantDw.data(), wShape, Layout::plain)};
  if (c.bias)
    k.outputs.push_back(ref(wantDb.data(), {O}, Layout::plain));
  filterGradient(k);

  Attrs fusedAttrs;
  for (const auto &[name, value] : gradientAttrs.items())
    fusedAttrs.set(kernels::kPoolEpiloguePrefix + name, value);
  std::vector<float> dx(x.size(), -7.0f), dw(w.size(), -7.0f), db(size_t(O), -7.0f);
  KernelArgs fused;
  fused.device = cpu(0);
  fused.attrs = &fusedAttrs;
  fused.inputs = {ref(dy.data(), pShape, c.activation),
                  ref(indices.data(), pShape, c.activation, DType::u8)};
  if (c.dataGradient) {
    fused.inputs.push_back(ref(w.data(), wShape, Layout::plain));
    fused.outputs.push_back(ref(dx.data(), xShape, c.input));
  }
  fused.inputs.push_back(ref(x.data(), xShape, c.input));
  fused.outputs.push_back(ref(dw.data(), wShape, Layout::plain));
  if (c.bias)
    fused.outputs.push_back(ref(db.data(), {O}, Layout::plain));
  filterGradient(fused);
  if (c.dataGradient) {
    EXPECT_TRUE(allClose(dx, wantDx, 1e-5));
  }
  // Summed over the chunks rather than in one pass: the same sums in another order.
  EXPECT_TRUE(allClose(dw, wantDw, 1e-4));
  if (c.bias) {
    EXPECT_TRUE(allClose(db, wantDb, 1e-4));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, PoolConvBackward,
    ::testing::Values(
        // The LeafNetwork's first block: no data gradient for the network's input.
        PoolConvBackwardCase{"Plain3To16cReluFilterOnly", 3, Layout::plain, Layout::nChw16c,
                             true, false, true, false},
        PoolConvBackwardCase{"Blocked16cWithData", 16, Layout::nChw16c, Layout::nChw16c,
                             false, true, true, false},
        PoolConvBackwardCase{"Blocked8cReluWithDataNoBias", 8, Layout::nChw8c, Layout::nChw8c,
                             true, true, false, false},
        PoolConvBackwardCase{"ReferenceReluWithData", 4, Layout::plain, Layout::plain, true,
                             true, true, true}),
    [](const ::testing::TestParamInfo<PoolConvBackwardCase> &info) {
      return std::string(info.param.name);
    });

TEST(ConvPoolEpilogue, RefusesAnotherNumberOfOutputs) {
  register_builtin_kernels();
  Attrs attrs{{std::string(kernels::kPoolEpiloguePrefix) + "kernel", std::vector<int64_t>{2, 2}}};
  std::vector<float> x(16, 1.0f), w(4, 1.0f), y(4);
  KernelArgs k;
  k.device = cpu(0);
  k.attrs = &attrs;
  k.inputs = {{x.data(), {1, 1, 4, 4}}, {w.data(), {1, 1, 2, 2}}};
  k.outputs = {{y.data(), {1, 1, 3, 3}}};
  try {
    find_kernel("dlc.conv2d", cpu(0))->fast(k);
    FAIL() << "a pooled convolution with one output ran";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("1 outputs, expected the pooling's output and indices"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace dlc::cpu_kernels::test
