//===- UntrustedInput.cpp - bounded text nesting, bytecode read in a child ----===//
#include "dlc/Compiler/UntrustedInput/UntrustedInput.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace dlc::untrusted {

namespace {

/// "line L, column C" of `offset` in `text`.
std::string position(llvm::StringRef text, size_t offset) {
  size_t line = 1 + text.take_front(offset).count('\n');
  size_t lineStart = text.take_front(offset).rfind('\n');
  size_t column = offset - (lineStart == llvm::StringRef::npos ? 0 : lineStart + 1) + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

/// Characters of a name, or before one (@f, %x, #map, !t, ^bb): an operator keyword
/// next to them is part of a name.
bool inName(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || llvm::StringRef("_$.@%#!^").contains(c);
}

/// The length of the affine operator keyword (floordiv, ceildiv, mod) standing alone at
/// `i`, or 0.
size_t keywordOperatorAt(llvm::StringRef text, size_t i) {
  if (i > 0 && inName(text[i - 1]))
    return 0;
  for (llvm::StringRef word : {"floordiv", "ceildiv", "mod"})
    if (text.substr(i).starts_with(word) &&
        (i + word.size() == text.size() || !inName(text[i + word.size()])))
      return word.size();
  return 0;
}

char closerOf(char open) {
  switch (open) {
  case '(': return ')';
  case '[': return ']';
  case '{': return '}';
  default: return '>';
  }
}

/// One open bracket: what closes it, and the operators read in it since its last comma.
struct Level {
  char closer;
  int operators;
};

/// Waits for `child`; false (with `error`) when waiting fails.
bool waitFor(pid_t child, int &status, std::string &error) {
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) {
      error = std::string("waiting for the process reading it: ") + std::strerror(errno);
      return false;
    }
  return true;
}

void flushAll() {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
}

/// In a child: the default action for the signals a damaged file brings. The parent
/// reports it; LLVM's crash handler would only add a stack dump asking for a bug report.
void restoreCrashSignals() {
  for (int signal : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
    std::signal(signal, SIG_DFL);
}

} // namespace

std::optional<std::string> textNestingProblem(llvm::StringRef text) {
  std::vector<Level> open;
  int operators = 0; // in every open level, since each one's last comma
  auto tooDeep = [&](size_t at) -> std::optional<std::string> {
    if (int(open.size()) + operators <= kMaxTextNesting)
      return std::nullopt;
    return "nested more than " + std::to_string(kMaxTextNesting) +
           " levels deep (regions, attributes, types, affine expressions) at " +
           position(text, at) + "; MLIR's recursive parser would overflow its stack";
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '"') { // a string: escapes skip their next character
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && next == '/') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
    } else if ((c == '-' && next == '>') || ((c == '<' || c == '>') && next == '=')) {
      ++i; // an arrow or a comparison: no bracket, no recursion
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      open.push_back({closerOf(c), 0});
      if (auto problem = tooDeep(i))
        return problem;
    } else if (c == '>') {
      if (!open.empty() && open.back().closer == '>') {
        operators -= open.back().operators;
        open.pop_back();
      }
    } else if (c == ')' || c == ']' || c == '}') {
      // Closes the innermost level it matches, and any unclosed '<' inside it.
      if (std::any_of(open.begin(), open.end(),
                      [&](const Level &level) { return level.closer == c; }))
        for (bool closed = false; !closed; open.pop_back()) {
          closed = open.back().closer == c;
          operators -= open.back().operators;
        }
    } else if (c == ',') {
      if (!open.empty()) {
        operators -= open.back().operators;
        open.back().operators = 0;
      }
    } else if (!open.empty() && open.back().closer != '}') {
      size_t keyword = keywordOperatorAt(text, i);
      if (c == '+' || c == '-' || c == '*' || keyword > 0) {
        ++open.back().operators;
        ++operators;
        if (auto problem = tooDeep(i))
          return problem;
        if (keyword > 0)
          i += keyword - 1;
      } else if (inName(c)) {
        while (i + 1 < text.size() && inName(text[i + 1])) // a name holds no operator
          ++i;
      }
    }
  }
  return std::nullopt;
}

int runContained(llvm::function_ref<int()> work, llvm::StringRef inputName,
                 llvm::StringRef outputFilename) {
  flushAll();
  pid_t child = fork();
  if (child < 0) {
    llvm::errs() << inputName
                 << ": error: cannot start a process to read it in: " << std::strerror(errno)
                 << "\n";
    return 1;
  }
  if (child == 0) {
    restoreCrashSignals();
    int status = work();
    flushAll();
    _exit(status);
  }
  int status = 0;
  std::string error;
  if (!waitFor(child, status, error)) {
    llvm::errs() << inputName << ": error: " << error << "\n";
    return 1;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (outputFilename != "-") // LLVM's remove leaves anything but files alone (/dev/null)
    (void)llvm::sys::fs::remove(outputFilename);
  llvm::errs() << inputName << ": error: MLIR's bytecode reader crashes on this file ("
               << strsignal(WTERMSIG(status))
               << "): it is damaged or not bytecode MLIR 19 can read\n";
  return 1;
}

bool bytecodeToText(llvm::StringRef bytecode, llvm::StringRef source,
                    mlir::MLIRContext &context, std::string &text, std::string &error) {
  // The child's exit statuses: the module's text follows, or MLIR's diagnostics do.
  constexpr int kText = 0, kDiagnostics = 2;
  int pipeEnds[2];
  if (pipe(pipeEnds) != 0) {
    error = std::string("cannot start a process to read it in: ") + std::strerror(errno);
    return false;
  }
  flushAll();
  pid_t child = fork();
  if (child < 0) {
    error = std::string("cannot start a process to read it in: ") + std::strerror(errno);
    close(pipeEnds[0]);
    close(pipeEnds[1]);
    return false;
  }
  if (child == 0) {
    close(pipeEnds[0]);
    restoreCrashSignals();
    std::string diagnostics;
    mlir::ScopedDiagnosticHandler collect(&context, [&](mlir::Diagnostic &diagnostic) {
      llvm::raw_string_ostream os(diagnostics);
      os << diagnostic.getLocation() << ": " << diagnostic << "\n";
      return mlir::success();
    });
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(bytecode, source, false),
                               llvm::SMLoc());
    mlir::ParserConfig config(&context);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(sources, config);
    std::string out;
    llvm::raw_string_ostream os(out);
    if (module)
      module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
    else
      os << diagnostics;
    os.flush();
    for (size_t written = 0; written < out.size();) {
      ssize_t n = write(pipeEnds[1], out.data() + written, out.size() - written);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        _exit(1);
      written += size_t(n);
    }
    _exit(module ? kText : kDiagnostics);
  }
  close(pipeEnds[1]);
  text.clear();
  char buffer[65536];
  for (;;) {
    ssize_t n = read(pipeEnds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    text.append(buffer, size_t(n));
  }
  close(pipeEnds[0]);
  int status = 0;
  if (!waitFor(child, status, error))
    return false;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kText)
    return true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kDiagnostics)
    error = "it does not read as MLIR bytecode:\n" + text;
  else if (WIFSIGNALED(status))
    error = std::string("MLIR's bytecode reader crashes on it (") + strsignal(WTERMSIG(status)) +
            "): it is damaged or not bytecode MLIR 19 can read";
  else
    error = "MLIR's bytecode reader failed on it (its process exited with status " +
            std::to_string(WEXITSTATUS(status)) +
            "): it is damaged or not bytecode MLIR 19 can read";
  text.clear();
  return false;
}

} // namespace dlc::untrusted
