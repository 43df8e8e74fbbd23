//===- CompileOptions.cpp - the options as text, and as the environment asks -===//
#include "dlc/Core/CompileOptions.h"

#include "dlc/Config.h"
#include "dlc/Core/Error.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>

namespace dlc {

namespace {

std::string flag(bool on) { return on ? "1" : "0"; }

/// The variable's value, or "" when it is unset.
std::string variable(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// A yes/no variable: unset or empty gives `unset`; 1/0, on/off, true/false, yes/no.
bool switchVariable(const char *name, bool unset) {
  std::string value = variable(name);
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (value.empty())
    return unset;
  if (value == "1" || value == "on" || value == "true" || value == "yes")
    return true;
  if (value == "0" || value == "off" || value == "false" || value == "no")
    return false;
  throw Error(std::string("environment variable ") + name + "='" + variable(name) +
              "': expected 1 or 0 (on/off, true/false, yes/no)");
}

bool holdsLibdevice(const std::string &toolkit) {
  std::error_code ignored;
  return !toolkit.empty() &&
         std::filesystem::exists(toolkit + "/nvvm/libdevice/libdevice.10.bc", ignored);
}

} // namespace

std::string CompileOptions::key() const {
  return std::string("blocked-layout=") +
         (blocked_layout ? layout_name(*blocked_layout) : "process") + " fuse=" + flag(fuse) +
         " prepare-parameters=" + flag(prepare_parameters) +
         " pool-indices=" + flag(pool_indices) + " norm-activation=" + flag(norm_activation) +
         " group-updates=" + flag(group_updates) +
         " memory-budget=" + std::to_string(memory_budget) +
         " conv-algorithms=" + conv_algorithms + " generated-kernels=" + flag(generated_kernels) + " cuda-graphs=" + flag(cuda_graphs) +
         " cuda-toolkit=" + (cuda_toolkit.empty() ? "none" : cuda_toolkit) +
         " gpu-chip=" + gpu_chip + " cache-dir=" + (cache_dir.empty() ? "off" : cache_dir);
}

std::string CompileOptions::str() const { return key() + " timing=" + flag(timing); }

int64_t parse_memory_budget(const std::string &value, const std::string &where) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(value, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  double scale = 1;
  std::string suffix = value.substr(used);
  if (suffix == "K" || suffix == "k")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "m")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    used = 0;
  double bytes = number * scale;
  if (used == 0 || !(bytes >= 0) || bytes > 9e18)
    throw ValueError(where + "='" + value +
                     "': expected a number of bytes, optionally with K, M or G (0: no budget)");
  return int64_t(bytes);
}

const std::string &checked_conv_algorithms(const std::string &value, const std::string &where) {
  if (value != "auto" && value != "timed" && value != "winograd" && value != "direct")
    throw ValueError(where + "='" + value + "': expected auto, timed, winograd or direct");
  return value;
}

std::string default_cuda_toolkit() {
  for (const std::string &candidate :
       {variable("DLC_CUDA_TOOLKIT"), std::string(DLC_CUDA_TOOLKIT_ROOT), variable("CUDA_HOME"),
        std::string("/usr/local/cuda")})
    if (holdsLibdevice(candidate))
      return candidate;
  return "";
}

std::string default_cache_dir() {
  std::string chosen = variable("DLC_CACHE_DIR");
  if (!chosen.empty())
    return chosen == "off" ? "" : chosen;
  // The user's cache directory, as the XDG base directory specification places it.
  std::string base = variable("XDG_CACHE_HOME");
  if (base.empty()) {
    std::string home = variable("HOME");
    if (home.empty())
      return "";
    base = home + "/.cache";
  }
  return base + "/dlc";
}

CompileOptions compile_options_from_environment() {
  CompileOptions options;
  options.fuse = !switchVariable("DLC_DISABLE_FUSION", false);
  options.prepare_parameters = switchVariable("DLC_PREPARE_PARAMETERS", true);
  options.pool_indices = switchVariable("DLC_POOL_INDICES", true);
  options.norm_activation = switchVariable("DLC_NORM_ACTIVATION", true);
  options.group_updates = switchVariable("DLC_GROUP_UPDATES", true);
  if (std::string budget = variable("DLC_MEMORY_BUDGET"); !budget.empty())
    options.memory_budget =
        parse_memory_budget(budget, "environment variable DLC_MEMORY_BUDGET");
  if (std::string algorithms = variable("DLC_CONV_ALGORITHMS"); !algorithms.empty())
    options.conv_algorithms =
        checked_conv_algorithms(algorithms, "environment variable DLC_CONV_ALGORITHMS");
  options.generated_kernels = switchVariable("DLC_GENERATED_KERNELS", true);
  options.cuda_graphs = switchVariable("DLC_CUDA_GRAPHS", true);
  options.timing = switchVariable("DLC_COMPILE_TIMING", false);
  if (std::string chip = variable("DLC_GPU_CHIP"); !chip.empty()) {
    if (chip.rfind("sm_", 0) != 0 || chip.size() < 5 ||
        !std::all_of(chip.begin() + 3, chip.end(), [](unsigned char c) { return std::isalnum(c); }))
      throw Error("environment variable DLC_GPU_CHIP='" + chip +
                  "': expected a GPU architecture such as sm_90");
    options.gpu_chip = chip;
  }
  options.cuda_toolkit = default_cuda_toolkit();
  options.cache_dir = default_cache_dir();
  return options;
}

} // namespace dlc
