# cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DLOG=<its WARN_LOGFILE> -P check_doxygen.cmake
#
# Runs Doxygen and fails when it fails or when it warned: an undocumented public entity, a
# broken reference, a Markdown construct it could not read. Prints the warnings.
foreach(_var DOXYGEN DOXYFILE LOG)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check_doxygen.cmake: -D${_var}=... is required")
  endif()
endforeach()

file(REMOVE ${LOG})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE _status)
if(NOT _status EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${_status})")
endif()
if(NOT EXISTS ${LOG})
  message(FATAL_ERROR "doxygen wrote no warning log at ${LOG}")
endif()
file(STRINGS ${LOG} _warnings)
list(LENGTH _warnings _count)
if(_count GREATER 0)
  list(JOIN _warnings "\n" _text)
  message(FATAL_ERROR "doxygen: ${_count} warning lines\n${_text}")
endif()
message(STATUS "doxygen: no warnings")
