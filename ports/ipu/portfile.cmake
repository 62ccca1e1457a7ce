# vcpkg port for ipu, a header-only library.
#
# This overlay port builds the ipu source tree it lives in (ports/ipu/ -> ../..), so
#   vcpkg install ipu --overlay-ports=<ipu>/ports
# installs the working copy. For a registry, replace the next line by a download of a tagged
# release, e.g.
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/ipu REF "v${VERSION}" SHA512 <...> HEAD_REF main)
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

set(VCPKG_BUILD_TYPE release)  # header-only: one configuration is enough

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DIPU_BUILD_TESTS=OFF
        -DIPU_BUILD_BENCHMARKS=OFF
        -DIPU_BUILD_EXAMPLES=OFF
        -DIPU_BUILD_DOCS=OFF
        -DIPU_INSTALL=ON
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH share/cmake/ipu)  # -> share/ipu
vcpkg_fixup_pkgconfig()

# Nothing architecture-specific is installed; the licence goes to share/ipu/copyright instead.
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/lib" "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/share/doc")

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
