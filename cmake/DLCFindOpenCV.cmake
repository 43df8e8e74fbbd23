# Finds the three OpenCV modules dlc uses (core, imgproc, imgcodecs: image decoding and
# resizing in gluon.data) and creates the imported target dlc::opencv.
#
# Why not find_package(OpenCV): on Debian its CMake package ships only in libopencv-dev,
# which depends on every OpenCV module's development package and through them on Qt,
# VTK, GDAL and FFmpeg: about 190 packages and 520 MB more on a fresh machine than the
# three modules dlc links (libopencv-{core,imgproc,imgcodecs}-dev). The headers and
# libraries are the same either way. OpenCV_ROOT (or CMAKE_PREFIX_PATH) points at
# another installation.
find_path(DLC_OPENCV_INCLUDE_DIR opencv2/core.hpp HINTS ${OpenCV_ROOT}
          PATH_SUFFIXES include/opencv4 opencv4 include)
set(_dlc_opencv_libraries "")
set(_dlc_opencv_missing "")
foreach(_dlc_module core imgproc imgcodecs)
  find_path(DLC_OPENCV_${_dlc_module}_HEADER opencv2/${_dlc_module}.hpp
            HINTS ${DLC_OPENCV_INCLUDE_DIR} NO_DEFAULT_PATH)
  find_library(DLC_OPENCV_${_dlc_module}_LIBRARY opencv_${_dlc_module} HINTS ${OpenCV_ROOT}
               PATH_SUFFIXES lib lib64)
  if(NOT DLC_OPENCV_${_dlc_module}_HEADER OR NOT DLC_OPENCV_${_dlc_module}_LIBRARY)
    list(APPEND _dlc_opencv_missing ${_dlc_module})
  endif()
  list(APPEND _dlc_opencv_libraries ${DLC_OPENCV_${_dlc_module}_LIBRARY})
endforeach()
if(_dlc_opencv_missing)
  string(REPLACE ";" ", " _dlc_opencv_missing "${_dlc_opencv_missing}")
  message(FATAL_ERROR "dlc: OpenCV modules not found: ${_dlc_opencv_missing} (headers under "
    "${DLC_OPENCV_INCLUDE_DIR}). On Debian 12: apt-get install libopencv-core-dev "
    "libopencv-imgproc-dev libopencv-imgcodecs-dev; elsewhere set OpenCV_ROOT.")
endif()

if(NOT TARGET dlc::opencv)
  add_library(dlc::opencv INTERFACE IMPORTED)
  set_target_properties(dlc::opencv PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${DLC_OPENCV_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${_dlc_opencv_libraries}")
endif()
message(STATUS "dlc: OpenCV core, imgproc, imgcodecs (${DLC_OPENCV_core_LIBRARY})")
