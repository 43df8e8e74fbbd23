//===- ShapeRulesTest.cpp - shape rules shared by compiler and runtime -------===//
#include "dlc/Core/ShapeRules.h"

#include <gtest/gtest.h>

using namespace dlc::shape_rules;

TEST(ShapeRules, BroadcastAlignsTrailingDimensions) {
  EXPECT_EQ(broadcast({4, 1}, {3}).shape, (Shape{4, 3}));
  EXPECT_EQ(broadcast({2, 1, 5}, {7, 1}).shape, (Shape{2, 7, 5}));
  EXPECT_EQ(broadcast({}, {3}).shape, (Shape{3}));
  Inferred bad = broadcast({4, 3}, {5});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("4x3"), std::string::npos) << bad.error;
  EXPECT_NE(bad.error.find("3 vs 5"), std::string::npos) << bad.error;
}

TEST(ShapeRules, BroadcastsTo) {
  EXPECT_TRUE(broadcastsTo({3}, {4, 3}));
  EXPECT_TRUE(broadcastsTo({1, 3}, {4, 3}));
  EXPECT_FALSE(broadcastsTo({2, 3}, {4, 3}));
  EXPECT_FALSE(broadcastsTo({1, 4, 3}, {4, 3}));
}

TEST(ShapeRules, MatmulWithTransposesAndBatch) {
  EXPECT_EQ(matmul({4, 5}, {5, 6}, false, false).shape, (Shape{4, 6}));
  EXPECT_EQ(matmul({5, 4}, {5, 6}, true, false).shape, (Shape{4, 6}));
  EXPECT_EQ(matmul({4, 5}, {6, 5}, false, true).shape, (Shape{4, 6}));
  EXPECT_EQ(matmul({2, 1, 4, 5}, {3, 5, 6}, false, false).shape, (Shape{2, 3, 4, 6}));
  EXPECT_FALSE(matmul({4, 5}, {6, 5}, false, false).ok());
  EXPECT_FALSE(matmul({5}, {5, 6}, false, false).ok());
}

TEST(ShapeRules, DenseUsesMXNetWeightLayout) {
  Shape bias{100};
  EXPECT_EQ(dense({4, 21632}, {100, 21632}, &bias).shape, (Shape{4, 100}));
  EXPECT_EQ(dense({2, 3, 8}, {5, 8}, nullptr).shape, (Shape{2, 3, 5}));
  EXPECT_FALSE(dense({4, 7}, {100, 21632}, nullptr).ok());
  Shape wrongBias{99};
  EXPECT_FALSE(dense({4, 21632}, {100, 21632}, &wrongBias).ok());
}

TEST(ShapeRules, Conv2DFollowsTheOutputSizeFormula) {
  // The seed's first block: 3 -> 32 channels, kernel 2, stride 1, no padding.
  EXPECT_EQ(conv2d({4, 3, 128, 128}, {32, 3, 2, 2}, nullptr, {}).shape,
            (Shape{4, 32, 127, 127}));
  Conv2DParams p;
  p.stride = {2, 2};
  p.padding = {1, 1};
  p.dilation = {2, 2};
  // (9 + 2 - 2*(3-1) - 1) / 2 + 1 = 4
  EXPECT_EQ(conv2d({1, 4, 9, 9}, {8, 4, 3, 3}, nullptr, p).shape, (Shape{1, 8, 4, 4}));
  Conv2DParams grouped;
  grouped.groups = 2;
  EXPECT_EQ(conv2d({1, 4, 5, 5}, {6, 2, 3, 3}, nullptr, grouped).shape,
            (Shape{1, 6, 3, 3}));
  Inferred channels = conv2d({4, 3, 8, 8}, {16, 2, 2, 2}, nullptr, {});
  ASSERT_FALSE(channels.ok());
  EXPECT_NE(channels.error.find("3 channels"), std::string::npos) << channels.error;
  EXPECT_FALSE(conv2d({1, 3, 2, 2}, {4, 3, 3, 3}, nullptr, {}).ok()) << "kernel too big";
  EXPECT_FALSE(conv2d({1, 4, 5, 5}, {5, 2, 3, 3}, nullptr, grouped).ok()) << "O % groups";
}

TEST(ShapeRules, Pool2DFloorAndCeil) {
  Pool2DParams p;
  p.kernel = {4, 4};
  p.stride = {2, 2};
  EXPECT_EQ(pool2d({4, 32, 127, 127}, p).shape, (Shape{4, 32, 62, 62}));
  p.ceilMode = true;
  EXPECT_EQ(pool2d({4, 32, 127, 127}, p).shape, (Shape{4, 32, 63, 63}));
  p.kernel = {9, 9};
  EXPECT_FALSE(pool2d({1, 1, 8, 8}, p).ok());
  p.kernel = {2, 2};
  p.stride = {0, 1};
  EXPECT_FALSE(pool2d({1, 1, 8, 8}, p).ok());
}

TEST(ShapeRules, ReduceTransposeFlattenConcat) {
  EXPECT_EQ(reduce({4, 32, 8, 8}, {0, 2, 3}, false).shape, (Shape{32}));
  EXPECT_EQ(reduce({4, 10}, {-1}, true).shape, (Shape{4, 1}));
  EXPECT_FALSE(reduce({4, 10}, {1, -1}, false).ok()) << "same axis twice";
  EXPECT_FALSE(reduce({4, 10}, {2}, false).ok());
  EXPECT_EQ(transpose({2, 3, 4}, {0, 2, 1}).shape, (Shape{2, 4, 3}));
  EXPECT_FALSE(transpose({2, 3, 4}, {0, 0, 1}).ok());
  EXPECT_EQ(flatten({4, 128, 13, 13}).shape, (Shape{4, 21632}));
  EXPECT_EQ(concat({{3, 3}, {2, 3}}, 0).shape, (Shape{5, 3}));
  EXPECT_FALSE(concat({{3, 3}, {2, 4}}, 0).ok());
}

TEST(ShapeRules, BatchNormAndLoss) {
  EXPECT_TRUE(batchNormStats({4, 32, 8, 8}, 1, {32}, "gamma").ok());
  Inferred bad = batchNormStats({4, 32, 8, 8}, 1, {16}, "gamma");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("gamma must be (32)"), std::string::npos) << bad.error;
  EXPECT_EQ(softmaxCrossEntropy({4, 2}, {4}).shape, (Shape{4}));
  EXPECT_FALSE(softmaxCrossEntropy({4, 2}, {3}).ok());
}

TEST(ShapeRules, SlicesResolveAsPythonsAndKeepTheirRank) {
  // resolveSlice is Python's slice.indices.
  EXPECT_EQ(resolveSlice(std::nullopt, std::nullopt, 1, 5), std::make_pair(int64_t(0), int64_t(5)));
  EXPECT_EQ(resolveSlice(-2, std::nullopt, 1, 5), std::make_pair(int64_t(3), int64_t(5)));
  EXPECT_EQ(resolveSlice(1, 99, 2, 5), std::make_pair(int64_t(1), int64_t(5)));
  EXPECT_EQ(resolveSlice(std::nullopt, std::nullopt, -1, 5), std::make_pair(int64_t(4), int64_t(-1)));
  EXPECT_EQ(resolveSlice(-99, 3, -1, 5), std::make_pair(int64_t(-1), int64_t(3)));
  EXPECT_EQ(sliceLength(4, -1, -1), 5);
  EXPECT_EQ(sliceLength(4, -1, -2), 3);
  EXPECT_EQ(sliceLength(1, 5, 2), 2);
  EXPECT_EQ(sliceLength(3, 1, 1), 0);
  EXPECT_EQ(slice({4, 5, 6}, {{0, 4, 1}, {4, 3, 6}, {1, -1, 1}}).shape, (Shape{4, 1, 5}));
  EXPECT_EQ(slice({4, 5, 6}, {{3, 0, 0}, {-1, 5, 6}, {-1, 2, 3}}).shape, (Shape{4, 3, 2}));
  EXPECT_FALSE(slice({4, 5}, {{0}, {4}, {1}}).ok());          // one entry per axis
  EXPECT_FALSE(slice({4, 5}, {{0, 0}, {4, 5}, {1, 0}}).ok());  // a step of 0
  EXPECT_FALSE(slice({4, 5}, {{-1, 0}, {4, 5}, {1, 1}}).ok()); // -1 only with a negative step
  EXPECT_FALSE(slice({4, 5}, {{0, 0}, {4, 6}, {1, 1}}).ok());  // past the end
  EXPECT_EQ(sliceBackward({2, 5}, {4, 5}, {{0, 0}, {4, 5}, {2, 1}}).shape, (Shape{4, 5}));
  EXPECT_FALSE(sliceBackward({3, 5}, {4, 5}, {{0, 0}, {4, 5}, {2, 1}}).ok());
}

TEST(ShapeRules, LayerNormStatisticsDropTheNormalizedAxis) {
  EXPECT_EQ(layerNormStats({4, 7, 16}, -1, {16}, {16}).shape, (Shape{4, 7}));
  EXPECT_EQ(layerNormStats({4, 7, 16}, 1, {7}, {7}).shape, (Shape{4, 16}));
  EXPECT_EQ(layerNormStats({5}, 0, {5}, {5}).shape, Shape{});
  EXPECT_FALSE(layerNormStats({4, 7}, 2, {7}, {7}).ok());
  EXPECT_FALSE(layerNormStats({4, 7}, -1, {4}, {7}).ok());
  EXPECT_FALSE(layerNormStats({4, 7}, -1, {7}, {1, 7}).ok());
}

TEST(ShapeRules, AttentionKeepsTheQueriesAndTheValuesFeatures) {
  Shape mask{1, 1, 7, 9}, padding{2, 1, 1, 9}, wrong{1, 1, 9, 7};
  EXPECT_EQ(attention({2, 4, 7, 16}, {2, 4, 9, 16}, {2, 4, 9, 8}, nullptr).shape,
            (Shape{2, 4, 7, 8}));
  EXPECT_EQ(attention({2, 4, 7, 16}, {2, 4, 9, 16}, {2, 4, 9, 8}, &mask).shape,
            (Shape{2, 4, 7, 8}));
  EXPECT_TRUE(attention({2, 4, 7, 16}, {2, 4, 9, 16}, {2, 4, 9, 8}, &padding).ok());
  EXPECT_FALSE(attention({2, 4, 7, 16}, {2, 4, 9, 16}, {2, 4, 9, 8}, &wrong).ok());
  EXPECT_FALSE(attention({2, 4, 7, 16}, {2, 4, 9, 15}, {2, 4, 9, 8}, nullptr).ok());
  EXPECT_FALSE(attention({2, 4, 7, 16}, {2, 4, 9, 16}, {2, 4, 8, 8}, nullptr).ok());
  EXPECT_FALSE(attention({2, 4, 7, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}, nullptr).ok());
  EXPECT_FALSE(attention({16}, {16}, {16}, nullptr).ok());
}

TEST(ShapeRules, TakeAndItsGradient) {
  EXPECT_EQ(take({100, 16}, {4, 7}, 0).shape, (Shape{4, 7, 16}));
  EXPECT_EQ(take({3, 5, 2}, {6}, 1).shape, (Shape{3, 6, 2}));
  EXPECT_EQ(take({3, 5, 2}, {}, -1).shape, (Shape{3, 5}));
  EXPECT_FALSE(take({}, {2}, 0).ok());
  EXPECT_FALSE(take({3, 5}, {2}, 2).ok());
  EXPECT_FALSE(take({0, 5}, {2}, 0).ok());
  EXPECT_EQ(takeBackward({4, 7, 16}, {4, 7}, 0, 100).shape, (Shape{100, 16}));
  EXPECT_EQ(takeBackward({3, 6, 2}, {6}, 1, 5).shape, (Shape{3, 5, 2}));
  EXPECT_EQ(takeBackward({3, 6, 2}, {6}, -2, 5).shape, (Shape{3, 5, 2}));
  EXPECT_FALSE(takeBackward({3, 6, 2}, {7}, 1, 5).ok());
  EXPECT_FALSE(takeBackward({3, 6, 2}, {6}, 1, -1).ok());
  EXPECT_FALSE(takeBackward({6}, {2, 3}, 0, 4).ok());
}
