//===- SerializationTest.cpp - save/load parameters, hostile safetensors files ===//
#include "../Frontend/GradientCheck.h"

#include <cstdio>
#include <fstream>

using namespace dlc;
using namespace dlc::gluon;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "dlc_" + name + ".safetensors";
}

std::shared_ptr<HybridSequential> makeNet() {
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Conv2D>(3, 2, "relu"), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Flatten>(), std::make_shared<nn::Dense>(4));
  return net;
}

/// Writes a file made of a header size, a header and data, as a hostile writer would.
void writeRaw(const std::string &path, uint64_t claimedHeaderBytes, const std::string &header,
              const std::string &data) {
  std::ofstream file(path, std::ios::binary);
  for (int i = 0; i < 8; ++i)
    file.put(char((claimedHeaderBytes >> (8 * i)) & 0xff));
  file << header << data;
}

void expectLoadError(const std::string &path, const std::string &fragment) {
  try {
    safetensors::load(path);
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

} // namespace

TEST(Serialization, SaveThenLoadOnAnotherDevice) {
  auto net = makeNet();
  net->initialize(init::Xavier(), {cpu(0)});
  Tensor x = np::random::uniform(-1, 1, {2, 2, 5, 5});
  std::vector<float> expected = (*net)(x).to_vector<float>();
  std::string path = tempPath("roundtrip");
  net->save_parameters(path);

  auto restored = makeNet();
  restored->load_parameters(path, {cpu(1)});
  EXPECT_EQ((*restored)(x.copyto(cpu(1))).to_vector<float>(), expected);
  // The file is standard: it lists each parameter with its dtype and shape.
  std::vector<std::pair<std::string, Tensor>> raw = safetensors::load(path);
  EXPECT_EQ(raw.size(), net->collect_params().size());
  std::remove(path.c_str());
}

TEST(Serialization, MismatchesAreListedUnlessAllowed) {
  auto net = makeNet();
  net->initialize(init::Xavier(), {cpu(0)});
  (*net)(np::zeros({1, 2, 5, 5}));
  std::string path = tempPath("mismatch");
  safetensors::save(path, {{"0.weight", np::zeros({3, 2, 2, 2})},
                           {"0.bias", np::zeros({7})},
                           {"extra", np::zeros({1})},
                           {"3.bias", np::zeros({4}, DType::f16)}});
  try {
    net->load_parameters(path);
    FAIL() << "expected a mismatch error";
  } catch (const Error &e) {
    std::string message = e.what();
    for (const char *fragment :
         {"'0.bias' has shape 7 in the file but 3 in the network",
          "'extra' is in the file but not in the network",
          "'3.bias' is float16 in the file but float32", "'1.gamma' is in the network but not"})
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
  std::vector<float> before = net->collect_params()["0.weight"]->data().to_vector<float>();
  EXPECT_NE(before, std::vector<float>(before.size(), 0.f)) << "a failed load changes nothing";
  safetensors::save(path, {{"0.weight", np::zeros({3, 2, 2, 2})},
                           {"3.bias", np::ones({4}, DType::f16)},
                           {"extra", np::zeros({1})}});
  LoadOptions lenient;
  lenient.allow_missing = lenient.ignore_extra = lenient.cast_dtype = true;
  net->load_parameters(path, {cpu(0)}, lenient);
  EXPECT_EQ(net->collect_params()["0.weight"]->data().to_vector<float>(),
            std::vector<float>(24, 0.f));
  EXPECT_EQ(net->collect_params()["3.bias"]->data().to_vector<float>(),
            std::vector<float>(4, 1.f));
  std::remove(path.c_str());
}

TEST(Serialization, HostileFilesAreRejected) {
  std::string path = tempPath("hostile");
  writeRaw(path, 1ull << 60, "{}", "");
  expectLoadError(path, "the header claims");
  writeRaw(path, 1, "{", "");
  expectLoadError(path, "not valid JSON");
  std::string header = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 64]}})";
  writeRaw(path, header.size(), header, std::string(16, '\0'));
  expectLoadError(path, "data_offsets outside");
  header = R"({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})";
  writeRaw(path, header.size(), header, std::string(16, '\0'));
  expectLoadError(path, "unsupported dtype 'F64'");
  header = R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})";
  writeRaw(path, header.size(), header, std::string(16, '\0'));
  expectLoadError(path, "holds 16 bytes but its shape 3");
  header = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
           R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
  writeRaw(path, header.size(), header, std::string(16, '\0'));
  expectLoadError(path, "overlap");
  header = R"({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})";
  writeRaw(path, header.size(), header, std::string(16, '\0'));
  expectLoadError(path, "invalid dimension");
  std::ofstream(path, std::ios::binary) << "abc";
  expectLoadError(path, "truncated");
  expectLoadError(tempPath("does-not-exist"), "cannot open");
  std::remove(path.c_str());
}

TEST(Serialization, FailedSaveLeavesTheOldFile) {
  std::string path = tempPath("atomic");
  safetensors::save(path, {{"w", np::ones({2})}});
  // A directory that does not exist: the save fails before touching anything.
  EXPECT_THROW(safetensors::save(::testing::TempDir() + "no/such/dir/x.safetensors",
                                 {{"w", np::zeros({2})}}),
               Error);
  EXPECT_THROW(safetensors::save(path, {{"w", np::zeros({2})}, {"w", np::zeros({2})}}), Error);
  EXPECT_EQ(safetensors::load(path)[0].second.to_vector<float>(), std::vector<float>(2, 1.f));
  std::remove(path.c_str());
}
