//===- UntrustedInput.cpp - bounded nesting, bytecode read in a child first ---===//
#include "UntrustedInput.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlc::opt {

namespace {

/// "line L, column C" of `offset` in `text`.
std::string position(llvm::StringRef text, size_t offset) {
  size_t line = 1 + text.take_front(offset).count('\n');
  size_t lineStart = text.take_front(offset).rfind('\n');
  size_t column = offset - (lineStart == llvm::StringRef::npos ? 0 : lineStart + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::optional<std::string> nestingProblem(llvm::StringRef text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') { // a string: escapes skip their next character
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxTextNesting)
        return "nested more than " + std::to_string(kMaxTextNesting) +
               " levels deep (regions, attributes, types) at " + position(text, i) +
               "; MLIR's recursive parser would overflow its stack";
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

/// Reads `input` as bytecode in a child process and reports how the child died, if it
/// did. Exiting, with or without parse errors, is fine: the real parse reports those.
std::optional<std::string> bytecodeCrashes(const llvm::MemoryBuffer &input,
                                           const mlir::DialectRegistry &registry,
                                           bool allowUnregisteredDialects) {
  pid_t child = fork();
  if (child < 0)
    return std::string("cannot check its bytecode in a child process: ") + std::strerror(errno);
  if (child == 0) {
    int devNull = open("/dev/null", O_WRONLY);
    if (devNull >= 0) // the reader's own crash report would only confuse
      dup2(devNull, STDERR_FILENO);
    mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
    context.allowUnregisteredDialects(allowUnregisteredDialects);
    mlir::ScopedDiagnosticHandler quiet(&context,
                                        [](mlir::Diagnostic &) { return mlir::success(); });
    mlir::Block block;
    mlir::ParserConfig config(&context);
    bool parsed = mlir::succeeded(mlir::readBytecodeFile(input.getMemBufferRef(), &block, config));
    _exit(parsed ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("cannot check its bytecode: waitpid: ") + std::strerror(errno);
  if (WIFSIGNALED(status))
    return std::string("MLIR's bytecode reader crashes on this file (") +
           strsignal(WTERMSIG(status)) + "): it is damaged or not bytecode MLIR 19 can read";
  return std::nullopt;
}

} // namespace

std::optional<std::string> checkUntrustedInput(const llvm::MemoryBuffer &input,
                                               const mlir::DialectRegistry &registry,
                                               bool allowUnregisteredDialects) {
  if (mlir::isBytecode(input.getMemBufferRef()))
    return bytecodeCrashes(input, registry, allowUnregisteredDialects);
  return nestingProblem(input.getBuffer());
}

} // namespace dlc::opt
