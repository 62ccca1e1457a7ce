#pragma once
/// \file
/// The library's version, kept equal to `project(ipu VERSION ...)` in CMakeLists.txt
/// (a CTest test checks that they agree).

/// Major version number.
#define IPU_VERSION_MAJOR 0
/// Minor version number; while the major version is 0, a new minor version may change the API.
#define IPU_VERSION_MINOR 1
/// Patch version number.
#define IPU_VERSION_PATCH 0
/// The version as a string literal, `"MAJOR.MINOR.PATCH"`; equal to `ipu::version`.
#define IPU_VERSION_STRING "0.1.0"

namespace ipu {
/// The library version as "major.minor.patch".
inline constexpr char version[] = IPU_VERSION_STRING;
}  // namespace ipu
