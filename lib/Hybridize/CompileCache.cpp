//===- CompileCache.cpp - the compiled texts written out for users -------------===//
#include "CompileCache.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dlc::detail {

namespace {

std::string fileName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "block" : out;
}

} // namespace

void dump_texts(const std::string &name, int64_t number, const CompiledTexts &texts) {
  const char *dir = std::getenv("DLC_DUMP_IR");
  if (!dir || !*dir)
    return;
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  std::string base = std::string(dir) + "/" + fileName(name) + "." + std::to_string(number);
  std::ofstream traced(base + ".traced.mlir");
  if (!traced) {
    std::fprintf(stderr, "dlc: DLC_DUMP_IR: cannot write %s.traced.mlir\n", base.c_str());
    return;
  }
  traced << texts.traced_ir;
  std::ofstream(base + ".compiled.mlir") << texts.compiled_ir;
  std::ofstream(base + ".programs.txt") << texts.programs;
}

} // namespace dlc::detail
