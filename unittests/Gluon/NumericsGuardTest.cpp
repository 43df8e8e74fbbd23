//===- NumericsGuardTest.cpp - the first op to make a NaN or infinity is named ===//
#include "dlc/gluon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace dlc;
using namespace dlc::gluon;

namespace {

/// Turns the guard on for one test, off again whatever happens.
struct CheckNumerics {
  CheckNumerics() { set_check_numerics(true); }
  ~CheckNumerics() { set_check_numerics(false); }
};

/// The message of the error reading `t` raises, or "" when it reads fine.
std::string errorReading(const Tensor &t) {
  try {
    t.wait_to_read();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// log(x + 1) of its input: -inf where x is -1.
class LogBlock : public HybridBlock {
public:
  Tensor forward(const Tensor &x) override { return np::log(x + 1.0) * 2.0; }
  std::string kind() const override { return "LogBlock"; }
};

} // namespace

TEST(NumericsGuard, OffByDefault) {
  EXPECT_FALSE(check_numerics_enabled());
  Tensor y = np::log(np::array(std::vector<float>{1, 0}));
  EXPECT_TRUE(std::isinf(y.to_vector<float>()[1])) << "the guard changes nothing when off";
}

TEST(NumericsGuard, NamesTheEagerOpThatMadeIt) {
  CheckNumerics on;
  Tensor x = np::array(std::vector<float>{1, 0, 2, 3});
  Tensor y = np::log(x);     // -inf at element 1
  Tensor z = np::exp(y) + 1; // finite again, but it follows the failed op
  std::string message = errorReading(y);
  EXPECT_NE(message.find("dlc.log made -inf at element 1 of output #0 (4 float32 on cpu(0)) "
                         "from finite inputs"),
            std::string::npos)
      << message;
  EXPECT_EQ(errorReading(z), message) << "later ops report the first one";
  EXPECT_THROW(waitall(), Error); // as any kernel's error: once more at waitall()
  std::string overflow = errorReading(np::exp(np::full({3}, 1000.0)));
  EXPECT_NE(overflow.find("dlc.exp made inf at element 0"), std::string::npos) << overflow;
  EXPECT_THROW(waitall(), Error);
}

TEST(NumericsGuard, SaysWhenTheInputAlreadyHeldOne) {
  Tensor bad = np::array(std::vector<float>{1, std::numeric_limits<float>::quiet_NaN()});
  bad.wait_to_read();
  CheckNumerics on;
  std::string message = errorReading(bad * 2.0);
  EXPECT_NE(message.find("dlc.mul made NaN at element 1"), std::string::npos) << message;
  EXPECT_NE(message.find("its input #0 already held one"), std::string::npos) << message;
  EXPECT_THROW(waitall(), Error);
}

TEST(NumericsGuard, NamesTheStepOfACompiledProgram) {
  LogBlock block;
  block.hybridize();
  Tensor x = np::array(std::vector<float>{0, -1, 1});
  block(x).wait_to_read(); // compiled while the guard is off
  CheckNumerics on;
  std::string message = errorReading(block(x));
  EXPECT_NE(message.find("made -inf at element 1 of output #0"), std::string::npos) << message;
  EXPECT_NE(message.find("dlc."), std::string::npos) << message;
  EXPECT_EQ(block.compile_stats().compiles, 1) << "the guard needs no recompile";
  EXPECT_THROW(waitall(), Error);
}

TEST(NumericsGuard, TrainerRefusesANonFiniteGradient) {
  auto dense = std::make_shared<nn::Dense>(2);
  dense->initialize(init::Xavier(), {cpu(0)});
  Tensor x = np::ones({3, 4});
  (*dense)(x).wait_to_read();
  Trainer trainer(dense->collect_params(), "sgd", {{"learning_rate", 0.1}, {"check_numerics", 1}});
  Tensor loss;
  {
    autograd::Record record;
    loss = np::sum((*dense)(x)*std::numeric_limits<double>::infinity());
  }
  loss.backward();
  std::vector<float> before = dense->weight->data().to_vector<float>();
  try {
    trainer.step(3);
    FAIL() << "a NaN gradient was applied";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("the gradient of parameter '"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("holds a NaN or an infinity"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(dense->weight->data().to_vector<float>(), before);
}
