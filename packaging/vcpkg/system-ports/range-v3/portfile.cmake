# "System" port: installs nothing. range-v3's headers and range-v3-config.cmake
# come from the system (Debian: librange-v3-dev). vcpkg's toolchain does not hide /usr,
# so find_package() falls through to the system's package files.
set(VCPKG_POLICY_EMPTY_PACKAGE enabled)
