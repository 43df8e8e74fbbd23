//===- SerializationTest.cpp - save/load parameters, hostile safetensors files ===//
#include "../Frontend/GradientCheck.h"

#include <cstdio>
#include <fstream>
#include <map>

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

TEST(Serialization, DeeplyNestedHeadersAreRefusedBeforeParsing) {
  // 40,000 nested lists (an 80 KB file) overflowed the stack of the recursive JSON
  // parser: the process died with SIGSEGV.
  std::string path = tempPath("nested");
  std::string header = "{\"a\": " + std::string(40000, '[') + std::string(40000, ']') + "}";
  writeRaw(path, header.size(), header, "");
  expectLoadError(path, "nests arrays and objects more than");
  auto net = makeNet();
  net->initialize(init::Xavier(), {cpu(0)});
  EXPECT_THROW(net->load_parameters(path), Error);
  // Brackets inside strings are not nesting: a name may hold them.
  header = "{\"" + std::string(100, '[') +
           "\": {\"dtype\": \"F32\", \"shape\": [1], "
           "\"data_offsets\": [0, 4]}}";
  writeRaw(path, header.size(), header, std::string(4, '\0'));
  EXPECT_EQ(safetensors::load(path).at(0).first, std::string(100, '['));
  std::remove(path.c_str());
}

TEST(Serialization, EmptyTensorsOverlapNothing) {
  // An empty tensor's offsets [b, b] equal the next entry's start; it was reported as
  // overlapping it when the sort put that entry first, so dlc could not read back some
  // files it wrote.
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 20; ++i) {
    tensors.emplace_back("full" + std::to_string(i), np::full({3}, double(i)));
    tensors.emplace_back("empty" + std::to_string(i), np::zeros({0, 4}));
  }
  std::string path = tempPath("empty");
  safetensors::save(path, tensors);
  std::vector<std::pair<std::string, Tensor>> loaded = safetensors::load(path);
  ASSERT_EQ(loaded.size(), tensors.size());
  std::map<std::string, Tensor> byName(loaded.begin(), loaded.end());
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(byName.at("full" + std::to_string(i)).to_vector<float>(),
              std::vector<float>(3, float(i)));
    EXPECT_EQ(byName.at("empty" + std::to_string(i)).shape(), (Shape{0, 4}));
  }
  std::remove(path.c_str());
}

TEST(Serialization, AFileThatDoesNotMatchCostsNoTensors) {
  // 100,000 entries that name nothing in the network: the header is checked against
  // the network first, so no tensor is made (a million such entries took gigabytes and
  // ended in a bare std::bad_alloc), and the message lists a bounded number of them.
  std::string header = "{";
  for (int i = 0; i < 100000; ++i)
    header += std::string(i ? "," : "") + "\"junk" + std::to_string(i) +
              "\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [0, 0]}";
  header += "}";
  std::string path = tempPath("many");
  writeRaw(path, header.size(), header, "");
  auto net = makeNet();
  net->initialize(init::Xavier(), {cpu(0)});
  (*net)(np::ones({1, 2, 5, 5})).wait_to_read();
  int64_t allocations = memory_stats(cpu(0)).allocations;
  try {
    net->load_parameters(path);
    FAIL() << "expected a mismatch";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'junk0' is in the file but not in the network"), std::string::npos)
        << message.substr(0, 400);
    EXPECT_NE(message.find("more"), std::string::npos) << message.substr(0, 400);
    EXPECT_LT(message.size(), 4000u);
  }
  EXPECT_EQ(memory_stats(cpu(0)).allocations, allocations) << "tensors were made";
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
