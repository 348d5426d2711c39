# LnInstall.cmake - `cmake --install`: library, header, CMake package and pkg-config file.
# Every installed path is relative to the prefix, so an installed tree can be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The same name a consumer of the installed package uses, for add_subdirectory users too.
add_library(layernorm::layernorm ALIAS layernorm)

set(LN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/layernorm)
set(LN_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS layernorm EXPORT layernormTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/layernorm.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT layernormTargets NAMESPACE layernorm:: DESTINATION ${LN_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/layernormConfig.cmake.in
  ${PROJECT_BINARY_DIR}/layernormConfig.cmake INSTALL_DESTINATION ${LN_CMAKE_DIR})
# A new major version breaks the ABI, so a request for 1.x must never accept 2.x.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/layernormConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/layernormConfig.cmake
  ${PROJECT_BINARY_DIR}/layernormConfigVersion.cmake DESTINATION ${LN_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own location (${pcfiledir}), which
# pkgconf and pkg-config both define, so the tree stays relocatable. An absolute libdir
# (a distro's choice) cannot be relative and is written as given.
set(LN_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
set(LN_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(LN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(LN_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(LN_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _ln_up "/ln-prefix/${LN_PC_DIR}" "/ln-prefix")
  string(REGEX REPLACE "/$" "" _ln_up "${_ln_up}")
  set(LN_PC_PREFIX "\${pcfiledir}/${_ln_up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/layernorm.pc.in
  ${PROJECT_BINARY_DIR}/layernorm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/layernorm.pc DESTINATION ${LN_PC_DIR})
