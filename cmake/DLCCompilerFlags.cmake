# Flags for the MLIR/LLVM-facing targets (DLCDialect, DLCTransforms, dlc_lowering,
# dlc_compiler, dlc-opt).
#
# Debian's LLVM 19 is built without exceptions. Code that runs inside MLIR callbacks must
# never throw, so the compiler targets are built with -fno-exceptions, like LLVM itself;
# the frontend catches MLIR diagnostics and turns them into exceptions at its boundary.
function(dlc_compiler_target_flags target)
  target_compile_options(${target} PRIVATE -fno-exceptions)
  if(NOT LLVM_ENABLE_RTTI)
    target_compile_options(${target} PRIVATE -fno-rtti)
  endif()
endfunction()
