//===- CompileFuzzer.cpp - any bytes as the module dlc-compile compiles --------===//
//
// The input is what dlc-compile reads as its module: MLIR text or bytecode. It goes
// through compile_exported_model, dlc-compile's whole path: the untrusted-input checks,
// bytecode read in a child process, parsing, verification, hybridize()'s pipeline and
// the lowering to a runtime program, with an empty weights file (so a module that
// compiles stops at its first parameter). The function compiled is the first
// `func.func @name` of the text, so that the lit tests' IR, the seeds, gets past the
// lookup; bytecode compiles @forward. Generated kernels are built and cached in this
// process's scratch folder.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "dlc/Core/Error.h"
#include "dlc/Hybridize/ModelCompiler.h"

#include <cstdlib>
#include <regex>

namespace {

/// The first function the text defines or declares, else "forward".
std::string firstFunction(const uint8_t *data, size_t size) {
  static const std::regex definition(R"(func\.func\s+(?:private\s+)?@([A-Za-z_][\w$.]*))");
  std::string text(reinterpret_cast<const char *>(data), std::min<size_t>(size, 4096));
  std::smatch match;
  return std::regex_search(text, match, definition) ? match[1].str() : "forward";
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Before the first compile: kernels go to this process's scratch, not the user's cache.
  setenv("DLC_CACHE_DIR", (dlc::fuzz::scratch() / "kernels").c_str(), 1);
  static const uint8_t header[] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  dlc::fuzz::writeFile(dlc::fuzz::scratch() / "none.safetensors", header, sizeof header);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::filesystem::path module = dlc::fuzz::scratch() / "input.mlir";
  dlc::fuzz::writeFile(module, data, size);
  try {
    (void)dlc::compile_exported_model(module.string(),
                                      (dlc::fuzz::scratch() / "none.safetensors").string(),
                                      dlc::DeviceKind::cpu, firstFunction(data, size));
  } catch (const dlc::Error &) {
  }
  return 0;
}
