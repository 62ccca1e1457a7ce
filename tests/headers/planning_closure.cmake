# Run by the test headers.planning_light (tests/headers/CMakeLists.txt): lists the files that
# <ipu/planning.hpp> includes (the compiler's -M) and fails if any is of the runtime, the
# kernels, the reports or the training loop, or a standard header that only those need
# (threads, clocks, streams beyond <ostream>, files, intrinsics): the planning path is what a
# fit check compiles, and stays a fraction of <ipu/ipu.hpp>'s compile time.
#   cmake -DCXX=<compiler> -DINCLUDE_DIR=<include/> -P planning_closure.cmake
execute_process(
  COMMAND ${CXX} -std=c++20 -I${INCLUDE_DIR} -M -x c++ ${INCLUDE_DIR}/ipu/planning.hpp
  OUTPUT_VARIABLE deps ERROR_VARIABLE errors RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "listing the includes of <ipu/planning.hpp> failed:\n${errors}")
endif()
string(REGEX MATCHALL "[^ \\\n]+" files "${deps}")
set(ipu_headers 0)
set(offending "")
foreach(file IN LISTS files)
  if(file MATCHES "/ipu/")
    math(EXPR ipu_headers "${ipu_headers} + 1")
  endif()
  if(file MATCHES "/ipu/(runtime|kernels|report|io|data|distributed)/|/ipu/ops/kernels|/ipu/train/(trainer|replicated|profile|dropout)\\.hpp"
     OR file MATCHES "/(thread|mutex|condition_variable|barrier|stop_token|chrono|filesystem|fstream|sstream|iostream|future)$"
     OR file MATCHES "immintrin\\.h$")
    list(APPEND offending "${file}")
  endif()
endforeach()
if(ipu_headers LESS 20)
  message(FATAL_ERROR "<ipu/planning.hpp> includes only ${ipu_headers} ipu headers: the -M listing was not read\n${deps}")
endif()
if(offending)
  list(JOIN offending "\n  " offending)
  message(FATAL_ERROR "<ipu/planning.hpp> includes what planning does not need (runtime, kernels, reports, or their standard headers):\n  ${offending}")
endif()
message(STATUS "<ipu/planning.hpp>: ${ipu_headers} ipu headers, none of the runtime")
