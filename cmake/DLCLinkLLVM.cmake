# How dlc's targets link MLIR and LLVM: the interface targets dlc_mlir (MLIR users) and
# dlc_llvm (llvm::json and llvm::cl users).
#
# By default they name Debian's shared libMLIR and libLLVM, which keeps links fast and CI's
# build small. With -DDLC_STATIC_LLVM=ON they name Debian's static archives instead, so
# that an executable holds only the MLIR/LLVM code it calls and needs neither libMLIR
# (66 MB) nor libLLVM (129 MB, which pulls in z3, libxml2 and ICU) where it runs. That is
# what makes a binary small enough to carry to a machine without LLVM, such as the lent
# GPU machine (scripts/gpu-bundle.sh).
option(DLC_STATIC_LLVM "Link MLIR and LLVM from their static archives" OFF)

add_library(dlc_mlir INTERFACE)
add_library(dlc_llvm INTERFACE)
if(NOT DLC_STATIC_LLVM)
  target_link_libraries(dlc_mlir INTERFACE MLIR LLVM)
  target_link_libraries(dlc_llvm INTERFACE LLVM)
  return()
endif()

# add_mlir_library links LLVM's Support component on its own; with Debian's config that is
# the shared libLLVM unless the dylib is switched off here.
set(LLVM_LINK_LLVM_DYLIB OFF)

# One GNU ld input script holding GROUP(...) over every archive: the linker rescans the
# group until no new symbol is resolved, so the archives' order does not matter, and only
# the members something references are linked. The C API and the *Main archives are left
# out: they define entry points dlc never calls.
file(GLOB _dlc_mlir_archives "${LLVM_LIBRARY_DIR}/libMLIR*.a")
file(GLOB _dlc_llvm_archives "${LLVM_LIBRARY_DIR}/libLLVM*.a")
list(FILTER _dlc_mlir_archives EXCLUDE REGEX "/libMLIR(CAPI[^/]*|[^/]*Main)\\.a$")
if(NOT _dlc_mlir_archives OR NOT _dlc_llvm_archives)
  message(FATAL_ERROR "DLC_STATIC_LLVM: no static MLIR/LLVM archives in ${LLVM_LIBRARY_DIR}")
endif()
list(JOIN _dlc_mlir_archives " " _dlc_mlir_group)
list(JOIN _dlc_llvm_archives " " _dlc_llvm_group)
set(_dlc_mlir_script "${CMAKE_BINARY_DIR}/lib/dlc_mlir_static.ld")
set(_dlc_llvm_script "${CMAKE_BINARY_DIR}/lib/dlc_llvm_static.ld")
file(WRITE "${_dlc_mlir_script}" "GROUP ( ${_dlc_mlir_group} ${_dlc_llvm_group} )\n")
file(WRITE "${_dlc_llvm_script}" "GROUP ( ${_dlc_llvm_group} )\n")
find_package(ZLIB REQUIRED)
find_library(DLC_ZSTD_LIBRARY zstd REQUIRED)
find_library(DLC_TINFO_LIBRARY tinfo REQUIRED)
set(_dlc_llvm_system ZLIB::ZLIB ${DLC_ZSTD_LIBRARY} ${DLC_TINFO_LIBRARY} ${CMAKE_DL_LIBS} pthread)
target_link_libraries(dlc_mlir INTERFACE "${_dlc_mlir_script}" ${_dlc_llvm_system})
target_link_libraries(dlc_llvm INTERFACE "${_dlc_llvm_script}" ${_dlc_llvm_system})
message(STATUS "dlc: MLIR and LLVM linked statically (${LLVM_LIBRARY_DIR})")
