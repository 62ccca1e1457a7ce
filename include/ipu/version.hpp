#pragma once
/// \file
/// The library's version, kept equal to `project(ipu VERSION ...)` in CMakeLists.txt
/// (a CTest test checks that they agree).

#define IPU_VERSION_MAJOR 0
#define IPU_VERSION_MINOR 1
#define IPU_VERSION_PATCH 0
#define IPU_VERSION_STRING "0.1.0"

namespace ipu {
/// The library version as "major.minor.patch".
inline constexpr char version[] = IPU_VERSION_STRING;
}  // namespace ipu
