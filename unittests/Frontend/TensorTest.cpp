//===- TensorTest.cpp - creation, views, copies, reading back ----------------===//
#include "dlc/dlc.h"

#include <gtest/gtest.h>

using namespace dlc;

TEST(Tensor, CreationFunctions) {
  Tensor z = np::zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.device(), cpu(0));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(np::ones({2}, DType::i32).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(np::full({3}, 2.5).to_vector<float>(), (std::vector<float>{2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(np::arange(1, 7, 2).to_vector<float>(), (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(np::arange(5, 0, -2, DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{5, 3, 1}));
  Tensor a = np::array(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_FLOAT_EQ(a[1].to_vector<float>()[2], 6.f);
  int64_t big = (int64_t(1) << 53) + 1;
  EXPECT_EQ(np::array(std::vector<int64_t>{big}).item<int64_t>(), big) << "int64 stays exact";
  EXPECT_THROW(np::array(std::vector<float>{1, 2, 3}, Shape{2, 2}), ShapeError);
  EXPECT_THROW(np::zeros({2, -1}), ShapeError);
  EXPECT_THROW(np::arange(0, 1, 0), ValueError);
}

TEST(Tensor, ViewsShareElements) {
  Tensor a = np::arange(0, 12).reshape({3, 4});
  EXPECT_EQ(a.reshape({-1, 6}).shape(), (Shape{2, 6}));
  EXPECT_THROW(a.reshape({5, -1}), ShapeError);
  EXPECT_THROW(a.reshape({-1, -1}), ShapeError);
  Tensor rows = a.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(rows.to_vector<float>()[0], 4.f);
  EXPECT_EQ(a[-1].to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_THROW(a[3], ShapeError);
  EXPECT_THROW(a.slice(2, 5), ShapeError);
  // Writing through copyto into a view changes the base tensor.
  Tensor row = a[0];
  np::full({4}, 7).copyto(row);
  EXPECT_EQ(a.to_vector<float>()[3], 7.f);
  EXPECT_EQ(a.to_vector<float>()[4], 4.f);
}

TEST(Tensor, CopiesBetweenDevices) {
  Tensor x = np::random::uniform(0, 1, {3, 4}, cpu(0));
  Tensor y = x.copyto(cpu(1));
  EXPECT_EQ(y.device(), cpu(1));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  Tensor same = x.to(cpu(0));
  EXPECT_EQ(same.buffer(), x.buffer()) << "to() on the same device is a no-op";
  EXPECT_NE(x.as_in_context(cpu(1)).buffer(), x.buffer());
  Tensor target = np::zeros({3, 4}, cpu(2));
  y.copyto(target);
  EXPECT_EQ(target.to_vector<float>(), x.to_vector<float>());
  Tensor wrong = np::zeros({4, 3}, cpu(2));
  EXPECT_THROW(y.copyto(wrong), ShapeError);
  Tensor pinned = x.copyto(cpu_pinned(0));
  EXPECT_EQ((pinned + pinned).to_vector<float>()[0], 2 * x.to_vector<float>()[0]);
}

TEST(Tensor, ItemAndPrinting) {
  EXPECT_FLOAT_EQ(np::full({}, 3.5).item<float>(), 3.5f);
  EXPECT_THROW(np::zeros({2}).item<float>(), ShapeError);
  std::string text = np::arange(0, 4, 1, DType::i32).reshape({2, 2}).str();
  EXPECT_NE(text.find("[[0, 1],\n [2, 3]]"), std::string::npos) << text;
  EXPECT_NE(text.find("int32 2x2 on cpu(0)"), std::string::npos) << text;
  // Integers print exactly; six significant digits made 1234567 read 1.23457e+06.
  text = np::array(std::vector<int64_t>{1234567, -9007199254740993}).str();
  EXPECT_NE(text.find("[1234567, -9007199254740993]"), std::string::npos) << text;
  text = np::full({2}, 1234567.0, DType::i32).str();
  EXPECT_NE(text.find("[1234567, 1234567]"), std::string::npos) << text;
  EXPECT_THROW(Tensor().shape(), Error);
}

TEST(Tensor, HalfPrecisionRoundTrips) {
  std::vector<float> values{1.5f, -2.25f, 1e-3f, 65504.f, 0.f};
  Tensor x = np::array(values);
  std::vector<float> viaHalf = x.astype(DType::f16).astype(DType::f32).to_vector<float>();
  std::vector<float> viaBf16 = x.astype(DType::bf16).to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(viaHalf[i], values[i], std::abs(values[i]) * 1e-3 + 1e-7) << i;
    EXPECT_NEAR(viaBf16[i], values[i], std::abs(values[i]) * 8e-3 + 1e-7) << i;
  }
  EXPECT_EQ(np::array(std::vector<float>{2.7f, -1.2f}).astype(DType::i32).to_vector<int>(),
            (std::vector<int>{2, -1}))
      << "float to int truncates, as numpy";
}

TEST(Tensor, SizesThatWouldWrapAroundAreRefused) {
  // 2^62 float32 elements are 2^64 bytes: the byte count wrapped to 0 and the first
  // write segfaulted. 2^32 x 2^32 elements wrapped the element count itself to 0.
  EXPECT_THROW(np::zeros({int64_t(1) << 62}), ShapeError);
  EXPECT_THROW(np::zeros({int64_t(1) << 32, int64_t(1) << 32}), ShapeError);
  EXPECT_THROW(np::zeros({int64_t(1) << 32, int64_t(1) << 32}, DType::u8), ShapeError);
  try {
    np::ones({int64_t(1) << 40, int64_t(1) << 30});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("1099511627776x1073741824"), std::string::npos)
        << e.what();
  }
  // A view of an empty tensor whose element count overflows back to zero.
  Tensor empty = np::zeros({0});
  EXPECT_THROW(empty.reshape({int64_t(1) << 32, int64_t(1) << 32}), ShapeError);
  EXPECT_THROW(empty.reshape({int64_t(1) << 32, int64_t(1) << 32, 0}), ShapeError);
  EXPECT_EQ(empty.reshape({0, 7}).shape(), (Shape{0, 7}));
  // Large but representable sizes are a memory question, not a shape error.
  EXPECT_THROW(np::zeros({int64_t(1) << 50}), OutOfMemoryError);
}
