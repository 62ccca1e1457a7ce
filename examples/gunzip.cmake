# cmake -DGZIP=<gzip> -DIN=<file.gz> -DOUT=<file> -P gunzip.cmake: decompresses IN into OUT,
# through a temporary file, so that an interrupted build never leaves a partial OUT.
get_filename_component(_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_dir}")
execute_process(COMMAND "${GZIP}" -dc "${IN}" OUTPUT_FILE "${OUT}.part" RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  file(REMOVE "${OUT}.part")
  message(FATAL_ERROR "gzip -dc ${IN} failed (${_result})")
endif()
file(RENAME "${OUT}.part" "${OUT}")
