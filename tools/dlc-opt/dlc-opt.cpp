//===- dlc-opt.cpp - the dlc optimizer driver --------------------------------===//
//
// mlir-opt with the dlc dialect, every dlc pass and pipeline, some upstream dialects
// (func, arith, tensor, linalg, scf, memref, bufferization, math, cf, llvm, gpu, nvvm) and the
// upstream transforms and conversions. A program's steps lower to runtime programs; its
// generated kernels go through those dialects down to the LLVM dialect, and modules
// mixing them with dlc parse so that upstream passes can run on them.
//
//===----------------------------------------------------------------------===//
#include "dlc/Core/CompileOptions.h"
#include "dlc/Compiler/UntrustedInput/UntrustedInput.h"
#include "dlc/Config.h"
#include "dlc/Dialect/DLC/IR/DLCDialect.h"
#include "dlc/Conversion/Passes.h"
#include "dlc/Conversion/Pipelines.h"
#include "dlc/Dialect/DLC/Transforms/Passes.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::registerLinalgPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::dlc::registerDLCPasses();
  mlir::dlc::registerDLCConversionPasses();
  // The tool is where the user speaks: the toolkit its pipeline links libdlc against is
  // the environment's (DLC_CUDA_TOOLKIT, the configured one, CUDA_HOME, /usr/local/cuda).
  mlir::dlc::registerDLCPipelines(::dlc::default_cuda_toolkit());

  mlir::DialectRegistry registry;
  registry.insert<mlir::dlc::DLCDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect,
                  mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                  mlir::bufferization::BufferizationDialect, mlir::math::MathDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect,
                  mlir::NVVM::NVVMDialect>();
  mlir::dlc::registerCodeGenerationInterfaces(registry);

  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "dlc " << DLC_VERSION << " on MLIR " << DLC_MLIR_VERSION
       << "\n  CUDA backend: " << DLC_CUDA_SUMMARY << "\n";
  });
  // mlir-opt's own driver, with the input checked before MLIR parses it
  // (dlc/Compiler/UntrustedInput/UntrustedInput.h): bad input is an error, never a crash.
  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, "dlc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleaveComma(registry.getDialectNames(), llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  bool bytecode = mlir::isBytecode(input->getMemBufferRef());
  if (!bytecode)
    if (std::optional<std::string> problem = dlc::untrusted::textNestingProblem(input->getBuffer())) {
      llvm::errs() << inputFilename << ": error: " << *problem << "\n";
      return 1;
    }
  auto run = [&]() -> int {
    std::unique_ptr<llvm::ToolOutputFile> output =
        mlir::openOutputFile(outputFilename, &errorMessage);
    if (!output) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
      return 1;
    output->keep();
    return 0;
  };
  return bytecode ? dlc::untrusted::runContained(run, inputFilename, outputFilename) : run();
}
