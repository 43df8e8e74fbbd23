//===- MXNetParamsTest.cpp - parameter files written by MXNet 1.9.1 -------------===//
//
// The fixtures in Inputs/mxnet were written by real MXNet 1.9.1
// (bench/peers/make_mxnet_params.py says how): Gluon's save_parameters of a small
// trained network with an input batch and MXNet's output for it, nd.save of several
// dtypes and of an unnamed list, and npx.save with numpy shapes (MXNet 2's array
// version). Damaged and hostile variants are made here from them.
//
//===----------------------------------------------------------------------===//
#include "../Frontend/GradientCheck.h"

#include "dlc/Frontend/MXNetParams.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <unistd.h>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::expectClose;

namespace {

std::string fixture(const std::string &name) { return std::string(DLC_MXNET_FIXTURES) + "/" + name; }

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Writes `bytes` to a file of this process's own (ctest runs tests in parallel).
std::string writeVariant(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + "dlc_mxnet_" + std::to_string(getpid()) + "_" +
                     name + ".params";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// The network make_mxnet_params.py saves, built with dlc's layers.
std::shared_ptr<HybridSequential> tinyNet() {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(4, 3, "relu"), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Dense>(3));
  net->initialize(init::Xavier(), {cpu()});
  return net;
}

std::map<std::string, Tensor> readAll(const std::string &path) {
  mxnet_params::Reader reader(path);
  std::map<std::string, Tensor> tensors;
  for (const safetensors::TensorInfo &entry : reader.tensors())
    tensors[entry.name] = reader.read(entry);
  return tensors;
}

TEST(MXNetParams, ANetworkMXNetTrainedPredictsAsMXNetDid) {
  ASSERT_TRUE(mxnet_params::is_params_file(fixture("tiny_net.params")));
  auto net = tinyNet();
  net->load_parameters(fixture("tiny_net.params"));
  std::map<std::string, Tensor> io = readAll(fixture("tiny_net_io.params"));
  ASSERT_EQ(io.size(), 2u);
  std::vector<float> want = io["output"].to_vector<float>();
  expectClose(want, (*net)(io["input"]).to_vector<float>(), 1e-5, "eager");
  net->hybridize();
  expectClose(want, (*net)(io["input"]).to_vector<float>(), 1e-5, "hybridized");
  // The running statistics are MXNet's after its step, not the initial 0 and 1.
  ParameterDict params = net->collect_params();
  EXPECT_NE(params["1.running_mean"]->data().to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST(MXNetParams, DtypesAndValuesAreMXNets) {
  std::map<std::string, Tensor> t = readAll(fixture("dtypes.params"));
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t["half"].dtype(), DType::f16);
  EXPECT_EQ(t["half"].astype(DType::f32).to_vector<float>(),
            (std::vector<float>{1.5f, -2.25f, 65504.0f}));
  EXPECT_EQ(t["int32"].dtype(), DType::i32);
  EXPECT_EQ(t["int32"].shape(), (Shape{2, 2}));
  EXPECT_EQ(t["int32"].to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 2147483647}));
  EXPECT_EQ(t["int64"].dtype(), DType::i64);
  EXPECT_EQ(t["int64"].to_vector<int64_t>(), (std::vector<int64_t>{-(int64_t(1) << 40), 7}));
  EXPECT_EQ(t["uint8"].dtype(), DType::u8);
  EXPECT_EQ(t["uint8"].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255, 17}));
}

TEST(MXNetParams, AnUnnamedListTakesPositionsAsNames) {
  std::map<std::string, Tensor> t = readAll(fixture("list.params"));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t["0"].to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(t["1"].shape(), (Shape{1, 1}));
}

TEST(MXNetParams, NumpyShapeFilesOfMXNet2Load) {
  std::map<std::string, Tensor> t = readAll(fixture("np_shapes.params"));
  ASSERT_EQ(t.count("scalar"), 1u);
  EXPECT_EQ(t["scalar"].shape(), Shape{});
  EXPECT_EQ(t["scalar"].to_vector<float>(), std::vector<float>{4.5f});
  auto net = tinyNet();
  try {
    net->load_parameters(fixture("np_shapes.params"));
    ADD_FAILURE() << "an extra entry was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("'scalar' is in the file but not in the network"),
              std::string::npos)
        << e.what();
  }
  LoadOptions extra;
  extra.ignore_extra = true;
  net->load_parameters(fixture("np_shapes.params"), {cpu()}, extra);
  auto reference = tinyNet();
  reference->load_parameters(fixture("tiny_net.params"));
  ParameterDict got = net->collect_params(), want = reference->collect_params();
  for (const std::string &name : want.keys())
    EXPECT_EQ(got[name]->data().to_vector<float>(), want[name]->data().to_vector<float>())
        << name;
}

void expectRefused(const std::string &bytes, const std::string &fragment, const std::string &what) {
  std::string path = writeVariant("variant", bytes);
  try {
    mxnet_params::Reader reader(path);
    for (const safetensors::TensorInfo &entry : reader.tensors())
      reader.read(entry);
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << what << ": " << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << what << ": " << message;
  }
  std::remove(path.c_str());
}

TEST(MXNetParams, TruncatedFilesAreRefusedAtEveryLength) {
  const std::string whole = readBytes(fixture("tiny_net.params"));
  ASSERT_GT(whole.size(), 100u);
  for (size_t length = 0; length < whole.size(); ++length)
    expectRefused(whole.substr(0, length), "'", "truncated to " + std::to_string(length));
}

TEST(MXNetParams, HostileContentIsRefusedByName) {
  const std::string whole = readBytes(fixture("tiny_net.params"));
  auto patched = [&](size_t at, const void *bytes, size_t n) {
    std::string copy = whole;
    std::memcpy(copy.data() + at, bytes, n);
    return copy;
  };
  const uint64_t huge = ~uint64_t(0) >> 1, large = uint64_t(1) << 40;
  const uint32_t notMagic = 0x12345678, sparse = 1, rank = 33, float64 = 1;
  const int64_t negative = -5;
  // Array 0 begins at 24: magic, storage type, rank, then its four extents at 36.
  expectRefused(patched(16, &huge, 8), "arrays, more than", "a huge array count");
  expectRefused(patched(24, &notMagic, 4), "no array magic", "a damaged array magic");
  expectRefused(patched(28, &sparse, 4), "sparse", "a sparse array");
  expectRefused(patched(32, &rank, 4), "rank 33", "too many dimensions");
  expectRefused(patched(36, &negative, 8), "extent -5", "a negative extent");
  expectRefused(patched(36, &large, 8), "truncated or damaged", "an extent past the file");
  // The dtype of array 0 follows its four extents and the two device fields.
  expectRefused(patched(36 + 32 + 8, &float64, 4), "float64", "a dtype dlc lacks");
  expectRefused(whole + "x", "bytes follow the names", "a byte too many");
  expectRefused(patched(0, &notMagic, 4), "not an MXNet NDArray list", "no list magic");
}

TEST(MXNetParams, AMismatchedNetworkGetsEveryDifference) {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(5, 3, "relu"), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Dense>(3));
  net->initialize(init::Xavier(), {cpu()});
  (*net)(np::zeros({1, 1, 6, 6}));
  try {
    net->load_parameters(fixture("tiny_net.params"));
    ADD_FAILURE() << "loaded parameters of another shape";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'0.weight' has shape 4x1x3x3 in the file but 5x1x3x3"),
              std::string::npos)
        << message;
  }
}

} // namespace
