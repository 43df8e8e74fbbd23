//===- AutogradTest.cpp - every op's VJP against finite differences, and the API ===//
#include "GradientCheck.h"

#include "dlc/Frontend/OpRegistry.h"

using namespace dlc;
using dlc::testing::checkAutograd;
using dlc::testing::randomTensor;

using Inputs = std::vector<Tensor>;

namespace {
/// Positive values, for log, sqrt and power's base.
Tensor positive(const Shape &shape, uint32_t seed) { return np::exp(randomTensor(shape, seed)); }
} // namespace

TEST(Autograd, ElementwiseBroadcasting) {
  Tensor a = randomTensor({3, 4}, 1), b = randomTensor({4}, 2), c = randomTensor({3, 1}, 3);
  checkAutograd({a, b}, [](const Inputs &v) { return v[0] + v[1]; }, "add");
  checkAutograd({a, c}, [](const Inputs &v) { return v[0] - v[1]; }, "subtract");
  checkAutograd({a, b}, [](const Inputs &v) { return v[0] * v[1]; }, "multiply");
  checkAutograd({a, c}, [](const Inputs &v) { return v[0] / v[1]; }, "divide");
  checkAutograd({positive({3, 4}, 4), b},
                [](const Inputs &v) { return np::power(v[0], v[1]); }, "power");
  checkAutograd({a, b}, [](const Inputs &v) { return np::maximum(v[0], v[1]); }, "maximum",
                2e-2, 1e-3f);
  checkAutograd({a, c}, [](const Inputs &v) { return np::minimum(v[0], v[1]); }, "minimum",
                2e-2, 1e-3f);
  checkAutograd({a}, [](const Inputs &v) { return -v[0] * 3.0 + 1.0; }, "negative, scalars");
  checkAutograd({a, b}, [](const Inputs &v) { return np::broadcast_to(v[1], {3, 4}) * v[0]; },
                "broadcast_to");
  Tensor condition = randomTensor({3, 4}, 5) > np::zeros({});
  checkAutograd({a, b},
                [&](const Inputs &v) { return np::where(condition, v[0], v[1]); }, "where");
}

TEST(Autograd, UnaryFunctions) {
  Tensor a = randomTensor({2, 5}, 6), p = positive({2, 5}, 7);
  checkAutograd({a}, [](const Inputs &v) { return np::exp(v[0]); }, "exp");
  checkAutograd({p}, [](const Inputs &v) { return np::log(v[0]); }, "log");
  checkAutograd({p}, [](const Inputs &v) { return np::sqrt(v[0]); }, "sqrt");
  checkAutograd({p}, [](const Inputs &v) { return np::rsqrt(v[0]); }, "rsqrt");
  checkAutograd({a}, [](const Inputs &v) { return npx::relu(v[0]); }, "relu");
  checkAutograd({a}, [](const Inputs &v) { return npx::sigmoid(v[0]); }, "sigmoid");
  checkAutograd({a}, [](const Inputs &v) { return np::tanh(v[0]); }, "tanh");
  checkAutograd({a}, [](const Inputs &v) { return npx::gelu(v[0]); }, "gelu");
  checkAutograd({a}, [](const Inputs &v) { return npx::erf(v[0]); }, "erf");
  checkAutograd({a}, [](const Inputs &v) { return npx::softrelu(v[0]); }, "softrelu");
  // Inputs on both sides of the kinks at -3 and 3, none on them.
  Tensor spread = randomTensor({2, 5}, 8) * 5.0;
  checkAutograd({spread}, [](const Inputs &v) { return npx::hard_swish(v[0]); }, "hard_swish");
  // Both kinks (0 and 6) crossed by the inputs, none on them.
  Tensor wide = randomTensor({2, 5}, 12) * 8.0 + 2.0;
  checkAutograd({wide}, [](const Inputs &v) { return npx::relu6(v[0]); }, "relu6");
  checkAutograd({spread}, [](const Inputs &v) { return npx::softsign(v[0]); }, "softsign");
  checkAutograd({spread}, [](const Inputs &v) { return npx::silu(v[0]); }, "silu");
  checkAutograd({spread}, [](const Inputs &v) { return npx::selu(v[0]); }, "selu");
  checkAutograd({spread}, [](const Inputs &v) { return npx::elu(v[0], 0.7); }, "elu");
  checkAutograd({spread}, [](const Inputs &v) { return npx::leaky_relu(v[0], 0.1); },
                "leaky_relu");
  checkAutograd({spread}, [](const Inputs &v) { return np::clip(v[0], -2.0, 1.5); }, "clip");
  checkAutograd({spread}, [](const Inputs &v) { return npx::hard_sigmoid(v[0]); },
                "hard_sigmoid");
  // The learned slopes of prelu (and elu's alpha as an operand) get gradients too.
  Tensor images = randomTensor({2, 3, 2, 2}, 13) * 3.0, slopes = randomTensor({3}, 14);
  checkAutograd({images, slopes}, [](const Inputs &v) { return npx::prelu(v[0], v[1]); },
                "prelu");
  checkAutograd({spread, positive({1, 5}, 15)}, [](const Inputs &v) {
    return npx::leaky_relu(v[0], v[1]) + npx::elu(v[0], 1.0) * v[1];
  }, "leaky_relu with a broadcast slope");
  checkAutograd({a}, [](const Inputs &v) { return npx::softmax(v[0]); }, "softmax");
  checkAutograd({a}, [](const Inputs &v) { return npx::log_softmax(v[0], 0); }, "log_softmax");
  checkAutograd({a}, [](const Inputs &v) { return v[0].astype(DType::f32) * v[0]; },
                "astype, a tensor used twice");
}

TEST(Autograd, MatmulWithTransposesAndBatches) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randomTensor(ta ? Shape{2, 1, 5, 3} : Shape{2, 1, 3, 5}, 8);
      Tensor b = randomTensor(tb ? Shape{4, 2, 5} : Shape{4, 5, 2}, 9);
      checkAutograd({a, b},
                    [=](const Inputs &v) { return np::matmul(v[0], v[1], ta, tb); },
                    "matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
  Tensor v = randomTensor({4}, 10), m = randomTensor({3, 4}, 11);
  checkAutograd({m, v}, [](const Inputs &x) { return np::dot(x[0], x[1]); }, "dot");
}

TEST(Autograd, ReductionsAndShapes) {
  Tensor a = randomTensor({2, 3, 4}, 12);
  checkAutograd({a}, [](const Inputs &v) { return np::sum(v[0], {0, 2}); }, "sum");
  checkAutograd({a}, [](const Inputs &v) { return np::mean(v[0], {1}, true); }, "mean");
  checkAutograd({a}, [](const Inputs &v) { return np::max(v[0], {2}); }, "max", 2e-2, 1e-3f);
  checkAutograd({a}, [](const Inputs &v) { return np::min(v[0]); }, "min of all", 2e-2, 1e-3f);
  checkAutograd({a}, [](const Inputs &v) { return np::transpose(v[0], {2, 0, 1}); }, "transpose");
  checkAutograd({a}, [](const Inputs &v) { return v[0].reshape({4, -1}) * 2.0; }, "reshape");
  checkAutograd({a}, [](const Inputs &v) { return v[0].slice(1, 2) * 2.0; }, "slice");
  checkAutograd({a}, [](const Inputs &v) { return v[0][0] + v[0][1]; }, "indexing");
  checkAutograd({a, randomTensor({2, 1, 4}, 13)},
                [](const Inputs &v) { return np::concatenate({v[0], v[1]}, 1); }, "concatenate");
  checkAutograd({a}, [](const Inputs &v) { return np::split_sizes(v[0], {1, 3}, 2)[1]; },
                "split (one part used)");
  checkAutograd({a}, [](const Inputs &v) { return v[0].copyto(cpu(1)).copyto(cpu(0)) * 2.0; },
                "copies across devices");
  // Indices repeated (their slices' gradients add up), negative and left out.
  Tensor ids = np::array(std::vector<int64_t>{2, 0, -1, 2, 2, 1}).reshape({2, 3});
  checkAutograd({a}, [&](const Inputs &v) { return np::take(v[0], ids, 1); }, "take");
  checkAutograd({a}, [&](const Inputs &v) { return np::take(v[0], ids, -1); }, "take, last axis");
  checkAutograd({randomTensor({5, 3}, 14)},
                [&](const Inputs &v) { return npx::embedding(ids.astype(DType::f32), v[0]); },
                "embedding");
  // Strided slices (negative steps, a clamped end) and slice_backward, which is linear.
  using R = npx::SliceRange;
  checkAutograd({randomTensor({4, 5, 6}, 15)},
                [](const Inputs &v) {
                  return npx::slice(v[0], {R{1, std::nullopt, 2}, R{-1, std::nullopt, -2},
                                           R{1, 99, 1}});
                },
                "slice");
  checkAutograd({randomTensor({2, 3}, 16)},
                [](const Inputs &v) {
                  return npx::slice_backward(v[0], {4, 3}, {3, 0}, {-1, 3}, {-2, 1});
                },
                "slice_backward");
}

TEST(Autograd, NeuralNetworkOps) {
  npx::ConvOptions conv;
  conv.stride = {2, 1};
  conv.padding = {1, 1};
  conv.groups = 2;
  checkAutograd({randomTensor({2, 4, 5, 4}, 14), randomTensor({6, 2, 2, 3}, 15),
                 randomTensor({6}, 16)},
                [=](const Inputs &v) { return npx::convolution(v[0], v[1], v[2], conv); },
                "convolution");
  // The transposed convolution: input, weight (C_in, C_out/groups, KH, KW) and bias,
  // with an output_padding (the gradient of conv2d_backward_data, both operands).
  npx::DeconvOptions deconv;
  deconv.conv = conv;
  deconv.conv.dilation = {1, 2};
  deconv.output_padding = {1, 0};
  checkAutograd({randomTensor({2, 4, 3, 4}, 18), randomTensor({4, 3, 2, 3}, 19),
                 randomTensor({6}, 20)},
                [=](const Inputs &v) { return npx::deconvolution(v[0], v[1], v[2], deconv); },
                "deconvolution");
  Tensor images = randomTensor({2, 4, 3, 3}, 21) * 2.0;
  checkAutograd({images, randomTensor({3}, 22), randomTensor({3}, 23)},
                [](const Inputs &v) { return npx::layer_norm(v[0], v[1], v[2]); }, "layer_norm");
  Tensor keep = randomTensor({2, 1, 3, 3}, 28) > np::zeros({2, 1, 3, 3});
  checkAutograd({images}, [keep](const Inputs &v) { return npx::masked_softmax(v[0], keep, -1, 1.5); },
                "masked_softmax");
  checkAutograd({images},
                [keep](const Inputs &v) {
                  // The -inf of masked elements would make finite differences meaningless.
                  return np::where(keep, npx::masked_log_softmax(v[0], keep, 2), np::zeros({}));
                },
                "masked_log_softmax");
  checkAutograd({images, randomTensor({4}, 26), randomTensor({4}, 27)},
                [](const Inputs &v) { return npx::layer_norm(v[0], v[1], v[2], 1); },
                "layer_norm over axis 1");
  checkAutograd({images, randomTensor({4}, 24), randomTensor({4}, 25)},
                [](const Inputs &v) { return npx::instance_norm(v[0], v[1], v[2]); },
                "instance_norm");
  checkAutograd({images, randomTensor({2}, 26), randomTensor({2}, 27)},
                [](const Inputs &v) { return npx::group_norm(v[0], v[1], v[2], 2); },
                "group_norm");
  for (npx::PadMode mode : {npx::PadMode::constant, npx::PadMode::edge, npx::PadMode::reflect})
    checkAutograd({images},
                  [mode](const Inputs &v) {
                    return npx::pad(v[0], mode, {0, 0, 0, 0, 2, 1, 1, 2}, 0.5);
                  },
                  "pad");
  checkAutograd({images}, [](const Inputs &v) { return npx::bilinear_resize(v[0], 5, 2); },
                "bilinear_resize");
  npx::PoolOptions pool;
  pool.kernel = {2, 3};
  pool.stride = {2, 2};
  // Spread values so a finite-difference step never changes a window's winner.
  Tensor spread = np::arange(0, 2 * 2 * 5 * 6).reshape({2, 2, 5, 6}) * 0.07 +
                  randomTensor({2, 2, 5, 6}, 17) * 0.01;
  checkAutograd({spread}, [=](const Inputs &v) { return npx::max_pool2d(v[0], pool); },
                "max_pool2d", 2e-2, 1e-3f);
  checkAutograd({spread}, [=](const Inputs &v) { return npx::avg_pool2d(v[0], pool); },
                "avg_pool2d");
  Tensor gamma = randomTensor({3}, 18), beta = randomTensor({3}, 19);
  checkAutograd({randomTensor({4, 3, 2, 2}, 20), gamma, beta},
                [](const Inputs &v) { return npx::batch_norm_training(v[0], v[1], v[2]).output; },
                "batch_norm training", 5e-2);
  Tensor mean = randomTensor({3}, 21), var = positive({3}, 22);
  checkAutograd({randomTensor({4, 3, 2, 2}, 23), gamma, beta},
                [&](const Inputs &v) {
                  return npx::batch_norm_inference(v[0], v[1], v[2], mean, var);
                },
                "batch_norm inference");
  checkAutograd({randomTensor({2, 3, 5}, 24), randomTensor({4, 5}, 25), randomTensor({4}, 26)},
                [](const Inputs &v) { return npx::fully_connected(v[0], v[1], v[2]); },
                "fully_connected");
  checkAutograd({randomTensor({6, 5}, 27)},
                [](const Inputs &v) { return npx::dropout(v[0], 0.3, 99).output; }, "dropout");
  Tensor labels = np::array(std::vector<int64_t>{1, 0, 4, 2});
  checkAutograd({randomTensor({4, 5}, 28)},
                [&](const Inputs &v) { return npx::softmax_cross_entropy(v[0], labels); },
                "softmax_cross_entropy");
}

TEST(Autograd, WriteAndAddModes) {
  Tensor x = np::array(std::vector<float>{1, 2, 3});
  x.attach_grad();
  for (int i = 0; i < 2; ++i) {
    Tensor y;
    {
      autograd::Record record;
      y = x * x;
    }
    y.backward();
  }
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6})) << "write replaces";
  Tensor z = np::array(std::vector<float>{1, 2, 3});
  z.attach_grad(GradReq::add);
  for (int i = 0; i < 2; ++i) {
    Tensor y;
    {
      autograd::Record record;
      y = z * 3.0;
    }
    y.backward();
  }
  EXPECT_EQ(z.grad().to_vector<float>(), (std::vector<float>{6, 6, 6})) << "add accumulates";
}

TEST(Autograd, ScopesAndErrors) {
  EXPECT_FALSE(autograd::is_recording());
  Tensor x = randomTensor({3}, 30);
  x.attach_grad();
  Tensor y, paused;
  {
    autograd::Record record;
    EXPECT_TRUE(autograd::is_recording());
    EXPECT_TRUE(autograd::is_training());
    y = np::exp(x);
    {
      autograd::Pause pause;
      EXPECT_FALSE(autograd::is_recording());
      paused = x * 2.0;
    }
  }
  EXPECT_FALSE(paused.requires_grad());
  EXPECT_THROW(paused.backward(), Error);
  y.backward(Tensor(), /*retain_graph=*/true);
  std::vector<float> once = x.grad().to_vector<float>();
  y.backward(); // retained: works again
  EXPECT_EQ(x.grad().to_vector<float>(), once);
  EXPECT_THROW(y.backward(), Error) << "the recording was freed";
  EXPECT_THROW(np::zeros({2}).grad(), Error);
  {
    autograd::Record record;
    Tensor detached = x.detach() * 2.0;
    EXPECT_FALSE(detached.requires_grad());
    Tensor second = npx::relu_backward(x, x);
    EXPECT_THROW(second.backward(), UnsupportedError) << "no second-order gradients";
  }
  {
    autograd::Record record(/*train_mode=*/false);
    EXPECT_FALSE(autograd::is_training());
    autograd::TrainMode train;
    EXPECT_TRUE(autograd::is_training());
  }
}

// Gradients nobody asked for are not computed: the VJP rules see which inputs needed one
// when the call was recorded (an image batch through the first convolution, a dense
// layer's frozen weight), and the gradients that are computed stay the same.
TEST(Autograd, InputsThatNeedNoGradientGetNone) {
  Tensor x = randomTensor({2, 3, 6, 6}, 40), w = randomTensor({4, 3, 2, 2}, 41),
         b = randomTensor({4}, 42);
  const OpDef &conv = find_op("convolution");
  Tensor y = npx::convolution(x, w, b);
  Tensor g = randomTensor(y.shape(), 43);
  std::vector<Tensor> inputs{x, w, b}, outputs{y}, grads{g};
  std::vector<bool> onlyWeights{false, true, true}, onlyData{true, false, false};
  const Attrs none;
  VjpContext all{conv.name, inputs, outputs, grads, none};
  std::vector<Tensor> full = conv.vjp(all);
  ASSERT_EQ(full.size(), 3u);
  for (size_t i = 0; i < full.size(); ++i)
    ASSERT_TRUE(full[i].defined()) << "gradient #" << i;
  VjpContext weights{conv.name, inputs, outputs, grads, none, &onlyWeights};
  std::vector<Tensor> skipped = conv.vjp(weights);
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_FALSE(skipped[0].defined()) << "the data gradient was computed";
  dlc::testing::expectClose(full[1].to_vector<float>(), skipped[1].to_vector<float>(), 0, "weight");
  dlc::testing::expectClose(full[2].to_vector<float>(), skipped[2].to_vector<float>(), 0, "bias");
  VjpContext data{conv.name, inputs, outputs, grads, none, &onlyData};
  std::vector<Tensor> dataOnly = conv.vjp(data);
  EXPECT_FALSE(dataOnly[1].defined());
  EXPECT_FALSE(dataOnly[2].defined());
  dlc::testing::expectClose(full[0].to_vector<float>(), dataOnly[0].to_vector<float>(), 0, "data");

  // Through autograd: x did not call attach_grad, so its gradient is skipped; w's and the
  // dense weight's are as with x attached.
  Tensor dense = randomTensor({5, 4 * 5 * 5}, 44), denseBias = randomTensor({5}, 45);
  auto weightGrads = [&](bool attachX) {
    Tensor xs = x.copyto(cpu(0)), ws = w.copyto(cpu(0)), ds = dense.copyto(cpu(0));
    if (attachX)
      xs.attach_grad();
    ws.attach_grad();
    ds.attach_grad();
    Tensor loss;
    {
      autograd::Record record;
      Tensor h = npx::relu(npx::convolution(xs, ws, b)).reshape({2, -1});
      loss = np::sum(npx::fully_connected(h, ds, denseBias));
    }
    loss.backward();
    return std::make_pair(ws.grad().to_vector<float>(), ds.grad().to_vector<float>());
  };
  auto with = weightGrads(true), without = weightGrads(false);
  dlc::testing::expectClose(with.first, without.first, 0, "convolution weight");
  dlc::testing::expectClose(with.second, without.second, 0, "dense weight");

  // Asked for after the forward: the rule is told at backward time, so x gets its
  // gradient, the one the rule computes with every gradient wanted.
  Tensor late = x.copyto(cpu(0)), lateWeight = w.copyto(cpu(0));
  lateWeight.attach_grad();
  Tensor y2;
  {
    autograd::Record record;
    y2 = npx::convolution(late, lateWeight, b);
  }
  late.attach_grad();
  y2.backward(g);
  dlc::testing::expectClose(full[0].to_vector<float>(), late.grad().to_vector<float>(), 0,
                            "data gradient asked for after the forward");
}
