//===- UntrustedInput.h - keeping MLIR's parsers from dying on input ----------===//
//
// MLIR 19's parsers trust their input more than a tool fed arbitrary files can: the
// text parser recurses once per nesting level and once per operator of an affine
// expression (a few thousand levels overflow the stack), and the bytecode reader does
// not validate everything it reads (damaged files crash it: SIGSEGV, "SmallVector unable
// to grow", a double free). So every reader of MLIR that dlc offers (dlc-opt,
// dlc-compile, compile_exported_model) bounds what text may nest before parsing it, and
// reads bytecode in a child process: a crash there, which may happen anywhere in the
// reader and depends on what memory held, is reported as an error instead of taking the
// process down.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_UNTRUSTEDINPUT_UNTRUSTEDINPUT_H
#define DLC_COMPILER_UNTRUSTEDINPUT_UNTRUSTEDINPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace dlc::untrusted {

/// How deep MLIR's recursive parser may go in text input: each open bracket ((, [, {, <)
/// costs a level, and so does each operator (+, -, *, floordiv, ceildiv, mod) between
/// two commas of an open parenthesis, bracket or angle bracket, since an affine
/// expression's parser and printer recurse once per operator. Real modules stay far
/// below. On an 8 MiB stack MLIR 19 overflowed between 2,000 and 3,000 nested regions
/// (two brackets each), at 15,000 nested tuple types, 8,000 unary minuses and 72,000
/// terms of one affine sum.
constexpr int kMaxTextNesting = 1000;

/// Why MLIR text `input` must not reach MLIR's parser (deeper than kMaxTextNesting, as
/// counted above, strings and comments aside), or nothing when it may.
std::optional<std::string> textNestingProblem(llvm::StringRef input);

/// Runs `work` (which returns an exit status) in a child process and returns its status.
/// When the child dies on a signal, prints "<inputName>: error: ..." naming the signal,
/// removes `outputFilename` when it is a file (it may be half written; not "-", nor a
/// device such as /dev/null) and returns 1.
int runContained(llvm::function_ref<int()> work, llvm::StringRef inputName,
                 llvm::StringRef outputFilename);

/// Reads MLIR bytecode `bytecode` (named `source` in messages) into `context` in a child
/// process, and gives back the module printed as text, with its locations, in `text`:
/// the caller parses that, so only the child ever runs the bytecode reader. False, with
/// `error` saying why, when the bytecode does not read (MLIR's diagnostics) or the reader
/// crashes on it. The child inherits `context` as it is; the caller's is untouched.
bool bytecodeToText(llvm::StringRef bytecode, llvm::StringRef source,
                    mlir::MLIRContext &context, std::string &text, std::string &error);

} // namespace dlc::untrusted

#endif // DLC_COMPILER_UNTRUSTEDINPUT_UNTRUSTEDINPUT_H
