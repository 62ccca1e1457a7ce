# "System" port: installs nothing. Eigen's headers and Eigen3Config.cmake
# come from the system (Debian: libeigen3-dev). vcpkg's toolchain does not hide /usr,
# so find_package() falls through to the system's package files.
set(VCPKG_POLICY_EMPTY_PACKAGE enabled)
