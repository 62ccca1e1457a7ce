# cmake -DIPU_BINARY_DIR=<build> -DIPU_PREFIX=<prefix> [-DIPU_CONFIG=<config>] -P install.cmake
# A fresh install of the build tree into <prefix>: the prefix is emptied first, so files
# removed from the source tree cannot linger and hide a packaging mistake.

foreach(_v IN ITEMS IPU_BINARY_DIR IPU_PREFIX)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "install.cmake: -D${_v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE "${IPU_PREFIX}")
set(_cmd "${CMAKE_COMMAND}" --install "${IPU_BINARY_DIR}" --prefix "${IPU_PREFIX}")
if(IPU_CONFIG)
  list(APPEND _cmd --config "${IPU_CONFIG}")
endif()
execute_process(COMMAND ${_cmd} RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${_result})")
endif()
