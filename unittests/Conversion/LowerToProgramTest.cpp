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
  const float *p =
      reinterpret_cast<const float *>(static_cast<char *>(b.buffer->data()) + b.offset);
  return std::vector<float>(p, p + n);
}

} // namespace

TEST(LowerToProgram, DataParallelStepMatchesOneDevice) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::dlc::DLCDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> single =
      mlir::parseSourceString<mlir::ModuleOp>(kStep, &context);
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
  std::vector<BoundBuffer> results =
      two->run({bound(wa), bound(wb), bound(data), bound(labels)}, {}, {});
  ASSERT_EQ(results.size(), 1u);

  std::vector<float> expectedLoss = loss1.to_vector<float>(), loss2 = readFloats(results[0], 8);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(loss2[i], expectedLoss[i], 1e-6) << "per-sample loss " << i;
  std::vector<float> expected = w1.to_vector<float>(), a = wa.to_vector<float>(),
                     b = wb.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "replicas are updated identically";
    EXPECT_NEAR(a[i], expected[i], 1e-5 * std::max(1.f, std::abs(expected[i]))) << "weight " << i;
    EXPECT_NE(a[i], w[i]) << "the step changed the weight";
  }
}

namespace {

// A training batch norm with the ReLU6 after it and the gradient of both, as two
// regions (what dlc-fuse's norm-activation folding writes) and as plain ops.
const char *kNormActivation = R"mlir(
func.func @step(%x: tensor<2x16x5x6xf32> {dlc.name = "x", dlc.device = #dlc.device<cpu:0>},
                %g: tensor<16xf32> {dlc.name = "gamma", dlc.device = #dlc.device<cpu:0>},
                %b: tensor<16xf32> {dlc.name = "beta", dlc.device = #dlc.device<cpu:0>},
                %dz: tensor<2x16x5x6xf32> {dlc.name = "dz", dlc.device = #dlc.device<cpu:0>})
    -> (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  REGIONS
}
)mlir";

const char *kFused = R"mlir(
  %n:3 = dlc.fused "batch_norm_activation"(%x, %g, %b) {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<2x16x5x6xf32>, %ga: tensor<16xf32>, %ba: tensor<16xf32>):
    %y:3 = dlc.batch_norm %a, %ga, %ba {training} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %r = dlc.relu6 %y#0 : tensor<2x16x5x6xf32>
    dlc.yield %r, %y#1, %y#2 : tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
)mlir";

// The gradient's region and the results, after either forward region.
const char *kFusedBackward = R"mlir(
  %d:3 = dlc.fused "batch_norm_activation_backward"(%dz, %n#0, %x, %g, %n#1, %n#2) {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%e0: tensor<2x16x5x6xf32>, %e1: tensor<2x16x5x6xf32>, %e2: tensor<2x16x5x6xf32>, %e3: tensor<16xf32>, %e4: tensor<16xf32>, %e5: tensor<16xf32>):
    %m = dlc.relu6_backward %e0, %e1 : tensor<2x16x5x6xf32>
    %q:3 = dlc.batch_norm_backward %m, %e2, %e3, %e4, %e5 : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
    dlc.yield %q#0, %q#1, %q#2 : tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
  return %n#0, %d#0, %d#1, %d#2 : tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
)mlir";

const char *kUnfused = R"mlir(
  %y:3 = dlc.batch_norm %x, %g, %b {training, dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %r = dlc.relu6 %y#0 {dlc.device = #dlc.device<cpu:0>} : tensor<2x16x5x6xf32>
  %m = dlc.relu6_backward %dz, %r {dlc.device = #dlc.device<cpu:0>} : tensor<2x16x5x6xf32>
  %q:3 = dlc.batch_norm_backward %m, %x, %g, %y#1, %y#2 {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r, %q#0, %q#1, %q#2 : tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
)mlir";

// The same with a residual added before the activation: dz, which the step has at hand.
const char *kFusedResidual = R"mlir(
  %n:3 = dlc.fused "batch_norm_activation"(%x, %g, %b, %dz) {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16x5x6xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%a: tensor<2x16x5x6xf32>, %ga: tensor<16xf32>, %ba: tensor<16xf32>, %ra: tensor<2x16x5x6xf32>):
    %y:3 = dlc.batch_norm %a, %ga, %ba {training} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %s = dlc.add %ra, %y#0 : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>) -> tensor<2x16x5x6xf32>
    %r = dlc.relu6 %s : tensor<2x16x5x6xf32>
    dlc.yield %r, %y#1, %y#2 : tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
  }
)mlir";

const char *kUnfusedResidual = R"mlir(
  %y:3 = dlc.batch_norm %x, %g, %b {training, dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
  %s = dlc.add %dz, %y#0 {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>) -> tensor<2x16x5x6xf32>
  %r = dlc.relu6 %s {dlc.device = #dlc.device<cpu:0>} : tensor<2x16x5x6xf32>
  %m = dlc.relu6_backward %dz, %r {dlc.device = #dlc.device<cpu:0>} : tensor<2x16x5x6xf32>
  %q:3 = dlc.batch_norm_backward %m, %x, %g, %y#1, %y#2 {dlc.device = #dlc.device<cpu:0>} : (tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r, %q#0, %q#1, %q#2 : tensor<2x16x5x6xf32>, tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>
)mlir";

/// The step of `body`, blocked or plain, planned and lowered, run on fixed inputs: its
/// four results.
std::vector<std::vector<float>> runNormStep(const std::string &body, bool blocked,
                                            std::string &program) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::dlc::DLCDialect, mlir::func::FuncDialect>();
  std::string text = kNormActivation;
  text.replace(text.find("REGIONS"), 7, body);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  mlir::dlc::registerDLCPasses();
  mlir::PassManager pm(&context);
  std::string pipeline = blocked ? "dlc-assign-layouts{layout=nChw16c},func.func(dlc-plan-memory)"
                                 : "func.func(dlc-plan-memory)";
  EXPECT_TRUE(mlir::succeeded(mlir::parsePassPipeline(pipeline, pm)));
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  std::string error;
  auto lowered = conversion::lowerToProgram(module->lookupSymbol<mlir::func::FuncOp>("step"),
                                            CompileOptions{}, error);
  EXPECT_TRUE(lowered) << error;
  if (!lowered)
    return {};
  program = lowered->str();
  // gamma between 2 and 6: the normalized x, about -1.7 to 1.7, crosses both of ReLU6's
  // bounds.
  std::vector<float> gs = randomValues(16, 12);
  for (float &v : gs)
    v = 4.0f + 2.0f * v;
  Tensor x = np::array(randomValues(960, 11), Shape{2, 16, 5, 6}), g = np::array(gs, Shape{16}),
         b = np::array(randomValues(16, 13), Shape{16}),
         dz = np::array(randomValues(960, 14), Shape{2, 16, 5, 6});
  std::vector<BoundBuffer> results =
      lowered->run({bound(x), bound(g), bound(b), bound(dz)}, {}, {});
  EXPECT_EQ(results.size(), 4u);
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < results.size(); ++i)
    out.push_back(readFloats(results[i], i < 2 ? 960 : 16));
  return out;
}

} // namespace

TEST(LowerToProgram, NormActivationRegionsRunAsTheBatchNormsKernels) {
  for (bool blocked : {false, true})
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(blocked ? "nChw16c" : "plain") + (residual ? ", residual" : ""));
      std::string fusedProgram, unfusedProgram;
      auto fused = runNormStep(std::string(residual ? kFusedResidual : kFused) + kFusedBackward,
                               blocked, fusedProgram);
      auto unfused = runNormStep(residual ? kUnfusedResidual : kUnfused, blocked, unfusedProgram);
      ASSERT_EQ(fused.size(), 4u);
      ASSERT_EQ(unfused.size(), 4u);
      EXPECT_NE(fusedProgram.find(residual ? "dlc.batch_norm+add+relu6(" : "dlc.batch_norm+relu6("),
                std::string::npos)
          << fusedProgram;
      EXPECT_NE(fusedProgram.find("dlc.batch_norm_backward+relu6("), std::string::npos)
          << fusedProgram;
      EXPECT_EQ(fusedProgram.find("dlc.relu6_backward"), std::string::npos) << fusedProgram;
      int64_t capped = 0;
      for (float v : fused[0])
        capped += v == 6.0f;
      EXPECT_GT(capped, 0) << "no activation reached 6";
      for (size_t r = 0; r < 4; ++r)
        for (size_t i = 0; i < fused[r].size(); ++i)
          EXPECT_NEAR(fused[r][i], unfused[r][i], 1e-5 * std::max(1.f, std::abs(unfused[r][i])))
              << "result " << r << " element " << i;
    }
}
