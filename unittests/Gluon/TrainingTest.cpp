//===- TrainingTest.cpp - parameters, Trainer, split_and_load, data parallelism ===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <unistd.h>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::randomTensor;

TEST(Parameter, CopiesPerDeviceAndErrors) {
  Parameter p("weight", {2, 3});
  p.initialize(std::make_shared<init::Normal>(1.0), {cpu(0), cpu(1)});
  EXPECT_EQ(p.data(cpu(0)).to_vector<float>(), p.data(cpu(1)).to_vector<float>())
      << "every device starts from the same values";
  try {
    p.data(cpu(2));
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("lives on cpu(0), cpu(1)"), std::string::npos)
        << e.what();
  }
  std::vector<float> before = p.data().to_vector<float>();
  p.reset_device({cpu(3)});
  EXPECT_EQ(p.data(cpu(3)).to_vector<float>(), before) << "reset_device keeps the values";
  EXPECT_THROW(p.data(cpu(0)), Error);
  p.initialize(std::make_shared<init::One>(), {cpu(3)});
  EXPECT_EQ(p.data().to_vector<float>(), before) << "no re-initialization without force";
  p.initialize(std::make_shared<init::One>(), {cpu(3)}, /*force_reinit=*/true);
  EXPECT_EQ(p.data().to_vector<float>(), std::vector<float>(6, 1.f));
  EXPECT_THROW(p.set_shape({3, 2}), ShapeError);
}

TEST(Trainer, SgdMomentumAndAdamFollowTheirFormulas) {
  for (const char *optimizer : {"sgd", "nag", "adam"}) {
    auto parameter = std::make_shared<Parameter>("w", Shape{3});
    Parameter &w = *parameter;
    w.initialize(std::make_shared<init::Constant>(1.0), {cpu(0), cpu(1)});
    ParameterDict params;
    params.add("w", parameter);
    std::map<std::string, double> options{{"learning_rate", 0.1}};
    if (std::string(optimizer) != "adam")
      options["momentum"] = 0.5;
    Trainer trainer(params, optimizer, options);
    // Gradients 2 on cpu(0) and 4 on cpu(1), batch of 2: the averaged gradient is 3.
    double value = 1, m = 0, v = 0;
    for (int step = 1; step <= 2; ++step) {
      Tensor g0 = w.grad(cpu(0)), g1 = w.grad(cpu(1));
      np::full({3}, 2.0).copyto(g0);
      np::full({3}, 4.0, DType::f32, cpu(1)).copyto(g1);
      for (Device d : {cpu(0), cpu(1)}) // written by hand, as a backward() would
        w.data(d).set_fresh_grad(true);
      trainer.step(2);
      double g = 3;
      if (std::string(optimizer) == "adam") {
        m = 0.9 * m + 0.1 * g;
        v = 0.999 * v + 0.001 * g * g;
        double lr = 0.1 * std::sqrt(1 - std::pow(0.999, step)) / (1 - std::pow(0.9, step));
        value -= lr * m / (std::sqrt(v) + 1e-8);
      } else {
        m = 0.5 * m + g;
        value -= 0.1 * (std::string(optimizer) == "nag" ? g + 0.5 * m : m);
      }
      for (Device d : {cpu(0), cpu(1)})
        EXPECT_NEAR(w.data(d).to_vector<float>()[0], value, 1e-5)
            << optimizer << " step " << step << " on " << d;
    }
  }
  ParameterDict empty;
  EXPECT_THROW(Trainer(empty, "rmsprop"), ValueError);
  EXPECT_THROW(Trainer(empty, "sgd", {{"beta1", 0.9}}), ValueError);
}

namespace {

/// Writes `values` into `target` (a parameter's tensor, which copyto takes by reference).
void put(const Tensor &values, Tensor target) { values.copyto(target); }

/// A weight of 3 and a bias of 1 on cpu(0), cpu(1); each step gives every copy a
/// gradient that depends on the step, as a backward would.
struct SmallModel {
  ParameterDict params;
  std::shared_ptr<Parameter> w = std::make_shared<Parameter>("w", Shape{3});
  std::shared_ptr<Parameter> b = std::make_shared<Parameter>("b", Shape{1});
  SmallModel() {
    w->initialize(std::make_shared<init::Constant>(0.5), {cpu(0), cpu(1)});
    b->initialize(std::make_shared<init::Constant>(-0.25), {cpu(0), cpu(1)});
    params.add("w", w);
    params.add("b", b);
  }
  void step(Trainer &trainer, int k) {
    for (Parameter *p : {w.get(), b.get()})
      for (Device d : {cpu(0), cpu(1)}) {
        np::random::seed(uint64_t(100 * k + d.id), d);
        put(np::random::uniform(-1, 1, p->shape(), d), p->grad(d));
        p->data(d).set_fresh_grad(true);
      }
    trainer.step(2);
  }
  std::vector<float> values() const {
    std::vector<float> all = w->data().to_vector<float>();
    all.push_back(b->data().to_vector<float>()[0]);
    return all;
  }
};

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + name + "-" + std::to_string(::getpid());
}

} // namespace

// trainer.save_states / load_states: a trainer that loads another's states (and the
// parameters) goes on exactly as the other does.
TEST(Trainer, SavedStatesResumeTheOptimizerBitForBit) {
  for (const char *optimizer : {"sgd", "adam"}) {
    std::map<std::string, double> options{{"learning_rate", 0.1}};
    if (std::string(optimizer) == "sgd")
      options["momentum"] = 0.9;
    SmallModel first;
    Trainer trainer(first.params, optimizer, options);
    for (int k = 1; k <= 3; ++k)
      first.step(trainer, k);
    const std::string states = tempPath(std::string("trainer-") + optimizer + ".states");
    trainer.save_states(states, {{"note", "kept"}});
    std::vector<float> saved = first.values();
    for (int k = 4; k <= 6; ++k)
      first.step(trainer, k);

    SmallModel second;
    for (Device d : {cpu(0), cpu(1)}) {
      put(np::array(std::vector<float>(saved.begin(), saved.begin() + 3), {}, d), second.w->data(d));
      put(np::full({1}, saved[3], DType::f32, d), second.b->data(d));
    }
    Trainer resumed(second.params, optimizer, options);
    resumed.load_states(states);
    EXPECT_EQ(resumed.steps(), 3) << optimizer;
    for (int k = 4; k <= 6; ++k)
      second.step(resumed, k);
    EXPECT_EQ(second.values(), first.values()) << optimizer << ": resumed != uninterrupted";
    EXPECT_EQ(safetensors::Reader(states).metadata().at("note"), "kept");
    // Without the states the momentum starts afresh: the check above can fail.
    if (std::string(optimizer) == "sgd") {
      SmallModel third;
      Trainer fresh(third.params, optimizer, options);
      for (Device d : {cpu(0), cpu(1)}) {
        put(np::array(std::vector<float>(saved.begin(), saved.begin() + 3), {}, d), third.w->data(d));
        put(np::full({1}, saved[3], DType::f32, d), third.b->data(d));
      }
      for (int k = 4; k <= 6; ++k)
        third.step(fresh, k);
      EXPECT_NE(third.values(), first.values());
    }
    std::remove(states.c_str());
  }
}

TEST(Trainer, LoadStatesRefusesStatesThatDoNotFit) {
  SmallModel model;
  Trainer adam(model.params, "adam", {{"learning_rate", 0.1}});
  model.step(adam, 1);
  const std::string states = tempPath("refused.states");
  adam.save_states(states);
  auto message = [](const std::function<void()> &f) -> std::string {
    try {
      f();
    } catch (const Error &e) {
      return e.what();
    }
    return "no error";
  };
  Trainer sgd(model.params, "sgd", {{"momentum", 0.9}});
  EXPECT_NE(message([&] { sgd.load_states(states); }).find("the states are adam's; this "
                                                          "trainer's optimizer is sgd"),
            std::string::npos);
  // A parameter of another shape, and one the trainer does not train.
  auto wide = std::make_shared<Parameter>("w", Shape{4});
  wide->initialize(std::make_shared<init::Zero>(), {cpu(0)});
  ParameterDict other;
  other.add("w", wide);
  other.add("b", model.b);
  Trainer otherAdam(other, "adam");
  std::string shape = message([&] { otherAdam.load_states(states); });
  EXPECT_NE(shape.find("'w.state0' is float32 of shape 3; parameter 'w' is float32 of shape 4"),
            std::string::npos) << shape;
  ParameterDict onlyB;
  onlyB.add("b", model.b);
  Trainer partial(onlyB, "adam");
  std::string partialMessage = message([&] { partial.load_states(states); });
  EXPECT_NE(partialMessage.find("the states hold parameter 'w', which this trainer does not train"),
            std::string::npos) << partialMessage;
  // A parameter file is not a states file.
  const std::string parameters = tempPath("params.safetensors");
  safetensors::save(parameters, {{"w", model.w->data()}});
  EXPECT_NE(message([&] { adam.load_states(parameters); }).find("not a file of optimizer states"),
            std::string::npos);
  EXPECT_THROW(adam.load_states(tempPath("missing.states")), Error);
  std::remove(states.c_str());
  std::remove(parameters.c_str());
}

TEST(Trainer, AStepWithoutANewBackwardIsAnError) {
  // Applying the previous gradients again used to pass silently; MXNet refuses it.
  auto dense = std::make_shared<nn::Dense>(2);
  dense->initialize(init::Xavier(), {cpu(0)});
  Trainer trainer(dense->collect_params(), "sgd", {{"learning_rate", 0.1}});
  Tensor x = np::ones({3, 4});
  auto train = [&] {
    Tensor loss;
    {
      autograd::Record record;
      loss = np::sum((*dense)(x));
    }
    loss.backward();
  };
  train();
  trainer.step(3);
  std::vector<float> after = dense->weight->data().to_vector<float>();
  try {
    trainer.step(3);
    FAIL() << "a second step without backward() went through";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("has not been written by a backward()"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(dense->weight->data().to_vector<float>(), after) << "the failed step changed it";
  trainer.step(3, /*ignore_stale_grad=*/true); // leaves the stale parameters alone
  EXPECT_EQ(dense->weight->data().to_vector<float>(), after);
  train();
  trainer.step(3);
  EXPECT_NE(dense->weight->data().to_vector<float>(), after);
}

TEST(SplitAndLoad, EvenUnevenAndErrors) {
  Tensor batch = np::arange(0, 10).reshape({5, 2});
  std::vector<Tensor> parts = utils::split_and_load(batch, {cpu(0), cpu(1)}, 0, false);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(parts[1].device(), cpu(1));
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{6, 7, 8, 9}));
  std::vector<Tensor> seven = utils::split_and_load(np::zeros({7, 1}), {cpu(0), cpu(1), cpu(2)},
                                                    0, false);
  EXPECT_EQ(seven[0].shape()[0] + seven[1].shape()[0] + seven[2].shape()[0], 7);
  EXPECT_LE(seven[0].shape()[0] - seven[2].shape()[0], 1) << "slices differ by at most one";
  try {
    utils::split_and_load(batch, {cpu(0), cpu(1)});
    FAIL() << "expected ValueError";
  } catch (const ValueError &e) {
    EXPECT_NE(std::string(e.what()).find("batch of 5 samples does not split evenly over 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(utils::split_and_load(np::zeros({1, 2}), {cpu(0), cpu(1)}, 0, false), ValueError);
  std::vector<Tensor> whole = utils::split_and_load(batch, {cpu(4)});
  EXPECT_EQ(whole[0].shape(), (Shape{5, 2}));
  EXPECT_EQ(whole[0].device(), cpu(4));
}

namespace {

/// Trains the seed's LeafNetwork for 20 steps of batch 8 split over `devices`. BatchNorm
/// is frozen and dropout off (Record with train_mode = false): per-device batch
/// statistics and per-device dropout masks would legitimately differ between one and two
/// devices; everything else must not.
std::vector<std::vector<float>> train(const std::vector<Device> &devices) {
  np::random::seed(7);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), devices);
  Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.05}, {"momentum", 0.9}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  Tensor images = randomTensor({8, 3, 32, 32}, 11);
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1});
  for (int step = 0; step < 20; ++step) {
    std::vector<Tensor> data = utils::split_and_load(images, devices);
    std::vector<Tensor> label = utils::split_and_load(labels, devices);
    std::vector<Tensor> losses;
    {
      autograd::Record record(/*train_mode=*/false);
      for (size_t i = 0; i < data.size(); ++i)
        losses.push_back(lossFn(net(data[i]), label[i]));
    }
    for (Tensor &l : losses)
      l.backward();
    trainer.step(8);
  }
  std::vector<std::vector<float>> values;
  for (const ParameterPtr &p : net.collect_params().values())
    values.push_back(p->data().to_vector<float>());
  return values;
}

} // namespace

TEST(DataParallel, TwoDevicesTrainLikeOne) {
  std::vector<std::vector<float>> one = train({cpu(0)});
  std::vector<std::vector<float>> two = train({cpu(0), cpu(1)});
  ASSERT_EQ(one.size(), two.size());
  for (size_t p = 0; p < one.size(); ++p)
    for (size_t i = 0; i < one[p].size(); ++i)
      ASSERT_NEAR(one[p][i], two[p][i], 1e-4 * std::max(1.f, std::abs(one[p][i])))
          << "parameter " << p << " element " << i;
  // Training moved the parameters (the comparison is not between two initial states).
  np::random::seed(7);
  leafnet::LeafNetwork fresh;
  fresh.initialize(init::Xavier(), {cpu(0)});
  fresh(np::zeros({1, 3, 32, 32}));
  EXPECT_NE(fresh.collect_params().values()[0]->data().to_vector<float>(), one[0]);
}
