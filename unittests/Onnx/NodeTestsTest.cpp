//===- NodeTestsTest.cpp - ONNX's backend node tests through dlc's importer ----===//
//
// Each folder of ONNX's node tests (Debian's libonnx-testdata) holds a one-node model
// and inputs/outputs computed by ONNX's reference implementation. Every test dlc can
// import and run must give those outputs; the others are counted with the reason dlc
// gives (docs/onnx-node-tests.md lists them). DLC_ONNX_NODE_TESTS names another folder;
// DLC_ONNX_NODE_REPORT=path writes that list, DLC_ONNX_NODE_DOC=path compares it with one.
//
//===----------------------------------------------------------------------===//
#include "dlc/Frontend/NumPy.h"
#include "dlc/Onnx/Import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dlc;
namespace fs = std::filesystem;

namespace {

std::string nodeTestFolder() {
  const char *env = std::getenv("DLC_ONNX_NODE_TESTS");
  return env ? env : "/usr/share/libonnx-testdata/data/node";
}

std::vector<std::string> nodeTests() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto &entry : fs::directory_iterator(nodeTestFolder(), error))
    if (fs::exists(entry.path() / "model.onnx"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty())
    names.push_back("none_found"); // the one test then skips, saying why
  return names;
}

std::vector<Tensor> readNumbered(const fs::path &folder, const char *prefix) {
  std::vector<Tensor> tensors;
  for (int i = 0;; ++i) {
    fs::path file = folder / (std::string(prefix) + std::to_string(i) + ".pb");
    if (!fs::exists(file))
      return tensors;
    tensors.push_back(onnx::read_tensor_file(file.string()));
  }
}

/// Why a node test is not run (dlc does not import or run its model), by test name.
std::map<std::string, std::string> &notRun() {
  static std::map<std::string, std::string> reasons;
  return reasons;
}

/// The failure of comparing `got` with ONNX's `expected`, or "".
std::string compare(const Tensor &got, const Tensor &expected) {
  if (got.shape() != expected.shape() || got.dtype() != expected.dtype())
    return std::string("got ") + dtype_name(got.dtype()) + " " + shape_rules::str(got.shape()) +
           ", expected " + dtype_name(expected.dtype()) + " " +
           shape_rules::str(expected.shape());
  std::vector<double> a = got.to_vector<double>(), b = expected.to_vector<double>();
  bool exact = !is_floating(expected.dtype());
  double tolerance = expected.dtype() == DType::f32 ? 1e-4 : 1e-2;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i]) && std::isnan(a[i]))
      continue;
    double allowed = exact ? 0.0 : tolerance * (1.0 + std::abs(b[i]));
    if (!(std::abs(a[i] - b[i]) <= allowed) && !(std::isinf(a[i]) && a[i] == b[i]))
      return "element " + std::to_string(i) + " is " + std::to_string(a[i]) + ", expected " +
             std::to_string(b[i]);
  }
  return "";
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, GivesTheReferenceOutputs) {
  if (GetParam() == "none_found")
    GTEST_SKIP() << "no ONNX node tests in " << nodeTestFolder()
                 << " (Debian's libonnx-testdata; dlc.sh installs it)";
  fs::path folder = fs::path(nodeTestFolder()) / GetParam();
  fs::path data = folder / "test_data_set_0";
  std::shared_ptr<onnx::OnnxBlock> block;
  std::vector<Tensor> inputs, expected, given;
  try {
    onnx::Model model = onnx::read_model((folder / "model.onnx").string());
    inputs = readNumbered(data, "input_");
    expected = readNumbered(data, "output_");
    given = inputs;
    try {
      block = onnx::import(model, GetParam());
    } catch (const UnsupportedError &e) {
      // Node tests give a Reshape's shape, a Slice's bounds, ... as inputs, which
      // exporters write as constants: the test is run with them given at import.
      if (std::string(e.what()).find("known when the model is imported") == std::string::npos)
        throw;
      onnx::ImportOptions options;
      for (size_t i = 1; i < inputs.size(); ++i)
        options.input_values[model.graph.inputs[i].name] = inputs[i];
      block = onnx::import(model, GetParam(), options);
      inputs.resize(1);
    }
  } catch (const UnsupportedError &e) {
    notRun()[GetParam()] = e.what();
    GTEST_SKIP() << "not imported: " << e.what();
  } catch (const onnx::FileError &e) {
    notRun()[GetParam()] = e.what();
    GTEST_SKIP() << "not read: " << e.what();
  }
  std::vector<Tensor> outputs;
  try {
    outputs = (*block)(inputs);
  } catch (const UnsupportedError &e) {
    notRun()[GetParam()] = e.what();
    GTEST_SKIP() << "not run: " << e.what();
  }
  ASSERT_EQ(outputs.size(), expected.size());
  if (GetParam().rfind("test_training_dropout", 0) == 0 && given.at(1).item<double>() > 0) {
    // Training dropout draws dlc's random numbers, not numpy's: each output element is
    // dropped (0, mask false) or the input scaled by 1 / (1 - ratio) (mask true).
    double ratio = given.at(1).item<double>();
    std::vector<float> x = inputs[0].to_vector<float>(), y = outputs[0].to_vector<float>();
    std::vector<float> mask = outputs.size() > 1 ? outputs[1].to_vector<float>()
                                                 : std::vector<float>(y.size(), -1);
    size_t kept = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      bool keep = y[i] != 0;
      kept += keep;
      EXPECT_NEAR(y[i], keep ? x[i] / (1 - ratio) : 0.0f, 1e-5) << "element " << i;
      if (mask[i] >= 0)
        EXPECT_EQ(mask[i] != 0, keep) << "mask element " << i;
    }
    EXPECT_GT(kept, 0u);
    EXPECT_LT(kept, x.size());
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(compare(outputs[i], expected[i]), "") << "output " << i;
  if (inputs.empty() || ::testing::Test::HasFailure())
    return;
  // The same node traced into the dlc dialect and compiled, as dlc-compile runs models.
  block->hybridize();
  std::vector<Tensor> compiled = (*block)(inputs);
  ASSERT_EQ(block->compile_stats().compiles, 1);
  ASSERT_EQ(compiled.size(), expected.size());
  for (size_t i = 0; i < compiled.size(); ++i)
    EXPECT_EQ(compare(compiled[i], expected[i]), "") << "hybridized, output " << i;
}

std::string testName(const ::testing::TestParamInfo<std::string> &info) {
  std::string name = info.param;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Backend, OnnxNodeTest, ::testing::ValuesIn(nodeTests()), testName);

/// Writes the tests that did not run, with the reason, as the markdown table of
/// docs/onnx-node-tests.md, when DLC_ONNX_NODE_REPORT names a file.
class Report : public ::testing::Environment {
public:
  void TearDown() override {
    const char *path = std::getenv("DLC_ONNX_NODE_REPORT");
    if (!path)
      return;
    const ::testing::UnitTest &unit = *::testing::UnitTest::GetInstance();
    std::ofstream out(path);
    out << "# ONNX backend node tests that dlc does not run\n\n"
        << "Generated by `ninja -C build dlc-update-docs` (the node tests of Debian's "
           "libonnx-testdata through `dlc-onnx-node-tests`; docs/onnx.md explains). "
        << unit.successful_test_count() << " tests pass, eager and hybridized; these "
        << notRun().size() << " do not run, for the reason dlc gives.\n\n"
        << "| test | reason |\n|---|---|\n";
    std::string folder = nodeTestFolder() + "/";
    for (const auto &[test, reason] : notRun()) {
      std::string line = reason;
      std::replace(line.begin(), line.end(), '\n', ' ');
      // Name files relative to the test's folder, and keep one space between words.
      for (size_t at; (at = line.find(folder)) != std::string::npos;)
        line.erase(at, folder.size());
      for (size_t at; (at = line.find("  ")) != std::string::npos;)
        line.erase(at, 1);
      for (size_t at = 0; (at = line.find('|', at)) != std::string::npos; at += 2)
        line.insert(at, "\\");
      out << "| " << test << " | " << line << " |\n";
    }
    out.close();
    // DLC_ONNX_NODE_DOC: the committed list, which must equal the one just written.
    if (const char *doc = std::getenv("DLC_ONNX_NODE_DOC")) {
      auto read = [](const char *file) {
        std::ifstream in(file, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
      };
      if (read(doc) != read(path))
        ADD_FAILURE() << doc << " differs from " << path
                      << ", the list this run made: run `ninja -C build dlc-update-docs`";
    }
  }
};
const auto *report = ::testing::AddGlobalTestEnvironment(new Report);

} // namespace
