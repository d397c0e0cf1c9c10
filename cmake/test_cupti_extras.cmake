# A toolkit that keeps cupti.h under extras/CUPTI/include (not beside cuda.h) still builds the
# injection library with CUPTI: builds a stand-in toolkit of links to the real one with the CUPTI
# headers moved there, configures the project against it (CG_BUILD_TOOL=OFF) and builds
# canary-inject. Called with -DSOURCE=<project> -DWORK=<scratch folder> -DTOOLKIT=<real toolkit
# root> -DGENERATOR=<CMake generator>. Fails (message(FATAL_ERROR)) with the step that failed.
cmake_policy(SET CMP0057 NEW)
get_filename_component(real "${TOOLKIT}" REALPATH)
if(NOT EXISTS "${real}/include/cupti.h" OR NOT EXISTS "${real}/bin/nvcc")
  message(FATAL_ERROR "'${TOOLKIT}' has no include/cupti.h or bin/nvcc to build a stand-in from")
endif()
set(fake "${WORK}/toolkit")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${fake}/include" "${fake}/extras/CUPTI/include" "${fake}/bin"
     "${fake}/targets/x86_64-linux")
file(GLOB headers RELATIVE "${real}/include" "${real}/include/*")
foreach(h IN LISTS headers)
  if(h MATCHES "^(cupti|generated_cupti|nvperf)")
    file(CREATE_LINK "${real}/include/${h}" "${fake}/extras/CUPTI/include/${h}" SYMBOLIC)
  else()
    file(CREATE_LINK "${real}/include/${h}" "${fake}/include/${h}" SYMBOLIC)
  endif()
endforeach()
file(GLOB tools RELATIVE "${real}/bin" "${real}/bin/*")
foreach(t IN LISTS tools)
  file(CREATE_LINK "${real}/bin/${t}" "${fake}/bin/${t}" SYMBOLIC)
endforeach()
foreach(d IN ITEMS lib lib64 nvvm)
  if(EXISTS "${real}/${d}")
    file(CREATE_LINK "${real}/${d}" "${fake}/${d}" SYMBOLIC)
  endif()
endforeach()
file(CREATE_LINK "${fake}/include" "${fake}/targets/x86_64-linux/include" SYMBOLIC)
if(EXISTS "${real}/targets/x86_64-linux/lib")
  file(CREATE_LINK "${real}/targets/x86_64-linux/lib" "${fake}/targets/x86_64-linux/lib" SYMBOLIC)
endif()
if(EXISTS "${fake}/include/cupti.h")
  message(FATAL_ERROR "the stand-in toolkit still has cupti.h beside cuda.h")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}/build" -G "${GENERATOR}"
                        -DCG_BUILD_TOOL=OFF "-DCUDAToolkit_ROOT=${fake}"
                        "-DCMAKE_CUDA_COMPILER=${fake}/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure against the stand-in toolkit failed:\n${out}")
endif()
if(NOT out MATCHES "CUPTI=ON")
  message(FATAL_ERROR "CUPTI not found in the stand-in toolkit's extras/CUPTI/include:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK}/build" --target canary-inject
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "canary-inject does not build with cupti.h under extras/CUPTI/include:\n${out}")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "canary-inject builds with cupti.h under extras/CUPTI/include")
