# Finds oneDNN (Debian's libdnnl-dev, 2.x) by its header and library and creates the
# imported target DNNL::dnnl.
#
# Why not find_package(dnnl CONFIG): Debian builds oneDNN with its OpenCL GPU runtime, so
# the package's dnnl-config.cmake calls find_package(OpenCL REQUIRED) and links
# OpenCL::OpenCL into every consumer, while libdnnl-dev only *recommends* the OpenCL
# development files. dlc uses oneDNN's CPU engine alone and includes no OpenCL header,
# so that requirement is accidental: a set-up that installs without recommends failed
# at configure. libdnnl.so itself still loads libOpenCL.so.1, which libdnnl2 depends on.
# DNNL_ROOT (or CMAKE_PREFIX_PATH) points at another installation.
find_path(DLC_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${DNNL_ROOT} PATH_SUFFIXES include)
find_library(DLC_DNNL_LIBRARY dnnl HINTS ${DNNL_ROOT} PATH_SUFFIXES lib lib64)
if(NOT DLC_DNNL_INCLUDE_DIR OR NOT DLC_DNNL_LIBRARY)
  message(FATAL_ERROR "dlc: oneDNN not found (header oneapi/dnnl/dnnl.hpp: "
    "${DLC_DNNL_INCLUDE_DIR}; library libdnnl: ${DLC_DNNL_LIBRARY}). On Debian 12: "
    "apt-get install libdnnl-dev; elsewhere set DNNL_ROOT to oneDNN's install prefix.")
endif()

# dlc is written against the oneDNN 2.x API (3.0 changed the primitive descriptors).
file(STRINGS "${DLC_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _dlc_dnnl_version_lines
     REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
set(DLC_DNNL_VERSION "")
foreach(_dlc_part MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*DNNL_VERSION_${_dlc_part} ([0-9]+).*" "\\1" _dlc_value
         "${_dlc_dnnl_version_lines}")
  list(APPEND DLC_DNNL_VERSION ${_dlc_value})
endforeach()
list(JOIN DLC_DNNL_VERSION "." DLC_DNNL_VERSION)
if(NOT DLC_DNNL_VERSION MATCHES "^2\\.")
  message(FATAL_ERROR "dlc: needs oneDNN 2.x, found ${DLC_DNNL_VERSION} at ${DLC_DNNL_LIBRARY}")
endif()

if(NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION "${DLC_DNNL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${DLC_DNNL_INCLUDE_DIR}")
endif()
message(STATUS "dlc: oneDNN ${DLC_DNNL_VERSION} (${DLC_DNNL_LIBRARY})")
