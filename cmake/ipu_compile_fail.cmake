# cmake -DIPU_CF_SOURCE=<case.cpp> -DIPU_CF_MODE=fail|ok -DIPU_CF_FLAGS_FILE=<flags.cmake>
#       [-DIPU_CF_PCH=<precompiled ipu.hpp>] -P ipu_compile_fail.cmake
# cmake -DIPU_CF_MODE=pch -DIPU_CF_PCH=<output> -DIPU_CF_FLAGS_FILE=<flags.cmake> -P ipu_compile_fail.cmake
#
# Runs one compile-fail case (see tests/compile_fail/CMakeLists.txt), or precompiles
# <ipu/ipu.hpp> for them with the same flags (`pch`: the ok twins' warnings, -Werror).
# A case uses the precompiled header IPU_CF_PCH when that file exists: GCC's
# `<dir>/ipu/ipu.hpp.gch` through -I<dir>, clang's through -include-pch.
#   fail: compile with -fsyntax-only; succeed only if the compile fails, every
#         `// expect: <regex>` line of the case matches the diagnostics, and ipu's headers
#         report at most one error. Lines written `// expect-gcc: <regex>` or
#         `// expect-clang: <regex>` apply to that compiler only.
#   ok:   compile with -DIPU_COMPILE_FAIL_OK -Wall -Wextra -Wpedantic -Werror; succeed only if
#         the compile succeeds.
# The compiler runs with LC_ALL=C, without colours and without echoing source lines. Before
# matching, every absolute file path in the diagnostics is replaced by `<path>`, so a regex
# cannot pass by matching a file name (line and column numbers stay).

cmake_minimum_required(VERSION 3.23)

set(_required IPU_CF_MODE IPU_CF_FLAGS_FILE)
if(IPU_CF_MODE STREQUAL "pch")
  list(APPEND _required IPU_CF_PCH)
else()
  list(APPEND _required IPU_CF_SOURCE)
endif()
foreach(_v IN LISTS _required)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "ipu_compile_fail.cmake: -D${_v}=... is required")
  endif()
endforeach()
include("${IPU_CF_FLAGS_FILE}")

# --- Compiler command -----------------------------------------------------------------
list(REMOVE_ITEM IPU_CF_OPTIONS "")
set(_cmd ${IPU_CF_COMPILER} ${IPU_CF_FLAGS} -std=c++20 ${IPU_CF_OPTIONS})
set(_use_pch OFF)
if(NOT IPU_CF_MODE STREQUAL "pch")
  list(APPEND _cmd -fsyntax-only)
  if(DEFINED IPU_CF_PCH AND EXISTS "${IPU_CF_PCH}")
    set(_use_pch ON)
  endif()
endif()
if(_use_pch AND IPU_CF_COMPILER_ID STREQUAL "GNU")
  get_filename_component(_pch_dir "${IPU_CF_PCH}" DIRECTORY)   # <dir>/ipu
  get_filename_component(_pch_dir "${_pch_dir}" DIRECTORY)
  list(APPEND _cmd -Winvalid-pch "-I${_pch_dir}")
elseif(_use_pch)
  list(APPEND _cmd -include-pch "${IPU_CF_PCH}")
endif()
if(IPU_CF_COMPILER_ID STREQUAL "GNU")
  list(APPEND _cmd -fdiagnostics-color=never -fno-diagnostics-show-caret)
elseif(IPU_CF_COMPILER_ID MATCHES "Clang")
  list(APPEND _cmd -fno-color-diagnostics -fno-caret-diagnostics)
endif()

list(REMOVE_DUPLICATES IPU_CF_SYSTEM_INCLUDE_DIRS)
list(REMOVE_DUPLICATES IPU_CF_INCLUDE_DIRS)
list(REMOVE_ITEM IPU_CF_INCLUDE_DIRS ${IPU_CF_SYSTEM_INCLUDE_DIRS} "")
list(REMOVE_ITEM IPU_CF_SYSTEM_INCLUDE_DIRS "")
# The compiler's own directories (e.g. /usr/include) must not be passed again: an explicit
# -isystem /usr/include breaks libstdc++'s #include_next. CMake leaves them out the same way.
foreach(_dir IN LISTS IPU_CF_IMPLICIT_INCLUDE_DIRS)
  list(REMOVE_ITEM IPU_CF_INCLUDE_DIRS "${_dir}")
  list(REMOVE_ITEM IPU_CF_SYSTEM_INCLUDE_DIRS "${_dir}")
endforeach()
foreach(_dir IN LISTS IPU_CF_INCLUDE_DIRS)
  list(APPEND _cmd "-I${_dir}")
endforeach()
foreach(_dir IN LISTS IPU_CF_SYSTEM_INCLUDE_DIRS)
  list(APPEND _cmd -isystem "${_dir}")
endforeach()
list(REMOVE_DUPLICATES IPU_CF_DEFINITIONS)
list(REMOVE_ITEM IPU_CF_DEFINITIONS "")
foreach(_def IN LISTS IPU_CF_DEFINITIONS)
  list(APPEND _cmd "-D${_def}")
endforeach()

if(IPU_CF_MODE STREQUAL "ok")
  list(APPEND _cmd -DIPU_COMPILE_FAIL_OK -Wall -Wextra -Wpedantic -Werror)
elseif(IPU_CF_MODE STREQUAL "pch")
  # A header of its own: <ipu/ipu.hpp> compiled as the main file warns of its #pragma once.
  get_filename_component(_pch_dir "${IPU_CF_PCH}" DIRECTORY)
  file(MAKE_DIRECTORY "${_pch_dir}")
  get_filename_component(_flags_dir "${IPU_CF_FLAGS_FILE}" DIRECTORY)
  set(_header "${_flags_dir}/ipu_pch.hpp")
  file(WRITE "${_header}" "#include <ipu/ipu.hpp>\n")
  list(APPEND _cmd -Wall -Wextra -Wpedantic -Werror -x c++-header "${_header}" -o "${IPU_CF_PCH}")
  execute_process(COMMAND ${_cmd} RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    string(JOIN " " _cmd_line ${_cmd})
    message(FATAL_ERROR "ipu_compile_fail.cmake: precompiling <ipu/ipu.hpp> failed (exit ${_result}):\n  ${_cmd_line}")
  endif()
  return()
elseif(NOT IPU_CF_MODE STREQUAL "fail")
  message(FATAL_ERROR "ipu_compile_fail.cmake: IPU_CF_MODE must be 'fail', 'ok' or 'pch'")
endif()
list(APPEND _cmd ${IPU_CF_SOURCE})
get_filename_component(_case_name "${IPU_CF_SOURCE}" NAME)

# --- The expectations: `// expect[-gcc|-clang]: <regex>` lines, read without list splitting
file(READ "${IPU_CF_SOURCE}" _text)
string(REPLACE "\r" "" _text "${_text}")
string(APPEND _text "\n")
set(_expect_count 0)
while(NOT _text STREQUAL "")
  string(FIND "${_text}" "\n" _eol)
  string(SUBSTRING "${_text}" 0 ${_eol} _line)
  math(EXPR _next "${_eol} + 1")
  string(SUBSTRING "${_text}" ${_next} -1 _text)
  if(_line MATCHES "^[ \t]*// expect(-gcc|-clang)?: (.*)$")
    set(_only "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" _re)
    if(_only STREQUAL "-gcc" AND NOT IPU_CF_COMPILER_ID STREQUAL "GNU")
      set(_re "")
    elseif(_only STREQUAL "-clang" AND NOT IPU_CF_COMPILER_ID MATCHES "Clang")
      set(_re "")
    endif()
    if(NOT _re STREQUAL "")
      set(_expect_${_expect_count} "${_re}")
      math(EXPR _expect_count "${_expect_count} + 1")
    endif()
  endif()
endwhile()

# --- Compile --------------------------------------------------------------------------
set(ENV{LC_ALL} C)
set(ENV{LANG} C)
unset(ENV{GCC_COLORS})
execute_process(COMMAND ${_cmd}
  RESULT_VARIABLE _result
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _out)   # stdout and stderr merged, in order

function(_ipu_cf_show_diagnostics text)
  # Walk the lines with string(FIND): diagnostics are full of `;` and `[`, which lists mangle.
  set(_head "")
  set(_rest "${text}")
  set(_n 0)
  while(_n LESS 40 AND NOT _rest STREQUAL "")
    string(FIND "${_rest}" "\n" _eol)
    if(_eol EQUAL -1)
      string(APPEND _head "${_rest}\n")
      set(_rest "")
    else()
      math(EXPR _next "${_eol} + 1")
      string(SUBSTRING "${_rest}" 0 ${_next} _line)
      string(SUBSTRING "${_rest}" ${_next} -1 _rest)
      string(APPEND _head "${_line}")
    endif()
    math(EXPR _n "${_n} + 1")
  endwhile()
  if(NOT _rest STREQUAL "")
    set(_more "(output cut after 40 lines)")
  else()
    set(_more "(end of output)")
  endif()
  message("---- compiler output ----\n${_head}---- ${_more} ----")
endfunction()

string(JOIN " " _cmd_line ${_cmd})

if(IPU_CF_MODE STREQUAL "ok")
  if(NOT _result EQUAL 0)
    message("${_case_name}: with -DIPU_COMPILE_FAIL_OK the case must compile cleanly, "
            "but the compiler said (exit ${_result}):\n  ${_cmd_line}")
    _ipu_cf_show_diagnostics("${_out}")
    message(FATAL_ERROR "compile_fail ok-twin of ${_case_name} does not compile")
  endif()
  message("${_case_name}: compiles cleanly with -DIPU_COMPILE_FAIL_OK")
  return()
endif()

if(_expect_count EQUAL 0)
  message(FATAL_ERROR "${_case_name}: no `// expect: <regex>` line; a compile-fail case must say "
                      "which diagnostic it expects")
endif()

if(_result EQUAL 0)
  message("${_case_name}: the code COMPILED, but it must be rejected:\n  ${_cmd_line}")
  _ipu_cf_show_diagnostics("${_out}")
  message(FATAL_ERROR "compile_fail case ${_case_name} compiled")
endif()

# Replace absolute paths (at the start of a line, or after a blank, quote or parenthesis),
# keeping the `:line:col` that follows them.
string(REGEX REPLACE "(^|[\n \t'\"(`])/[^\n \t:'\"()`]+" "\\1<path>" _diag "${_out}")

set(_n_missing 0)
math(EXPR _last "${_expect_count} - 1")
foreach(_i RANGE ${_last})
  if(_diag MATCHES "${_expect_${_i}}")
    message("  matched:  ${_expect_${_i}}")
  else()
    message("  MISSING:  ${_expect_${_i}}")
    math(EXPR _n_missing "${_n_missing} + 1")
  endif()
endforeach()

if(_n_missing GREATER 0)
  message("${_case_name}: the compile failed, but ${_n_missing} of ${_expect_count} expected "
          "diagnostics did not appear (paths shown as <path>, as they are matched):\n  ${_cmd_line}")
  _ipu_cf_show_diagnostics("${_diag}")
  message(FATAL_ERROR "compile_fail case ${_case_name}: expected diagnostics missing")
endif()
# One mistake, one error: the library's headers report at most one (a check whose failure
# reached later uses of its value would add an error at each; clang printed four to ten).
string(REGEX MATCHALL "(^|\n)[^\n:]*/include/ipu/[^\n:]+:[0-9]+:[0-9]+: error:" _library_errors "${_out}")
list(LENGTH _library_errors _n_library_errors)
if(_n_library_errors GREATER 1)
  message("${_case_name}: the compile failed with the expected diagnostics, but ipu's headers "
          "reported ${_n_library_errors} errors for one mistake:\n  ${_cmd_line}")
  _ipu_cf_show_diagnostics("${_out}")
  message(FATAL_ERROR "compile_fail case ${_case_name}: more than one error from ipu's headers")
endif()
message("${_case_name}: rejected with all ${_expect_count} expected diagnostics, "
        "${_n_library_errors} error from ipu's headers")
