# Installing canary-gate like a system tool, and its Debian package (CPack).
#
# Layout under the prefix: bin/canary-gate; its companions in lib/canary-gate/ (the injection
# library, the NVTX library, python/ with the sitecustomize that marks optimizer steps, the
# built-in canary canary-train and its CUDA module), found by the tool relative to itself
# (src/measure/launch.h, CG_INSTALLED_COMPANIONS), so an installed tree can be moved; a man page made
# from --help by help2man when it is installed (ci/deps --package); bash completion; the Debian
# copyright file (share/doc/canary-gate/copyright). The thresholds are compiled in.
#
#   cmake -S . -B build-pkg -DCMAKE_INSTALL_PREFIX=/usr -DCG_BUILD_TESTS=OFF
#   cmake --build build-pkg && (cd build-pkg && cpack)      -> canary-gate_<version>_<arch>.deb
# ci/package builds it, unpacks it into an empty root and runs the main command from there.

if(TARGET canary-gate)
  find_program(CG_HELP2MAN help2man)
  if(CG_HELP2MAN)
    set(man ${PROJECT_BINARY_DIR}/canary-gate.1)
    add_custom_command(
      OUTPUT ${man}.gz
      COMMAND ${PROJECT_SOURCE_DIR}/cmake/man_commands.sh $<TARGET_FILE:canary-gate>
              ${man}.commands
      # --version-string: the footer names "canary-gate VERSION" (the --version line also names
      # the artifact schema, which help2man would run into the date)
      COMMAND ${CG_HELP2MAN} --no-info --section=1 --version-string=${PROJECT_VERSION}
              "--name=CI performance-regression gate for ML training"
              --include=${man}.commands --output=${man} $<TARGET_FILE:canary-gate>
      COMMAND gzip -9nf ${man}
      DEPENDS canary-gate ${PROJECT_SOURCE_DIR}/cmake/man_commands.sh
      COMMENT "man page of canary-gate (help2man)" VERBATIM)
    add_custom_target(canary-gate-man ALL DEPENDS ${man}.gz)
    install(FILES ${man}.gz DESTINATION share/man/man1)
  else()
    list(APPEND CG_LEFT_OUT "man page (no help2man)")
  endif()
  install(FILES ${PROJECT_SOURCE_DIR}/completions/canary-gate
          DESTINATION share/bash-completion/completions)
endif()

# The Debian copyright file (machine-readable format 1.0): canary-gate's licence, CG_LICENSE_SPDX
# (CMakeLists.txt), and that of the NVTX headers compiled into the libraries.
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright.in ${PROJECT_BINARY_DIR}/copyright @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/copyright DESTINATION share/doc/canary-gate)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME canary-gate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "canary-gate maintainers <canary-gate@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "CI performance-regression gate for ML training (step time, tokens/sec, memory)")
set(CPACK_PACKAGE_DESCRIPTION
    "Runs a short training canary under CUDA instrumentation (CUPTI, NVTX), compares step time, \
tokens/sec and peak memory with a stored baseline and says PASS, FAIL or INCONCLUSIVE, with a \
markdown PR comment. The CUDA toolkit's libcupti is loaded at run time when present.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_LICENSE ${CG_LICENSE_SPDX}) # SPDX identifier (the Debian copyright file says it too)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# What the binaries link (readelf -d: libcjson, libcurl, libc, libm); the CUDA libraries are
# NVIDIA's, loaded only on a GPU machine, and not Debian dependencies.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libcjson1 (>= 1.7.10), libcurl4 (>= 7.68)")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch")
set(CPACK_STRIP_FILES ON)
include(CPack)
