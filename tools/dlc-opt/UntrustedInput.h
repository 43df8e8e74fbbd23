//===- UntrustedInput.h - how dlc-opt keeps MLIR's parsers from dying on input ===//
//
// MLIR 19's parsers trust their input more than a tool fed arbitrary files can: the
// text parser recurses once per nesting level (a few thousand levels overflow the
// stack) and the bytecode reader does not validate everything it reads (damaged files
// crash it: SIGSEGV, "SmallVector unable to grow", a double free). So dlc-opt bounds the
// nesting of text before parsing it, and runs on bytecode in a child process: a crash
// there, which may happen anywhere in the reader and depends on what memory held, is
// reported as an error instead of taking the tool down.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H
#define DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace dlc::opt {

/// Deepest nesting of brackets (regions, attributes, types) text input may have. Real
/// modules stay far below; MLIR 19's recursive parser overflowed an 8 MiB stack between
/// 2,000 and 3,000 nested regions (two brackets each) and below 20,000 nested arrays.
constexpr int kMaxTextNesting = 1000;

/// Why MLIR text `input` must not reach MLIR's parser (nested deeper than
/// kMaxTextNesting, brackets in strings and comments aside), or nothing when it may.
std::optional<std::string> textNestingProblem(llvm::StringRef input);

/// Runs `work` (which returns an exit status) in a child process and returns its status.
/// When the child dies on a signal, prints "<inputName>: error: ..." naming the signal,
/// removes `outputFilename` (unless it is "-": it may be half written) and returns 1.
int runContained(llvm::function_ref<int()> work, llvm::StringRef inputName,
                 llvm::StringRef outputFilename);

} // namespace dlc::opt

#endif // DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H
