# "System" port: installs nothing. The Boost headers and BoostConfig.cmake
# come from the system (Debian: libboost-dev). vcpkg's toolchain does not hide /usr,
# so find_package() falls through to the system's package files.
set(VCPKG_POLICY_EMPTY_PACKAGE enabled)
