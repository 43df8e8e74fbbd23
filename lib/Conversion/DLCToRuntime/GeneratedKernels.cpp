//===- GeneratedKernels.cpp - a program's kernel module as loaded native code --===//
//
// dlc-outline-kernels and the pipeline after it leave a program's host kernels in
// @dlc_host_kernels, in the LLVM dialect. Here the module becomes position-independent
// object code for this CPU (translation to LLVM IR, LLVM's O2, code generation), which
// ORC's LLJIT links into the process (math functions such as tanhf resolve to this
// process's libm). The object code is what the disk cache keeps: a process that
// compiles the same module for the same CPU with the same compiler loads the entry
// instead, and one that already loaded it shares it. Loaded code stays as long as a
// kernel refers to it; each kernel also keeps the object, which a model file links into
// its shared object (dlc/Runtime/Program/HostCode.h).
//
//===----------------------------------------------------------------------===//
#include "LoweringSupport.h"

#include "dlc/Conversion/KernelCache/KernelCache.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <map>
#include <mutex>

namespace dlc::conversion::detail {

using namespace mlir;

namespace {

/// Object code linked into this process; the kernels' `owner`.
struct LoadedKernels {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::shared_ptr<const HostObject> object;
};

/// The host's code-generation target, and its description for the cache key.
struct HostTarget {
  llvm::orc::JITTargetMachineBuilder builder;
  std::string description;
};

llvm::Expected<HostTarget> hostTarget() {
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  // Position-independent: the same object links into a model file's shared object.
  builder->setRelocationModel(llvm::Reloc::PIC_);
  std::string description = builder->getTargetTriple().str() + " " + builder->getCPU() +
                            " " + builder->getFeatures().getString();
  return HostTarget{std::move(*builder), std::move(description)};
}

/// `kernels` as object code for `target` (translation, O2, code generation).
llvm::Expected<std::vector<char>> compileObject(ModuleOp kernels, HostTarget &target) {
  MLIRContext *context = kernels.getContext();
  // Once per context: MLIR 19 appends a registry's extensions again on every call.
  if (!context->getOrLoadDialect<LLVM::LLVMDialect>()
           ->getRegisteredInterface<LLVMTranslationDialectInterface>()) {
    registerBuiltinDialectTranslation(*context);
    registerLLVMDialectTranslation(*context);
  }
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      target.builder.createTargetMachine();
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernels, llvmContext, "dlc_host_kernels");
  if (!module)
    return llvm::createStringError("the kernel module does not translate to LLVM IR");
  module->setTargetTriple((*machine)->getTargetTriple().str());
  module->setDataLayout((*machine)->createDataLayout());
  if (llvm::Error error = makeOptimizingTransformer(2, 0, machine->get())(module.get()))
    return error;
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream out(object);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("LLVM cannot emit object code for " +
                                   target.description);
  codegen.run(*module);
  return std::vector<char>(object.begin(), object.end());
}

/// `object` linked into this process.
llvm::Expected<std::shared_ptr<LoadedKernels>> link(const std::vector<char> &object,
                                                    HostTarget &target) {
  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(target.builder).create();
  if (!jit)
    return jit.takeError();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (llvm::Error error = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(object.data(), object.size()), "dlc_host_kernels.o")))
    return error;
  auto loaded = std::make_shared<LoadedKernels>();
  loaded->jit = std::move(*jit);
  loaded->object = std::make_shared<const HostObject>(
      HostObject{std::string(object.begin(), object.end()), target.description});
  return loaded;
}

/// The process's loaded modules by key, while something uses them.
std::mutex loadedMutex;
std::map<std::string, std::weak_ptr<LoadedKernels>> &loadedByKey() {
  static std::map<std::string, std::weak_ptr<LoadedKernels>> loaded;
  return loaded;
}

/// The loaded code of `kernels`: shared, from the cache, or compiled (and cached).
llvm::Expected<std::shared_ptr<LoadedKernels>> load(ModuleOp kernels,
                                                    const std::string &directory) {
  llvm::Expected<HostTarget> target = hostTarget();
  if (!target)
    return target.takeError();
  std::string key = kernelCacheKey(kernels, "O2 PIC object; " + target->description);
  std::lock_guard<std::mutex> lock(loadedMutex);
  if (std::shared_ptr<LoadedKernels> shared = loadedByKey()[key].lock()) {
    ++counters().reused;
    return shared;
  }
  if (!directory.empty())
    if (std::optional<std::vector<char>> cached = readCachedObject(directory, key)) {
      llvm::Expected<std::shared_ptr<LoadedKernels>> loaded = link(*cached, *target);
      if (loaded) {
        ++counters().loaded;
        loadedByKey()[key] = *loaded;
        return loaded;
      }
      llvm::consumeError(loaded.takeError()); // whole but unusable: made again below
      ++counters().rejected;
    }
  llvm::Expected<std::vector<char>> object = compileObject(kernels, *target);
  if (!object)
    return object.takeError();
  ++counters().compiled;
  if (!directory.empty()) {
    std::string why = writeCachedObject(directory, key, *object);
    static std::once_flag warned;
    if (!why.empty())
      std::call_once(warned, [&] {
        llvm::errs() << "dlc: the kernel cache is not written (" << why
                     << "); name a writable cache directory (DLC_CACHE_DIR, or the cache_dir "
                        "compile option), or turn the cache off\n";
      });
  }
  llvm::Expected<std::shared_ptr<LoadedKernels>> loaded = link(*object, *target);
  if (loaded)
    loadedByKey()[key] = *loaded;
  return loaded;
}

} // namespace

std::vector<std::shared_ptr<const GeneratedKernel>>
loadHostKernels(ModuleOp kernels, llvm::ArrayRef<std::string> functions,
                const std::string &cacheDirectory, std::string &error) {
  if (functions.empty())
    return {};
  for (Operation &op : kernels.getBody()->getOperations())
    if (!isa<LLVM::LLVMDialect>(op.getDialect())) {
      error = "@" + kernels.getSymName().value_or("").str() + " holds " +
              op.getName().getStringRef().str() +
              ": its kernels are not lowered to the LLVM dialect (run the pipeline's code "
              "generation, --dlc-pipeline)";
      return {};
    }
  llvm::Expected<std::shared_ptr<LoadedKernels>> loaded = load(kernels, cacheDirectory);
  if (!loaded) {
    error = "loading the generated kernels: " + llvm::toString(loaded.takeError());
    return {};
  }
  std::vector<std::shared_ptr<const GeneratedKernel>> result;
  for (const std::string &function : functions) {
    llvm::Expected<llvm::orc::ExecutorAddr> entry =
        (*loaded)->jit->lookup(function + "_packed");
    if (!entry) {
      error = "the generated kernel @" + function +
              " has no packed entry: " + llvm::toString(entry.takeError());
      return {};
    }
    auto kernel = std::make_shared<GeneratedKernel>();
    kernel->entry = entry->toPtr<void (*)(void **)>();
    kernel->owner = *loaded;
    kernel->symbol = function + "_packed";
    kernel->object = (*loaded)->object;
    result.push_back(std::move(kernel));
  }
  return result;
}

} // namespace dlc::conversion::detail
