//===- LayoutTest.cpp - eager tensors kept in oneDNN's blocked layout ---------===//
//
// Between eager CPU ops, 4-D float32 activations with a multiple of 16 (or 8) channels
// stay in the nChw16c (or nChw8c) layout (dlc/Core/Layout.h). Whatever reads them
// (views, copies, host reads, other ops, autograd, compiled programs) must see the same
// values as with plain tensors only; the runs with use_blocked_layouts(false) are the
// oracle. A CPU uses the layout of its vector width by default (AVX-512: nChw16c, AVX2:
// nChw8c); these tests run each layout on every CPU, so that both paths run everywhere.
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

#include "dlc/Hybridize/CompiledFunction.h"
#include "dlc/Frontend/OpRegistry.h"

using namespace dlc;
using dlc::testing::expectClose;
using dlc::testing::PlainLayouts;
using dlc::testing::randomTensor;

namespace {

/// Every test here runs with blocked layouts on, in the layout of the parameter.
class BlockedLayouts : public ::testing::TestWithParam<Layout> {
protected:
  void SetUp() override { use_blocked_layout(GetParam()); }
  void TearDown() override {
    use_blocked_layout(before_);
    use_blocked_layouts(wasOn_);
  }

private:
  Layout before_ = blocked_layout();
  bool wasOn_ = blocked_layouts_enabled();
};

/// The LeafNetwork's convolution block on 32 channels: conv, relu, max pool, batch norm.
struct Block {
  Tensor weight = randomTensor({32, 16, 2, 2}, 1), bias = randomTensor({32}, 2),
         gamma = randomTensor({32}, 3), beta = randomTensor({32}, 4);
  Tensor operator()(const Tensor &x) const {
    npx::PoolOptions pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    Tensor y = npx::max_pool2d(npx::relu(npx::convolution(x, weight, bias)), pool);
    return npx::batch_norm_training(y, gamma, beta).output;
  }
};

Tensor input() { return randomTensor({3, 16, 11, 10}, 5); }

TEST_P(BlockedLayouts, ActivationsStayBlockedBetweenLayoutAwareOps) {
  Block block;
  Tensor conv = npx::convolution(input(), block.weight, block.bias);
  EXPECT_EQ(detail::layout_of(conv), GetParam());
  EXPECT_EQ(detail::layout_of(npx::relu(conv)), GetParam());
  EXPECT_EQ(detail::layout_of(block(input())), GetParam());
  // Where they cannot be: 3 channels, a 2-D tensor, the reference kernels, the switch.
  EXPECT_EQ(detail::layout_of(npx::convolution(input(), randomTensor({3, 16, 2, 2}, 6), Tensor())),
            Layout::plain);
  EXPECT_EQ(detail::layout_of(npx::relu(randomTensor({4, 32}, 7))), Layout::plain);
  {
    PlainLayouts off;
    EXPECT_EQ(detail::layout_of(block(input())), Layout::plain);
  }
  use_reference_kernels(true);
  Tensor reference = block(input());
  use_reference_kernels(false);
  EXPECT_EQ(detail::layout_of(reference), Layout::plain);
}

TEST_P(BlockedLayouts, ValuesAndGradientsEqualThePlainOnes) {
  Block block;
  auto run = [&](std::vector<std::vector<float>> &grads) {
    Tensor x = input();
    for (Tensor *p : {&x, &block.weight, &block.bias, &block.gamma, &block.beta})
      p->attach_grad();
    Tensor y;
    {
      autograd::Record record;
      y = block(x);
      (y * randomTensor(y.shape(), 8)).backward();
    }
    grads.clear();
    for (Tensor *p : {&x, &block.weight, &block.bias, &block.gamma, &block.beta})
      grads.push_back(p->grad().to_vector<float>());
    return y.to_vector<float>();
  };
  std::vector<std::vector<float>> blockedGrads, plainGrads;
  std::vector<float> blocked = run(blockedGrads), plain;
  {
    PlainLayouts off;
    plain = run(plainGrads);
  }
  expectClose(plain, blocked, 1e-5, "output");
  for (size_t k = 0; k < plainGrads.size(); ++k)
    expectClose(plainGrads[k], blockedGrads[k], 1e-4, "gradient #" + std::to_string(k));
}

TEST_P(BlockedLayouts, ViewsCopiesAndReadsSeeTheLogicalElements) {
  Block block;
  Tensor x = input();
  Tensor blocked = npx::relu(npx::convolution(x, block.weight, block.bias));
  ASSERT_EQ(detail::layout_of(blocked), GetParam());
  Tensor plain;
  {
    PlainLayouts off;
    plain = npx::relu(npx::convolution(x, block.weight, block.bias));
  }
  // The two convolutions add up in different orders: equal to rounding. A view or copy
  // that read the blocked bytes as plain would be off by whole values.
  const double tolerance = 1e-5;
  std::vector<float> want = plain.to_vector<float>();
  expectClose(want, blocked.to_vector<float>(), tolerance, "to_vector");
  expectClose(plain.reshape({3, -1}).to_vector<float>(),
              blocked.reshape({3, -1}).to_vector<float>(), tolerance, "reshape");
  expectClose(plain.slice(1, 3).to_vector<float>(), blocked.slice(1, 3).to_vector<float>(),
              tolerance, "slice");
  expectClose(plain[2].to_vector<float>(), blocked[2].to_vector<float>(), tolerance, "row");
  expectClose(want, blocked.copyto(cpu(1)).to_vector<float>(), tolerance,
              "copy to another device");
  expectClose(want, blocked.to(cpu(0)).to_vector<float>(), tolerance, "to() its own device");
  Tensor target = np::zeros(blocked.shape());
  blocked.copyto(target);
  expectClose(want, target.to_vector<float>(), tolerance, "copy into a plain tensor");
  // Into a blocked tensor: the bytes go over in the target's layout.
  Tensor blockedTarget = npx::relu(npx::convolution(x, block.weight, Tensor()));
  ASSERT_EQ(detail::layout_of(blockedTarget), GetParam());
  plain.copyto(blockedTarget);
  expectClose(want, blockedTarget.to_vector<float>(), 0, "copy into a blocked tensor");
  // A view shares the tensor's memory: a write through it reaches the tensor.
  Tensor written = npx::relu(npx::convolution(x, block.weight, Tensor()));
  ASSERT_EQ(detail::layout_of(written), GetParam());
  Tensor row = written[1];
  Tensor patch = randomTensor(row.shape(), 13);
  patch.copyto(row);
  expectClose(patch.to_vector<float>(), written[1].to_vector<float>(), 0, "write through a view");
  EXPECT_EQ(detail::layout_of(written), Layout::plain) << "the view turned the tensor plain";
  EXPECT_EQ(blocked.str(), np::array(blocked.to_vector<float>(), blocked.shape()).str());
}

TEST_P(BlockedLayouts, OpsWithoutBlockedKernelsGetPlainInputs) {
  Block block;
  Tensor x = input();
  auto compute = [&] {
    Tensor a = npx::convolution(x, block.weight, block.bias);
    Tensor b = npx::relu(a);
    std::vector<Tensor> out{
        a + b,                                   // both blocked: stays blocked
        a * randomTensor(a.shape(), 9),          // blocked with plain, same shape
        a + block.bias.reshape({1, 32, 1, 1}),   // broadcasting: plain
        np::sum(a, {0, 2, 3}),                   // per-channel sum: reads blocked
        np::mean(a, {0, 2, 3}, true),
        np::sum(a, {1}),                         // other axes: plain
        np::max(a, {0, 2, 3}),                   // max: plain
        np::transpose(a, {0, 2, 3, 1}),
        npx::avg_pool2d(a, {{2, 2}, {2, 2}}),
        a.astype(DType::f16).astype(DType::f32),
    };
    return out;
  };
  std::vector<Tensor> blocked = compute(), plain;
  {
    PlainLayouts off;
    plain = compute();
  }
  EXPECT_EQ(detail::layout_of(blocked[0]), GetParam());
  EXPECT_EQ(detail::layout_of(blocked[1]), GetParam());
  for (size_t k = 0; k < plain.size(); ++k) {
    // The float16 round trip turns a rounding difference of the two convolutions into a
    // float16 step now and then.
    const double tolerance = k + 1 == plain.size() ? 1e-3 : 1e-5;
    expectClose(plain[k].to_vector<float>(), blocked[k].to_vector<float>(), tolerance,
                "result #" + std::to_string(k));
  }
}

TEST_P(BlockedLayouts, TheReferenceKernelsReadTensorsBlockedEarlier) {
  Block block;
  Tensor blocked = npx::convolution(input(), block.weight, block.bias);
  ASSERT_EQ(detail::layout_of(blocked), GetParam());
  Tensor fast = npx::relu(blocked);
  use_reference_kernels(true);
  Tensor reference = npx::relu(blocked); // converted to plain for the reference kernel
  use_reference_kernels(false);
  EXPECT_EQ(detail::layout_of(reference), Layout::plain);
  expectClose(fast.to_vector<float>(), reference.to_vector<float>(), 0, "relu");
}

// A compiled function that writes into a captured tensor (copyto): the write reaches the
// tensor even when it was blocked.
TEST_P(BlockedLayouts, CompiledWritesReachBlockedTensors) {
  Block block;
  Tensor target = npx::relu(npx::convolution(input(), block.weight, Tensor()));
  ASSERT_EQ(detail::layout_of(target), GetParam());
  Tensor source = randomTensor(target.shape(), 16);
  CompiledFunction store("store", [&](const Tensor &x) {
    Tensor y = npx::relu(x);
    y.copyto(target);
    return y;
  }, [](Device) { return std::vector<BoundParameter>{}; });
  Tensor y = store(source);
  expectClose(npx::relu(source).to_vector<float>(), target.to_vector<float>(), 0,
              "the written tensor");
}

TEST_P(BlockedLayouts, CompiledFunctionsReadBlockedArguments) {
  Block block;
  Tensor weight = randomTensor({32, 32, 2, 2}, 10);
  CompiledFunction twice("twice", [&](const Tensor &x) {
    return npx::relu(npx::convolution(x, weight, Tensor())) * 2.0;
  }, [](Device) { return std::vector<BoundParameter>{}; });
  Tensor blocked = block(input());
  ASSERT_EQ(detail::layout_of(blocked), GetParam());
  Tensor want;
  {
    PlainLayouts off;
    want = npx::relu(npx::convolution(detail::plain(blocked), weight, Tensor())) * 2.0;
  }
  expectClose(want.to_vector<float>(), twice(blocked).to_vector<float>(), 1e-5, "compiled");
}

// A hybridized chain (conv, relu, pool, batch norm, flatten, dense): the forward keeps
// its activations blocked and hands the saved ones to the backward as they are.
TEST_P(BlockedLayouts, HybridizedProgramsKeepActivationsBlocked) {
  Block block;
  Tensor dense = randomTensor({3, 32 * 4 * 4}, 11);
  auto forward = [&](const Tensor &x) {
    return npx::fully_connected(block(x).reshape({x.shape()[0], -1}), dense, Tensor());
  };
  Tensor r = randomTensor({3, 3}, 12);
  auto run = [&](bool hybridize, std::string *programs) {
    CompiledFunction compiled("chain", forward, [](Device) { return std::vector<BoundParameter>{}; });
    Tensor x = input();
    x.attach_grad();
    Tensor y;
    {
      autograd::Record record;
      y = hybridize ? compiled(x) : forward(x);
      (y * r).backward();
    }
    if (programs)
      *programs = compiled.programs();
    return std::make_pair(y.to_vector<float>(), x.grad().to_vector<float>());
  };
  std::string programs;
  auto blocked = run(true, &programs);
  EXPECT_NE(programs.find(layout_name(GetParam())), std::string::npos) << programs;
  EXPECT_NE(programs.find("dlc.to_layout"), std::string::npos) << programs;
  std::pair<std::vector<float>, std::vector<float>> plainCompiled, plainEager;
  {
    PlainLayouts off;
    plainCompiled = run(true, &programs);
    EXPECT_EQ(programs.find(layout_name(GetParam())), std::string::npos) << programs;
    plainEager = run(false, nullptr);
  }
  expectClose(plainCompiled.first, blocked.first, 1e-5, "output vs plain program");
  expectClose(plainCompiled.second, blocked.second, 1e-4, "input gradient vs plain program");
  expectClose(plainEager.first, blocked.first, 1e-5, "output vs plain eager");

  // The backward of a dense layer over a 4-D activation views the saved activation as a
  // matrix: that saved value must reach the backward plain.
  Tensor columns = randomTensor({3, 4}, 14);
  auto denseOverRows = [&](const Tensor &x) { return npx::fully_connected(block(x), columns, Tensor()); };
  Tensor rr = randomTensor({3, 32, 4, 3}, 15);
  auto gradients = [&](bool hybridize) {
    // The dense weight as a parameter: its gradient reads the saved activation.
    CompiledFunction compiled("rows", denseOverRows, [&](Device) {
      return std::vector<BoundParameter>{{"columns", columns, true}};
    });
    Tensor x = input();
    x.attach_grad();
    columns.attach_grad();
    {
      autograd::Record record;
      Tensor y = hybridize ? compiled(x) : denseOverRows(x);
      (y * rr).backward();
    }
    return std::make_pair(x.grad().to_vector<float>(), columns.grad().to_vector<float>());
  };
  std::pair<std::vector<float>, std::vector<float>> eagerRows;
  {
    PlainLayouts off;
    eagerRows = gradients(false);
  }
  auto compiledRows = gradients(true);
  expectClose(eagerRows.first, compiledRows.first, 1e-4, "input gradient, dense over rows");
  expectClose(eagerRows.second, compiledRows.second, 1e-4,
              "weight gradient from a saved blocked activation viewed as a matrix");

  // Under the reference kernels (plain tensors only) the function is compiled again.
  use_reference_kernels(true);
  auto reference = run(true, &programs);
  use_reference_kernels(false);
  EXPECT_EQ(programs.find(layout_name(GetParam())), std::string::npos) << programs;
  expectClose(reference.first, blocked.first, 1e-4, "output vs reference kernels");
}

INSTANTIATE_TEST_SUITE_P(Layouts, BlockedLayouts,
                         ::testing::Values(Layout::nChw16c, Layout::nChw8c),
                         [](const ::testing::TestParamInfo<Layout> &info) {
                           return std::string(layout_name(info.param));
                         });

} // namespace
