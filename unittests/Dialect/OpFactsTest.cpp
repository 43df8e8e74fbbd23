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
#include "dlc/Core/Attrs.h"

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

template <::dlc::LayoutRule Rule> bool hasRule(RegisteredOperationName name) {
  return name.hasTrait<mlir::dlc::OpTrait::LayoutRule<Rule>::template Impl>();
}

/// The rule of the op's DLC_LayoutRule trait, as MLIR sees it.
::dlc::LayoutRule layoutRuleTrait(RegisteredOperationName name) {
  using R = ::dlc::LayoutRule;
  std::pair<bool, R> rules[] = {
      {hasRule<R::elementwise>(name), R::elementwise},
      {hasRule<R::conv>(name), R::conv},
      {hasRule<R::conv_backward_filter>(name), R::conv_backward_filter},
      {hasRule<R::max_pool>(name), R::max_pool},
      {hasRule<R::max_pool_backward>(name), R::max_pool_backward},
      {hasRule<R::batch_norm>(name), R::batch_norm},
      {hasRule<R::batch_norm_backward>(name), R::batch_norm_backward},
      {hasRule<R::channel_reduce>(name), R::channel_reduce},
  };
  for (auto [has, rule] : rules)
    if (has)
      return rule;
  return R::none;
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
    EXPECT_EQ(facts->layout_rule, layoutRuleTrait(name)) << facts->name;
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

TEST(OpFacts, LayoutRulesAreTheOnesTheODSNames) {
  using namespace ::dlc;
  EXPECT_EQ(op_facts::find(ops::conv2d)->layout_rule, LayoutRule::conv);
  EXPECT_EQ(op_facts::find(ops::conv2d_backward_data)->layout_rule, LayoutRule::conv);
  EXPECT_EQ(op_facts::find(ops::reduce)->layout_rule, LayoutRule::channel_reduce);
  EXPECT_EQ(op_facts::find(ops::avg_pool2d)->layout_rule, LayoutRule::none);
  // Every op whose kernel works element by element may keep a blocked layout.
  for (const op_facts::OpInfo &op : op_facts::kTable)
    EXPECT_EQ(op.has(op_facts::OpTrait::elementwise_kernel),
              op.layout_rule == LayoutRule::elementwise)
        << op.name;
  // The eager registry takes the ODS's rule.
  EXPECT_EQ(find_op("convolution").layout, layout_rule_of(ops::conv2d));
  EXPECT_NE(find_op("add").layout, nullptr);
  EXPECT_EQ(find_op("fully_connected").layout, nullptr);
}

TEST(OpFacts, OperandAndResultCountsAreTheODSs) {
  using namespace ::dlc;
  const op_facts::OpInfo *conv = op_facts::find(ops::conv2d); // input, weight, optional bias
  EXPECT_EQ(conv->min_operands, 2);
  EXPECT_EQ(conv->max_operands, 3);
  EXPECT_TRUE(conv->takes(2, 1));
  EXPECT_TRUE(conv->takes(3, 1));
  EXPECT_FALSE(conv->takes(1, 1));
  EXPECT_FALSE(conv->takes(4, 1));
  EXPECT_FALSE(conv->takes(2, 2));
  EXPECT_TRUE(op_facts::find(ops::add)->takes(2, 1));
  EXPECT_FALSE(op_facts::find(ops::add)->takes(3, 1));
  const op_facts::OpInfo *concat = op_facts::find(ops::concat); // variadic inputs
  EXPECT_EQ(concat->max_operands, -1);
  EXPECT_TRUE(concat->takes(5, 1));
  EXPECT_EQ(op_facts::find(ops::split)->max_results, -1);
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
