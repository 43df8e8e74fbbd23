# The Python bindings (python/): built when DLC_ENABLE_PYTHON is ON, or AUTO and the
# interpreter's headers and pybind11 are found; their tests run when that interpreter
# imports numpy and pytest. dlc.sh installs all four and names Debian's interpreter
# (-DPython3_EXECUTABLE=/usr/bin/python3), so that a Python earlier on PATH (pyenv, a
# virtualenv without numpy) is not the one the tests run.
set(DLC_ENABLE_PYTHON AUTO CACHE STRING "Build the Python bindings: AUTO (when Python, pybind11 and numpy are found), ON, OFF")
set_property(CACHE DLC_ENABLE_PYTHON PROPERTY STRINGS AUTO ON OFF)

set(DLC_HAVE_PYTHON OFF)
if(NOT DLC_ENABLE_PYTHON STREQUAL "OFF")
  set(_dlc_python_required)
  if(DLC_ENABLE_PYTHON STREQUAL "ON")
    set(_dlc_python_required REQUIRED)
  endif()
  find_package(Python3 3.9 COMPONENTS Interpreter Development.Module ${_dlc_python_required})
  set(PYBIND11_FINDPYTHON ON)
  if(Python3_FOUND)
    find_package(pybind11 2.10 CONFIG ${_dlc_python_required})
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, pytest"
                    RESULT_VARIABLE _dlc_numpy_missing OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(DLC_HAVE_PYTHON ON)
    set(DLC_PYTHON_SUMMARY "on (${Python3_EXECUTABLE} ${Python3_VERSION}, pybind11 ${pybind11_VERSION})")
    if(_dlc_numpy_missing)
      set(DLC_PYTHON_TESTS OFF)
      if(DLC_ENABLE_TESTS)
        message(WARNING "dlc: ${Python3_EXECUTABLE} cannot import numpy and pytest: the Python "
                        "tests are not registered (Debian: python3-numpy python3-pytest)")
      endif()
    else()
      set(DLC_PYTHON_TESTS ON)
    endif()
  else()
    set(DLC_PYTHON_SUMMARY "off (needs Python 3 headers and pybind11)")
  endif()
else()
  set(DLC_PYTHON_SUMMARY "off (DLC_ENABLE_PYTHON=OFF)")
endif()

# A wheel build (pip install ./python, scikit-build-core) compiles the libraries as
# ./dlc.sh does, through ccache keyed on paths relative to the source root: its build
# folder (build-python/, beside build/) is at the same depth, so a machine that built dlc
# already compiles next to nothing again.
if(SKBUILD AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(DLC_CCACHE ccache)
  if(DLC_CCACHE)
    set(_dlc_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                      CCACHE_NOHASHDIR=1 ${DLC_CCACHE})
    set(CMAKE_C_COMPILER_LAUNCHER ${_dlc_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_dlc_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_dlc_launcher})
  endif()
endif()
