# cmake -DIPU_PREFIX=<prefix> -P no_arch_files.cmake
# A header-only package has nothing architecture-specific: no lib/ (nor lib64/, bin/) in the
# install tree, and a version file written with ARCH_INDEPENDENT, which CMake 3.25 marks by
# `if("TRUE")` before the CMAKE_SIZEOF_VOID_P check (without it the line reads `if("FALSE")`).

if(NOT DEFINED IPU_PREFIX)
  message(FATAL_ERROR "no_arch_files.cmake: -DIPU_PREFIX=... is required")
endif()

set(_errors "")
foreach(_dir IN ITEMS lib lib64 lib32 libx32 bin)
  if(EXISTS "${IPU_PREFIX}/${_dir}")
    file(GLOB_RECURSE _files RELATIVE "${IPU_PREFIX}" "${IPU_PREFIX}/${_dir}/*")
    string(APPEND _errors "  ${_dir}/ exists in the install tree: ${_files}\n")
  endif()
endforeach()

set(_version_file "${IPU_PREFIX}/share/cmake/ipu/ipuConfigVersion.cmake")
if(NOT EXISTS "${_version_file}")
  string(APPEND _errors "  ${_version_file} is missing\n")
else()
  file(READ "${_version_file}" _text)
  if(NOT _text MATCHES "\nif\\(\"TRUE\"\\)\n  return\\(\\)\nendif\\(\\)")
    string(APPEND _errors "  ${_version_file} was not written with ARCH_INDEPENDENT "
                          "(no `if(\"TRUE\")` / `return()` before the pointer-size check)\n")
  endif()
  if(_text MATCHES "\nif\\(\"FALSE\"\\)\n  return\\(\\)")
    string(APPEND _errors "  ${_version_file} checks the pointer size (ARCH_INDEPENDENT missing)\n")
  endif()
endif()

if(NOT _errors STREQUAL "")
  message(FATAL_ERROR "the ipu install tree is not architecture-independent:\n${_errors}")
endif()
message(STATUS "no lib/ or bin/ in ${IPU_PREFIX}; ipuConfigVersion.cmake is ARCH_INDEPENDENT")
