//===- UntrustedInput.h - checks dlc-opt makes before MLIR parses its input ---===//
//
// MLIR 19's parsers trust their input more than a tool fed arbitrary files can: the
// text parser recurses once per nesting level (a few thousand levels overflow the
// stack) and the bytecode reader does not validate everything it reads (damaged files
// crash it: SIGSEGV, "SmallVector unable to grow", a double free). dlc-opt checks its
// input first, so that bad input is an error message and never a dead process.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H
#define DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/MemoryBuffer.h"

#include <optional>
#include <string>

namespace dlc::opt {

/// Deepest nesting of brackets (regions, attributes, types) text input may have. Real
/// modules stay far below; MLIR 19's recursive parser overflowed an 8 MiB stack between
/// 2,000 and 3,000 nested regions (two brackets each) and below 20,000 nested arrays.
constexpr int kMaxTextNesting = 1000;

/// Why `input` must not reach MLIR's parser, or nothing when it may:
/// - text nested deeper than kMaxTextNesting (brackets in strings and comments aside);
/// - bytecode on which the reader crashes, found by reading it once in a child process
///   first (its diagnostics are discarded: the real parse reports them).
std::optional<std::string> checkUntrustedInput(const llvm::MemoryBuffer &input,
                                               const mlir::DialectRegistry &registry,
                                               bool allowUnregisteredDialects);

} // namespace dlc::opt

#endif // DLC_TOOLS_DLC_OPT_UNTRUSTEDINPUT_H
