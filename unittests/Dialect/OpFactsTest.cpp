//===- OpFactsTest.cpp - the MLIR-free op facts agree with the dialect --------===//
//
// dlc/Core/OpFacts.h is derived from the ODS at build time; these tests read the same
// facts through MLIR's registered ops, so a generator that dropped or misread an op,
// an attribute or a trait fails here.
//
//===----------------------------------------------------------------------===//
#include "dlc/Core/OpFacts.h"
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Frontend/OpRegistry.h"
#include "dlc/Runtime/Attrs.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace mlir;

namespace {

std::vector<RegisteredOperationName> dlcOps(MLIRContext &context) {
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "dlc")
      ops.push_back(name);
  return ops;
}

TEST(OpFacts, EveryDialectOpHasItsFactsAndNoOtherOpHas) {
  MLIRContext context;
  context.loadDialect<mlir::dlc::DLCDialect>();
  std::vector<RegisteredOperationName> ops = dlcOps(context);
  ASSERT_GT(ops.size(), 40u);
  EXPECT_EQ(std::size(::dlc::op_facts::kTable), ops.size());
  for (RegisteredOperationName name : ops) {
    const ::dlc::op_facts::OpInfo *facts = ::dlc::op_facts::find(name.getStringRef().str());
    ASSERT_NE(facts, nullptr) << name.getStringRef().str();
    using ::dlc::op_facts::OpTrait;
    EXPECT_EQ(facts->has(OpTrait::elementwise_kernel),
              name.hasTrait<mlir::dlc::OpTrait::ElementwiseKernel>())
        << facts->name;
    EXPECT_EQ(facts->has(OpTrait::broadcasting), name.hasTrait<mlir::dlc::OpTrait::Broadcasting>())
        << facts->name;
    EXPECT_EQ(facts->has(OpTrait::batch_shaped_result),
              name.hasTrait<mlir::dlc::OpTrait::BatchShapedResult>())
        << facts->name;
    std::set<std::string> declared, derived;
    for (StringAttr attr : name.getAttributeNames())
      declared.insert(attr.str());
    for (int i = 0; i < facts->attr_count; ++i)
      derived.insert(facts->attrs[i].name);
    EXPECT_EQ(derived, declared) << facts->name;
  }
}

TEST(OpFacts, TraitsSayWhatThePassesRelyOn) {
  using namespace ::dlc;
  using op_facts::OpTrait;
  EXPECT_TRUE(op_facts::has_trait(ops::add, OpTrait::elementwise_kernel));
  EXPECT_TRUE(op_facts::has_trait(ops::relu_backward, OpTrait::elementwise_kernel));
  EXPECT_TRUE(op_facts::has_trait(ops::tanh, OpTrait::elementwise_kernel));
  // i1 results and three operands: never written over an operand, never chunked.
  EXPECT_FALSE(op_facts::has_trait(ops::compare, OpTrait::elementwise_kernel));
  EXPECT_FALSE(op_facts::has_trait(ops::select, OpTrait::elementwise_kernel));
  EXPECT_TRUE(op_facts::has_trait(ops::select, OpTrait::broadcasting));
  EXPECT_TRUE(op_facts::has_trait(ops::conv2d_backward_data, OpTrait::batch_shaped_result));
  EXPECT_FALSE(op_facts::has_trait(ops::conv2d_backward_filter, OpTrait::batch_shaped_result));
  EXPECT_FALSE(op_facts::has_trait("dlc.no_such_op", OpTrait::broadcasting));
}

TEST(OpFacts, AttributeDefaultsAreTheDialects) {
  using namespace ::dlc;
  EXPECT_STREQ(op_attrs::avg_pool2d::count_include_pad.name, "count_include_pad");
  EXPECT_TRUE(op_attrs::avg_pool2d::count_include_pad.value);
  EXPECT_DOUBLE_EQ(op_attrs::batch_norm::epsilon.value, 1e-5);
  EXPECT_DOUBLE_EQ(op_attrs::batch_norm::momentum.value, 0.9);
  EXPECT_EQ(op_attrs::softmax::axis.value, -1);
  const op_facts::AttrInfo *flag = op_facts::find(ops::avg_pool2d)->attr("count_include_pad");
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->kind, op_facts::AttrKind::boolean);
  EXPECT_EQ(op_facts::find(ops::max_pool2d)->attr("ceil_mode")->kind, op_facts::AttrKind::flag);
  EXPECT_EQ(op_facts::find(ops::max_pool2d)->attr("count_include_pad"), nullptr);
  // An attribute left out reads as the default; one given reads as given.
  EXPECT_TRUE(Attrs().get(op_attrs::avg_pool2d::count_include_pad));
  Attrs excluded{{"count_include_pad", false}};
  EXPECT_FALSE(excluded.get(op_attrs::avg_pool2d::count_include_pad));
}

TEST(OpFacts, EveryEagerOpWithADialectOpNamesOneThatExists) {
  int checked = 0;
  for (const ::dlc::OpDef *op : ::dlc::all_ops())
    if (op->dialect_op.rfind("dlc.", 0) == 0) {
      EXPECT_NE(::dlc::op_facts::find(op->dialect_op), nullptr)
          << op->name << " -> " << op->dialect_op;
      ++checked;
    }
  EXPECT_GT(checked, 30);
}

} // namespace
