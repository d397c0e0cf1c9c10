# Checks that a shared object's dynamic section holds a DT_RUNPATH with every directory named,
# and no empty element (which the loader would read as the current directory).
# Called with -DREADELF=<readelf> -DFILE=<shared object> -DDIRS=<directories separated by commas>.
# Fails (message(FATAL_ERROR)) naming the file and what is missing.
cmake_policy(SET CMP0057 NEW)
execute_process(COMMAND ${READELF} -d ${FILE} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot read '${FILE}' with ${READELF} (exit ${rc})")
endif()
if(NOT out MATCHES "\\(RUNPATH\\)[ \t]+Library runpath: \\[([^]\n]*)\\]")
  message(FATAL_ERROR "'${FILE}' has no RUNPATH")
endif()
set(runpath "${CMAKE_MATCH_1}")
string(REPLACE ":" ";" elements "${runpath}")
if(runpath MATCHES "^:|::|:$" OR runpath STREQUAL "")
  message(FATAL_ERROR "'${FILE}': RUNPATH '${runpath}' has an empty element")
endif()
string(REPLACE "," ";" DIRS "${DIRS}")
foreach(dir IN LISTS DIRS)
  if(NOT dir IN_LIST elements)
    message(FATAL_ERROR "'${FILE}': RUNPATH '${runpath}' lacks '${dir}'")
  endif()
endforeach()
message(STATUS "'${FILE}': RUNPATH ${runpath}")
