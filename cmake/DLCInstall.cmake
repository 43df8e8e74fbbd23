# `cmake --install`: the embedding library libdlc with its headers and a CMake package
# (find_package(dlc) gives dlc::dlc), and the tools. examples/embed is a separate project
# built against the installed tree (test/install/embed.test does it).
include(CMakePackageConfigHelpers)

# Installed programs find libdlc next to them and the libraries they were linked with
# (Debian's libMLIR, the CUDA toolkit's) where they were found.
set_target_properties(dlc PROPERTIES INSTALL_RPATH "$ORIGIN"
                                     INSTALL_RPATH_USE_LINK_PATH ON)
set(_dlc_tools dlc-run dlc-compile dlc-train dlc-opt dlc-info)
foreach(tool IN LISTS _dlc_tools)
  set_target_properties(${tool} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}" INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()

install(TARGETS dlc EXPORT dlcTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${_dlc_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The CUDA backend, which the runtime opens from the library directory when a GPU is
# first asked for.
if(TARGET dlc_cuda)
  install(TARGETS dlc_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# The headers libdlc implements: the core, the runtime, the frontend, and the generated
# ones they include. Gluon, the compiler and the dialect need MLIR and stay in the tree.
install(FILES include/dlc/dlc.h include/dlc/dlc_c.h ${PROJECT_BINARY_DIR}/include/dlc/Config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlc)
# Their folders are libdlc's libraries whole; include/dlc/Hybridize (dlc_hybridize links
# the compiler) is not installed.
foreach(dir Core Runtime Frontend)
  install(DIRECTORY include/dlc/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlc
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/dlc/Core/OpFacts.inc
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlc/Core)

set(_dlc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/dlc)
install(EXPORT dlcTargets NAMESPACE dlc:: DESTINATION ${_dlc_cmake_dir})
configure_package_config_file(cmake/dlcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/dlcConfig.cmake
                              INSTALL_DESTINATION ${_dlc_cmake_dir}
                              PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/dlcConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/dlcConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/dlcConfigVersion.cmake
        DESTINATION ${_dlc_cmake_dir})
