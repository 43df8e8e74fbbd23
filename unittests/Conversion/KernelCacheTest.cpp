//===- KernelCacheTest.cpp - generated kernels kept on disk --------------------===//
//
// Each test compiles the same small element-wise function through the whole pipeline
// into a cache directory of its own, and checks both what the loader did (compiled,
// loaded, reused, rejected) and that the program computes tanh(x * s) + x.
//
//===----------------------------------------------------------------------===//
#include "dlc/Conversion/DLCToRuntime/DLCToRuntime.h"
#include "dlc/Conversion/KernelCache/KernelCache.h"
#include "dlc/Conversion/Pipelines.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Frontend/NumPy.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

using namespace dlc;
using conversion::KernelCacheStats;
using conversion::kernelCacheStats;

namespace {

const char *kChain = R"mlir(
func.func @chain(%x: tensor<5000xf32>, %s: tensor<f32>) -> tensor<5000xf32> {
  %m = dlc.mul %x, %s : (tensor<5000xf32>, tensor<f32>) -> tensor<5000xf32>
  %t = dlc.tanh %m : tensor<5000xf32>
  %y = dlc.add %t, %x : (tensor<5000xf32>, tensor<5000xf32>) -> tensor<5000xf32>
  return %y : tensor<5000xf32>
}
)mlir";

/// A cache directory of the test's own, named by the compile options.
class KernelCache : public ::testing::Test {
protected:
  void SetUp() override {
    directory_ = std::filesystem::path(::testing::TempDir()) /
                 ("dlc-kernel-cache-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    options_.cache_dir = directory_.string();
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  /// The chain, through the pipeline and lowered; checks that it has a generated step.
  std::shared_ptr<Program> compile() {
    mlir::MLIRContext context;
    context.loadDialect<mlir::dlc::DLCDialect, mlir::func::FuncDialect>();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceString<mlir::ModuleOp>(kChain, &context);
    EXPECT_TRUE(module);
    if (!module)
      return nullptr;
    mlir::PassManager pm(&context);
    mlir::dlc::buildDLCCompilerPipeline(pm, mlir::dlc::PipelineTarget::cpu);
    EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
    std::string error;
    std::shared_ptr<Program> program = conversion::lowerToProgram(
        module->lookupSymbol<mlir::func::FuncOp>("chain"), options_, error);
    EXPECT_TRUE(program) << error;
    if (program)
      EXPECT_NE(program->str().find("[generated]"), std::string::npos) << program->str();
    return program;
  }

  /// Runs `program` on random inputs against tanh(x * s) + x.
  void expectComputesTheChain(Program &program) {
    std::mt19937 generator(5);
    std::uniform_real_distribution<float> value(-2.f, 2.f);
    std::vector<float> x(5000);
    for (float &v : x)
      v = value(generator);
    Tensor input = np::array(x, Shape{5000}), scale = np::array(std::vector<float>{0.75f}, Shape{});
    Tensor output = Tensor::empty({5000}, DType::f32, cpu(0));
    program.run({{input.buffer(), input.impl()->offset}, {scale.buffer(), scale.impl()->offset}},
                {{output.buffer(), output.impl()->offset}}, {});
    std::vector<float> y = output.to_vector<float>();
    for (size_t i = 0; i < x.size(); i += 97)
      EXPECT_NEAR(y[i], std::tanh(x[i] * 0.75f) + x[i], 1e-6) << "element " << i;
  }

  /// The single entry file in the cache.
  std::filesystem::path entry() {
    std::vector<std::filesystem::path> files;
    for (const auto &file : std::filesystem::directory_iterator(directory_ / "kernels"))
      files.push_back(file.path());
    EXPECT_EQ(files.size(), 1u) << "one program, one entry, no temporary left behind";
    return files.empty() ? std::filesystem::path() : files.front();
  }

  std::filesystem::path directory_;
  CompileOptions options_;
};

std::vector<char> readBytes(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::filesystem::path &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

} // namespace

TEST_F(KernelCache, ASecondCompilationLoadsTheEntryInsteadOfCompiling) {
  KernelCacheStats before = kernelCacheStats();
  std::shared_ptr<Program> first = compile();
  ASSERT_TRUE(first);
  expectComputesTheChain(*first);
  KernelCacheStats cold = kernelCacheStats();
  EXPECT_EQ(cold.compiled, before.compiled + 1);
  EXPECT_EQ(cold.loaded, before.loaded);
  std::filesystem::path file = entry();
  EXPECT_EQ(file.extension(), ".o");
  first.reset(); // the loaded code goes with its last program

  std::shared_ptr<Program> second = compile();
  ASSERT_TRUE(second);
  expectComputesTheChain(*second);
  KernelCacheStats warm = kernelCacheStats();
  EXPECT_EQ(warm.compiled, cold.compiled) << "nothing compiled on a hit";
  EXPECT_EQ(warm.loaded, cold.loaded + 1);
  EXPECT_EQ(warm.rejected, cold.rejected);
}

TEST_F(KernelCache, CodeLoadedInThisProcessIsShared) {
  std::shared_ptr<Program> first = compile();
  ASSERT_TRUE(first);
  KernelCacheStats before = kernelCacheStats();
  std::shared_ptr<Program> second = compile();
  ASSERT_TRUE(second);
  KernelCacheStats after = kernelCacheStats();
  EXPECT_EQ(after.reused, before.reused + 1);
  EXPECT_EQ(after.compiled, before.compiled);
  EXPECT_EQ(after.loaded, before.loaded);
  expectComputesTheChain(*second);
}

TEST_F(KernelCache, DamagedEntriesAreRebuiltNeverTrusted) {
  std::shared_ptr<Program> program = compile();
  ASSERT_TRUE(program);
  program.reset();
  std::filesystem::path file = entry();
  const std::vector<char> whole = readBytes(file);
  ASSERT_GT(whole.size(), 200u);

  struct Damage {
    const char *what;
    std::vector<char> bytes;
  };
  std::vector<Damage> damages;
  std::vector<char> bytes = whole;
  bytes[bytes.size() - 10] ^= 0x5a;
  damages.push_back({"a flipped byte in the object code", bytes});
  bytes = whole;
  bytes[3] = 'X';
  damages.push_back({"another magic", bytes});
  bytes = whole;
  bytes[8] = bytes[8] == 'a' ? 'b' : 'a';
  damages.push_back({"another key", bytes});
  bytes = whole;
  bytes[72] ^= 0x01;
  damages.push_back({"a wrong size", bytes});
  damages.push_back({"truncated", std::vector<char>(whole.begin(), whole.begin() + whole.size() / 2)});
  damages.push_back({"truncated inside the header", std::vector<char>(whole.begin(), whole.begin() + 20)});
  damages.push_back({"empty", {}});
  std::mt19937 generator(9);
  bytes.assign(whole.size(), 0);
  for (char &b : bytes)
    b = char(generator());
  damages.push_back({"noise of the same length", bytes});

  for (const Damage &damage : damages) {
    SCOPED_TRACE(damage.what);
    writeBytes(file, damage.bytes);
    KernelCacheStats before = kernelCacheStats();
    std::shared_ptr<Program> rebuilt = compile();
    ASSERT_TRUE(rebuilt);
    expectComputesTheChain(*rebuilt);
    KernelCacheStats after = kernelCacheStats();
    EXPECT_EQ(after.rejected, before.rejected + 1);
    EXPECT_EQ(after.compiled, before.compiled + 1);
    EXPECT_EQ(after.loaded, before.loaded);
    EXPECT_EQ(readBytes(entry()), whole) << "the entry is written again, whole";
  }
}

TEST_F(KernelCache, OffMeansNoEntries) {
  options_.cache_dir = "";
  KernelCacheStats before = kernelCacheStats();
  for (int k = 0; k < 2; ++k) {
    std::shared_ptr<Program> program = compile();
    ASSERT_TRUE(program);
    expectComputesTheChain(*program);
  }
  EXPECT_EQ(kernelCacheStats().compiled, before.compiled + 2);
  EXPECT_FALSE(std::filesystem::exists(directory_));
}

TEST_F(KernelCache, AnUnwritableDirectoryIsNotAnError) {
  std::filesystem::create_directories(directory_);
  writeBytes(directory_ / "kernels", {'x'}); // a file where the entries' directory goes
  std::shared_ptr<Program> program = compile();
  ASSERT_TRUE(program);
  expectComputesTheChain(*program);
}

// Processes writing the same entry at once (different object code, different lengths)
// while this one reads it: every read sees no entry or one whole version.
TEST_F(KernelCache, ConcurrentWritersNeverLeaveAPartialEntry) {
  const std::string key(64, 'c');
  auto version = [](int writer) { return std::vector<char>(size_t(1000 + 7919 * writer), char('a' + writer)); };
  std::vector<pid_t> writers;
  for (int writer = 0; writer < 4; ++writer) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int round = 0; round < 200; ++round)
        if (!conversion::detail::writeCachedObject(directory_.string(), key, version(writer)).empty())
          ::_exit(1);
      ::_exit(0);
    }
    writers.push_back(pid);
  }
  // Reads go on while any writer runs (on a loaded machine the writers may start only
  // after a fixed number of reads), and at least 2000 times.
  int whole = 0;
  std::vector<int> statuses(writers.size(), -1);
  auto writing = [&] {
    bool any = false;
    for (size_t w = 0; w < writers.size(); ++w) {
      int status = 0;
      pid_t done = statuses[w] == -1 ? ::waitpid(writers[w], &status, WNOHANG) : 0;
      if (done == writers[w])
        statuses[w] = status;
      else if (done < 0)
        statuses[w] = 0xff00; // lost: counts as a writer that failed
      any = any || statuses[w] == -1;
    }
    return any;
  };
  for (int read = 0; read < 2000 || (read % 64 != 0 || writing()); ++read) {
    std::optional<std::vector<char>> object =
        conversion::detail::readCachedObject(directory_.string(), key);
    if (!object)
      continue;
    ++whole;
    int writer = int((*object)[0] - 'a');
    ASSERT_TRUE(writer >= 0 && writer < 4);
    ASSERT_EQ(*object, version(writer)) << "read " << read;
  }
  for (size_t w = 0; w < writers.size(); ++w) {
    ASSERT_NE(statuses[w], -1) << "writer " << w << " still runs";
    EXPECT_TRUE(WIFEXITED(statuses[w]) && WEXITSTATUS(statuses[w]) == 0);
  }
  std::optional<std::vector<char>> last =
      conversion::detail::readCachedObject(directory_.string(), key);
  ASSERT_TRUE(last);
  std::filesystem::path dir = directory_ / "kernels";
  size_t files = size_t(std::distance(std::filesystem::directory_iterator(dir),
                                      std::filesystem::directory_iterator()));
  EXPECT_EQ(files, 1u) << "no temporary file is left";
  EXPECT_GT(whole, 0) << "some reads happened while the entry existed";
}
