//===- UntrustedInput.cpp - bounded text nesting, bytecode run in a child ----===//
#include "UntrustedInput.h"

#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
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

} // namespace

std::optional<std::string> textNestingProblem(llvm::StringRef text) {
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

int runContained(llvm::function_ref<int()> work, llvm::StringRef inputName,
                 llvm::StringRef outputFilename) {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    llvm::errs() << inputName
                 << ": error: cannot start a process to read it in: " << std::strerror(errno)
                 << "\n";
    return 1;
  }
  if (child == 0) {
    // The default action for the signals a damaged file brings: the parent reports it,
    // LLVM's crash handler would only add a stack dump asking for a bug report.
    for (int signal : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
      std::signal(signal, SIG_DFL);
    int status = work();
    llvm::outs().flush();
    llvm::errs().flush();
    std::fflush(nullptr);
    _exit(status);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) {
      llvm::errs() << inputName
                   << ": error: waiting for the process reading it: " << std::strerror(errno)
                   << "\n";
      return 1;
    }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (outputFilename != "-")
    std::remove(outputFilename.str().c_str());
  llvm::errs() << inputName << ": error: MLIR's bytecode reader crashes on this file ("
               << strsignal(WTERMSIG(status))
               << "): it is damaged or not bytecode MLIR 19 can read\n";
  return 1;
}

} // namespace dlc::opt
