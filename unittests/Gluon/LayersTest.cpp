//===- LayersTest.cpp - gluon.nn layers: shapes, names, gradients, modes -----===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "LayerNetworks.h"

#include <algorithm>
#include <functional>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::expectClose;
using dlc::testing::expectGradient;
using dlc::testing::randomTensor;
using dlc::testing::threeSteps;

using leafnet::LeafNetwork;

TEST(Layers, LeafNetworkShapesAndParameterNames) {
  LeafNetwork net;
  ParameterDict params = net.collect_params();
  ASSERT_TRUE(params.contains("conv1.0.weight"));
  EXPECT_TRUE(params.contains("conv3.2.running_var"));
  EXPECT_TRUE(params.contains("dense3.bias"));
  EXPECT_EQ(params.select("\\.weight$").size(), 6u);
  net.initialize(init::Xavier(), {cpu(0)});
  EXPECT_FALSE(params["conv1.0.weight"]->initialized()) << "in_channels unknown until forward";
  Tensor out = net(np::random::uniform(0, 1, {2, 3, 128, 128}));
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(params["conv1.0.weight"]->shape(), (Shape{32, 3, 2, 2}));
  EXPECT_EQ(params["dense1.0.weight"]->shape(), (Shape{100, 21632}));
  EXPECT_NE(net.str().find("Conv2D(32, kernel_size=(2, 2), Activation(relu))"),
            std::string::npos)
      << net.str();
}

TEST(Layers, DenseAndConvGradientsThroughParameters) {
  auto dense = std::make_shared<nn::Dense>(3, "tanh");
  dense->initialize(init::Xavier(), {cpu()});
  Tensor x = randomTensor({4, 2, 3}, 1), weights = randomTensor({4, 3}, 2);
  Tensor out;
  {
    autograd::Record record;
    out = (*dense)(x);
  }
  out.backward(weights);
  Tensor w = dense->weight->data();
  expectGradient(w, dense->weight->grad(cpu()),
                 [&](const Tensor &v) {
                   return nn::activate("tanh", npx::fully_connected(x.reshape({4, 6}), v,
                                                                    dense->bias->data()));
                 },
                 weights, "Dense weight");

  nn::Conv2DOptions padded;
  padded.padding = {1, 1};
  auto conv = std::make_shared<nn::Conv2D>(4, 3, "", padded);
  conv->initialize(init::Xavier(), {cpu()});
  Tensor image = randomTensor({2, 2, 5, 5}, 3);
  {
    autograd::Record record;
    out = (*conv)(image);
  }
  Tensor r = randomTensor(out.shape(), 4);
  out.backward(r);
  npx::ConvOptions options{{1, 1}, {1, 1}};
  expectGradient(conv->bias->data(), conv->bias->grad(cpu()),
                 [&](const Tensor &v) {
                   return npx::convolution(image, conv->weight->data(), v, options);
                 },
                 r, "Conv2D bias");
}

TEST(Layers, BatchNormTrainsAndInfers) {
  auto bn = std::make_shared<nn::BatchNorm>(nn::BatchNormOptions{1, 0.5});
  bn->initialize(nullptr, {cpu()});
  Tensor x = randomTensor({8, 3, 2, 2}, 5) * 2.0 + 1.0;
  Tensor trained;
  {
    autograd::Record record; // training mode: batch statistics
    trained = (*bn)(x);
  }
  std::vector<float> y = trained.to_vector<float>();
  double mean = 0;
  for (size_t i = 0; i < 4; ++i)
    for (size_t n = 0; n < 8; ++n)
      mean += y[n * 12 + i]; // channel 0
  EXPECT_NEAR(mean / 32, 0.0, 1e-5) << "normalized with the batch mean";
  Tensor batchMean = np::mean(x, {0, 2, 3});
  std::vector<float> running = bn->running_mean->data().to_vector<float>();
  std::vector<float> expected = (batchMean * 0.5).to_vector<float>();
  for (size_t c = 0; c < 3; ++c)
    EXPECT_NEAR(running[c], expected[c], 1e-5) << "running = 0.5 * 0 + 0.5 * batch";
  // Outside training, the running statistics normalize.
  std::vector<float> inferred = (*bn)(x).to_vector<float>();
  std::vector<float> manual =
      ((x - bn->running_mean->data().reshape({1, 3, 1, 1})) /
       np::sqrt(bn->running_var->data().reshape({1, 3, 1, 1}) + 1e-5))
          .to_vector<float>();
  for (size_t i = 0; i < manual.size(); ++i)
    EXPECT_NEAR(inferred[i], manual[i], 1e-4);
}

TEST(Layers, DropoutOnlyWhileTraining) {
  nn::Dropout dropout(0.5);
  Tensor x = np::ones({1000});
  EXPECT_EQ(dropout(x).to_vector<float>(), x.to_vector<float>()) << "predict mode: identity";
  autograd::Record record;
  std::vector<float> y = dropout(x).to_vector<float>();
  int zeros = 0;
  for (float v : y)
    zeros += v == 0;
  EXPECT_GT(zeros, 400);
  EXPECT_LT(zeros, 600);
}

TEST(Layers, ClearErrors) {
  EXPECT_THROW(nn::Activation("mish"), ValueError);
  EXPECT_THROW(nn::Dropout(1.0), ValueError);
  nn::Conv2D conv(8, 3);
  conv.initialize(nullptr, {cpu(0)});
  EXPECT_THROW(conv(np::zeros({3, 8, 8})), ShapeError);
  Tensor first = conv(np::zeros({1, 3, 8, 8}));
  EXPECT_THROW(conv(np::zeros({1, 4, 8, 8})), ShapeError) << "in_channels is fixed now";
  try {
    conv(np::zeros({1, 3, 8, 8}, cpu(1)));
    FAIL() << "expected an error naming the devices";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("lives on cpu(0)"), std::string::npos) << e.what();
  }
}

// Gradients of the whole LeafNetwork's parameters against finite differences, in
// predict mode (running statistics, no dropout) so that the network is a fixed function.
TEST(Layers, LeafNetworkParameterGradients) {
  np::random::seed(3);
  LeafNetwork net;
  net.initialize(init::Xavier(), {cpu()});
  Tensor x = randomTensor({2, 3, 32, 32}, 40);
  Tensor out;
  {
    autograd::Record record(/*train_mode=*/false);
    out = net(x);
  }
  Tensor weights = randomTensor(out.shape(), 41);
  out.backward(weights);
  std::vector<float> w = weights.to_vector<float>();
  auto loss = [&] { return dlc::testing::weightedSum(net(x), w); };
  std::mt19937 pick(5);
  for (const std::string &name : net.collect_params().keys()) {
    ParameterPtr p = net.collect_params()[name];
    if (p->grad_req() == GradReq::null)
      continue;
    Tensor value = p->data();
    std::vector<float> base = value.to_vector<float>(), grad = p->grad(cpu()).to_vector<float>();
    for (int k = 0; k < 3; ++k) {
      size_t i = std::uniform_int_distribution<size_t>(0, base.size() - 1)(pick);
      const float step = 1e-2f;
      std::vector<float> moved = base;
      moved[i] = base[i] + step;
      np::array(moved, value.shape()).copyto(value);
      double plus = loss();
      moved[i] = base[i] - step;
      np::array(moved, value.shape()).copyto(value);
      double minus = loss();
      np::array(base, value.shape()).copyto(value);
      double numeric = (plus - minus) / (2 * step);
      EXPECT_NEAR(grad[i], numeric, 3e-2 * std::max(1.0, std::abs(numeric)))
          << name << " element " << i;
    }
  }
}

// The model zoo's containers and pools: the global pools against a mean and a maximum
// computed here, HybridConcatenate against the concatenation of its children, the same
// outputs and input gradients hybridized.
TEST(Layers, GlobalPoolsAndConcatenation) {
  Tensor x = randomTensor({2, 16, 5, 7}, 21);
  std::vector<float> xs = x.to_vector<float>();
  auto pools = std::make_shared<HybridConcatenate>(1);
  pools->add(std::make_shared<nn::GlobalAvgPool2D>(), std::make_shared<nn::GlobalMaxPool2D>(),
             std::make_shared<nn::Identity>());
  Tensor eager = (*pools)(np::zeros({1, 3, 1, 1}));
  EXPECT_EQ(eager.shape(), (Shape{1, 9, 1, 1})) << "2 pools and the identity, 3 channels each";
  auto global = std::make_shared<HybridConcatenate>(1);
  global->add(std::make_shared<nn::GlobalAvgPool2D>(), std::make_shared<nn::GlobalMaxPool2D>());
  std::vector<float> y = (*global)(x).to_vector<float>();
  ASSERT_EQ(y.size(), 2u * 32u);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 16; ++c) {
      double sum = 0;
      float most = -INFINITY;
      for (int64_t i = 0; i < 35; ++i) {
        float v = xs[size_t((n * 16 + c) * 35 + i)];
        sum += v;
        most = std::max(most, v);
      }
      EXPECT_NEAR(y[size_t(n * 32 + c)], sum / 35, 1e-6) << "average of channel " << c;
      EXPECT_EQ(y[size_t(n * 32 + 16 + c)], most) << "maximum of channel " << c;
    }
  EXPECT_EQ(global->children()[1].first, "1");
  // Hybridized: the same values and input gradients (a weighted sum, so that every
  // output's gradient differs).
  Tensor weights = randomTensor({2, 32, 1, 1}, 22);
  auto run = [&](bool hybrid) {
    auto block = std::make_shared<HybridConcatenate>(1);
    block->add(std::make_shared<nn::GlobalAvgPool2D>(), std::make_shared<nn::GlobalMaxPool2D>());
    if (hybrid)
      block->hybridize();
    Tensor in = np::array(xs).reshape(x.shape());
    in.attach_grad();
    Tensor out;
    {
      autograd::Record record;
      out = np::sum((*block)(in) * weights);
    }
    out.backward();
    return std::make_pair(out.to_vector<float>(), in.grad().to_vector<float>());
  };
  auto [eagerSum, eagerGrad] = run(false);
  auto [hybridSum, hybridGrad] = run(true);
  EXPECT_NEAR(hybridSum[0], eagerSum[0], 1e-5);
  for (size_t i = 0; i < eagerGrad.size(); ++i)
    ASSERT_NEAR(hybridGrad[i], eagerGrad[i], 1e-6) << "input gradient " << i;
  // and the eager gradient against finite differences
  expectGradient(x, np::array(eagerGrad).reshape(x.shape()), [&](const Tensor &v) {
    auto block = std::make_shared<HybridConcatenate>(1);
    block->add(std::make_shared<nn::GlobalAvgPool2D>(), std::make_shared<nn::GlobalMaxPool2D>());
    return (*block)(v);
  }, weights, "global pools", 2e-2, 1e-3f);
  EXPECT_THROW((*std::make_shared<HybridConcatenate>(1))(x), ValueError) << "no children";
  EXPECT_THROW(nn::GlobalAvgPool2D()(np::zeros({2, 3})), ShapeError);
}

// scale=false is MXNet's fix_gamma: whatever gamma holds (a file may hold anything),
// the norm scales by 1.
TEST(Layers, BatchNormWithoutScaleCountsGammaAsOne) {
  nn::BatchNormOptions fixed;
  fixed.scale = false;
  auto bn = std::make_shared<nn::BatchNorm>(fixed), plain = std::make_shared<nn::BatchNorm>();
  bn->initialize(nullptr, {cpu()});
  plain->initialize(nullptr, {cpu()});
  Tensor x = randomTensor({4, 3, 2, 2}, 6) * 3.0 + 1.0;
  (*bn)(x);
  (*plain)(x);
  bn->gamma->set_data(np::full({3}, 5.0));
  for (bool training : {false, true}) {
    Tensor a, b;
    if (training) {
      autograd::Record record;
      a = (*bn)(x);
      b = (*plain)(x);
    } else {
      a = (*bn)(x);
      b = (*plain)(x);
    }
    std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
    for (size_t i = 0; i < av.size(); ++i)
      ASSERT_NEAR(av[i], bv[i], 1e-6) << (training ? "training" : "predicting");
  }
}


namespace {
/// Three steps eagerly, hybridized and as the compiled step end alike; returns the
/// eager run's losses and parameters.
std::vector<std::vector<float>>
expectSameTrainingEverywhere(const std::function<std::shared_ptr<HybridSequential>()> &make) {
  auto eager = threeSteps(0, make);
  for (int mode : {1, 2}) {
    auto other = threeSteps(mode, make);
    EXPECT_EQ(other.size(), eager.size());
    for (size_t k = 0; k < std::min(eager.size(), other.size()); ++k)
      expectClose(eager[k], other[k], 1e-5,
                  std::string(mode == 1 ? "hybridized" : "compiled step") + ", vector #" +
                      std::to_string(k));
  }
  return eager;
}
} // namespace

TEST(Layers, ActivationLayersTrainAlikeEagerlyHybridizedAndCompiled) {
  auto eager = expectSameTrainingEverywhere(dlc::testing::activationNetwork);
  // The per-channel slopes moved away from their 0.25 start, each its own way.
  std::vector<float> slopes = eager[3 + 2]; // losses, conv0 weight and bias, then alpha
  ASSERT_EQ(slopes.size(), 6u);
  for (float s : slopes)
    EXPECT_NE(s, 0.25f);
  EXPECT_NE(slopes[0], slopes[1]);
}

TEST(Layers, ActivationLayersNameTheirParametersAndRefuseBadSettings) {
  auto net = dlc::testing::activationNetwork();
  ParameterDict params = net->collect_params();
  EXPECT_EQ(params["1.alpha"]->shape(), (Shape{6}));
  EXPECT_EQ(params["8.alpha"]->shape(), (Shape{1}));
  net->initialize();
  EXPECT_EQ(params["8.alpha"]->data(cpu()).to_vector<float>(), std::vector<float>{0.25f})
      << "MXNet's default slope";
  EXPECT_EQ(net->children()[3].second->kind(), "LeakyReLU(0.1)");
  EXPECT_THROW(nn::PReLU(nullptr, 0), ValueError);
  EXPECT_THROW(nn::LeakyReLU(NAN), ValueError);
  EXPECT_THROW(nn::GELU("sigmoid"), ValueError);
  // The tanh approximation against its formula.
  Tensor g = randomTensor({50}, 9) * 4.0;
  std::vector<float> gs = g.to_vector<float>(), approx = nn::GELU("tanh")(g).to_vector<float>();
  for (size_t i = 0; i < gs.size(); ++i) {
    double v = gs[i];
    double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(approx[i], want, 2e-6 * std::max(1.0, std::abs(want))) << v;
  }
  EXPECT_THROW(nn::Activation("mish"), ValueError);
  // Slopes for 6 channels do not fit 4.
  nn::PReLU prelu(nullptr, 6);
  prelu.initialize();
  try {
    prelu(randomTensor({2, 4, 3, 3}, 1));
    FAIL() << "6 slopes for 4 channels";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("gamma 6"), std::string::npos) << e.what();
  }
}

TEST(Layers, TransposedConvolutionTrainsAlikeEagerlyHybridizedAndCompiled) {
  auto eager = expectSameTrainingEverywhere(dlc::testing::upSamplingNetwork);
  // 9x9 down to 5x5 and back up to 10x10 (output padding 1); MXNet's weight layout.
  auto net = dlc::testing::upSamplingNetwork();
  net->initialize(init::Xavier());
  auto up = std::dynamic_pointer_cast<nn::Conv2DTranspose>(net->children()[1].second);
  ASSERT_TRUE(up);
  Tensor y = (*up)((*net->children()[0].second)(randomTensor({2, 2, 9, 9}, 3)));
  EXPECT_EQ(y.shape(), (Shape{2, 4, 10, 10}));
  EXPECT_EQ(up->weight->shape(), (Shape{6, 2, 3, 3}));
  EXPECT_THROW(nn::Conv2DTranspose(4, 3, "", [] {
                 nn::Conv2DTransposeOptions o;
                 o.output_padding = {1, 1}; // not below the stride of 1
                 return o;
               }()),
               ValueError);
}

TEST(Layers, NormalizationLayersTrainAlikeEagerlyHybridizedAndCompiled) {
  auto eager = expectSameTrainingEverywhere(dlc::testing::normalizationNetwork);
  auto net = dlc::testing::normalizationNetwork();
  net->initialize(init::Xavier());
  (*net)(randomTensor({2, 2, 9, 9}, 5));
  ParameterDict params = net->collect_params();
  // MXNet 1.9.1's shapes: GroupNorm's per group, the last-axis batch norm's per column.
  EXPECT_EQ(params["2.gamma"]->shape(), (Shape{3}));
  EXPECT_EQ(params["4.gamma"]->shape(), (Shape{6}));
  EXPECT_EQ(params["5.gamma"]->shape(), (Shape{7}));
  EXPECT_EQ(params["6.running_mean"]->shape(), (Shape{7}));
  // After the training steps (3 losses, then the parameters in order) the frozen
  // statistics are as they started, the last-axis batch norm's moved.
  ASSERT_EQ(eager.size(), 3u + params.keys().size());
  EXPECT_EQ(params.keys()[4], "1.running_mean");
  EXPECT_EQ(eager[3 + 4], std::vector<float>(6, 0.f));
  EXPECT_EQ(params.keys()[14], "6.running_mean");
  EXPECT_NE(eager[3 + 14], std::vector<float>(7, 0.f));
  EXPECT_EQ(nn::InstanceNorm().collect_params()["gamma"]->grad_req(), GradReq::null)
      << "MXNet's InstanceNorm does not learn gamma by default";
  EXPECT_THROW(nn::GroupNorm(0), ValueError);
}

TEST(Layers, UpSamplingAndLambdaHybridizeToTheirEagerResults) {
  Tensor x = randomTensor({2, 3, 4, 5}, 7);
  std::vector<float> xs = x.to_vector<float>();
  auto run = [&](bool hybridize) {
    auto net = std::make_shared<HybridSequential>();
    net->add(std::make_shared<nn::ReflectionPad2D>(0), std::make_shared<nn::UpSampling2D>(3),
             std::make_shared<nn::HybridLambda>(
                 [](const Tensor &v) { return np::tanh(v) * 2.0 + v; }, "TanhPlus"));
    if (hybridize)
      net->hybridize();
    Tensor in = np::array(xs).reshape(x.shape());
    in.attach_grad();
    Tensor weights = np::arange(0, 2 * 3 * 12 * 15).reshape({2, 3, 12, 15}) * 0.01;
    Tensor y, loss;
    {
      autograd::Record record;
      y = (*net)(in);
      loss = np::sum(y * weights);
    }
    loss.backward();
    return std::make_pair(y.to_vector<float>(), in.grad().to_vector<float>());
  };
  auto [eager, eagerGrad] = run(false);
  auto [compiled, compiledGrad] = run(true);
  expectClose(eager, compiled, 1e-6, "up-sampled outputs");
  expectClose(eagerGrad, compiledGrad, 1e-5, "input gradients");
  // Each input pixel is a 3x3 block of the output; its gradient sums the block's.
  for (int64_t c = 0; c < 6; ++c)
    for (int64_t h = 0; h < 12; ++h)
      for (int64_t w = 0; w < 15; ++w) {
        float v = xs[size_t((c * 4 + h / 3) * 5 + w / 3)];
        ASSERT_NEAR(eager[size_t((c * 12 + h) * 15 + w)], std::tanh(v) * 2 + v, 1e-5);
      }
  double blockSum = 0;
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t w = 0; w < 3; ++w)
      blockSum += double(h * 15 + w) * 0.01;
  float v0 = xs[0], slope = 2 * (1 - std::tanh(v0) * std::tanh(v0)) + 1;
  EXPECT_NEAR(eagerGrad[0], blockSum * slope, 1e-4) << "the gradient of pixel (0, 0)";
  EXPECT_THROW(nn::UpSampling2D(0), ValueError);
  EXPECT_THROW(nn::HybridLambda(nullptr), ValueError);
}

// Slices inside the forward: dlc.slice and its gradient in the traced program end where
// eager views and copies do.
TEST(Layers, SlicesOfComputedValuesTrainAlikeEagerlyHybridizedAndCompiled) {
  auto eager = expectSameTrainingEverywhere(dlc::testing::slicingNetwork);
  // Only the convolution's channels 1, 3 and 5 reach the loss: 0, 2 and 4 get no gradient.
  np::random::seed(4);
  auto net = dlc::testing::slicingNetwork();
  net->initialize(init::Xavier(), {cpu()});
  {
    autograd::Pause shapes;
    (*net)(np::zeros({1, 2, 9, 9}));
  }
  std::vector<float> before = net->collect_params()["0.bias"]->data(cpu()).to_vector<float>();
  const std::vector<float> &after = eager[3 + 1]; // 3 losses, the conv weight, its bias
  ASSERT_EQ(after.size(), 6u);
  for (size_t c = 0; c < 6; ++c)
    EXPECT_EQ(after[c] != before[c], c % 2 == 1) << "channel " << c;
}

// dlc.attention and dlc.layer_norm inside the forward: the traced program and the compiled
// step end where eager does.
TEST(Layers, AttentionAndLayerNormTrainAlikeEagerlyHybridizedAndCompiled) {
  expectSameTrainingEverywhere(dlc::testing::attentionNetwork);
}

TEST(Layers, ReflectionPaddingHybridizesToItsEagerResults) {
  Tensor x = randomTensor({2, 3, 5, 4}, 8);
  auto run = [&](bool hybridize) {
    auto net = std::make_shared<HybridSequential>();
    net->add(std::make_shared<nn::ReflectionPad2D>(2), std::make_shared<nn::Conv2D>(4, 3));
    np::random::seed(3);
    net->initialize(init::Xavier());
    if (hybridize)
      net->hybridize();
    Tensor in = x * 1.0;
    in.attach_grad();
    Tensor y, loss;
    {
      autograd::Record record;
      y = (*net)(in);
      loss = y * y;
    }
    loss.backward();
    return std::make_pair(y, in.grad().to_vector<float>());
  };
  auto [eager, eagerGrad] = run(false);
  auto [compiled, compiledGrad] = run(true);
  EXPECT_EQ(eager.shape(), (Shape{2, 4, 7, 6})) << "5x4 padded by 2 to 9x8, then a 3x3 convolution";
  expectClose(eager.to_vector<float>(), compiled.to_vector<float>(), 1e-5, "outputs");
  expectClose(eagerGrad, compiledGrad, 1e-5, "input gradients");
  EXPECT_THROW(nn::ReflectionPad2D(-1), ValueError);
  EXPECT_THROW(nn::ReflectionPad2D(5)(x), ShapeError) << "wider than the 5 rows";
}

// An embedding table under a classifier, fed ids with repeats (their rows' gradients add
// up), as int64 and as MXNet 1.x's float ids: eager, hybridized and the compiled step end
// alike, and rows no id names keep their values.
TEST(Layers, EmbeddingTrainsAlikeEagerlyHybridizedAndCompiled) {
  auto eager = dlc::testing::embeddingSteps(0, DType::i64);
  for (auto [mode, idType] : {std::pair<int, DType>{1, DType::i64}, {2, DType::i64},
                              {0, DType::f32}, {1, DType::f32}, {2, DType::f32}}) {
    auto other = dlc::testing::embeddingSteps(mode, idType);
    ASSERT_EQ(other.size(), eager.size());
    for (size_t k = 0; k < eager.size(); ++k)
      expectClose(eager[k], other[k], 1e-5,
                  std::string(mode == 0 ? "eager" : mode == 1 ? "hybridized" : "compiled step") +
                      " with " + dtype_name(idType) + " ids, vector #" + std::to_string(k));
  }
  // The table after the steps against its start.
  np::random::seed(6);
  std::vector<float> before =
      dlc::testing::embeddingNetwork()->collect_params()["0.weight"]->data(cpu()).to_vector<float>();
  const std::vector<float> &after = eager[3]; // the losses of 3 steps, then the table
  ASSERT_EQ(after.size(), before.size());
  const std::vector<int64_t> &ids = dlc::testing::embeddingIds();
  for (int64_t row = 0; row < 12; ++row) {
    bool named = std::find(ids.begin(), ids.end(), row) != ids.end();
    bool moved = false;
    for (int64_t c = 0; c < 5; ++c)
      moved = moved || after[size_t(row * 5 + c)] != before[size_t(row * 5 + c)];
    EXPECT_EQ(moved, named) << "row " << row;
  }
  EXPECT_EQ(nn::Embedding(12, 5).kind(), "Embedding(12 -> 5, float32)");
  EXPECT_THROW(nn::Embedding(0, 5), ValueError);
}

TEST(Loss, SequenceLogitsAverageTheirPositionsPerSample) {
  // A language model's (batch, length, vocab) logits and (batch, length) labels.
  Tensor logits = randomTensor({2, 3, 5}, 31) * 3.0;
  Tensor labels = np::array(std::vector<int64_t>{4, 0, 2, 1, 1, 3}).reshape({2, 3});
  loss::SoftmaxCrossEntropyLoss lossFn;
  Tensor perSample = lossFn(logits, labels);
  ASSERT_EQ(perSample.shape(), (Shape{2}));
  Tensor perPosition = lossFn(logits.reshape({6, 5}), labels.reshape({6}));
  expectClose(np::mean(perPosition.reshape({2, 3}), {1}).to_vector<float>(),
              perSample.to_vector<float>(), 1e-6, "per-sample loss");
  EXPECT_THROW(lossFn(logits, labels.reshape({3, 2})), ShapeError);
  EXPECT_THROW(loss::SoftmaxCrossEntropyLoss(1)(logits, labels), ShapeError);
}
