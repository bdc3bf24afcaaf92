# Writes DeviceID's CMake package files with CMake's own helpers, so that the package is
# relocatable the way CMake packages are: every path is relative to ${PACKAGE_PREFIX_DIR}, which
# the config file computes from where it is found. Run by `make install`:
#
#   cmake -DOUT=DIR -DPREFIX=/usr -DLIBDIR=/usr/lib/x86_64-linux-gnu -DINCLUDEDIR=/usr/include \
#         -DCMAKEDIR=/usr/lib/x86_64-linux-gnu/cmake/deviceid -DVERSION=0.3.0 -P cmake/generate.cmake
cmake_minimum_required(VERSION 3.13)
include(CMakePackageConfigHelpers)

foreach(variable OUT PREFIX LIBDIR INCLUDEDIR CMAKEDIR VERSION)
    if(NOT DEFINED ${variable})
        message(FATAL_ERROR "generate.cmake: -D${variable}=... is required")
    endif()
endforeach()

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/deviceidConfig.cmake.in" "${OUT}/deviceidConfig.cmake"
    INSTALL_DESTINATION "${CMAKEDIR}"
    INSTALL_PREFIX "${PREFIX}"
    PATH_VARS LIBDIR INCLUDEDIR
    NO_CHECK_REQUIRED_COMPONENTS_MACRO)
# From 1.0 on a release keeps the API of its major version: find_package(deviceid 1.0) accepts 1.x.
set(CMAKE_SIZEOF_VOID_P 8)
write_basic_package_version_file("${OUT}/deviceidConfigVersion.cmake"
    VERSION "${VERSION}" COMPATIBILITY SameMajorVersion)
