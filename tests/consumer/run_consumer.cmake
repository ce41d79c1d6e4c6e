# Configures, builds and runs tests/consumer/project against Ember (script mode: cmake -P).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer (${MODE}): '${ARGN}' failed with ${rc}")
  endif()
endfunction()
set(launcher "")
find_program(CCACHE ccache)
if(CCACHE)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install ${EMBER_BUILD_DIR} --prefix ${WORK}/prefix)
  run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${WORK}/build -G ${GENERATOR} -DEMBER_MODE=find_package
      -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release ${launcher})
elseif(MODE STREQUAL "find_package_build_tree")
  # Nothing installed: the build tree's own emberConfig.cmake and exported targets. EMBER_EXPECT_PREFIX
  # makes the consumer check that it found this build tree, not some installed copy.
  run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${WORK}/build -G ${GENERATOR} -DEMBER_MODE=find_package
      -DCMAKE_PREFIX_PATH=${EMBER_BUILD_DIR} -DEMBER_EXPECT_DIR=${EMBER_BUILD_DIR} -DCMAKE_BUILD_TYPE=Release ${launcher})
else()
  run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${WORK}/build -G ${GENERATOR} -DEMBER_MODE=add_subdirectory
      -DEMBER_SOURCE_DIR=${EMBER_SOURCE_DIR} -DEMBER_CUDA=OFF -DEMBER_NATIVE=OFF
      -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 ${launcher})
  # -O0: this build only proves the wiring; compiling Ember's kernels optimised twice would double CI time.
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build -j 2)
run(${WORK}/build/consumer)
