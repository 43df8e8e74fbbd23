//===- LowerToProgramTest.cpp - one lowering, on one device or several ----------===//
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Dialect/DLC/Transforms/Passes.h"
#include "dlc/Frontend/NumPy.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace dlc;

namespace {

// One SGD step of a dense classifier on 8 samples, as a training step is traced: the
// gradient marked for data parallelism, the weight updated in place.
const char *kStep = R"mlir(
func.func @step(%w: tensor<3x5xf32> {dlc.name = "w", dlc.device = #dlc.device<cpu:0>},
                %x: tensor<8x5xf32> {dlc.name = "data", dlc.batch, dlc.device = #dlc.device<cpu:0>},
                %y: tensor<8xi64> {dlc.name = "label", dlc.batch, dlc.device = #dlc.device<cpu:0>})
    -> (tensor<8xf32>, tensor<3x5xf32> {dlc.updates = 0 : i64}) {
  %logits = dlc.dense %x, %w {dlc.device = #dlc.device<cpu:0>} : (tensor<8x5xf32>, tensor<3x5xf32>) -> tensor<8x3xf32>
  %loss = dlc.softmax_cross_entropy %logits, %y {dlc.device = #dlc.device<cpu:0>} : (tensor<8x3xf32>, tensor<8xi64>) -> tensor<8xf32>
  %one = dlc.constant dense<1.0> : tensor<8xf32>
  %dlogits = dlc.softmax_cross_entropy_backward %one, %logits, %y {dlc.device = #dlc.device<cpu:0>} : (tensor<8xf32>, tensor<8x3xf32>, tensor<8xi64>) -> tensor<8x3xf32>
  %dw = dlc.matmul %dlogits, %x {transpose_a, dlc.gradient, dlc.device = #dlc.device<cpu:0>} : (tensor<8x3xf32>, tensor<8x5xf32>) -> tensor<3x5xf32>
  %lr = dlc.constant dense<0.1> : tensor<f32>
  %step = dlc.mul %dw, %lr {dlc.device = #dlc.device<cpu:0>} : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  %new = dlc.sub %w, %step {dlc.device = #dlc.device<cpu:0>} : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %loss, %new : tensor<8xf32>, tensor<3x5xf32>
}
)mlir";

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::vector<float> out(n);
  for (float &v : out)
    v = value(generator);
  return out;
}

BoundBuffer bound(const Tensor &t) { return {t.buffer(), t.impl()->offset}; }

std::vector<float> readFloats(const BoundBuffer &b, size_t n) {
  b.buffer->wait_to_read();
  const float *p = reinterpret_cast<const float *>(static_cast<char *>(b.buffer->data()) + b.offset);
  return std::vector<float>(p, p + n);
}

} // namespace

TEST(LowerToProgram, DataParallelStepMatchesOneDevice) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::dlc::DLCDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> single = mlir::parseSourceString<mlir::ModuleOp>(kStep, &context);
  ASSERT_TRUE(single);
  mlir::OwningOpRef<mlir::ModuleOp> sharded = single->clone();
  mlir::dlc::registerDLCPasses();
  mlir::PassManager pm(&context);
  ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline(
      "dlc-shard-data-parallel{devices=cpu:0,cpu:1},func.func(dlc-order-steps,dlc-plan-memory)",
      pm)));
  ASSERT_TRUE(mlir::succeeded(pm.run(*sharded)));

  std::string error;
  auto unplanned = conversion::lowerToProgram(single->lookupSymbol<mlir::func::FuncOp>("step"),
                                              CompileOptions{}, error);
  EXPECT_FALSE(unplanned);
  EXPECT_NE(error.find("run dlc-plan-memory first"), std::string::npos) << error;
  mlir::PassManager plan(&context);
  ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline("func.func(dlc-plan-memory)", plan)));
  ASSERT_TRUE(mlir::succeeded(plan.run(*single)));
  error.clear();
  auto one = conversion::lowerToProgram(single->lookupSymbol<mlir::func::FuncOp>("step"),
                                        CompileOptions{}, error);
  ASSERT_TRUE(one) << error;
  auto two = conversion::lowerToProgram(sharded->lookupSymbol<mlir::func::FuncOp>("step"),
                                        CompileOptions{}, error);
  ASSERT_TRUE(two) << error;
  std::vector<Device> used = two->devices();
  std::sort(used.begin(), used.end());
  EXPECT_EQ(used, (std::vector<Device>{cpu(0), cpu(1)})) << two->str();
  EXPECT_NE(two->str().find("dlc.all_reduce"), std::string::npos);

  std::vector<float> w = randomValues(15, 1), x = randomValues(40, 2);
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 2, 1, 0, 2, 2, 1});
  Tensor data = np::array(x, Shape{8, 5});

  // One device, the whole batch.
  Tensor w1 = np::array(w, Shape{3, 5});
  Tensor loss1 = Tensor::empty({8}, DType::f32, cpu(0));
  EXPECT_TRUE(one->one_task()) << one->str();
  EXPECT_FALSE(two->one_task()) << two->str();
  one->run({bound(w1), bound(data), bound(labels)}, {bound(loss1)}, {});

  // Two devices, half the batch each, one weight replica each.
  Tensor wa = np::array(w, Shape{3, 5}), wb = np::array(w, Shape{3, 5}).copyto(cpu(1));
  std::vector<BoundBuffer> results = two->run({bound(wa), bound(wb), bound(data), bound(labels)}, {}, {});
  ASSERT_EQ(results.size(), 1u);

  std::vector<float> expectedLoss = loss1.to_vector<float>(), loss2 = readFloats(results[0], 8);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(loss2[i], expectedLoss[i], 1e-6) << "per-sample loss " << i;
  std::vector<float> expected = w1.to_vector<float>(), a = wa.to_vector<float>(),
                     b = wb.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "replicas are updated identically";
    EXPECT_NEAR(a[i], expected[i], 1e-5 * std::max(1.f, std::abs(expected[i])))
        << "weight " << i;
    EXPECT_NE(a[i], w[i]) << "the step changed the weight";
  }
}
