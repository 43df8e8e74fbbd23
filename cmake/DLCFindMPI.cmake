# Finds MPI's C library for multi-process training (dlc::dist; Open MPI from Debian:
# openmpi-bin and libopenmpi-dev). DLC_ENABLE_MPI is AUTO by default: the MPI process
# group is built whenever MPI is found; ON makes its absence an error; OFF skips the
# search. Without it dlc runs as one process, and a launch by mpirun is refused by name.
# Sets DLC_HAVE_MPI, DLC_MPI_SUMMARY and DLC_MPIEXEC (the launcher, for the tests).
set(DLC_HAVE_MPI OFF)
set(DLC_MPIEXEC "")
set(DLC_MPI_SUMMARY "off (DLC_ENABLE_MPI=OFF)")
string(TOUPPER "${DLC_ENABLE_MPI}" _dlc_mpi_mode)
if(NOT _dlc_mpi_mode STREQUAL "OFF")
  set(_dlc_mpi_required)
  if(_dlc_mpi_mode STREQUAL "ON")
    set(_dlc_mpi_required REQUIRED)
  endif()
  find_package(MPI COMPONENTS C ${_dlc_mpi_required})
  if(MPI_C_FOUND)
    set(DLC_HAVE_MPI ON)
    set(DLC_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    set(DLC_MPI_SUMMARY "on (MPI ${MPI_C_VERSION}, ${MPIEXEC_EXECUTABLE})")
  else()
    set(DLC_MPI_SUMMARY "off (not found; Debian: openmpi-bin libopenmpi-dev)")
  endif()
endif()
