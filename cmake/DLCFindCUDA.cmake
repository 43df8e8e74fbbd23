# Finds the CUDA toolkit (cudart), cuDNN and NCCL. DLC_ENABLE_CUDA is AUTO by default:
# the CUDA parts are built whenever all three are found; ON makes a missing piece an
# error; OFF skips the search. Sets DLC_HAVE_CUDA, DLC_CUDA_SUMMARY and
# DLC_CUDA_TOOLKIT_ROOT (empty without a toolkit), and creates the imported targets
# dlc::cudnn and dlc::nccl.
set(DLC_HAVE_CUDA OFF)
set(DLC_CUDA_TOOLKIT_ROOT "")
set(DLC_CUDA_SUMMARY "disabled (-DDLC_ENABLE_CUDA=OFF)")
string(TOUPPER "${DLC_ENABLE_CUDA}" _dlc_cuda_mode)
if(NOT _dlc_cuda_mode STREQUAL "AUTO")
  if(DLC_ENABLE_CUDA)
    set(_dlc_cuda_mode ON)
  else()
    return()
  endif()
endif()

if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
# The toolkit alone is what the cuda pipeline's PTX needs (libdevice), cuDNN or not.
if(CUDAToolkit_FOUND)
  get_filename_component(DLC_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
endif()
set(_dlc_cuda_hints ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 /usr/local/cuda/lib64)
set(_dlc_cuda_include_hints ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include /usr/local/cuda/include)
find_library(DLC_CUDNN_LIBRARY cudnn HINTS ${_dlc_cuda_hints})
find_path(DLC_CUDNN_INCLUDE_DIR cudnn_version.h HINTS ${_dlc_cuda_include_hints})
find_library(DLC_NCCL_LIBRARY nccl HINTS ${_dlc_cuda_hints})
find_path(DLC_NCCL_INCLUDE_DIR nccl.h HINTS ${_dlc_cuda_include_hints})

set(_dlc_missing "")
if(NOT CUDAToolkit_FOUND)
  list(APPEND _dlc_missing "CUDA toolkit")
endif()
if(NOT DLC_CUDNN_LIBRARY OR NOT DLC_CUDNN_INCLUDE_DIR)
  list(APPEND _dlc_missing "cuDNN")
endif()
if(NOT DLC_NCCL_LIBRARY OR NOT DLC_NCCL_INCLUDE_DIR)
  list(APPEND _dlc_missing "NCCL")
endif()

if(_dlc_missing)
  string(REPLACE ";" ", " _dlc_missing_text "${_dlc_missing}")
  if(_dlc_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "dlc: -DDLC_ENABLE_CUDA=ON but not found: ${_dlc_missing_text}")
  endif()
  set(DLC_CUDA_SUMMARY "off (not found: ${_dlc_missing_text})")
  return()
endif()

add_library(dlc::cudnn UNKNOWN IMPORTED)
set_target_properties(dlc::cudnn PROPERTIES IMPORTED_LOCATION ${DLC_CUDNN_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${DLC_CUDNN_INCLUDE_DIR})
add_library(dlc::nccl UNKNOWN IMPORTED)
set_target_properties(dlc::nccl PROPERTIES IMPORTED_LOCATION ${DLC_NCCL_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${DLC_NCCL_INCLUDE_DIR})

# nvcc compiles dlc's own kernels: for Hopper (sm_90) unless the user names other
# architectures (-DCMAKE_CUDA_ARCHITECTURES=80;90).
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
enable_language(CUDA)

set(DLC_HAVE_CUDA ON)
set(DLC_CUDA_SUMMARY "on (CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_DIR}; cuDNN ${DLC_CUDNN_LIBRARY}; NCCL ${DLC_NCCL_LIBRARY})")
message(STATUS "dlc: found CUDA ${CUDAToolkit_VERSION}, cuDNN ${DLC_CUDNN_LIBRARY}, NCCL ${DLC_NCCL_LIBRARY}")
