# "System" port: installs nothing. Boost.Hana's headers
# come from the system (Debian: libboost-dev, with the rest of Boost). vcpkg's toolchain does not hide /usr,
# so find_package() falls through to the system's package files.
set(VCPKG_POLICY_EMPTY_PACKAGE enabled)
