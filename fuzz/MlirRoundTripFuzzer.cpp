//===- MlirRoundTripFuzzer.cpp - any text through dlc-opt's parse, verify, print ===//
//
// The input is MLIR text, vetted as dlc-opt vets it (dlc/Compiler/UntrustedInput/UntrustedInput.h).
// What parses and verifies is printed, parsed again and printed again, and written as
// bytecode, read back and printed: each must give the first printout, or the printer,
// the parser or the bytecode writer and reader disagree, which is a finding (a trap).
// Inputs that are bytecode are left out: dlc-opt runs on untrusted bytecode in a child
// process (MLIR 19's reader crashes on damaged files), which no in-process target can.
//
//===----------------------------------------------------------------------===//
#include "dlc/Compiler/UntrustedInput/UntrustedInput.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace {

const mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry r;
    r.insert<mlir::dlc::DLCDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
             mlir::tensor::TensorDialect>();
    return r;
  }();
  return registry;
}

std::string print(mlir::Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// Parses `text` (or bytecode) into a module, or null; diagnostics are dropped.
mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &context, llvm::StringRef source) {
  return mlir::parseSourceString<mlir::ModuleOp>(source, mlir::ParserConfig(&context));
}

[[noreturn]] void disagree(const char *what, const std::string &first, const std::string &second) {
  std::fprintf(stderr, "round trip through %s changed the IR:\n--- first\n%s\n--- then\n%s\n", what,
               first.c_str(), second.c_str());
  __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::unique_ptr<llvm::MemoryBuffer> input = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "input.mlir");
  if (mlir::isBytecode(input->getMemBufferRef()) ||
      dlc::untrusted::textNestingProblem(input->getBuffer()))
    return 0;
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(context, input->getBuffer());
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  std::string first = print(*module);

  mlir::OwningOpRef<mlir::ModuleOp> reparsed = parse(context, first);
  if (!reparsed || mlir::failed(mlir::verify(*reparsed)))
    disagree("the printer and the parser", first, "(did not parse or verify)");
  if (std::string second = print(*reparsed); second != first)
    disagree("the printer and the parser", first, second);

  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  if (mlir::failed(mlir::writeBytecodeToFile(*module, os)))
    return 0; // an op the writer cannot encode is reported, not mangled
  os.flush();
  mlir::OwningOpRef<mlir::ModuleOp> read = parse(context, bytecode);
  if (!read || mlir::failed(mlir::verify(*read)))
    disagree("bytecode", first, "(did not read back or verify)");
  if (std::string second = print(*read); second != first)
    disagree("bytecode", first, second);
  return 0;
}
