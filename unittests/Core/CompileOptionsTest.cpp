//===- CompileOptionsTest.cpp - the options the environment asks for ----------===//
#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/Error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

using namespace dlc;

namespace {

/// Sets the compile variables for one test and unsets them after it.
class CompileVariables : public ::testing::Test {
protected:
  void TearDown() override {
    for (const char *name : {"DLC_DISABLE_FUSION", "DLC_GENERATED_KERNELS", "DLC_CUDA_GRAPHS",
                             "DLC_COMPILE_TIMING", "DLC_GPU_CHIP", "DLC_CACHE_DIR",
                             "DLC_CUDA_TOOLKIT"})
      ::unsetenv(name);
    if (savedXdg)
      ::setenv("XDG_CACHE_HOME", savedXdg->c_str(), 1);
    else
      ::unsetenv("XDG_CACHE_HOME");
  }
  void SetUp() override {
    if (const char *xdg = std::getenv("XDG_CACHE_HOME"))
      savedXdg = xdg;
  }
  std::optional<std::string> savedXdg;
};

} // namespace

TEST_F(CompileVariables, EachVariableSetsItsOption) {
  CompileOptions defaults = compile_options_from_environment();
  EXPECT_TRUE(defaults.fuse);
  EXPECT_TRUE(defaults.generated_kernels);
  EXPECT_TRUE(defaults.cuda_graphs);
  EXPECT_FALSE(defaults.timing);
  EXPECT_FALSE(defaults.blocked_layout) << "the process's layout unless asked";
  EXPECT_EQ(defaults.gpu_chip, "sm_90");

  ::setenv("DLC_DISABLE_FUSION", "1", 1);
  ::setenv("DLC_GENERATED_KERNELS", "0", 1);
  ::setenv("DLC_CUDA_GRAPHS", "off", 1);
  ::setenv("DLC_COMPILE_TIMING", "true", 1);
  ::setenv("DLC_GPU_CHIP", "sm_80", 1);
  ::setenv("DLC_CACHE_DIR", "/somewhere/cache", 1);
  CompileOptions asked = compile_options_from_environment();
  EXPECT_FALSE(asked.fuse);
  EXPECT_FALSE(asked.generated_kernels);
  EXPECT_FALSE(asked.cuda_graphs);
  EXPECT_TRUE(asked.timing);
  EXPECT_EQ(asked.gpu_chip, "sm_80");
  EXPECT_EQ(asked.cache_dir, "/somewhere/cache");
  EXPECT_NE(asked.key(), defaults.key());
}

TEST_F(CompileVariables, TheCacheDirectoryFollowsXdgAndOffTurnsItOff) {
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(compile_options_from_environment().cache_dir, "/xdg/dlc");
  ::setenv("DLC_CACHE_DIR", "off", 1);
  EXPECT_EQ(compile_options_from_environment().cache_dir, "");
}

TEST_F(CompileVariables, AToolkitWithoutLibdeviceIsNotChosen) {
  ::setenv("DLC_CUDA_TOOLKIT", "/nonexistent/toolkit", 1);
  EXPECT_NE(compile_options_from_environment().cuda_toolkit, "/nonexistent/toolkit");
}

TEST_F(CompileVariables, AMalformedValueNamesItsVariable) {
  ::setenv("DLC_DISABLE_FUSION", "maybe", 1);
  try {
    compile_options_from_environment();
    FAIL() << "expected an error";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("DLC_DISABLE_FUSION='maybe'"), std::string::npos) << message;
    EXPECT_NE(message.find("expected 1 or 0"), std::string::npos) << message;
  }
  ::unsetenv("DLC_DISABLE_FUSION");
  ::setenv("DLC_GPU_CHIP", "volta", 1);
  EXPECT_THROW(compile_options_from_environment(), Error);
}

TEST(CompileOptions, MemoryBudgetsAreBytesWithBinarySuffixes) {
  EXPECT_EQ(parse_memory_budget("0", "x"), 0);
  EXPECT_EQ(parse_memory_budget("4096", "x"), 4096);
  EXPECT_EQ(parse_memory_budget("1.5k", "x"), 1536);
  EXPECT_EQ(parse_memory_budget("512M", "x"), int64_t(512) << 20);
  EXPECT_EQ(parse_memory_budget("2G", "x"), int64_t(2) << 30);
  for (const char *bad : {"", "lots", "2T", "-5", "1e30", "G", "5 M"}) {
    try {
      parse_memory_budget(bad, "--memory-budget");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ValueError &e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--memory-budget='") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ::setenv("DLC_MEMORY_BUDGET", "3M", 1);
  EXPECT_EQ(compile_options_from_environment().memory_budget, int64_t(3) << 20);
  ::unsetenv("DLC_MEMORY_BUDGET");
  EXPECT_EQ(compile_options_from_environment().memory_budget, 0) << "no budget by default";
}

TEST(CompileOptions, TheKeyHoldsWhatChangesTheProgramAndNotTiming) {
  CompileOptions a;
  CompileOptions b = a;
  b.timing = true;
  EXPECT_EQ(a.key(), b.key()) << "timing changes the report, not the program";
  EXPECT_NE(a.str(), b.str());
  for (auto change : std::initializer_list<void (*)(CompileOptions &)>{
           [](CompileOptions &o) { o.fuse = false; },
           [](CompileOptions &o) { o.prepare_parameters = false; },
           [](CompileOptions &o) { o.pool_indices = false; },
           [](CompileOptions &o) { o.norm_activation = false; },
           [](CompileOptions &o) { o.memory_budget = 1 << 30; },
           [](CompileOptions &o) { o.conv_algorithms = "direct"; },
           [](CompileOptions &o) { o.generated_kernels = false; },
           [](CompileOptions &o) { o.cuda_graphs = false; },
           [](CompileOptions &o) { o.blocked_layout = Layout::plain; },
           [](CompileOptions &o) { o.blocked_layout = Layout::nChw8c; },
           [](CompileOptions &o) { o.cuda_toolkit = "/opt/cuda"; },
           [](CompileOptions &o) { o.gpu_chip = "sm_80"; },
           [](CompileOptions &o) { o.cache_dir = "/tmp/c"; }}) {
    CompileOptions changed = a;
    change(changed);
    EXPECT_NE(changed.key(), a.key()) << changed.key();
  }
  EXPECT_NE(a.str().find("fuse=1"), std::string::npos) << a.str();
}
