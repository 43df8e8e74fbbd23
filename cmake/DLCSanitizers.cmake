# -DDLC_SANITIZE=address,undefined[,fuzzer-no-link] builds every C and C++ target with
# those sanitizers (AddressSanitizer brings LeakSanitizer; fuzzer-no-link is libFuzzer's
# coverage, for the targets in fuzz/) and makes undefined behaviour fatal, so that a test
# run fails at the first report. scripts/sanitize.sh configures the build CI runs (clang,
# -O1). The CUDA backend is left out of such builds: nvcc's host code and the GPU
# emulator's fibers (swapcontext) are not instrumented, which ASan takes for stack errors.
set(DLC_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined (empty: none)")
if(DLC_SANITIZE)
  set(_dlc_sanitize_flags -fsanitize=${DLC_SANITIZE} -fno-omit-frame-pointer)
  if(DLC_SANITIZE MATCHES "undefined")
    list(APPEND _dlc_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_dlc_sanitize_flags}>")
  add_link_options(-fsanitize=${DLC_SANITIZE})
  message(STATUS "dlc: sanitizers ${DLC_SANITIZE}")
endif()
